"""flakecore: may this red test be frozen as a flake, or did the patch break it?

Four pure, typed policies decide from recorded evidence and fail closed:

- :func:`admit` — base-commit replay (freeze only if the base already missed);
- :func:`decide` — a second, clean runner must reproduce the flake;
- :func:`budget` — a fixed seed budget with five codes;
- :func:`classify` — one exit class per failing run, and the lease permission.

Each takes the evidence (a typed record or the plain JSON mapping) and a
keyword-only :class:`Policy`, and returns a frozen decision.  Importing this
package imports nothing; each name loads its module (``attrs`` and the
standard library only) when it is first used.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names below, for type checkers; at run time they load on first use
    from flakecore.admit import AdmitDecision, admit, freeze_record
    from flakecore.attempts import AttemptWriter, LogSummary, reduce_logs
    from flakecore.budget import BudgetDecision, budget, ledger_row
    from flakecore.classify import (
        ClassifyDecision,
        classify,
        freeze_allowed,
        lease_window_problems,
    )
    from flakecore.codes import (
        AdmitCode,
        AttemptFlag,
        AttemptResult,
        BudgetCode,
        ClassifyClass,
        DecideCode,
        FailureClass,
        LogStatus,
        Outcome,
        PolicyName,
        TrustReason,
    )
    from flakecore.decide import DecideDecision, decide
    from flakecore.decision import Decision
    from flakecore.digest import canonical_json_sha256, file_sha256, is_digest
    from flakecore.errors import FlakecoreError, InputError, LimitError, MissingExtra, UsageError
    from flakecore.evidence import Attempt, Source, blocking_flags
    from flakecore.identity import RunnerId, same_runner
    from flakecore.jsonio import load_object, loads_strict
    from flakecore.policy import DEFAULT_POLICY, DEFAULT_SEEDS, Policy, PolicySource
    from flakecore.records import (
        AdmitEvidence,
        BudgetPacket,
        ClassifyReport,
        DecidePacket,
        Replay,
    )

#: Where each public name lives.  Nothing is imported until a name is used,
#: so a CLI verb pays only for the modules it needs (docs/performance.md).
_HOMES: dict[str, tuple[str, ...]] = {
    "admit": ("AdmitDecision", "admit", "freeze_record"),
    "attempts": ("AttemptWriter", "LogSummary", "reduce_logs"),
    "budget": ("BudgetDecision", "budget", "ledger_row"),
    "classify": ("ClassifyDecision", "classify", "freeze_allowed", "lease_window_problems"),
    "codes": (
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
        "TrustReason",
    ),
    "decide": ("DecideDecision", "decide"),
    "decision": ("Decision",),
    "digest": ("canonical_json_sha256", "file_sha256", "is_digest"),
    "errors": ("FlakecoreError", "InputError", "LimitError", "MissingExtra", "UsageError"),
    "evidence": ("Attempt", "Source", "blocking_flags"),
    "identity": ("RunnerId", "same_runner"),
    "jsonio": ("load_object", "loads_strict"),
    "policy": ("DEFAULT_POLICY", "DEFAULT_SEEDS", "Policy", "PolicySource"),
    "records": ("AdmitEvidence", "BudgetPacket", "ClassifyReport", "DecidePacket", "Replay"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def _version() -> str:
    """The installed version: the build writes pyproject's into ``_version.py`` (no scan)."""
    try:
        return str(importlib.import_module("flakecore._version").VERSION)
    except ImportError:  # a source tree that was never built: the installed metadata, if any
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415 - slow

        try:
            return version("flakecore")
        except PackageNotFoundError:  # pragma: no cover - not installed at all
            return "0+unknown"


def __getattr__(name: str) -> object:
    """Load a public name (or ``__version__``) on first use, then keep it."""
    if name == "__version__":
        value: object = _version()
    elif name in _HOME_OF:
        value = getattr(importlib.import_module(f"flakecore.{_HOME_OF[name]}"), name)
    else:
        raise AttributeError(f"module 'flakecore' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """This package, whose ``admit``, ``budget``, ``classify`` and ``decide`` stay functions.

    Importing a submodule binds it as an attribute of its package, so a
    verb's ``from flakecore.decide import decide`` would make
    ``flakecore.decide`` the module; that binding is skipped for the public
    names, which :func:`__getattr__` loads instead.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _HOME_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_SEEDS",
    "AdmitCode",
    "AdmitDecision",
    "AdmitEvidence",
    "Attempt",
    "AttemptFlag",
    "AttemptResult",
    "AttemptWriter",
    "BudgetCode",
    "BudgetDecision",
    "BudgetPacket",
    "ClassifyClass",
    "ClassifyDecision",
    "ClassifyReport",
    "DecideCode",
    "DecideDecision",
    "DecidePacket",
    "Decision",
    "FailureClass",
    "FlakecoreError",
    "InputError",
    "LimitError",
    "LogStatus",
    "LogSummary",
    "MissingExtra",
    "Outcome",
    "Policy",
    "PolicyName",
    "PolicySource",
    "Replay",
    "RunnerId",
    "Source",
    "TrustReason",
    "UsageError",
    "__version__",
    "admit",
    "blocking_flags",
    "budget",
    "canonical_json_sha256",
    "classify",
    "decide",
    "file_sha256",
    "freeze_allowed",
    "freeze_record",
    "is_digest",
    "lease_window_problems",
    "ledger_row",
    "load_object",
    "loads_strict",
    "reduce_logs",
    "same_runner",
]
