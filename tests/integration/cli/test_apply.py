"""``scheduler apply`` and ``scheduler export`` as a user runs them: the command in a process of
its own against a served API with two tenants, files on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.model import Schedule
from shared.ports import ScheduleFilter
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API
from tests.support.serving import serving

ACME_KEY = "sk_apply_acme_0123456789"
GLOBEX_KEY = "sk_apply_globex_0123456789"
SCHEDULER = str(Path(sys.executable).parent / "scheduler")
LABEL = "github.com/acme/schedules"
# The file of docs/apply.md, as it shows it.
FILE = (
    (Path(__file__).parents[3] / "docs" / "apply.md")
    .read_text()
    .split("```yaml\n", 1)[1]
    .split("```", 1)[0]
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ApiUnderTest, str]]:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api, serving(api.app) as url:
        yield api, url


def scheduler(
    url: str, *argv: str, key: str = ACME_KEY, answer: str = "", **environ: str
) -> subprocess.CompletedProcess[str]:
    """``scheduler *argv`` in a process of its own, ``answer`` on its standard input."""
    return subprocess.run(
        [SCHEDULER, *argv, "--url", url, "--api-key", key],
        input=answer,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **environ},
        check=False,
    )


def stored(api: ApiUnderTest, tenant: str = "acme") -> dict[str, Schedule]:
    """The tenant's live schedules as the store holds them, by id."""
    page = api.backends.store.list_schedules(tenant, ScheduleFilter(), 100, None)
    return {schedule.schedule_id: schedule for schedule in page.items}


def put(api: ApiUnderTest, schedule_id: str, body: dict[str, Any], key: str = ACME_KEY) -> None:
    answer = api.client.put(f"{API}/schedule/{schedule_id}", json=body, headers={"X-API-Key": key})
    assert answer.status_code == 202, answer.get_json()


def test_apply_creates_then_export_round_trips_to_a_no_op(
    served: tuple[ApiUnderTest, str], tmp_path: Path
) -> None:
    api, url = served
    (tmp_path / "schedules.yaml").write_text(FILE)
    token = {"BILLING_TOKEN": "Bearer t0ken-secret"}
    done = scheduler(url, "apply", "-f", str(tmp_path / "schedules.yaml"), "--yes", **token)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "+ create    nightly-invoices",
        "+ create    weekly-report",
        "Plan: 2 to create, 0 to update, 0 to delete, 0 unchanged.",
        "created nightly-invoices",
        "created weekly-report",
    ]
    api.apply()
    created = stored(api)["nightly-invoices"].live_definition
    assert created.payload.headers["Authorization"] == "Bearer t0ken-secret"
    assert created.managed_by == LABEL

    exported = scheduler(url, "export", "--managed-by", LABEL, "-o", str(tmp_path / "out.yaml"))
    assert exported.returncode == 0, exported.stderr
    text = (tmp_path / "out.yaml").read_text()
    assert "t0ken-secret" not in text and "'********'" in text
    document = yaml.safe_load(text)
    assert document["managed_by"] == LABEL
    assert [entry["id"] for entry in document["schedules"]] == ["nightly-invoices", "weekly-report"]

    revisions = {k: s.revision for k, s in stored(api).items()}
    again = scheduler(url, "apply", "-f", str(tmp_path / "out.yaml"), "--prune")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [
        "= unchanged nightly-invoices",
        "= unchanged weekly-report",
        "Plan: 0 to create, 0 to update, 0 to delete, 2 unchanged.",
    ]
    api.apply()
    assert {k: s.revision for k, s in stored(api).items()} == revisions
    kept = api.backends.store.get_schedule("acme", "nightly-invoices")
    assert kept is not None
    assert kept.live_definition.payload.headers["Authorization"] == "Bearer t0ken-secret"


def test_update_and_prune_show_the_plan_ask_and_touch_only_their_label(
    served: tuple[ApiUnderTest, str], tmp_path: Path
) -> None:
    api, url = served
    token = {"BILLING_TOKEN": "Bearer t0ken-secret"}
    (tmp_path / "a.yaml").write_text(FILE)
    assert scheduler(url, "apply", "-f", str(tmp_path), "--yes", **token).returncode == 0
    hand = {"schedule": {"cron": "0 1 * * *"}, "payload": {"method": "GET", "url": "https://x.io"}}
    put(api, "by-hand", hand)
    put(api, "other-repo", {**hand, "managed_by": "github.com/acme/other"})
    api.apply()

    document = yaml.safe_load(FILE.replace("!env BILLING_TOKEN", "x"))
    weekly = document["schedules"][1]
    weekly["schedule"]["cron"] = "0 10 * * 1"
    weekly["tags"] = ["reports"]
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**document, "schedules": [weekly]}))

    plan = [
        "~ update    weekly-report (schedule.cron, tags)",
        "- delete    nightly-invoices",
        "Plan: 0 to create, 1 to update, 1 to delete, 0 unchanged.",
    ]
    refused = scheduler(url, "apply", "-f", str(tmp_path), "--prune", answer="n\n")
    assert refused.returncode == 1
    assert refused.stdout.splitlines() == [*plan, "Apply these changes? [y/N] Nothing applied."]
    dry = scheduler(url, "apply", "-f", str(tmp_path), "--prune", "--dry-run")
    assert (dry.returncode, dry.stdout.splitlines()) == (0, plan)
    api.apply()
    assert api.backends.store.get_schedule("acme", "nightly-invoices") is not None

    done = scheduler(url, "apply", "-f", str(tmp_path), "--prune", answer="y\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == [
        "Apply these changes? [y/N] updated weekly-report",
        "deleted nightly-invoices",
    ]
    api.apply()
    listed = api.client.get(f"{API}/schedules", headers={"X-API-Key": ACME_KEY}).get_json()
    assert [item["id"] for item in listed["items"]] == ["by-hand", "other-repo", "weekly-report"]
    assert next(i for i in listed["items"] if i["id"] == "weekly-report")["tags"] == ["reports"]


def test_a_bad_file_names_the_file_the_line_and_the_field(
    served: tuple[ApiUnderTest, str], tmp_path: Path
) -> None:
    api, url = served
    path = tmp_path / "bad.yaml"

    def refusal(text: str, *, token: bool = True) -> str:
        path.write_text(text)
        environ = {"BILLING_TOKEN": "t"} if token else {}
        done = scheduler(url, "apply", "-f", str(path), "--yes", **environ)
        assert done.returncode != 0 and done.stdout == ""
        return done.stderr

    wrong_cron = FILE.replace('"0 9 * * 1"', '"0 9 31 2 *"')
    assert f"{path}:14: schedule.cron: " in refusal(wrong_cron)
    assert f"{path}:7: payload.method: " in refusal(FILE.replace("      method: POST\n", ""))
    missing = refusal(FILE, token=False)
    assert f"{path}:10: !env BILLING_TOKEN: the environment has no such variable" in missing
    assert f"{path}:4: schedules[0].id: required" in refusal(FILE.replace("id: nightly", "ix: n"))
    assert f"{path}:1: kind: unknown" in refusal("kind: Schedules\n" + FILE)
    assert f"{path}:6: not YAML: " in refusal(FILE.replace("schedule: {cron", "schedule: [cron"))
    twice = FILE.replace("id: weekly-report", "id: nightly-invoices")
    assert f"{path}:12: id: 'nightly-invoices' is also at {path}:4" in refusal(twice)
    api.apply()
    assert stored(api) == {}


def test_a_tenant_neither_exports_nor_applies_nor_prunes_another_tenants_schedules(
    served: tuple[ApiUnderTest, str], tmp_path: Path
) -> None:
    api, url = served
    (tmp_path / "s.yaml").write_text(FILE)
    token = {"BILLING_TOKEN": "Bearer acme-secret"}
    assert scheduler(url, "apply", "-f", str(tmp_path), "--yes", **token).returncode == 0
    api.apply()

    exported = scheduler(url, "export", key=GLOBEX_KEY)
    assert (exported.returncode, yaml.safe_load(exported.stdout)) == (0, {"schedules": []})
    acme = scheduler(url, "export", "--tag", "billing")
    assert "acme-secret" not in acme.stdout
    (tmp_path / "s.yaml").write_text(acme.stdout)
    # acme's export, masked secret and all, applied by globex: its own schedule of that id
    # would be created, and the mask matches nothing it holds.
    stolen = scheduler(url, "apply", "-f", str(tmp_path), "--yes", key=GLOBEX_KEY)
    assert stolen.returncode == 1
    assert "payload.headers.Authorization: " in stolen.stderr

    # globex applies the same ids with its own label and prunes: acme's stay as they are.
    mine = yaml.safe_load(FILE.replace("!env BILLING_TOKEN", "Bearer globex"))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**mine, "schedules": mine["schedules"][:1]}))
    done = scheduler(url, "apply", "-f", str(tmp_path), "--prune", "--yes", key=GLOBEX_KEY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "+ create    nightly-invoices"
    api.apply()
    assert set(stored(api)) == {"nightly-invoices", "weekly-report"}
    kept = api.backends.store.get_schedule("acme", "nightly-invoices")
    assert kept is not None
    assert kept.live_definition.payload.headers["Authorization"] == "Bearer acme-secret"
