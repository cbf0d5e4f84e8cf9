"""``scheduler calendars list|get|create|put|delete``: the tenant's business calendars, through
a running API (``--url``, ``--api-key``: an admin key; its tenant's calendars). ``create`` and
``put`` take the dates (``--dates 2026-12-24 2026-12-25``) or an iCalendar file of holidays
(``--ics holidays.ics``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scheduler_cli.operator import Shown, Trace, client_options, command_group
from scheduler_client import SchedulerClient

CALENDAR_COLUMNS = (
    ("name", "NAME"),
    ("date_count", "DATES"),
    ("first_date", "FIRST"),
    ("last_date", "LAST"),
    ("revision", "REVISION"),
    ("description", "DESCRIPTION"),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions = command_group(
        commands,
        "calendars",
        help="business calendars (the days schedules exclude) via the API: list, get, create, "
        "put, delete",
        description="The tenant of the API key (an admin key): its business calendars, the "
        "local dates that schedules naming them in calendar.exclude treat as days off.",
    )
    client_options(actions.add_parser("list", help="names and how many dates, without them"))
    get = actions.add_parser("get", help="one calendar with its dates")
    get.add_argument("name")
    client_options(get)
    for action, helped in (
        ("create", "make a calendar from dates or an iCalendar file"),
        ("put", "replace a calendar's dates; schedules naming it follow from their next time"),
    ):
        writing = actions.add_parser(action, help=helped)
        writing.add_argument("name")
        given = writing.add_mutually_exclusive_group(required=True)
        given.add_argument("--dates", nargs="*", metavar="YYYY-MM-DD", help="the dates off")
        given.add_argument("--ics", type=Path, metavar="FILE", help="an iCalendar file of holidays")
        writing.add_argument("--description", default="", help="what the calendar is")
        client_options(writing)
    delete = actions.add_parser("delete", help="delete a calendar no schedule names")
    delete.add_argument("name")
    client_options(delete)


def request(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    if args.action == "list":
        items: Any = client.calendars()
        return Shown({"items": items}, items, CALENDAR_COLUMNS)
    if args.action == "delete":
        client.delete_calendar(args.name)
        return Shown({"deleted": args.name}, line=f"calendar {args.name} deleted")
    answer: Any
    if args.action == "get":
        answer = client.calendar(args.name)
    else:
        ics = None if args.ics is None else args.ics.read_text(encoding="utf-8")
        write = client.create_calendar if args.action == "create" else client.replace_calendar
        answer = write(args.name, dates=args.dates, ics=ics, description=args.description)
    return Shown(answer, [answer], CALENDAR_COLUMNS, after=answer["dates"])
