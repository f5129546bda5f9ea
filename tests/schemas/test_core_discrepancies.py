"""Where the core and the schemas could disagree, pinned in the safe direction.

The 5.0 case is not a bug in either: it is a limit of JSON Schema (the core
refuses it, the schema cannot), documented in docs/schemas.md.  The others
were core leniencies found by the schema work and fixed: they stay as
regression tests.
"""

from __future__ import annotations

import datetime as dt

import pytest
from packets import NOW, admit_packet, budget_packet, classify_report
from packets import replays as replay_list

import flakecore
from flakecore import validation

ARABIC_INDIC_EXPIRY = "\u0662\u0660\u0662\u0666-\u0661\u0662-\u0660\u0661T12:00:00Z"  # 2026-12-01


@pytest.mark.parametrize(
    ("kind", "packet", "policy"),
    [
        ("admit-packet", admit_packet(base_misses=2.0), flakecore.admit),
        ("admit-packet", admit_packet(base_attempts=5.0), flakecore.admit),
        ("budget-packet", budget_packet(passes=5.0), flakecore.budget),
        ("classify-report", classify_report(budget=5.0), lambda r: flakecore.classify(r, now=NOW)),
    ],
)
def test_five_point_zero_is_a_schema_integer_but_the_core_refuses_it(
    kind: str, packet: dict[str, object], policy: object
) -> None:
    """JSON Schema: a number with a zero fraction is an integer; JavaScript cannot even see the .0."""
    assert validation.is_valid(packet, kind)
    assert not policy(packet).accepted  # type: ignore[operator]


def test_a_replay_that_passed_with_exit_code_zero_point_zero() -> None:
    report = classify_report(
        replays=[{**r, "exit_code": 0.0} if r["passed"] else r for r in replay_list("ggrgg")]
    )
    assert validation.is_valid(report, "classify-report")
    assert not flakecore.classify(report, now=NOW).accepted


def test_a_lease_expiry_in_arabic_indic_digits_is_refused() -> None:
    report = classify_report(expires_at=ARABIC_INDIC_EXPIRY)
    assert not validation.is_valid(report, "classify-report")
    assert not flakecore.classify(report, now=NOW).accepted


def test_format_version_with_a_leading_zero_is_refused() -> None:
    packet = {"format": "flakecore.admit-packet", "format_version": "1.01", **admit_packet()}
    assert not validation.is_valid(packet, "admit-packet")
    assert not flakecore.admit(packet).accepted


def test_a_naive_evaluation_time_still_gives_a_valid_decision() -> None:
    decision = flakecore.classify(classify_report(), now=dt.datetime(2026, 11, 29, 12, 0))
    assert not decision.accepted
    assert validation.is_valid(decision.to_json(), "decision")
