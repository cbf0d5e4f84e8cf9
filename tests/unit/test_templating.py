"""Templated payloads: what a placeholder is, what fills it, how ``{{`` is escaped, and that
neither checking nor filling can be made to take more than linear time."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared import templating
from shared.model import Occurrence, Payload
from shared.targets.http import HTTP
from shared.templating import (
    PLACEHOLDERS,
    TemplateValues,
    json_problems,
    render_json,
    render_text,
    text_problem,
)

VALUES = TemplateValues.of(
    Occurrence("acme", "daily", 1, datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)),
    3,
    "Daily digest",
).by_name()


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        ("{{ occurrence.id }}", "daily:2030-05-06T07:08:09.123Z"),
        ("{{occurrence.scheduled_time}}", "2030-05-06T07:08:09.123Z"),
        ("try {{  occurrence.attempt\t}}!", "try 3!"),
        ("{{ schedule.id }}/{{ schedule.name }}", "daily/Daily digest"),
        ("\\{{ schedule.id }}", "{{ schedule.id }}"),
        ("a \\{{ b {{ schedule.id }}", "a {{ b daily"),
        ("{ single } and }} alone", "{ single } and }} alone"),
        ("", ""),
    ],
)
def test_placeholders_are_filled_and_escaped_braces_kept(template: str, filled: str) -> None:
    assert text_problem(template) is None
    assert render_text(template, VALUES, None) == filled


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{{ occurrence.idd }}", "unknown placeholder {{ occurrence.idd }}"),
        ("{{ Occurrence.id }}", "unknown placeholder {{ Occurrence.id }}"),
        ("{{ occurrence.id | upper }}", "opens no placeholder"),
        ("{{ 1 + 1 }}", "opens no placeholder"),
        ("{{{ occurrence.id }}}", "opens no placeholder"),
        ("unclosed {{ occurrence.id", "opens no placeholder"),
        ("{{}}", "opens no placeholder"),
    ],
)
def test_anything_else_opening_with_braces_is_refused_saying_how_to_escape(
    template: str, said: str
) -> None:
    problem = text_problem(template)
    assert problem is not None and said in problem
    assert "\\{{" in problem
    assert all(name in problem for name in PLACEHOLDERS)


def test_a_json_body_is_filled_in_its_strings_only_and_problems_named_by_path() -> None:
    body = {"{{ schedule.id }}": ["{{ schedule.id }}", 7, None, {"deep": "{{ bad }}"}]}
    assert render_json(body, VALUES) == {
        "{{ schedule.id }}": ["daily", 7, None, {"deep": "{{ bad }}"}]
    }
    assert list(json_problems(body, "payload.body")) == ["payload.body.{{ schedule.id }}[3].deep"]


def test_a_payload_knows_whether_it_has_placeholders_and_keeps_it() -> None:
    plain = Payload("POST", "https://example.com/a?x=1", body={"a": "b"})
    templated = Payload("POST", "https://example.com/a", headers={"X": "{{ schedule.id }}"})
    assert plain.templated is False and templated.templated is True
    assert "templated" not in plain.to_document()
    assert Payload.from_document(templated.to_document()).templated is True
    # A payload stored before placeholders existed is never filled in.
    legacy = templated.to_document()
    del legacy["templated"], legacy["kind"]
    assert Payload.from_document(legacy).templated is False
    assert Payload.kind == HTTP


def test_placeholders_are_refused_outside_the_urls_query() -> None:
    for url in (
        "https://{{ schedule.id }}.example.com/",
        "https://example.com/{{ schedule.id }}/x",
        "https://example.com/x#{{ schedule.id }}",
    ):
        problems = Payload("GET", url).template_problems()
        assert problems == {"payload.url": "placeholders are filled in the query only"}
    assert Payload("GET", "https://example.com/x?id={{ schedule.id }}").template_problems() == {}


@given(st.text(alphabet="{}\\ a.", max_size=60))
def test_checking_and_filling_never_fail_on_any_text(text: str) -> None:
    text_problem(text)
    filled = render_text(text, VALUES, None)
    if "{{" not in text:
        assert filled == text


@pytest.mark.parametrize(
    "adversary",
    ["{{" * 200_000, "{{ " + " " * 400_000, "\\{{" * 150_000, "{{ occurrence.id }}" * 30_000],
)
def test_checking_and_filling_are_linear(adversary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``{{`` is looked at once, through a window of bounded size: the work is linear in
    the text however it is made (a regular expression over the rest would not be)."""
    windows: list[int] = []
    inside = templating._INSIDE

    class Counting:
        def match(self, text: str, start: int, end: int) -> re.Match[str] | None:
            windows.append(end - start)
            return inside.match(text, start, end)

    monkeypatch.setattr(templating, "_INSIDE", Counting())
    text_problem(adversary)
    render_text(adversary, VALUES, None)
    assert len(windows) <= 2 * adversary.count("{{")
    assert max(windows, default=0) <= templating.MAX_PLACEHOLDER + 2
