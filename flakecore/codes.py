"""Closed sets of wire strings: outcomes, results and every policy's codes.

Each enum's *values* are the exact strings of docs/policies.md; they are what JSON
records and other languages see.  Anything not in these sets is unknown, and
an unknown code is a refusal.  The codes of attempts (:class:`Outcome`,
:class:`AttemptFlag`, :class:`AttemptResult`) and :class:`TrustReason` are
kept in their own modules and loaded on first use: the policy verbs use
none of them (docs/performance.md).
"""

from __future__ import annotations

import enum
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers; at run time they load on first use
    from flakecore._attempt_codes import AttemptFlag, AttemptResult, Outcome
    from flakecore._trust_codes import TrustReason

__all__ = [
    "AdmitCode",
    "AttemptFlag",
    "AttemptResult",
    "BudgetCode",
    "ClassifyClass",
    "DecideCode",
    "FailureClass",
    "LogStatus",
    "Outcome",
    "PolicyName",
    "TriageVerdict",
    "TrustReason",
]


class PolicyName(str, enum.Enum):
    """The four admission policies."""

    ADMIT = "admit"  # base-commit replay (docs/policies.md)
    DECIDE = "decide"  # clean-runner vote (docs/policies.md)
    BUDGET = "budget"  # fixed seed budget (docs/policies.md)
    CLASSIFY = "classify"  # exit classes and the lease (docs/policies.md)


class LogStatus(str, enum.Enum):
    """Status of a reduced attempt log."""

    COMPLETE = "COMPLETE"  # every line checked, counts are exact
    INCOMPLETE = "INCOMPLETE"  # refused: counts must not be used


class AdmitCode(str, enum.Enum):
    """Codes of ``admit`` (docs/policies.md)."""

    ACCEPT_PREEXISTING = "ACCEPT_PREEXISTING"  # base already missed: freeze allowed
    REJECT_INCOMPLETE = "REJECT_INCOMPLETE"  # evidence missing or malformed
    REJECT_BUDGET = "REJECT_BUDGET"  # attempts outside 1..cap, or no miss at all
    REJECT_PROPERTY_DRIFT = "REJECT_PROPERTY_DRIFT"  # property source differs
    REJECT_FIXTURE_EPOCH = "REJECT_FIXTURE_EPOCH"  # epochs disagree with the claim
    REJECT_PATCH_INTRODUCED = "REJECT_PATCH_INTRODUCED"  # only the patch misses


class DecideCode(str, enum.Enum):
    """Codes of ``decide`` (docs/policies.md): one per row of its table."""

    ELIGIBLE = "ELIGIBLE"  # a distinct clean runner reproduced the flake
    MISSING_FIELD = "MISSING_FIELD"  # identity field absent/blank, or a field malformed
    CLEAN_RUN_UNAVAILABLE = "CLEAN_RUN_UNAVAILABLE"  # no completed clean run echoing its inputs
    NOT_DISTINCT_RUNNER = "NOT_DISTINCT_RUNNER"  # local and clean runner are the same
    NOT_FLAKE_SHAPED = "NOT_FLAKE_SHAPED"  # deterministic/environment: fix or revert
    CLASS_MISMATCH = "CLASS_MISMATCH"  # clean run classed differently (or passed)
    FIXTURE_DRIFT = "FIXTURE_DRIFT"  # clean run loaded another fixture
    INPUT_DRIFT = "INPUT_DRIFT"  # clean run replayed another input
    PROPERTY_OWNS_BUG = "PROPERTY_OWNS_BUG"  # the property cohort did not pass


class BudgetCode(str, enum.Enum):
    """Codes of ``budget`` (docs/policies.md); ``INSUFFICIENT_BUDGET`` is a process error."""

    FIXTURE_DRIFT = "FIXTURE_DRIFT"  # parent and head fixture digests differ
    PROPERTY_MISS = "PROPERTY_MISS"  # the property fails on the parent fixture
    STABLE_FAIL = "STABLE_FAIL"  # 0 of N seeds passed
    STABLE_PASS = "STABLE_PASS"  # N of N passed: delete any freeze row
    FLAKE_CANDIDATE = "FLAKE_CANDIDATE"  # 1..N-1 passed: one ledger row
    INSUFFICIENT_BUDGET = "INSUFFICIENT_BUDGET"  # evidence unusable: ledger untouched


class ClassifyClass(str, enum.Enum):
    """Exit classes of ``classify`` (docs/policies.md)."""

    INCOMPLETE = "INCOMPLETE"  # verdict/pin missing, budget not filled, origin unknown
    FIXTURE = "FIXTURE"  # the fixture pin does not match
    PROPERTY = "PROPERTY"  # the property fails: the code owns the bug
    STABLE_RED = "STABLE_RED"  # red on every replay
    FLAKE = "FLAKE"  # at least one green in a full budget


class FailureClass(str, enum.Enum):
    """Failure classes of a run in a ``decide`` packet (closed set)."""

    FLAKE_SHAPED = "flake_shaped"  # nondeterministic failure on a minimized input
    DETERMINISTIC = "deterministic"  # fails every time: fix or revert
    ENVIRONMENT = "environment"  # the environment, not the code, failed
    PASS = "pass"  # the clean run did not fail


class TriageVerdict(str, enum.Enum):
    """What ``flakecore triage`` says about one red test of a patch's CI run.

    Only ``ACCEPT_PREEXISTING`` accepts: every configured policy accepted.
    The policy code that decided is reported beside it.
    """

    ACCEPT_PREEXISTING = "ACCEPT_PREEXISTING"  # base already missed it; every policy agrees
    REJECT_PATCH_INTRODUCED = "REJECT_PATCH_INTRODUCED"  # the patch broke it (admit says so)
    REJECT_TOO_MANY_RED = "REJECT_TOO_MANY_RED"  # more red tests than the policy allows: regression
    REJECT_POLICY = "REJECT_POLICY"  # another refusal of a configured policy (drift, stable, ...)
    REJECT_ERROR = "REJECT_ERROR"  # an error or timeout (set-up, collection): never a flake
    REJECT_INCOMPLETE = "REJECT_INCOMPLETE"  # the evidence cannot decide (no pinned seed, ...)


#: The module of each code kept apart from this one.
_HOMES = {
    "AttemptFlag": "_attempt_codes",
    "AttemptResult": "_attempt_codes",
    "Outcome": "_attempt_codes",
    "TrustReason": "_trust_codes",
}


def __getattr__(name: str) -> object:
    """Load a code kept apart on first use, then keep it here."""
    if name not in _HOMES:
        raise AttributeError(f"module 'flakecore.codes' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"flakecore.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
