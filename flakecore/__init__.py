"""flakecore: may this red test be frozen as a flake, or did the patch break it?

Four pure, typed policies decide from recorded evidence and fail closed:

- :func:`admit` — base-commit replay (freeze only if the base already missed);
- :func:`decide` — a second, clean runner must reproduce the flake;
- :func:`budget` — a fixed seed budget with five codes;
- :func:`classify` — one exit class per failing run, and the lease permission.

Each takes the evidence (a typed record or the plain JSON mapping) and a
keyword-only :class:`Policy`, and returns a frozen decision.  Importing this
package imports only ``attrs`` and the standard library.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from flakecore.admit import AdmitDecision, admit, freeze_record
from flakecore.attempts import AttemptWriter, LogSummary, reduce_logs
from flakecore.budget import BudgetDecision, budget, ledger_row
from flakecore.classify import ClassifyDecision, classify, freeze_allowed, lease_window_problems
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
from flakecore.records import AdmitEvidence, BudgetPacket, ClassifyReport, DecidePacket, Replay

try:
    __version__ = version("flakecore")
except PackageNotFoundError:  # pragma: no cover - running from an unbuilt tree
    __version__ = "0+unknown"

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
