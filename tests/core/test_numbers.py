"""SPEC 8: numbers in records stay within +-(2**53 - 1), so every JSON reader sees one value.

Beyond 2**53 a JavaScript reader rounds: ``2**53`` and ``2**53 + 1`` are two
seeds to Python and one repeated seed to Ajv.  Each policy refuses such a
number with its own refusal for a bad field; larger seeds are strings, and
those still pass (the honest twins).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packets import NOW, admit_packet, budget_packet, classify_report, replays

import flakecore
from flakecore import (
    AdmitCode,
    AttemptWriter,
    BudgetCode,
    ClassifyClass,
    LogStatus,
    Policy,
    UsageError,
    reduce_logs,
)
from flakecore._fields import MAX_SAFE_INTEGER, is_int, is_number, is_seed
from flakecore.evidence import duration_or_none

MAX = 2**53 - 1
BIG = 2**53
SEEDS = [11, 23, 47, 71, 97, 131, 173, 211]


def test_the_bound_is_javascripts() -> None:
    assert MAX_SAFE_INTEGER == MAX
    assert float(MAX) != float(MAX + 1)  # still exact
    assert float(BIG) == float(BIG + 1)  # no longer: two seeds read as one


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (MAX, True),
        (-MAX, True),
        (BIG, False),
        (-BIG, False),
        (10**40, False),
        (True, False),
        (5.0, False),
    ],
)
def test_is_int(value: object, ok: bool) -> None:
    assert is_int(value) is ok
    assert is_seed(value) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0.5, True),
        (MAX, True),
        (float(MAX), True),
        (float(BIG), False),
        (1e300, False),
        (float("inf"), False),
        (float("nan"), False),
        (False, False),
    ],
)
def test_is_number(value: object, ok: bool) -> None:
    assert is_number(value) is ok


ADMIT = [
    ("seed 2^53", {"seed": BIG}, AdmitCode.REJECT_INCOMPLETE),
    ("seed -(2^53)", {"seed": -BIG}, AdmitCode.REJECT_INCOMPLETE),
    ("base_misses 2^53", {"base_misses": BIG}, AdmitCode.REJECT_INCOMPLETE),
    ("patch_misses 2^53+1", {"patch_misses": BIG + 1}, AdmitCode.REJECT_INCOMPLETE),
    (
        "base_attempts 2^53 (its type is judged at row 2)",
        {"base_attempts": BIG},
        AdmitCode.REJECT_BUDGET,
    ),
    ("seed 2^53-1", {"seed": MAX}, AdmitCode.ACCEPT_PREEXISTING),
    ("seed 2^53+1 as a string", {"seed": str(BIG + 1)}, AdmitCode.ACCEPT_PREEXISTING),
]


@pytest.mark.parametrize(("changes", "code"), [r[1:] for r in ADMIT], ids=[r[0] for r in ADMIT])
def test_admit(changes: dict[str, Any], code: AdmitCode) -> None:
    assert flakecore.admit(admit_packet(**changes)).code is code


BUDGET = [
    (
        "seeds 2^53 and 2^53+1",
        {"seeds": [*SEEDS[:-2], BIG, BIG + 1]},
        BudgetCode.INSUFFICIENT_BUDGET,
    ),
    ("seed -(2^53)", {"seeds": [*SEEDS[:-1], -BIG]}, BudgetCode.INSUFFICIENT_BUDGET),
    ("passes 2^53", {"passes": BIG}, BudgetCode.INSUFFICIENT_BUDGET),
    ("budget 2^53", {"budget": BIG}, BudgetCode.INSUFFICIENT_BUDGET),
    ("seeds 2^53-1 and -(2^53-1)", {"seeds": [*SEEDS[:-2], MAX, -MAX]}, BudgetCode.FLAKE_CANDIDATE),
    (
        "seeds 2^53 and 2^53+1 as strings",
        {"seeds": [*SEEDS[:-2], str(BIG), str(BIG + 1)]},
        BudgetCode.FLAKE_CANDIDATE,
    ),
]


@pytest.mark.parametrize(("changes", "code"), [r[1:] for r in BUDGET], ids=[r[0] for r in BUDGET])
def test_budget(changes: dict[str, Any], code: BudgetCode) -> None:
    assert flakecore.budget(budget_packet(**changes)).code is code


def _red(**changes: object) -> list[dict[str, object]]:
    runs = replays("ggrgg")
    runs[2].update(changes)
    return runs


CLASSIFY = [
    ("exit code 2^53", {"replays": _red(exit_code=BIG)}, ClassifyClass.INCOMPLETE),
    ("exit code -(2^53)", {"replays": _red(exit_code=-BIG)}, ClassifyClass.INCOMPLETE),
    ("duration 2^53 s", {"replays": _red(duration_s=BIG)}, ClassifyClass.INCOMPLETE),
    ("duration 1e300 s", {"replays": _red(duration_s=1e300)}, ClassifyClass.INCOMPLETE),
    ("budget 2^53", {"budget": BIG}, ClassifyClass.INCOMPLETE),
    ("exit code -(2^53-1)", {"replays": _red(exit_code=-MAX)}, ClassifyClass.FLAKE),
    ("duration 2^53-1 s", {"replays": _red(duration_s=MAX)}, ClassifyClass.FLAKE),
]


@pytest.mark.parametrize(
    ("changes", "code"), [r[1:] for r in CLASSIFY], ids=[r[0] for r in CLASSIFY]
)
def test_classify(changes: dict[str, Any], code: ClassifyClass) -> None:
    decision = flakecore.classify(classify_report(**changes), now=NOW)
    assert decision.code is code
    assert decision.freeze_allowed is (code is ClassifyClass.FLAKE)


@pytest.mark.parametrize(
    ("line", "status"),
    [
        (b'{"seed":9007199254740992,"n":1,"result":"pass"}\n', LogStatus.INCOMPLETE),
        (b'{"seed":9007199254740993,"n":1,"result":"pass"}\n', LogStatus.INCOMPLETE),
        (b'{"seed":-9007199254740992,"n":1,"result":"pass"}\n', LogStatus.INCOMPLETE),
        (b'{"seed":9007199254740991,"n":1,"result":"pass"}\n', LogStatus.COMPLETE),
        (b'{"seed":"9007199254740993","n":1,"result":"pass"}\n', LogStatus.COMPLETE),
    ],
    ids=["2^53", "2^53+1", "-(2^53)", "2^53-1", "a string"],
)
def test_attempt_log_seed(tmp_path: Path, line: bytes, status: LogStatus) -> None:
    log = tmp_path / "a.jsonl"
    log.write_bytes(line)
    assert reduce_logs([log]).status is status


def test_two_logs_with_seeds_two_to_the_53_and_one_more_are_refused(tmp_path: Path) -> None:
    """Python would see two seeds here; a JavaScript reducer one.  Neither log is read."""
    first, second = tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"
    first.write_bytes(b'{"seed":9007199254740992,"n":1,"result":"miss"}\n')
    second.write_bytes(b'{"seed":9007199254740993,"n":1,"result":"pass"}\n')
    summary = reduce_logs([first, second])
    assert summary.status is LogStatus.INCOMPLETE


def test_the_writer_refuses_a_seed_javascript_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="2\\*\\*53"):
        AttemptWriter(tmp_path / "a.jsonl", BIG)
    with AttemptWriter(tmp_path / "b.jsonl", str(BIG)) as writer:
        writer.append(flakecore.AttemptResult.PASS)


@pytest.mark.parametrize(
    "changes",
    [
        {"attempt_cap": BIG},
        {"replay_budget": MAX + 1},
        {"default_seeds": (11, BIG)},
        {"max_lease_days": 10**9},
    ],
    ids=["attempt_cap", "replay_budget", "default_seeds", "max_lease_days past timedelta"],
)
def test_policy_numbers_are_bounded(changes: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        Policy(**changes)


def test_policy_numbers_at_the_bound_are_fine() -> None:
    Policy(attempt_cap=MAX, default_seeds=(MAX, -MAX), max_lease_days=999_999_999)


@given(st.integers() | st.floats(allow_nan=True))
def test_a_duration_outside_the_bound_is_unknown(value: float) -> None:
    converted = duration_or_none(value)
    assert converted is None or 0 <= converted <= MAX
    assert (converted is None) is not (0 <= value <= MAX)
