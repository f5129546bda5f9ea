"""``admit``: freeze only if the unmodified base commit already missed (docs/policies.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flakecore._fields import (
    ADMIT_FIELDS,
    MISSING,
    envelope_problems,
    envelope_sound,
    is_count,
    is_int,
    is_nonblank,
    is_seed,
    known_keys,
    wire_form,
)
from flakecore.codes import AdmitCode, PolicyName
from flakecore.decision import Decision, trusted_decision
from flakecore.digest import is_commit_id, is_digest, is_lower_hex
from flakecore.exits import ADMIT_EXIT
from flakecore.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from flakecore.records import AdmitEvidence

__all__ = ["AdmitDecision", "admit", "admit_verdict", "freeze_record"]

AdmitDecision = Decision[AdmitCode]

_COUNTS = ("base_misses", "patch_misses")
_DIGESTS = (
    "property_sha256",
    "base_property_sha256",
    "fixture_epoch",
    "base_fixture_epoch",
    "claimed_epoch",
)


_KNOWN = known_keys(ADMIT_FIELDS)
#: An absent ``base_sha`` passes: a commit id stands in for it.
_NO_BASE_SHA = "0" * 40


def _sound(packet: Mapping[str, object]) -> bool:
    """Whether :func:`_reasons` finds nothing: the same rules, without the wording."""
    if (
        not envelope_sound(packet, _KNOWN, "flakecore.admit-packet")
        or "base_attempts" not in packet
    ):
        return False
    for name in _COUNTS:
        if not is_int(packet.get(name)):
            return False
    if not _hashes_sound(packet):
        return False
    property_id = packet.get("property_id", "-")
    if not isinstance(property_id, str) or not property_id.strip():
        return False
    return is_seed(packet.get("seed", ""))


def _hashes_sound(packet: Mapping[str, object]) -> bool:
    """The five digests and ``base_sha`` (absent or a commit id), as decide checks its own.

    Plain strings of a digest's or a commit id's length are checked as one
    text (one :func:`is_lower_hex` where each field took its own); anything
    else field by field.
    """
    texts: list[str] = []
    for name in _DIGESTS:
        text = packet.get(name)
        if type(text) is not str or len(text) != 64:
            return _hashes_sound_by_field(packet)
        texts.append(text)
    base_sha = packet.get("base_sha", _NO_BASE_SHA)
    if type(base_sha) is not str or (len(base_sha) != 40 and len(base_sha) != 64):
        return _hashes_sound_by_field(packet)
    texts.append(base_sha)
    return is_lower_hex("".join(texts))


def _hashes_sound_by_field(packet: Mapping[str, object]) -> bool:
    """:func:`_hashes_sound`, one field at a time."""
    for name in _DIGESTS:
        if not is_digest(packet.get(name)):
            return False
    return is_commit_id(packet.get("base_sha", _NO_BASE_SHA))


def _incomplete_reasons(packet: Mapping[str, object]) -> list[str]:
    return [] if _sound(packet) else _reasons(packet)


def _reasons(packet: Mapping[str, object]) -> list[str]:
    reasons = envelope_problems(packet, "admit-packet", _KNOWN)
    if "base_attempts" not in packet:
        reasons.append("base_attempts is missing")
    for name in _COUNTS:
        value = packet.get(name, MISSING)
        if value is MISSING:
            reasons.append(f"{name} is missing")
        elif not is_int(value):
            reasons.append(f"{name} must be an integer within +-(2^53-1)")
    for name in _DIGESTS:
        value = packet.get(name, MISSING)
        if value is MISSING:
            reasons.append(f"{name} is missing")
        elif not is_digest(value):
            reasons.append(f"{name} must be a sha256 digest (64 lowercase hex); a name is not one")
    optional = {"property_id": is_nonblank, "seed": is_seed, "base_sha": is_commit_id}
    for name, ok in optional.items():
        value = packet.get(name, MISSING)
        if value is not MISSING and not ok(value):
            reasons.append(f"{name} is malformed")
    return reasons


def admit_verdict(code: AdmitCode, *reasons: str, policy: Policy) -> AdmitDecision:
    """An ``admit`` decision for ``code`` (also used by ``replay`` when it must refuse early)."""
    return _decision(_as(code), reasons, policy)


def admit(
    evidence: AdmitEvidence | Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> AdmitDecision:
    """Judge a base-replay record; the first check that fires decides.

    ``patch_misses`` explains why a freeze was requested; it never grants
    one.  Misses beyond the attempt cap are still ``REJECT_BUDGET``.
    """
    return _decision(*_judged(wire_form(evidence, "AdmitEvidence"), policy), policy)


def _decision(
    code_exit: tuple[AdmitCode, int], reasons: tuple[str, ...], policy: Policy
) -> AdmitDecision:
    """The constructor's decision, slot by slot, its exit already looked up (as decide's)."""
    code, exit_code = code_exit
    values = policy.values("attempt_cap", "min_base_misses")
    return trusted_decision(_ADMIT, code, exit_code, code is _ACCEPT, reasons, values)


def _as(code: AdmitCode) -> tuple[AdmitCode, int]:
    return code, ADMIT_EXIT[code]


#: Each code with its exit, read once: on this interpreter an enum's class attribute
#: and its hash run Python code (a packet each time, as in decide and classify).
_ACCEPT = AdmitCode.ACCEPT_PREEXISTING
_ADMIT = PolicyName.ADMIT
_AS_ACCEPT = _as(_ACCEPT)
_AS_INCOMPLETE = _as(AdmitCode.REJECT_INCOMPLETE)
_AS_BUDGET = _as(AdmitCode.REJECT_BUDGET)
_AS_PROPERTY_DRIFT = _as(AdmitCode.REJECT_PROPERTY_DRIFT)
_AS_FIXTURE_EPOCH = _as(AdmitCode.REJECT_FIXTURE_EPOCH)
_AS_PATCH_INTRODUCED = _as(AdmitCode.REJECT_PATCH_INTRODUCED)


def _judged(
    packet: Mapping[str, object], policy: Policy
) -> tuple[tuple[AdmitCode, int], tuple[str, ...]]:
    """:func:`admit`'s code with its exit, and the reasons: one decision built, no closure."""
    if type(packet) is not dict and not isinstance(packet, Mapping):
        return _AS_INCOMPLETE, ("evidence is not a JSON object",)
    if reasons := _incomplete_reasons(packet):
        return _AS_INCOMPLETE, tuple(reasons)
    cap, floor = policy.attempt_cap, policy.min_base_misses
    attempts = packet["base_attempts"]
    if not is_int(attempts) or not 1 <= attempts <= cap:  # type: ignore[operator]
        return _AS_BUDGET, (f"base_attempts must be an integer in 1..{cap}",)
    base_misses, patch_misses = packet["base_misses"], packet["patch_misses"]
    assert isinstance(base_misses, int) and isinstance(patch_misses, int)
    assert isinstance(attempts, int)
    if not (is_count(base_misses) and is_count(patch_misses)):
        return _AS_INCOMPLETE, ("a count is negative",)
    if base_misses > attempts:
        return _AS_INCOMPLETE, ("base_misses exceeds base_attempts",)
    if packet["property_sha256"] != packet["base_property_sha256"]:
        return _AS_PROPERTY_DRIFT, ("property source differs between patch and base",)
    epoch, base_epoch = packet["fixture_epoch"], packet["base_fixture_epoch"]
    if epoch != base_epoch:
        return _AS_FIXTURE_EPOCH, ("fixture epoch differs on the base run",)
    if epoch != packet["claimed_epoch"]:
        return _AS_FIXTURE_EPOCH, ("fixture epoch is not the claimed epoch",)
    if base_misses >= floor:
        return _AS_ACCEPT, (f"base missed {base_misses} of {attempts} (floor {floor})",)
    if patch_misses >= 1:
        return _AS_PATCH_INTRODUCED, (
            f"base missed {base_misses} of {attempts}; only the patch missed",
        )
    return _AS_BUDGET, ("no miss on base or patch within the budget",)


def freeze_record(
    evidence: AdmitEvidence | Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> dict[str, object] | None:
    """The freeze record for an ``ACCEPT_PREEXISTING`` verdict, else None.

    It is recomputed from the evidence every time; a later job that cannot
    recompute it deletes the stored one rather than inheriting it.
    """
    decision = admit(evidence, policy=policy)
    if not decision.accepted:
        return None
    packet = wire_form(evidence, "AdmitEvidence")
    record: dict[str, object] = {"format": "flakecore.freeze-record", "format_version": "1.0"}
    for name in ("property_id", "seed", "base_sha"):
        if name in packet:
            record[name] = packet[name]
    record.update(
        property_sha256=packet["property_sha256"],
        base_property_sha256=packet["base_property_sha256"],
        fixture_epoch=packet["fixture_epoch"],
        base_misses=packet["base_misses"],
        base_attempts=packet["base_attempts"],
        patch_misses=packet["patch_misses"],
        verdict=decision.code.value,
        policy_values=decision.policy_values,
    )
    return record
