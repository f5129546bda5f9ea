"""The value every policy returns: a code, why, the exit, and the policy used."""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from flakecore.codes import PolicyName
from flakecore.jsonio import compact_text, compact_value, quote
from flakecore.policy import PolicySource

__all__ = [
    "DECISION_FORMAT",
    "DECISION_FORMAT_VERSION",
    "Decision",
    "slot_setters",
    "trusted_decision",
]

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
        data.update(self.record_extras())
        return data

    def record_extras(self) -> dict[str, object]:
        """The fields a kind of decision records after ``policy_source`` (none here).

        Their names are strings, and neither a base field nor ``input``.
        """
        return {}

    def record_text(self, policy_source: str | None, input: str) -> str:
        """``compact_text({**record(source), "input": input})``, ``policy_source`` as text.

        A printer of many decisions encodes the policy source once, and the
        fields that depend only on the code (format to ``accepted``) once per
        code; each record then encodes only its reasons, its values (once
        per distinct values) and its ``input``.
        """
        exit_code, accepted = self.exit_code, self.accepted
        if type(exit_code) is not int or type(accepted) is not bool:  # the encoder's case
            source = None if policy_source is None else json.loads(policy_source)
            return compact_text({**self.record(source), "input": input})
        parts = [
            _head(self.policy, self.code, exit_code, accepted),
            compact_value(self.reasons if type(self.reasons) is tuple else list(self.reasons)),
            ',"policy_values":',
            _values_text(self.policy_values),
        ]
        if policy_source is not None:
            parts += ',"policy_source":', policy_source
        parts += self.extras_text(), ',"input":', quote(input), "}"
        return "".join(parts)

    def extras_text(self) -> str:
        """:meth:`record_extras` as :meth:`record_text` writes them: ``,"key":value`` each."""
        return "".join(
            f",{quote(key)}:{compact_value(value)}" for key, value in self.record_extras().items()
        )


_new = object.__new__


def slot_setters(cls: type[Decision[Any]]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of ``cls``'s fields, in order: they write past the frozen setattr."""
    return tuple(getattr(cls, name).__set__ for name in _slots(cls))


_SETTERS = slot_setters(Decision)


def trusted_decision(  # noqa: PLR0917 - Decision's fields in order, for a hot path
    policy: PolicyName,
    code: CodeT,
    exit_code: int,
    accepted: bool,
    reasons: tuple[str, ...],
    policy_values: dict[str, object],
) -> Decision[CodeT]:
    """``Decision(...)`` with these fields and no source, for a policy's own checked values.

    A policy builds one per packet: the slots are set directly, without the
    keyword call of the attrs ``__init__`` (no field of a decision
    validates or converts, so the two agree: tests/core/test_fast_paths.py).
    """
    obj: Decision[CodeT] = _new(Decision)
    f0, f1, f2, f3, f4, f5, f6 = _SETTERS
    f0(obj, policy)
    f1(obj, code)
    f2(obj, exit_code)
    f3(obj, accepted)
    f4(obj, reasons)
    f5(obj, policy_values)
    f6(obj, None)
    return obj


def _head(policy: PolicyName, code: enum.Enum, exit_code: int, accepted: bool) -> str:
    """A record's text up to its reasons: the same for every decision with this code.

    Kept by the members' identities (an enum's hash and ``value`` run Python
    code), with the members themselves: a kept member lives on, so its id
    is no other object's.
    """
    key = (id(policy), id(code), exit_code, accepted)
    kept = _HEADS.get(key)
    if kept is not None:
        return kept[2]
    head = _head_text(policy.value, code.value, exit_code, accepted)
    if len(_HEADS) < 256:
        _HEADS[key] = (policy, code, head)
    return head


#: :func:`_head`'s answers, by the identities of the members and the two plain values.
_HEADS: dict[tuple[int, int, int, bool], tuple[PolicyName, enum.Enum, str]] = {}


def _head_text(policy: object, code: object, exit_code: int, accepted: bool) -> str:
    head = compact_text(
        {
            "format": DECISION_FORMAT,
            "format_version": DECISION_FORMAT_VERSION,
            "policy": policy,
            "code": code,
            "exit": exit_code,
            "accepted": accepted,
        }
    )
    return head[:-1] + ',"reasons":'


def _values_text(values: Mapping[str, object]) -> str:
    """``compact_text(values)``; policy values of plain integers and strings are encoded once."""
    items = tuple(values.items())
    for key, value in items:
        if type(key) is not str or (type(value) is not int and type(value) is not str):
            return compact_text(values)
    return _plain_values_text(items)


@functools.lru_cache(maxsize=256)
def _plain_values_text(items: tuple[tuple[str, object], ...]) -> str:
    return compact_text(dict(items))
