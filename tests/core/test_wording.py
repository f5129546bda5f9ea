"""Messages count in agreement: ``1 seed``, ``8 seeds``; never ``1 seeds``."""

from __future__ import annotations

import datetime as dt

import pytest
from packets import NOW, budget_packet, classify_report, replays

from flakecore import Policy, budget, classify
from flakecore._wording import plural

ONE = Policy(min_seed_budget=1, replay_budget=1, max_lease_days=1)


@pytest.mark.parametrize(
    ("count", "noun", "nouns", "text"),
    [(0, "seed", None, "0 seeds"), (1, "seed", None, "1 seed"), (2, "seed", None, "2 seeds"),
     (1, "pass", "passes", "1 pass"), (3, "pass", "passes", "3 passes")],
)  # fmt: skip
def test_plural(count: int, noun: str, nouns: str | None, text: str) -> None:
    assert plural(count, noun, nouns) == text


@pytest.mark.parametrize(
    ("packet", "reason"),
    [
        (budget_packet(seeds=[11], budget=1, passes=0), "0 of 1 seed passed: the miss is stable"),
        (budget_packet(seeds=[11], budget=1, passes=1), "1 of 1 seed passed: no freeze row"),
        (budget_packet(seeds=[11, 23], budget=1, passes=0), "2 committed seeds for a budget of 1"),
        (budget_packet(seeds=[11], budget=1, passes=2), "2 passes out of 1 run is impossible"),
    ],
)
def test_budget_reasons_agree_with_their_counts(packet: dict[str, object], reason: str) -> None:
    assert reason in budget(packet, policy=ONE).reasons


def test_classify_reasons_agree_with_their_counts() -> None:
    red = classify(classify_report(replays=replays("r")), now=NOW, policy=ONE)
    assert red.reasons == ("red on all 1 replay",)
    short = classify(classify_report(replays=replays("rg")), now=NOW, policy=ONE)
    assert "2 replays for a budget of 1: not filled" in short.reasons
    far = (NOW + dt.timedelta(days=3)).isoformat()
    lease = classify(classify_report(replays=replays("g"), expires_at=far), now=NOW, policy=ONE)
    assert "expires_at is more than 1 day away" in lease.lease_reasons
