"""The codes of ``decide`` and the failure classes its packets name (docs/policies.md).

They live apart from :mod:`flakecore.codes` (which re-exports them) so that a
verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum

__all__ = ["DecideCode", "FailureClass"]


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


class FailureClass(str, enum.Enum):
    """Failure classes of a run in a ``decide`` packet (closed set)."""

    FLAKE_SHAPED = "flake_shaped"  # nondeterministic failure on a minimized input
    DETERMINISTIC = "deterministic"  # fails every time: fix or revert
    ENVIRONMENT = "environment"  # the environment, not the code, failed
    PASS = "pass"  # the clean run did not fail
