"""The value every policy returns: a code, why, the exit, and the policy used."""

from __future__ import annotations

import enum
from typing import Generic, TypeVar

import attrs

from flakecore.codes import PolicyName

__all__ = ["DECISION_FORMAT", "Decision"]

#: ``format`` field of a decision record (schemas/decision.v1.json).
DECISION_FORMAT = "flakecore.decision"

CodeT = TypeVar("CodeT", bound=enum.Enum)


@attrs.frozen(kw_only=True)
class Decision(Generic[CodeT]):
    """One policy verdict.  Verdicts are values: refusing never raises.

    ``accepted`` is true only for the one code each policy accepts with
    (``ELIGIBLE``, ``ACCEPT_PREEXISTING``, ``FLAKE_CANDIDATE``, a ``FLAKE``
    whose lease may open); callers that meet an unknown code must refuse.
    """

    policy: PolicyName
    code: CodeT
    exit_code: int
    accepted: bool
    reasons: tuple[str, ...]
    policy_values: dict[str, object] = attrs.field(factory=dict, hash=False)

    def to_json(self) -> dict[str, object]:
        """The decision record (schemas/decision.v1.json)."""
        return {
            "format": DECISION_FORMAT,
            "format_version": "1.0",
            "policy": self.policy.value,
            "code": self.code.value,
            "exit": self.exit_code,
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "policy_values": dict(self.policy_values),
        }
