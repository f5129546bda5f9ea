"""The value every policy returns: a code, why, the exit, and the policy used."""

from __future__ import annotations

import enum
from typing import Any, Generic, TypeVar

import attrs

from flakecore.codes import PolicyName
from flakecore.policy import PolicySource

__all__ = ["DECISION_FORMAT", "DECISION_FORMAT_VERSION", "Decision"]

#: ``format`` field of a decision record (schemas/decision.v1.json).
DECISION_FORMAT = "flakecore.decision"
#: 1.1 added the optional ``policy_source``; a 1.0 reader may ignore it.
DECISION_FORMAT_VERSION = "1.1"

CodeT = TypeVar("CodeT", bound=enum.Enum)


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(cls: type[Decision[Any]]) -> tuple[str, ...]:
    """The attribute names of a decision class, its base's included."""
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = tuple(field.name for field in attrs.fields(cls))
    return names


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
    policy_source: PolicySource | None = None
    """Where ``policy_values`` came from; set by whoever loaded them (the policies are pure)."""

    def with_policy_source(self, source: PolicySource) -> Decision[CodeT]:
        """This verdict, recording where its policy came from.

        What ``attrs.evolve(self, policy_source=source)`` gives (no field of a
        decision validates or converts), as one copy of the slots: the CLI
        calls it for every decision it prints.
        """
        new = object.__new__(type(self))
        for name in _slots(type(self)):
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "policy_source", source)
        return new

    def to_json(self) -> dict[str, object]:
        """The decision record (schemas/decision.v1.json)."""
        source = self.policy_source
        return self.record(None if source is None else source.to_json())

    def record(self, policy_source: dict[str, object] | None) -> dict[str, object]:
        """The decision record with ``policy_source`` as its source's JSON (None: it has none).

        ``with_policy_source(s).to_json()`` is ``record(s.to_json())``: a
        printer of many decisions from one policy encodes that source once.
        """
        data: dict[str, object] = {
            "format": DECISION_FORMAT,
            "format_version": DECISION_FORMAT_VERSION,
            "policy": self.policy.value,
            "code": self.code.value,
            "exit": self.exit_code,
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "policy_values": dict(self.policy_values),
        }
        if policy_source is not None:
            data["policy_source"] = policy_source
        return data
