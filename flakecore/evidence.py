"""Per-execution evidence that adapters build from third-party test reports.

Adapters (``flakecore_adapters``) turn JUnit XML, pytest JSON and TAP into
:class:`Attempt` records; the core never imports them.  One record is one
execution: reruns are separate attempts, in order, never merged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from flakecore.codes import AttemptFlag, Outcome

__all__ = ["ATTEMPT_RECORD_FORMAT", "Attempt", "Source", "blocking_flags"]

#: ``format`` field of an attempt record (schemas/attempt-record.v1.json).
ATTEMPT_RECORD_FORMAT = "flakecore.attempt-record"


def _duration(value: float | None) -> float | None:
    """A duration that is not finite and non-negative is unknown, not zero."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


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
    duration_s: float | None = attrs.field(default=None, converter=_duration)
    message: str | None = None
    flags: frozenset[AttemptFlag] = frozenset()

    @property
    def is_miss(self) -> bool:
        """Only an assertion failure is a miss (SPEC 2)."""
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


def blocking_flags(attempts: Iterable[Attempt]) -> frozenset[AttemptFlag]:
    """Every flag carried by the evidence; non-empty means it cannot open a freeze."""
    found: set[AttemptFlag] = set()
    for attempt in attempts:
        found |= attempt.flags
    return frozenset(found)
