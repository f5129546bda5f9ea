"""The verdicts of ``flakecore triage`` (docs/triage.md).

It lives apart from :mod:`flakecore.codes` (which re-exports it) so that a
verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum

__all__ = ["TriageVerdict"]


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
