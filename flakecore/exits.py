"""The one exit-code table (docs/policies.md, exit codes).

CI scripts branch on these numbers; other tools call this module rather than
copying the table.  Policy refusals use small numbers; input and usage
problems use the sysexits range (64-78), which no policy uses, so "the
evidence said no" is never confused with "the evidence could not be read".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; at run time each table is built on first use
    from flakecore.codes import (
        AdmitCode,
        BudgetCode,
        ClassifyClass,
        DecideCode,
        LogStatus,
        TriageVerdict,
    )

    ADMIT_EXIT: Mapping[AdmitCode, int]
    DECIDE_EXIT: Mapping[DecideCode, int]
    BUDGET_EXIT: Mapping[BudgetCode, int]
    #: ``classify`` exits by class; ``FLAKE`` exits 4 only when the lease may open.
    CLASSIFY_EXIT: Mapping[ClassifyClass, int]
    ATTEMPTS_EXIT: Mapping[LogStatus, int]
    #: ``triage``: each red test's verdict, and its exit.  A run exits with the exit of
    #: its most serious verdict, in this order (a regression first, then the rest).
    TRIAGE_EXIT: Mapping[TriageVerdict, int]

__all__ = [
    "ADMIT_EXIT",
    "ATTEMPTS_EXIT",
    "BUDGET_EXIT",
    "CLASSIFY_EXIT",
    "CLASSIFY_FLAKE_LEASE_REFUSED",
    "DECIDE_EXIT",
    "EXIT_CANTCREAT",
    "EXIT_DATAERR",
    "EXIT_GUARD_TRIPPED",
    "EXIT_INVALID_RECORDS",
    "EXIT_IOERR",
    "EXIT_LEASE_REFUSED",
    "EXIT_NOINPUT",
    "EXIT_OK",
    "EXIT_SOFTWARE",
    "EXIT_USAGE",
    "INPUT_EXITS",
    "TRIAGE_EXIT",
    "TRIAGE_NOTHING_RED",
    "VALIDATE_INVALID",
    "triage_exit",
]

EXIT_OK = 0
#: Bad command line (unknown verb or flag, missing argument).
EXIT_USAGE = 64
#: Input read but unusable: not JSON/XML/TAP, malformed, hostile, over a limit.
EXIT_DATAERR = 65
#: Input file missing or unreadable.
EXIT_NOINPUT = 66
#: A bug in flakecore; still a refusal, never an accept.
EXIT_SOFTWARE = 70
#: An output file could not be created.
EXIT_CANTCREAT = 73
#: An I/O error while reading or writing.
EXIT_IOERR = 74

#: Exits that mean "could not use the input", as opposed to a policy verdict.
INPUT_EXITS = frozenset({EXIT_USAGE, EXIT_DATAERR, EXIT_NOINPUT, EXIT_IOERR, EXIT_CANTCREAT})


#: A ``FLAKE`` whose lease is refused (blank owner, bad or out-of-window expiry).
CLASSIFY_FLAKE_LEASE_REFUSED = 6


#: ``flakecore validate``: a record was read, and its JSON Schema refuses it.
VALIDATE_INVALID = 1

#: ``lease open``: classify allowed the freeze, but the lease cannot be written
#: (roles not apart, patch author or canary unknown, no pinned digest, a renewal).
EXIT_LEASE_REFUSED = 7
#: ``lease check`` / ``lease show``: at least one stored record is invalid.
EXIT_INVALID_RECORDS = 8
#: ``guard``: one diff touches both fixture/oracle/test paths and ledger/lease paths.
EXIT_GUARD_TRIPPED = 9


#: ``triage``: the evidence holds no red test, so nothing can be accepted (fail closed:
#: a run that was red for a reason the evidence does not show must not pass).
TRIAGE_NOTHING_RED = 11


def triage_exit(verdicts: Iterable[TriageVerdict]) -> int:
    """The exit of a triage run: its most serious verdict's, or 11 when no test was red."""
    found = set(verdicts)
    if not found:
        return TRIAGE_NOTHING_RED
    table = _table("TRIAGE_EXIT")
    return next(table[v] for v in table if v in found)


# -- the policies' tables, each built (with its codes) when first used ----------------
#
# A verb builds only the codes it uses (docs/performance.md), so each table is
# made by its function below the first time the module's attribute is read.


def _admit_exit() -> Mapping[AdmitCode, int]:
    from flakecore.codes import AdmitCode  # noqa: PLC0415 - built on first use

    return MappingProxyType(
        {
            AdmitCode.ACCEPT_PREEXISTING: 0,
            AdmitCode.REJECT_INCOMPLETE: 1,
            AdmitCode.REJECT_PROPERTY_DRIFT: 2,
            AdmitCode.REJECT_FIXTURE_EPOCH: 3,
            AdmitCode.REJECT_PATCH_INTRODUCED: 4,
            AdmitCode.REJECT_BUDGET: 5,
        }
    )


def _decide_exit() -> Mapping[DecideCode, int]:
    from flakecore.codes import DecideCode  # noqa: PLC0415 - built on first use

    return MappingProxyType(
        {
            DecideCode.ELIGIBLE: 0,
            DecideCode.MISSING_FIELD: 2,
            DecideCode.CLEAN_RUN_UNAVAILABLE: 4,
            DecideCode.NOT_DISTINCT_RUNNER: 4,
            DecideCode.NOT_FLAKE_SHAPED: 3,
            DecideCode.CLASS_MISMATCH: 3,
            DecideCode.FIXTURE_DRIFT: 3,
            DecideCode.INPUT_DRIFT: 3,
            DecideCode.PROPERTY_OWNS_BUG: 3,
        }
    )


def _budget_exit() -> Mapping[BudgetCode, int]:
    from flakecore.codes import BudgetCode  # noqa: PLC0415 - built on first use

    return MappingProxyType(
        {
            BudgetCode.FLAKE_CANDIDATE: 0,
            BudgetCode.INSUFFICIENT_BUDGET: 1,
            BudgetCode.PROPERTY_MISS: 2,
            BudgetCode.FIXTURE_DRIFT: 3,
            BudgetCode.STABLE_FAIL: 5,
            BudgetCode.STABLE_PASS: 6,
        }
    )


def _classify_exit() -> Mapping[ClassifyClass, int]:
    from flakecore.codes import ClassifyClass  # noqa: PLC0415 - built on first use

    return MappingProxyType(
        {
            ClassifyClass.INCOMPLETE: 1,
            ClassifyClass.PROPERTY: 2,
            ClassifyClass.FIXTURE: 3,
            ClassifyClass.FLAKE: 4,
            ClassifyClass.STABLE_RED: 5,
        }
    )


def _attempts_exit() -> Mapping[LogStatus, int]:
    from flakecore.codes import LogStatus  # noqa: PLC0415 - built on first use

    return MappingProxyType({LogStatus.COMPLETE: 0, LogStatus.INCOMPLETE: 1})


def _triage_exit() -> Mapping[TriageVerdict, int]:
    from flakecore.codes import TriageVerdict  # noqa: PLC0415 - built on first use

    return MappingProxyType(
        {
            TriageVerdict.REJECT_TOO_MANY_RED: 10,
            TriageVerdict.REJECT_PATCH_INTRODUCED: 4,
            TriageVerdict.REJECT_POLICY: 5,
            TriageVerdict.REJECT_ERROR: 3,
            TriageVerdict.REJECT_INCOMPLETE: 1,
            TriageVerdict.ACCEPT_PREEXISTING: 0,
        }
    )


_TABLES: dict[str, Callable[[], Mapping[Any, int]]] = {
    "ADMIT_EXIT": _admit_exit,
    "DECIDE_EXIT": _decide_exit,
    "BUDGET_EXIT": _budget_exit,
    "CLASSIFY_EXIT": _classify_exit,
    "ATTEMPTS_EXIT": _attempts_exit,
    "TRIAGE_EXIT": _triage_exit,
}


def _table(name: str) -> Mapping[Any, int]:
    """The table ``name``, built now if this is its first use (and kept: one object)."""
    built: Mapping[Any, int] | None = globals().get(name)
    if built is None:
        built = globals()[name] = _TABLES[name]()
    return built


def __getattr__(name: str) -> object:
    """A policy's exit table, built on first use and then kept here."""
    if name not in _TABLES:
        raise AttributeError(f"module 'flakecore.exits' has no attribute {name!r}")
    return _table(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
