"""What a notation is: one way to say when a schedule fires, as a plug-in.

A ``Notation`` is how a request body writes it: its members of the ``schedule`` object
(``members``, each of a ``MemberKind`` the API knows how to read), the member that names it (a
PATCH naming it replaces the stored form whole), whether ``timezone``, ``start``, ``end`` and
``max_occurrences`` go with it (``bounded``), the console's label, and the ``Timing`` its
members make (``timing``).

A ``TimingNotation`` is also what a stored ``Timing`` is in (``Timing.kind``): it reads and
writes its value (``from_body``, ``encode``, ``decode``, ``view``), builds its engine
(``recurrence``, from ``shared.recurrence``), says it in words (``describe``) and names what is
wrong with it (``unreadable``). The blueprint's ``start_date`` form is a ``Notation`` only: it
is stored as an ``at`` or an ``interval``.

The idea is APScheduler 4's ``Trigger`` (its ``abc.py``): one class per notation, with its own
next times and its own (de)serialisation. Each is registered once, in ``shared.notations``;
every list of notations reads that registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from enum import StrEnum
from typing import Any, ClassVar

from shared.recurrence import Recurrence
from shared.timing import JSON, Timing


class MemberKind(StrEnum):
    """What a member of the ``schedule`` object holds, as the API reads it (and the console
    shows it)."""

    TEXT = "text"  # a string, at most ``max_length`` characters
    DATE_TIME = "date-time"  # ISO-8601: without an offset, a wall time in the schedule's zone
    INTERVAL = "interval"  # {"number": N, "unit": "minute"}, read as {"number", "unit": Unit}
    ZONE = "zone"  # an IANA time zone name
    CHOICE = "choice"  # one of ``choices``, in any letter case
    DATE = "date"  # MM/DD/YYYY
    TIME_OF_DAY = "time-of-day"  # hh:mm


@dataclass(frozen=True)
class Member:
    """A member of the ``schedule`` object: its name and kind, what the API documents of it,
    and how the console shows it (``label``, an ``example`` as placeholder; ``in_console``)."""

    name: str
    kind: MemberKind
    description: str = ""
    max_length: int = 0
    choices: tuple[str, ...] = ()
    label: str = ""
    example: str = ""
    in_console: bool = True


@dataclass(frozen=True)
class Anchors:
    """What a notation's engine starts from besides its value: the timing's zone, its start as
    an instant, when the schedule was accepted (forms without a start count from it), and the
    schedule's id (a cron line's ``H`` spreads by it)."""

    zone: tzinfo
    start: datetime | None
    accepted_at: datetime
    schedule_id: str | None


class InvalidMembers(ValueError):
    """Members of a body that make no timing: the messages by member name."""

    def __init__(self, messages: Mapping[str, list[str]]) -> None:
        super().__init__("; ".join(f"{name}: {' '.join(text)}" for name, text in messages.items()))
        self.messages = dict(messages)


class Notation(ABC):
    """One way to say when, as a body writes it (see the module docstring)."""

    # The registry's key, and the console's.
    name: ClassVar[str]
    # The console's words for it.
    label: ClassVar[str]
    # Its members of the ``schedule`` object; the first names it.
    members: ClassVar[tuple[Member, ...]]
    # Whether timezone, start, end and max_occurrences go with it.
    bounded: ClassVar[bool] = True
    # Members a body must give with it (besides the first).
    required: ClassVar[tuple[str, ...]] = ()
    # How its errors name the fields of the timing it makes: canonical name → as sent.
    names: ClassVar[Mapping[str, str]] = {}
    # How ``fire_if_past`` names it when it is a one-time schedule ("" if never), and whether
    # the console offers ``fire_if_past`` with it.
    one_time_words: ClassVar[str] = ""
    console_fire_if_past: ClassVar[bool] = False
    # How errors name it as a whole, if it is not ``bounded`` ("the {called} form", "give one
    # of …, or {given_as}").
    called: ClassVar[str] = ""
    given_as: ClassVar[str] = ""

    @property
    def form(self) -> str:
        """The member that names it in a body."""
        return self.members[0].name

    @abstractmethod
    def timing(self, members: Mapping[str, Any]) -> Timing:
        """The timing of a body's ``schedule`` object, its members read by kind (a ``DATE_TIME``
        a ``datetime``, an ``INTERVAL`` ``{"number", "unit"}``); ``InvalidMembers`` naming the
        members that make none."""

    def is_one_time(self, members: Mapping[str, Any]) -> bool:
        """Whether these members make a schedule that fires once."""
        return False


class TimingNotation(Notation):
    """A notation a stored ``Timing`` is in: ``Timing.kind`` is its ``name``, and its one member,
    named as it is and of its ``view_kind``, holds ``Timing.value`` (see the module docstring).
    A subclass says how the API documents that member and the console shows it (``member_*``,
    ``max_length``); ``members`` is made from them."""

    # Its words include its start: describe() leaves it out of the bounds it adds.
    describes_start: ClassVar[bool] = False
    # Said after "its occurrences are in the past" (a COUNT used up before acceptance).
    used_up_hint: ClassVar[str] = ""
    # How an answer shows its value (TEXT, an instant: DATE_TIME, INTERVAL), and says what it is.
    view_kind: ClassVar[MemberKind] = MemberKind.TEXT
    view_description: ClassVar[str] = ""
    # How the console's page of a schedule labels its value.
    view_label: ClassVar[str]
    # Its member, as Member has it: the console's label, the API's description, a placeholder,
    # the most characters of a TEXT.
    member_label: ClassVar[str]
    member_description: ClassVar[str] = ""
    member_example: ClassVar[str] = ""
    max_length: ClassVar[int] = 0

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.members = (
            Member(
                cls.name,
                cls.view_kind,
                description=cls.member_description,
                max_length=cls.max_length,
                label=cls.member_label,
                example=cls.member_example,
            ),
        )

    def timing(self, members: Mapping[str, Any]) -> Timing:
        bounds = {name: members.get(name) for name in ("start", "end", "max_occurrences")}
        value = self.from_body(members[self.form])
        return Timing(members.get("timezone", "UTC"), **bounds, **{self.name: value})

    def from_body(self, loaded: Any) -> Any:
        """Its value, from its member as the API read it."""
        return loaded

    def encode(self, value: Any) -> JSON:
        """Its value in a stored document."""
        return value

    def decode(self, document: JSON) -> Any:
        """Its value from a stored document."""
        return document

    def view(self, value: Any, zone: tzinfo) -> Any:
        """Its value as an answer shows it (``view_kind``)."""
        return value

    @abstractmethod
    def recurrence(self, timing: Timing, anchors: Anchors) -> Recurrence:
        """The engine of ``timing`` (not yet bounded by its start, end and max_occurrences).
        ``ValueError``, ``TypeError`` or ``OverflowError`` if its value cannot be read
        (``unreadable`` says why)."""

    def unreadable(self, error: Exception) -> str:
        """What is wrong with a value ``recurrence`` could not read."""
        return str(error)

    @abstractmethod
    def describe(self, timing: Timing) -> str:
        """When it fires, in English, without the zone and bounds ``shared.describe`` adds."""
