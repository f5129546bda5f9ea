"""Per-execution evidence that adapters build from third-party test reports.

Adapters (``flakecore_adapters``) turn JUnit XML, pytest JSON and TAP into
:class:`Attempt` records; the core never imports them.  One record is one
execution: reruns are separate attempts, in order, never merged.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from flakecore._fields import MAX_SAFE_INTEGER
from flakecore.codes import AttemptFlag, Outcome

__all__ = [
    "ATTEMPT_RECORD_FORMAT",
    "Attempt",
    "Source",
    "blocking_flags",
    "duration_or_none",
    "trusted_attempt",
    "trusted_source",
]

#: ``format`` field of an attempt record (schemas/attempt-record.v1.json).
ATTEMPT_RECORD_FORMAT = "flakecore.attempt-record"


def duration_or_none(value: float | None) -> float | None:
    """A duration outside 0..2**53-1 seconds (or NaN) is unknown, not zero (docs/trust.md)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= MAX_SAFE_INTEGER else None  # NaN compares false


@attrs.frozen(kw_only=True)
class Source:
    """Where an attempt was read from, in the report's own terms."""

    file: str
    """Report file as given on the command line (``-`` for stdin)."""
    format: str
    """``junit``, ``pytest-json``, ``pytest-reportlog`` or ``tap``."""
    line: int | None = None
    """1-based line in the report where the record starts, when known."""
    classname: str | None = None
    """JUnit ``classname`` attribute."""
    name: str | None = None
    """JUnit ``name`` attribute, or pytest's test name."""
    suite: str | None = None
    """Enclosing JUnit suite name."""
    number: int | None = None
    """TAP test point number."""
    description: str | None = None
    """TAP description, directive removed."""
    subtest_path: tuple[str, ...] = ()
    """TAP: names of the enclosing subtests, outermost first."""

    def to_json(self) -> dict[str, object]:
        """Only the fields this format has."""
        data: dict[str, object] = {}
        for key, value in attrs.asdict(self).items():
            if value is not None and value != ():
                data[key] = list(value) if isinstance(value, tuple) else value
        return data


@attrs.frozen(kw_only=True)
class Attempt:
    """One execution of one test, as a report recorded it.

    ``native`` keeps the runner's own word (``xfailed``, ``flakyFailure``,
    ``not ok # TODO``) beside the normalized ``outcome``; ``attempt`` is
    1-based per ``test_id`` within one input.
    """

    test_id: str
    outcome: Outcome
    native: str
    attempt: int
    source: Source
    duration_s: float | None = attrs.field(default=None, converter=duration_or_none)
    message: str | None = None
    flags: frozenset[AttemptFlag] = frozenset()

    @property
    def is_miss(self) -> bool:
        """Only an assertion failure is a miss (README.md, evidence primitives)."""
        return self.outcome is Outcome.FAIL

    def to_json(self) -> dict[str, object]:
        """The attempt record (schemas/attempt-record.v1.json), one JSON Lines row."""
        return {
            "format": ATTEMPT_RECORD_FORMAT,
            "format_version": "1.0",
            "test_id": self.test_id,
            "outcome": self.outcome.value,
            "native": self.native,
            "attempt": self.attempt,
            "duration_s": self.duration_s,
            "message": self.message,
            "flags": sorted(f.value for f in self.flags),
            "source": self.source.to_json(),
        }


_new = object.__new__
_SOURCE_SLOTS = tuple(
    Source.__dict__[name].__set__
    for name in (
        "file",
        "format",
        "line",
        "classname",
        "name",
        "suite",
        "number",
        "description",
        "subtest_path",
    )
)
_ATTEMPT_SLOTS = tuple(
    Attempt.__dict__[name].__set__
    for name in (
        "test_id",
        "outcome",
        "native",
        "attempt",
        "source",
        "duration_s",
        "message",
        "flags",
    )
)


def trusted_source(  # noqa: PLR0917 - Source's fields in order, for a hot path
    file: str,
    format: str,
    line: int | None = None,
    classname: str | None = None,
    name: str | None = None,
    suite: str | None = None,
    number: int | None = None,
    description: str | None = None,
    subtest_path: tuple[str, ...] = (),
) -> Source:
    """``Source(...)`` for callers whose values already have the field types (adapters).

    Equal to the keyword constructor's result; about 3x cheaper, because a
    frozen attrs ``__init__`` pays for one guarded ``object.__setattr__`` per field.
    """
    src = _new(Source)
    f0, f1, f2, f3, f4, f5, f6, f7, f8 = _SOURCE_SLOTS
    f0(src, file)
    f1(src, format)
    f2(src, line)
    f3(src, classname)
    f4(src, name)
    f5(src, suite)
    f6(src, number)
    f7(src, description)
    f8(src, subtest_path)
    return src


def trusted_attempt(  # noqa: PLR0917 - Attempt's fields in order, for a hot path
    test_id: str,
    outcome: Outcome,
    native: str,
    attempt: int,
    source: Source,
    duration_s: float | None = None,
    message: str | None = None,
    flags: frozenset[AttemptFlag] = frozenset(),
) -> Attempt:
    """``Attempt(...)`` for callers whose values already have the field types (adapters).

    ``duration_s`` goes through the same conversion as in the constructor.
    """
    obj = _new(Attempt)
    f0, f1, f2, f3, f4, f5, f6, f7 = _ATTEMPT_SLOTS
    f0(obj, test_id)
    f1(obj, outcome)
    f2(obj, native)
    f3(obj, attempt)
    f4(obj, source)
    f5(obj, duration_or_none(duration_s))
    f6(obj, message)
    f7(obj, flags)
    return obj


def blocking_flags(attempts: Iterable[Attempt]) -> frozenset[AttemptFlag]:
    """Every flag carried by the evidence; non-empty means it cannot open a freeze."""
    found: set[AttemptFlag] = set()
    for attempt in attempts:
        found |= attempt.flags
    return frozenset(found)
