"""Closed sets of wire strings: outcomes, results and every policy's codes.

Each enum's *values* are the exact strings of docs/policies.md; they are what JSON
records and other languages see.  Anything not in these sets is unknown, and
an unknown code is a refusal.  Only :class:`PolicyName` is built here; every
other set is kept in a module of its own and loaded on first use (the codes
of attempts, :class:`Outcome`, :class:`AttemptFlag`, :class:`AttemptResult`
and :class:`LogStatus`, together; ``decide``'s with :class:`FailureClass`),
so a verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type checkers; at run time they load on first use
    from flakecore._admit_codes import AdmitCode
    from flakecore._attempt_codes import AttemptFlag, AttemptResult, LogStatus, Outcome
    from flakecore._budget_codes import BudgetCode
    from flakecore._classify_codes import ClassifyClass
    from flakecore._decide_codes import DecideCode, FailureClass
    from flakecore._triage_codes import TriageVerdict
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


#: The module of each code kept apart from this one.
_HOMES = {
    "AdmitCode": "_admit_codes",
    "AttemptFlag": "_attempt_codes",
    "AttemptResult": "_attempt_codes",
    "BudgetCode": "_budget_codes",
    "ClassifyClass": "_classify_codes",
    "DecideCode": "_decide_codes",
    "FailureClass": "_decide_codes",
    "LogStatus": "_attempt_codes",
    "Outcome": "_attempt_codes",
    "TriageVerdict": "_triage_codes",
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
