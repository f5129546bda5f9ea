"""``decide``: a second, clean runner must reproduce the flake (docs/policies.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flakecore._fields import (
    DECIDE_FIELDS,
    DECIDE_IDENTITY_FIELDS,
    MISSING,
    envelope_problems,
    envelope_sound,
    is_bool,
    is_nonblank,
    known_keys,
    wire_form,
)
from flakecore.codes import DecideCode, FailureClass, PolicyName
from flakecore.decision import Decision, trusted_decision
from flakecore.digest import commit_id_problem, is_commit_id, is_digest, is_lower_hex
from flakecore.exits import DECIDE_EXIT
from flakecore.identity import are_runner_ids, runner_id_problem
from flakecore.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from flakecore.records import DecidePacket

__all__ = ["DecideDecision", "decide"]

DecideDecision = Decision[DecideCode]

_CLASSES = frozenset(c.value for c in FailureClass)
#: The class values and members a packet is judged by, read once: on this interpreter
#: an enum's class attribute goes through its metaclass's ``__getattr__`` hook and
#: ``value`` is a Python property (about 1 500 instructions each, a packet each time).
_PASS = FailureClass.PASS.value
_FLAKE_SHAPED = FailureClass.FLAKE_SHAPED.value
_ELIGIBLE = DecideCode.ELIGIBLE
_DECIDE = PolicyName.DECIDE
_BOOLS = ("property_cohort_passed", "clean_run_completed")
_ECHOES = ("clean_fixture_hash", "clean_input_hash")
_RUNNERS = ("local_runner_id", "clean_runner_id")
#: File hashes are sha256 digests (docs/schemas.md): an uppercase or prefixed "hash" that
#: happens to equal its echo must not make a vote eligible.  The patch hash is
#: the patch's git commit id (docs/trust.md).
_HASHES = ("fixture_hash", "minimized_input_hash", *_ECHOES)


_KNOWN = known_keys(DECIDE_FIELDS)
_OPTIONAL_HASHES = ("clean_fixture_hash", "clean_input_hash")


def _sound(packet: Mapping[str, object]) -> bool:
    """Whether :func:`_reasons` finds nothing: the same rules, without the wording.

    A valid digest, runner id or commit id is a non-blank string, so those
    fields need only their own test here.
    """
    if not envelope_sound(packet, _KNOWN, "flakecore.decide-packet"):
        return False
    for name in ("test_id", "oracle_version"):
        value = packet.get(name)
        if not isinstance(value, str) or not value.strip():
            return False
    if not (
        are_runner_ids(packet.get("local_runner_id"), packet.get("clean_runner_id"))
        and _hashes_sound(packet)
    ):
        return False
    for name in ("local_class", "clean_class"):
        value = packet.get(name, _PASS)
        if not isinstance(value, str) or value not in _CLASSES:
            return False
    for name in _BOOLS:
        value = packet.get(name, True)
        if value is not True and value is not False:
            return False
    return True


def _hashes_sound(packet: Mapping[str, object]) -> bool:
    """The two digests and the commit id, and each echo absent, blank or a digest.

    Plain strings of a digest's or a commit id's length are checked as one
    text (one :func:`is_lower_hex` where each field took its own); anything
    else field by field.
    """
    fixture = packet.get("fixture_hash")
    minimized = packet.get("minimized_input_hash")
    patch = packet.get("patch_hash")
    if not (
        type(fixture) is str
        and type(minimized) is str
        and type(patch) is str
        and len(fixture) == 64
        and len(minimized) == 64
        and (len(patch) == 40 or len(patch) == 64)
    ):
        return _hashes_sound_by_field(packet)
    hexes = [fixture, minimized, patch]
    for name in _OPTIONAL_HASHES:
        value = packet.get(name, "")
        if type(value) is not str:
            return _hashes_sound_by_field(packet)
        if value.strip():  # absent or blank: judged by its own row
            if len(value) != 64:
                return False
            hexes.append(value)
    return is_lower_hex("".join(hexes))


def _hashes_sound_by_field(packet: Mapping[str, object]) -> bool:
    """:func:`_hashes_sound`, one field at a time."""
    if not (
        is_digest(packet.get("fixture_hash"))
        and is_digest(packet.get("minimized_input_hash"))
        and is_commit_id(packet.get("patch_hash"))
    ):
        return False
    for name in _OPTIONAL_HASHES:  # absent or blank: judged by its own row
        value = packet.get(name, "")
        if not isinstance(value, str) or (value.strip() and not is_digest(value)):
            return False
    return True


def _reasons(packet: Mapping[str, object]) -> list[str]:
    """Each present-but-wrong field, worded: incomplete evidence, refused like a missing one."""
    reasons = envelope_problems(packet, "decide-packet", _KNOWN)
    for name in DECIDE_IDENTITY_FIELDS:
        value = packet.get(name, MISSING)
        if name in _RUNNERS:  # docs/trust.md: a copy with U+2010 for '-' is no runner at all
            if (problem := runner_id_problem(value)) is not None:
                reasons.append(f"{name} {problem}")
        elif not is_nonblank(value):
            reasons.append(f"{name} is missing or blank")
    for name in ("local_class", "clean_class"):
        value = packet.get(name, MISSING)
        if value is not MISSING and not (isinstance(value, str) and value in _CLASSES):
            reasons.append(f"{name} {value!r} is not one of {sorted(_CLASSES)}")
    for name in _BOOLS:
        value = packet.get(name, MISSING)
        if value is not MISSING and not is_bool(value):
            reasons.append(f"{name} must be a JSON boolean")
    for name in _HASHES:
        value = packet.get(name, MISSING)
        if value is MISSING or (isinstance(value, str) and not value.strip()):
            continue  # absent or blank: judged by its own row (1 or 2)
        if not is_digest(value):
            reasons.append(f"{name} must be a sha256 digest (64 lowercase hex)")
    patch = packet.get("patch_hash", MISSING)
    if is_nonblank(patch) and (problem := commit_id_problem("patch_hash", patch)) is not None:
        reasons.append(problem)
    return reasons


def decide(
    packet: DecidePacket | Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> DecideDecision:
    """Judge a clean-runner packet: eligible only if every row of docs/policies.md holds.

    A packet expires with its ``patch_hash`` and ``oracle_version``: callers
    match those against the current patch before trusting an old decision.
    """
    (code, exit_code), reasons = _judged(wire_form(packet, "DecidePacket"))
    return trusted_decision(_DECIDE, code, exit_code, code is _ELIGIBLE, reasons, policy.values())


def _as(code: DecideCode) -> tuple[DecideCode, int]:
    return code, DECIDE_EXIT[code]


#: Each code with its exit, read once: on this interpreter an enum's class attribute
#: and its hash run Python code (a packet each time, as in admit and classify).
_AS_ELIGIBLE = _as(_ELIGIBLE)
_AS_MISSING_FIELD = _as(DecideCode.MISSING_FIELD)
_AS_UNAVAILABLE = _as(DecideCode.CLEAN_RUN_UNAVAILABLE)
_AS_NOT_DISTINCT = _as(DecideCode.NOT_DISTINCT_RUNNER)
_AS_NOT_FLAKE_SHAPED = _as(DecideCode.NOT_FLAKE_SHAPED)
_AS_CLASS_MISMATCH = _as(DecideCode.CLASS_MISMATCH)
_AS_FIXTURE_DRIFT = _as(DecideCode.FIXTURE_DRIFT)
_AS_INPUT_DRIFT = _as(DecideCode.INPUT_DRIFT)
_AS_PROPERTY_OWNS_BUG = _as(DecideCode.PROPERTY_OWNS_BUG)


def _judged(data: Mapping[str, object]) -> tuple[tuple[DecideCode, int], tuple[str, ...]]:
    """:func:`decide`'s code with its exit, and the reasons: one decision built, no closure."""
    if type(data) is not dict and not isinstance(data, Mapping):
        return _AS_MISSING_FIELD, ("packet is not a JSON object",)
    if not _sound(data) and (reasons := _reasons(data)):
        return _AS_MISSING_FIELD, tuple(reasons)
    if data.get("clean_run_completed", MISSING) is not True:
        return _AS_UNAVAILABLE, ("the clean run did not complete",)
    for name in _ECHOES:
        if not is_nonblank(data.get(name, MISSING)):
            return _AS_UNAVAILABLE, (f"the clean run did not echo {name}",)
    local_runner, clean_runner = data["local_runner_id"], data["clean_runner_id"]
    # Both follow the runner id grammar (checked above): lowercase, no space, ASCII,
    # so each is its own identity key and ``same_runner`` is ``==`` (tested).
    if local_runner == clean_runner:
        return _AS_NOT_DISTINCT, ("local and clean runner are the same",)
    local_class = data.get("local_class", MISSING)
    if local_class != _FLAKE_SHAPED:
        return _AS_NOT_FLAKE_SHAPED, (
            f"local class is {local_class!r}: fix or revert, do not freeze",
        )
    clean_class = data.get("clean_class", MISSING)
    if clean_class != local_class:
        why = (
            "clean run passed: an environment miss"
            if clean_class == _PASS
            else f"clean class {clean_class!r}: unstable signature"
        )
        return _AS_CLASS_MISMATCH, (why,)
    if data["clean_fixture_hash"] != data["fixture_hash"]:
        return _AS_FIXTURE_DRIFT, ("clean run loaded another fixture",)
    if data["clean_input_hash"] != data["minimized_input_hash"]:
        return _AS_INPUT_DRIFT, ("clean run replayed another input",)
    if data.get("property_cohort_passed", MISSING) is not True:
        return _AS_PROPERTY_OWNS_BUG, ("property cohort did not pass",)
    return _AS_ELIGIBLE, ("a distinct clean runner reproduced the flake",)
