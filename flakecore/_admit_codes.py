"""The codes of ``admit`` (docs/policies.md).

It lives apart from :mod:`flakecore.codes` (which re-exports it) so that a
verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum

__all__ = ["AdmitCode"]


class AdmitCode(str, enum.Enum):
    """Codes of ``admit`` (docs/policies.md)."""

    ACCEPT_PREEXISTING = "ACCEPT_PREEXISTING"  # base already missed: freeze allowed
    REJECT_INCOMPLETE = "REJECT_INCOMPLETE"  # evidence missing or malformed
    REJECT_BUDGET = "REJECT_BUDGET"  # attempts outside 1..cap, or no miss at all
    REJECT_PROPERTY_DRIFT = "REJECT_PROPERTY_DRIFT"  # property source differs
    REJECT_FIXTURE_EPOCH = "REJECT_FIXTURE_EPOCH"  # epochs disagree with the claim
    REJECT_PATCH_INTRODUCED = "REJECT_PATCH_INTRODUCED"  # only the patch misses
