"""The value every policy returns: a code, why, the exit, and the policy used."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
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

        A printer of many decisions encodes the policy source once, and each
        distinct record up to its extras once (:data:`_PREFIXES`); each record
        then encodes only its kind's extras and its ``input``.
        """
        exit_code, accepted, reasons, values = (
            self.exit_code,
            self.accepted,
            self.reasons,
            self.policy_values,
        )
        if type(exit_code) is not int or type(accepted) is not bool or type(values) is not dict:
            source = None if policy_source is None else json.loads(policy_source)
            return compact_text({**self.record(source), "input": input})  # the encoder's case
        policy, code = self.policy, self.code
        # The members by identity (an enum's hash and ``value`` run Python code); the
        # reasons and values with their types: ``1``, ``True`` and ``1.0`` are equal
        # keys of three texts.  The lengths of ``reasons`` and the items tell the parts.
        key = (
            id(policy),
            id(code),
            exit_code,
            accepted,
            policy_source,
            reasons,
            *map(type, reasons),
            *values.items(),
            *map(type, values.values()),
        )
        keep = True
        try:
            kept = _PREFIXES.get(key)
        except TypeError:  # an unhashable reason or value
            kept, keep = None, False
        if kept is not None:
            prefix = kept[2]
        else:
            prefix = _prefix(policy, code, exit_code, accepted, reasons, values, policy_source)
            if keep and len(_PREFIXES) < 1024 and _plain(reasons, values):
                _PREFIXES[key] = (policy, code, prefix)
        if type(self) is Decision:
            return f'{prefix},"input":{quote(input)}}}'
        return f'{prefix}{self.extras_text()},"input":{quote(input)}}}'

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


def _prefix(  # noqa: PLR0917 - the fields it writes
    policy: PolicyName,
    code: enum.Enum,
    exit_code: int,
    accepted: bool,
    reasons: object,
    values: dict[str, object],
    policy_source: str | None,
) -> str:
    """A record's text up to its extras, ``policy_source`` as text."""
    head = compact_text(
        {
            "format": DECISION_FORMAT,
            "format_version": DECISION_FORMAT_VERSION,
            "policy": policy.value,
            "code": code.value,
            "exit": exit_code,
            "accepted": accepted,
        }
    )
    listed = reasons if type(reasons) is tuple else list(reasons)  # type: ignore[call-overload]
    text = f'{head[:-1]},"reasons":{compact_value(listed)},"policy_values":{compact_text(values)}'
    return text if policy_source is None else f'{text},"policy_source":{policy_source}'


def _plain(reasons: object, values: dict[str, object]) -> bool:
    """Reasons of strings and values of integers and strings, keyed by strings: kept."""
    return (
        type(reasons) is tuple
        and all(type(r) is str for r in reasons)
        and all(type(k) is str and (type(v) is int or type(v) is str) for k, v in values.items())
    )


#: :meth:`Decision.record_text`'s prefixes with the members they name (a kept member
#: lives on, so its id is no other object's), by the members' ids and the fields.
_PREFIXES: dict[tuple[object, ...], tuple[PolicyName, enum.Enum, str]] = {}
