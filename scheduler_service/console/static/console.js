// The console's only script. Every page works without it; with it:
// - times are shown in the viewer's time zone, with how far they are from now, kept current;
// - a button or form with data-confirm asks first (without it, the server asks on a page);
// - "tick all" boxes; the schedule form shows the inputs of the chosen notation and target only.
"use strict";

document.documentElement.classList.add("js");

const UNITS = [[2 * 86400, 86400, "d"], [2 * 3600, 3600, "h"], [60, 60, "min"], [0, 1, "s"]];

// As presenting.relative says it on the server: "in 3 min", "5 h ago", "now".
function relative(moment, now) {
  const seconds = (moment - now) / 1000;
  const distance = Math.abs(seconds);
  if (distance < 1) return "now";
  const [, size, unit] = UNITS.find(([least]) => distance >= least);
  const amount = `${Math.floor(distance / size)} ${unit}`;
  return seconds > 0 ? `in ${amount}` : `${amount} ago`;
}

const FORMAT = new Intl.DateTimeFormat("en-US", {
  year: "numeric", month: "2-digit", day: "2-digit",
  hour: "2-digit", minute: "2-digit", second: "2-digit",
  hourCycle: "h23", timeZoneName: "longOffset",
});

// "2026-05-01 09:00:00 +02:00" in the viewer's zone ("UTC" where that is the offset), as the
// server writes UTC ("2026-05-01 07:00:00 UTC").
function absolute(moment) {
  const part = {};
  for (const { type, value } of FORMAT.formatToParts(moment)) part[type] = value;
  const offset = part.timeZoneName.replace("GMT", "");
  const zone = offset === "" || offset === "+00:00" ? "UTC" : offset;
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second} ${zone}`;
}

function localize(root) {
  const now = Date.now();
  for (const time of root.querySelectorAll("time[data-when]")) {
    const moment = new Date(time.getAttribute("datetime"));
    if (Number.isNaN(moment.getTime())) continue;
    const shown = absolute(moment);
    if ("zoneTime" in time.dataset) {
      // A time in the schedule's zone: the viewer's beside it when the offset differs.
      const viewer = time.parentElement.querySelector(".viewer");
      if (viewer) {
        const theirs = time.textContent.trim().split(" ").pop();
        const yours = shown.split(" ").pop();
        viewer.textContent = `${theirs === yours ? "" : `yours: ${shown} · `}${relative(moment, now)}`;
      }
      continue;
    }
    const abs = time.querySelector(".abs");
    const rel = time.querySelector(".rel");
    if (abs) abs.textContent = shown;
    if (rel) rel.textContent = relative(moment, now);
  }
}

// The inputs of the chosen notation, and of the chosen kind of target, only.
function showChosen(form) {
  for (const [select, attribute] of [["notation", "notation"], ["payload.kind", "kind"]]) {
    const chosen = form.querySelector(`select[name="${select}"]`).value;
    for (const group of form.querySelectorAll(`[data-${attribute}]`)) {
      group.hidden = !group.dataset[attribute].split(" ").includes(chosen);
    }
  }
}

// A confirmed submit carries confirmed=yes, which the server asks for before it deletes or
// discards.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const asking = event.submitter?.dataset.confirm ?? form.dataset.confirm;
  let field = form.querySelector("input[name=confirmed]");
  if (asking === undefined) {
    // A field the server wrote (data-server, empty: "" is falsy) stays: its page asked.
    if (field && field.dataset.server === undefined) field.remove();
    return;
  }
  if (!window.confirm(asking)) {
    event.preventDefault();
    return;
  }
  if (!field) {
    field = document.createElement("input");
    field.type = "hidden";
    field.name = "confirmed";
    form.append(field);
  }
  field.value = "yes";
});

document.addEventListener("change", (event) => {
  const box = event.target;
  if (box.matches("input[data-select-all]")) {
    for (const other of box.form.querySelectorAll(`input[type=checkbox][name="${box.dataset.selectAll}"]`)) {
      other.checked = box.checked;
    }
  }
});

document.addEventListener("DOMContentLoaded", () => {
  localize(document);
  setInterval(() => localize(document), 15000);
  const form = document.getElementById("schedule-form");
  if (form) {
    showChosen(form);
    form.addEventListener("change", () => showChosen(form));
  }
});

// Content htmx swaps in (the refreshing runs, the preview).
document.addEventListener("htmx:load", (event) => localize(event.target));
