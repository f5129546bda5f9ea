"""The codes of one test's attempts: adapter outcomes, their flags and attempt-log results.

They live apart from :mod:`flakecore.codes` (which re-exports them) so that a
policy verb, which never reads an adapter's report, does not build them.
"""

from __future__ import annotations

import enum

__all__ = ["AttemptFlag", "AttemptResult", "LogStatus", "Outcome"]


class Outcome(str, enum.Enum):
    """Outcome of one execution of one test, as adapters report it."""

    PASS = "pass"  # the test ran and passed
    FAIL = "fail"  # the test's own assertion failed: the only miss
    ERROR = "error"  # setup/teardown/collection/import error, hook failure, crash
    SKIP = "skip"  # skipped, xfail, disabled, failing TODO
    TIMEOUT = "timeout"  # killed for exceeding its time limit


class AttemptFlag(str, enum.Enum):
    """Why an adapter's attempt record cannot be taken at face value.

    Evidence carrying any flag cannot open a freeze: it is incomplete.
    """

    CONFLICTING_DUPLICATE = "conflicting-duplicate"  # one id in separate elements (any outcomes)
    UNEXPECTED_PASS = "unexpected-pass"  # an expected failure passed (xpass, passing TODO)
    BAILED_OUT = "bailed-out"  # recorded after the run announced it gave up (TAP Bail out!)
    INCOMPLETE_HISTORY = "incomplete-history"  # the report kept fewer attempts than ran
    STREAM_DEFECT = "stream-defect"  # the report as a whole is defective (TAP plan, cut, ...)


class AttemptResult(str, enum.Enum):
    """``result`` of one attempt-log line (README.md, evidence primitives)."""

    PASS = "pass"  # attempt passed
    MISS = "miss"  # the assertion failed
    ERROR = "error"  # started, but errored before a verdict
    SKIP = "skip"  # started, skipped
    TIMEOUT = "timeout"  # started, killed at its time limit

    @classmethod
    def from_outcome(cls, outcome: Outcome) -> AttemptResult:
        """Map an adapter outcome to a log result (``fail`` is a ``miss``)."""
        return cls.MISS if outcome is Outcome.FAIL else cls(outcome.value)


class LogStatus(str, enum.Enum):
    """Status of a reduced attempt log."""

    COMPLETE = "COMPLETE"  # every line checked, counts are exact
    INCOMPLETE = "INCOMPLETE"  # refused: counts must not be used
