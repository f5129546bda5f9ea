"""``budget``: the five codes of SPEC 3.3, INSUFFICIENT_BUDGET, and the ledger row."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packets import B, budget_packet

from flakecore import BudgetCode, BudgetPacket, Policy, budget, ledger_row

BC = BudgetCode
SEEDS7 = [11, 23, 47, 71, 97, 131, 173]

TABLE: list[tuple[str, dict[str, Any], BudgetCode, int]] = [
    ("row 5: flake candidate", {}, BC.FLAKE_CANDIDATE, 0),
    ("row 5: one pass", {"passes": 1}, BC.FLAKE_CANDIDATE, 0),
    ("row 5: N-1 passes", {"passes": 7}, BC.FLAKE_CANDIDATE, 0),
    ("row 1: parent digest mismatch", {"head_digest": B}, BC.FIXTURE_DRIFT, 3),
    (
        "row 1: mismatch, nothing scored",
        {"head_digest": B, "property_holds": None, "passes": None, "seeds": []},
        BC.FIXTURE_DRIFT,
        3,
    ),
    ("row 2: property fails", {"property_holds": False}, BC.PROPERTY_MISS, 2),
    (
        "row 2: property fails, not started",
        {"property_holds": False, "passes": None},
        BC.PROPERTY_MISS,
        2,
    ),
    ("row 3: 0 of N", {"passes": 0}, BC.STABLE_FAIL, 5),
    ("row 4: N of N", {"passes": 8}, BC.STABLE_PASS, 6),
    ("insufficient: N = 7", {"budget": 7, "seeds": SEEDS7}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: seeds shorter than N", {"seeds": SEEDS7}, BC.INSUFFICIENT_BUDGET, 1),
    (
        "insufficient: a seed repeats",
        {"seeds": [11, 11, 47, 71, 97, 131, 173, 211]},
        BC.INSUFFICIENT_BUDGET,
        1,
    ),
    (
        "seed 11 and '11' are two seeds",
        {"seeds": [11, "11", 47, 71, 97, 131, 173, 211]},
        BC.FLAKE_CANDIDATE,
        0,
    ),
    ("insufficient: passes > N", {"passes": 9}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: negative passes", {"passes": -1}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: float passes", {"passes": 5.0}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: bool passes", {"passes": True}, BC.INSUFFICIENT_BUDGET, 1),
    (
        "insufficient: not scored although digests match",
        {"property_holds": None},
        BC.INSUFFICIENT_BUDGET,
        1,
    ),
    ("insufficient: property 'true'", {"property_holds": "true"}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: never started", {"passes": None}, BC.INSUFFICIENT_BUDGET, 1),
    (
        "insufficient: digest malformed",
        {"parent_digest": "sha256:x", "head_digest": "sha256:x"},
        BC.INSUFFICIENT_BUDGET,
        1,
    ),
    ("insufficient: test id blank", {"test_id": "  "}, BC.INSUFFICIENT_BUDGET, 1),
    ("insufficient: unknown field", {"retries": 2}, BC.INSUFFICIENT_BUDGET, 1),
    (
        "insufficient: float seed",
        {"seeds": [1.5, 23, 47, 71, 97, 131, 173, 211]},
        BC.INSUFFICIENT_BUDGET,
        1,
    ),
    ("insufficient: passes absent", {"passes": ...}, BC.INSUFFICIENT_BUDGET, 1),
]


@pytest.mark.parametrize(
    ("changes", "code", "exit_code"), [r[1:] for r in TABLE], ids=[r[0] for r in TABLE]
)
def test_budget_table(changes: dict[str, Any], code: BudgetCode, exit_code: int) -> None:
    decision = budget(budget_packet(**changes))
    assert decision.code is code
    assert decision.exit_code == exit_code
    assert decision.accepted is (code is BC.FLAKE_CANDIDATE)


def test_minimum_is_policy() -> None:
    packet = budget_packet(budget=7, seeds=SEEDS7, passes=3)
    assert budget(packet, policy=Policy(min_seed_budget=7)).code is BC.FLAKE_CANDIDATE
    assert budget(packet).code is BC.INSUFFICIENT_BUDGET


def test_typed_packet_round_trip() -> None:
    packet = BudgetPacket(
        test_id="t",
        parent_digest=B,
        head_digest=B,
        property_holds=True,
        seeds=(11, 23, 47, 71, 97, 131, 173, 211),
        passes=4,
        budget=8,
    )
    assert budget(packet).code is BC.FLAKE_CANDIDATE
    assert budget(packet.to_json()).code is BC.FLAKE_CANDIDATE


def test_ledger_row() -> None:
    today = dt.date(2026, 11, 29)
    row = ledger_row(budget_packet(), today=today)
    assert row is not None
    assert row["code"] == "FLAKE_CANDIDATE"
    assert row["expires_on"] == "2026-12-13"
    assert row["opened_against"] == "2" * 40
    assert row["passes"] == 5
    assert ledger_row(budget_packet(passes=8), today=today) is None
    assert ledger_row(budget_packet(opened_against=...), today=today) is None


@given(passes=st.integers(-3, 12), n=st.integers(0, 12))
def test_candidate_only_inside_the_open_interval(passes: int, n: int) -> None:
    seeds = list(range(100, 100 + n))
    decision = budget(budget_packet(passes=passes, budget=n, seeds=seeds))
    assert decision.accepted is (n >= 8 and 1 <= passes <= n - 1)
