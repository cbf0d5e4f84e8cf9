"""``scheduler calendars`` as a user runs it, through a served API and the Python client:
create from ``--dates`` or ``--ics FILE``, list, get, put, delete; a refusal printed with its
field; a calendar in use refused, naming the schedule."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler_client import Conflict, SchedulerClient
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.cli import run
from tests.support.serving import serving

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//acme//holidays//EN
BEGIN:VEVENT
UID:may-day-2030@acme
DTSTART;VALUE=DATE:20300501
SUMMARY:May Day
END:VEVENT
BEGIN:VEVENT
UID:christmas-2030@acme
DTSTART;VALUE=DATE:20301225
DTEND;VALUE=DATE:20301227
SUMMARY:Christmas
END:VEVENT
END:VCALENDAR
"""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[ApiUnderTest, str]]:
    with api_under_test(tmp_path) as under_test, serving(under_test.app) as served:
        yield under_test, served


def test_calendars_through_the_cli(
    api: tuple[ApiUnderTest, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    under_test, url = api
    code, out, err = run(
        capfd,
        "calendars",
        "create",
        "closures",
        "--dates",
        "2030-08-01",
        "2030-08-02",
        "--url",
        url,
    )
    assert code == 0, err
    assert out.splitlines()[1].split()[:4] == ["closures", "2", "2030-08-01", "2030-08-02"]
    holidays = tmp_path / "holidays.ics"
    holidays.write_text(ICS)
    code, out, err = run(
        capfd, "calendars", "create", "holidays", "--ics", str(holidays), "--url", url
    )
    assert code == 0, err
    assert out.splitlines()[2:] == ["2030-05-01", "2030-12-25", "2030-12-26"]
    code, out, _ = run(capfd, "calendars", "list", "--url", url)
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["closures", "holidays"]
    code, out, _ = run(capfd, "calendars", "put", "closures", "--dates", "2030-08-05", "--url", url)
    assert code == 0 and out.splitlines()[2:] == ["2030-08-05"]
    code, out, _ = run(capfd, "calendars", "get", "closures", "--url", url, "--json")
    assert json.loads(out)["dates"] == ["2030-08-05"] and json.loads(out)["revision"] == 2
    code, _, err = run(capfd, "calendars", "create", "bad", "--dates", "2030-02-30", "--url", url)
    assert code == 1 and "400" in err and "dates.0" in err

    # A schedule names it: the delete is refused, naming the schedule.
    client = SchedulerClient(url)
    client.replace(
        "payroll",
        {
            "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
            "calendar": {"exclude": ["holidays"], "shift": "previous_business_day"},
            "payload": {"method": "POST", "url": "https://example.com/payroll"},
        },
    )
    under_test.apply()
    with pytest.raises(Conflict):
        client.delete_calendar("holidays")
    code, _, err = run(capfd, "calendars", "delete", "holidays", "--url", url)
    assert code == 1 and "409" in err and "(payroll)" in err
    code, out, _ = run(capfd, "calendars", "delete", "closures", "--url", url)
    assert code == 0 and out.strip() == "calendar closures deleted"
    assert [item["name"] for item in client.calendars()] == ["holidays"]
    client.close()
