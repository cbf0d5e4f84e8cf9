// Shows the inputs of the chosen notation only (the server also ignores the others).
function showNotation(form) {
  const chosen = form.querySelector("select[name=notation]").value;
  for (const group of form.querySelectorAll("[data-notation]")) {
    group.hidden = !group.dataset.notation.split(" ").includes(chosen);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("schedule-form");
  if (form) {
    showNotation(form);
    form.addEventListener("change", () => showNotation(form));
  }
});
