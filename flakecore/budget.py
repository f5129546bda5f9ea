"""``budget``: a fixed seed budget with five codes and no soft bypass (docs/policies.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from flakecore._fields import (
    BUDGET_FIELDS,
    MAX_SAFE_INTEGER,
    MIN_SAFE_INTEGER,
    MISSING,
    envelope_problems,
    envelope_sound,
    is_bool,
    is_count,
    is_nonblank,
    is_seed,
    known_keys,
    wire_form,
)
from flakecore._wording import plural
from flakecore.codes import BudgetCode, PolicyName
from flakecore.decision import Decision, trusted_decision
from flakecore.digest import is_commit_id, is_digest, is_lower_hex
from flakecore.errors import UsageError
from flakecore.exits import BUDGET_EXIT
from flakecore.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from flakecore.records import BudgetPacket

__all__ = ["BUDGET_RUN_FORMAT", "BudgetDecision", "budget", "budget_verdict", "ledger_row"]

BudgetDecision = Decision[BudgetCode]
#: ``format`` of the record ``budget-run`` writes (``budget.json``); here, not in the seed
#: runner, so a reader of budget packets tells one apart without importing the runner.
BUDGET_RUN_FORMAT = "flakecore.budget-run"


_KNOWN = known_keys(BUDGET_FIELDS)
#: What an absent ``opened_against`` is checked as: a commit id (the field is optional).
_NO_COMMIT = "0" * 40
#: Read once: on this interpreter an enum's class attribute goes through its metaclass's
#: ``__getattr__`` hook (about 1 500 instructions), which each verdict would pay.
_BUDGET = PolicyName.BUDGET
_FLAKE_CANDIDATE = BudgetCode.FLAKE_CANDIDATE


def _sound(packet: Mapping[str, object]) -> bool:
    """Whether :func:`_reasons` finds nothing: the same rules, without the wording."""
    if not envelope_sound(packet, _KNOWN, "flakecore.budget-packet"):
        return False
    test_id = packet.get("test_id")
    if not isinstance(test_id, str) or not test_id.strip():
        return False
    holds = packet.get("property_holds", MISSING)
    if holds is not None and holds is not True and holds is not False:
        return False
    passes = packet.get("passes", MISSING)
    if passes is not None and not is_count(passes):
        return False
    seeds = packet.get("seeds")
    return (
        isinstance(seeds, list)
        and is_count(packet.get("budget"))
        and _hashes_sound(packet)
        and _seeds_ok(seeds)
    )


def _hashes_sound(packet: Mapping[str, object]) -> bool:
    """Both digests and ``opened_against`` (when given): plain strings as one text."""
    parent = packet.get("parent_digest")
    head = packet.get("head_digest")
    opened = packet.get("opened_against", _NO_COMMIT)
    if (
        type(parent) is str
        and type(head) is str
        and type(opened) is str
        and len(parent) == 64
        and len(head) == 64
        and (len(opened) == 40 or len(opened) == 64)
    ):
        return is_lower_hex(parent + head + opened)
    return is_digest(parent) and is_digest(head) and is_commit_id(opened)


def _reasons(packet: Mapping[str, object]) -> list[str]:
    reasons = envelope_problems(packet, "budget-packet", _KNOWN)
    if not is_nonblank(packet.get("test_id", MISSING)):
        reasons.append("test_id is missing or blank")
    for name in ("parent_digest", "head_digest"):
        if not is_digest(packet.get(name, MISSING)):
            reasons.append(f"{name} is missing or not a sha256 digest")
    holds = packet.get("property_holds", MISSING)
    if holds is MISSING or not (holds is None or is_bool(holds)):
        reasons.append("property_holds must be a boolean, or null when not scored")
    seeds = packet.get("seeds", MISSING)
    if not isinstance(seeds, list) or not _seeds_ok(seeds):
        reasons.append("seeds must be a list of strings or integers (larger than 2^53-1: strings)")
    passes = packet.get("passes", MISSING)
    if passes is MISSING or not (passes is None or is_count(passes)):
        reasons.append("passes must be an integer in 0..2^53-1, or null when not started")
    if not is_count(packet.get("budget", MISSING)):
        reasons.append("budget must be an integer in 0..2^53-1")
    opened = packet.get("opened_against", MISSING)
    if opened is not MISSING and not is_commit_id(opened):
        reasons.append("opened_against must be a full commit id")
    return reasons


def _seeds_ok(seeds: list[object]) -> bool:
    """``all(map(is_seed, seeds))``: a plain integer or string by its type alone, in one loop.

    One interpreted loop costs less here than the builtins (``set``, ``min``,
    ``max``) that would run in C over a list of eight seeds.
    """
    for seed in seeds:
        kind = type(seed)
        if kind is int:
            if not MIN_SAFE_INTEGER <= seed <= MAX_SAFE_INTEGER:  # type: ignore[operator]
                return False
        elif kind is not str and not is_seed(seed):
            return False
    return True


def _distinct(seeds: Sequence[object]) -> bool:
    """No seed twice, by value and type.

    Seeds that are all unequal are unequal with their types too: one set of
    the seeds answers, and only seeds with an equal pair (``1`` and ``True``
    are equal values of two types) are compared by type as well.
    """
    try:
        if len(set(seeds)) == len(seeds):
            return True
    except TypeError:  # an unhashable seed: the keyed set says so as it did
        pass
    return len({_seed_key(s) for s in seeds}) == len(seeds)


def _seed_key(seed: object) -> tuple[str, object]:
    """Seeds compare by value and type: ``1234`` and ``"1234"`` are two seeds."""
    return (type(seed).__name__, seed)


def _budget_problems(seeds: Sequence[object], passes: object, n: int, minimum: int) -> list[str]:
    problems: list[str] = []
    if n < minimum:
        problems.append(f"budget {n} is below the minimum of {minimum}")
    if len(seeds) != n:
        problems.append(f"{plural(len(seeds), 'committed seed')} for a budget of {n}")
    if not _distinct(seeds):
        problems.append("a committed seed repeats")
    if passes is None:
        problems.append("the seed runs never started")
    elif isinstance(passes, int) and passes > n:
        problems.append(
            f"{plural(passes, 'pass', 'passes')} out of {plural(n, 'run')} is impossible"
        )
    return problems


def budget_verdict(code: BudgetCode, *reasons: str, policy: Policy) -> BudgetDecision:
    """A ``budget`` decision for ``code`` (also used by ``budget-run`` when it must stop early)."""
    return _decision(_as(code), reasons, policy)


def budget(
    packet: BudgetPacket | Mapping[str, object], *, policy: Policy = DEFAULT_POLICY
) -> BudgetDecision:
    """Judge a seed-budget observation: one run per committed seed, no retries.

    ``INSUFFICIENT_BUDGET`` is a process error, not a product code: the
    ledger stays unchanged and the merge stays closed.
    """
    return _decision(*_judged(wire_form(packet, "BudgetPacket"), policy), policy)


def _decision(
    code_exit: tuple[BudgetCode, int], reasons: tuple[str, ...], policy: Policy
) -> BudgetDecision:
    """The constructor's decision, slot by slot, its exit already looked up (as admit's)."""
    code, exit_code = code_exit
    values = policy.values("min_seed_budget", "max_lease_days")
    return trusted_decision(_BUDGET, code, exit_code, code is _FLAKE_CANDIDATE, reasons, values)


def _as(code: BudgetCode) -> tuple[BudgetCode, int]:
    return code, BUDGET_EXIT[code]


#: Each code with its exit, read once: on this interpreter an enum's class attribute
#: and its hash run Python code (a packet each time, as in admit, decide and classify).
_AS_INSUFFICIENT = _as(BudgetCode.INSUFFICIENT_BUDGET)
_AS_FIXTURE_DRIFT = _as(BudgetCode.FIXTURE_DRIFT)
_AS_PROPERTY_MISS = _as(BudgetCode.PROPERTY_MISS)
_AS_STABLE_FAIL = _as(BudgetCode.STABLE_FAIL)
_AS_STABLE_PASS = _as(BudgetCode.STABLE_PASS)
_AS_FLAKE_CANDIDATE = _as(_FLAKE_CANDIDATE)

Judged = tuple[tuple[BudgetCode, int], tuple[str, ...]]


def _judged(data: Mapping[str, object], policy: Policy) -> Judged:
    """:func:`budget`'s code with its exit, and the reasons: one decision built, no closure.

    Past the property, the verdict is a function of the passes, the budget,
    the seed count, whether the seeds are distinct and the policy's minimum:
    for plain integers it is kept by those (:func:`_tally` words it once).
    """
    if type(data) is not dict and not isinstance(data, Mapping):
        return _AS_INSUFFICIENT, ("packet is not a JSON object",)
    if not _sound(data) and (reasons := _reasons(data)):
        return _AS_INSUFFICIENT, tuple(reasons)
    if data["parent_digest"] != data["head_digest"]:
        return _AS_FIXTURE_DRIFT, ("head fixture differs from the parent fixture",)
    holds = data["property_holds"]
    if holds is None:
        return _AS_INSUFFICIENT, ("the property was not scored",)
    if holds is False:
        return _AS_PROPERTY_MISS, ("the property fails on the parent fixture",)
    seeds, passes, n = data["seeds"], data["passes"], data["budget"]
    assert isinstance(seeds, list) and isinstance(n, int)
    minimum = policy.min_seed_budget
    if (
        type(n) is not int
        or type(minimum) is not int
        or (passes is not None and type(passes) is not int)
    ):  # ``True`` and ``1`` are equal keys, but words apart
        return _tally(seeds, passes, n, minimum)
    key = (passes, n, len(seeds), _distinct(seeds), minimum)
    kept = _TALLIES.get(key)
    if kept is None:
        kept = _tally(seeds, passes, n, minimum)
        if len(_TALLIES) < 1024:
            _TALLIES[key] = kept
    return kept


#: :func:`_tally`'s answers for plain integers, by passes, budget, seed count,
#: distinct seeds and minimum (all :func:`_budget_problems` reads).
_TALLIES: dict[tuple[int | None, int, int, bool, int], Judged] = {}


def _tally(seeds: Sequence[object], passes: object, n: int, minimum: int) -> Judged:
    """The verdict once the property holds: the budget's problems, else the passes' count."""
    if problems := _budget_problems(seeds, passes, n, minimum):
        return _AS_INSUFFICIENT, tuple(problems)
    assert isinstance(passes, int)
    if passes == 0:
        return _AS_STABLE_FAIL, (f"0 of {plural(n, 'seed')} passed: the miss is stable",)
    if passes == n:
        return _AS_STABLE_PASS, (f"{n} of {plural(n, 'seed')} passed: no freeze row",)
    return _AS_FLAKE_CANDIDATE, (f"{passes} of {plural(n, 'seed')} passed",)


def ledger_row(
    packet: BudgetPacket | Mapping[str, object],
    *,
    today: dt.date,
    policy: Policy = DEFAULT_POLICY,
) -> dict[str, object] | None:
    """The ledger row a ``FLAKE_CANDIDATE`` opens (expiring after the lease window), else None.

    ``opened_against`` is required here: a row that cannot name its parent
    commit cannot be recomputed, so it is never written.  A ``today`` so
    late that the expiry would pass 9999-12-31 is a :class:`UsageError`
    (no clock is there; the date cannot be written).
    """
    decision = budget(packet, policy=policy)
    data = wire_form(packet, "BudgetPacket")
    if not decision.accepted or "opened_against" not in data:
        return None
    if dt.date.max - today < policy.max_lease:  # subtract: today + max_lease would overflow
        raise UsageError(f"today {today} leaves no room for a row before {dt.date.max}")
    return {
        "format": "flakecore.ledger-row",
        "format_version": "1.0",
        "test_id": data["test_id"],
        "parent_digest": data["parent_digest"],
        "seeds": data["seeds"],
        "passes": data["passes"],
        "budget": data["budget"],
        "code": decision.code.value,
        "expires_on": (today + policy.max_lease).isoformat(),
        "opened_against": data["opened_against"],
    }
