"""The one exit-code table (docs/policies.md, exit codes).

CI scripts branch on these numbers; other tools call this module rather than
copying the table.  Policy refusals use small numbers; input and usage
problems use the sysexits range (64-78), which no policy uses, so "the
evidence said no" is never confused with "the evidence could not be read".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


# -- the policies' tables, each built (with its codes) when first read ----------------
#
# A verb builds only the codes it uses (docs/performance.md): each table is
# written here by its codes' names, in order, and made into the mapping of
# its codes the first time the module's attribute is read.

#: Each table: the code set (a name in :mod:`flakecore.codes`) and the exit of each code.
_TABLES: Mapping[str, tuple[str, Mapping[str, int]]] = {
    "ADMIT_EXIT": (
        "AdmitCode",
        {
            "ACCEPT_PREEXISTING": 0,
            "REJECT_INCOMPLETE": 1,
            "REJECT_PROPERTY_DRIFT": 2,
            "REJECT_FIXTURE_EPOCH": 3,
            "REJECT_PATCH_INTRODUCED": 4,
            "REJECT_BUDGET": 5,
        },
    ),
    "DECIDE_EXIT": (
        "DecideCode",
        {
            "ELIGIBLE": 0,
            "MISSING_FIELD": 2,
            "CLEAN_RUN_UNAVAILABLE": 4,
            "NOT_DISTINCT_RUNNER": 4,
            "NOT_FLAKE_SHAPED": 3,
            "CLASS_MISMATCH": 3,
            "FIXTURE_DRIFT": 3,
            "INPUT_DRIFT": 3,
            "PROPERTY_OWNS_BUG": 3,
        },
    ),
    "BUDGET_EXIT": (
        "BudgetCode",
        {
            "FLAKE_CANDIDATE": 0,
            "INSUFFICIENT_BUDGET": 1,
            "PROPERTY_MISS": 2,
            "FIXTURE_DRIFT": 3,
            "STABLE_FAIL": 5,
            "STABLE_PASS": 6,
        },
    ),
    "CLASSIFY_EXIT": (
        "ClassifyClass",
        {
            "INCOMPLETE": 1,
            "PROPERTY": 2,
            "FIXTURE": 3,
            "FLAKE": 4,
            "STABLE_RED": 5,
        },
    ),
    "ATTEMPTS_EXIT": (
        "LogStatus",
        {
            "COMPLETE": 0,
            "INCOMPLETE": 1,
        },
    ),
    "TRIAGE_EXIT": (
        "TriageVerdict",
        {
            "REJECT_TOO_MANY_RED": 10,
            "REJECT_PATCH_INTRODUCED": 4,
            "REJECT_POLICY": 5,
            "REJECT_ERROR": 3,
            "REJECT_INCOMPLETE": 1,
            "ACCEPT_PREEXISTING": 0,
        },
    ),
}


def _table(name: str) -> Mapping[Any, int]:
    """The table ``name``, built now if this is its first use (and kept: one object)."""
    built: Mapping[Any, int] | None = globals().get(name)
    if built is None:
        from flakecore import codes  # noqa: PLC0415 - only the table's own codes are built

        code_set, exits = _TABLES[name]
        members = getattr(codes, code_set)
        built = globals()[name] = MappingProxyType({members[k]: v for k, v in exits.items()})
    return built


def __getattr__(name: str) -> object:
    """A policy's exit table, built on first use and then kept here."""
    if name not in _TABLES:
        raise AttributeError(f"module 'flakecore.exits' has no attribute {name!r}")
    return _table(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
