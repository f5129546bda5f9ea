"""The codes of ``budget`` (docs/policies.md).

It lives apart from :mod:`flakecore.codes` (which re-exports it) so that a
verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum

__all__ = ["BudgetCode"]


class BudgetCode(str, enum.Enum):
    """Codes of ``budget`` (docs/policies.md); ``INSUFFICIENT_BUDGET`` is a process error."""

    FIXTURE_DRIFT = "FIXTURE_DRIFT"  # parent and head fixture digests differ
    PROPERTY_MISS = "PROPERTY_MISS"  # the property fails on the parent fixture
    STABLE_FAIL = "STABLE_FAIL"  # 0 of N seeds passed
    STABLE_PASS = "STABLE_PASS"  # N of N passed: delete any freeze row
    FLAKE_CANDIDATE = "FLAKE_CANDIDATE"  # 1..N-1 passed: one ledger row
    INSUFFICIENT_BUDGET = "INSUFFICIENT_BUDGET"  # evidence unusable: ledger untouched
