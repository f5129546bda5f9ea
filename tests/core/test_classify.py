"""``classify``: the class table of SPEC 3.4, then the separate lease permission."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packets import NOW, classify_report, replays

import flakecore
from flakecore import ClassifyClass, ClassifyReport, Replay, classify, freeze_allowed

K = ClassifyClass

CLASS_TABLE: list[tuple[str, dict[str, Any], ClassifyClass, int]] = [
    ("flake with a valid lease", {}, K.FLAKE, 4),
    ("verdict missing", {"property_verdict": ...}, K.INCOMPLETE, 1),
    ("verdict invalid", {"property_verdict": "PASS"}, K.INCOMPLETE, 1),
    ("pin missing", {"pin_status": ...}, K.INCOMPLETE, 1),
    ("pin invalid", {"pin_status": "ok"}, K.INCOMPLETE, 1),
    (
        "pin status missing beats a mismatch verdict",
        {"pin_status": None, "property_verdict": "fail"},
        K.INCOMPLETE,
        1,
    ),
    ("pin mismatch", {"pin_status": "mismatch"}, K.FIXTURE, 3),
    ("pin before property", {"pin_status": "mismatch", "property_verdict": "fail"}, K.FIXTURE, 3),
    ("property fails", {"property_verdict": "fail"}, K.PROPERTY, 2),
    (
        "short replay cannot launder a property failure",
        {"property_verdict": "fail", "replays": replays("g")},
        K.PROPERTY,
        2,
    ),
    ("budget not filled", {"replays": replays("ggg")}, K.INCOMPLETE, 1),
    ("stopped on first green", {"replays": replays("rrg")}, K.INCOMPLETE, 1),
    ("over the budget", {"replays": replays("rrrrrg")}, K.INCOMPLETE, 1),
    ("origin unknown", {"origin_passed": ...}, K.INCOMPLETE, 1),
    ("origin 'false' string", {"origin_passed": "false"}, K.INCOMPLETE, 1),
    ("origin passed", {"origin_passed": True}, K.INCOMPLETE, 1),
    ("red on every replay", {"replays": replays("rrrrr")}, K.STABLE_RED, 5),
    ("one green in a full budget", {"replays": replays("rrrrg")}, K.FLAKE, 4),
    ("all green", {"replays": replays("ggggg")}, K.FLAKE, 4),
    (
        "replay without passed",
        {"replays": [{"attempt_id": "x"}, *replays("gggg")]},
        K.INCOMPLETE,
        1,
    ),
    (
        "replay passed as string",
        {"replays": [{"attempt_id": "x", "passed": "true"}, *replays("gggg")]},
        K.INCOMPLETE,
        1,
    ),
    ("duplicate attempt ids", {"replays": replays("gggg") + replays("g")}, K.INCOMPLETE, 1),
    (
        "green with a failing exit code",
        {"replays": [{"attempt_id": "x", "passed": True, "exit_code": 1}, *replays("rrrr")]},
        K.INCOMPLETE,
        1,
    ),
    (
        "negative duration",
        {"replays": [{"attempt_id": "x", "passed": False, "duration_s": -1}, *replays("gggg")]},
        K.INCOMPLETE,
        1,
    ),
    (
        "unknown replay field",
        {"replays": [{"attempt_id": "x", "passed": False, "retry": 1}, *replays("gggg")]},
        K.INCOMPLETE,
        1,
    ),
    ("budget below policy", {"budget": 3, "replays": replays("rgr")}, K.INCOMPLETE, 1),
    ("budget as a float", {"budget": 5.0}, K.INCOMPLETE, 1),
    ("bigger budget filled", {"budget": 6, "replays": replays("rgrrrr")}, K.FLAKE, 4),
    ("unknown field", {"origin": "fail"}, K.INCOMPLETE, 1),
    # the lease permission: FLAKE stays FLAKE, but the exit is the refused-lease code
    ("no owner", {"owner": ...}, K.FLAKE, 6),
    ("blank owner", {"owner": " \t "}, K.FLAKE, 6),
    ("expiry missing", {"expires_at": ...}, K.FLAKE, 6),
    ("expiry in the past", {"expires_at": "2026-11-28T12:00:00Z"}, K.FLAKE, 6),
    ("expiry == now", {"expires_at": "2026-11-29T12:00:00Z"}, K.FLAKE, 6),
    ("expiry == now in another offset", {"expires_at": "2026-11-29T13:00:00+01:00"}, K.FLAKE, 6),
    ("expiry one second after now", {"expires_at": "2026-11-29T12:00:01Z"}, K.FLAKE, 4),
    ("expiry at the 14-day maximum", {"expires_at": "2026-12-13T12:00:00Z"}, K.FLAKE, 4),
    ("expiry a second past the maximum", {"expires_at": "2026-12-13T12:00:01Z"}, K.FLAKE, 6),
    ("permanent freeze", {"expires_at": "2099-01-01T00:00:00Z"}, K.FLAKE, 6),
    ("year 9999", {"expires_at": "9999-12-31T23:59:59Z"}, K.FLAKE, 6),
    ("naive expiry", {"expires_at": "2026-12-01T00:00:00"}, K.FLAKE, 6),
    ("expiry 'soon'", {"expires_at": "soon"}, K.FLAKE, 6),
    ("expiry a number", {"expires_at": 1764547200}, K.FLAKE, 6),
    ("stable red needs no owner", {"replays": replays("rrrrr"), "owner": ...}, K.STABLE_RED, 5),
]


@pytest.mark.parametrize(
    ("changes", "klass", "exit_code"), [r[1:] for r in CLASS_TABLE], ids=[r[0] for r in CLASS_TABLE]
)
def test_classify_table(changes: dict[str, Any], klass: ClassifyClass, exit_code: int) -> None:
    decision = classify(classify_report(**changes), now=NOW)
    assert decision.code is klass
    assert decision.exit_code == exit_code
    assert decision.freeze_allowed is (exit_code == 4)
    assert decision.accepted is decision.freeze_allowed
    if klass is K.FLAKE and exit_code == 6:
        assert decision.lease_reasons


def test_summary_line() -> None:
    assert classify(classify_report(), now=NOW).summary_line() == (
        "exit=4 class=flake freeze=eligible"
    )
    refused = classify(classify_report(owner=""), now=NOW)
    assert refused.summary_line() == "exit=6 class=flake freeze=refused"
    red = classify(classify_report(replays=replays("rrrrr")), now=NOW)
    assert red.summary_line() == "exit=5 class=stable_red freeze=no"
    assert (red.greens, red.replays) == (0, 5)


def test_naive_now_refuses_the_lease() -> None:
    decision = classify(classify_report(), now=NOW.replace(tzinfo=None))
    assert decision.code is K.FLAKE
    assert not decision.freeze_allowed


def test_typed_report_and_freeze_allowed() -> None:
    report = ClassifyReport(
        property_verdict="pass",
        pin_status="match",
        origin_passed=False,
        replays=tuple(Replay(attempt_id=f"r{i}", passed=i == 3) for i in range(5)),
        owner="ci-bot",
        expires_at="2026-12-01T00:00:00+00:00",
    )
    assert freeze_allowed(report, now=NOW)
    assert not freeze_allowed(report, now=NOW + dt.timedelta(days=3))


@pytest.mark.parametrize(
    ("owner", "expires_at", "problem"),
    [
        ("ci-bot", "2026-12-01T00:00:00Z", None),
        (" ", "2026-12-01T00:00:00Z", "owner is missing or blank"),
        ("ci-bot", "2026-11-01T00:00:00Z", "is not after now"),
        ("ci-bot", "2027-06-01T00:00:00Z", "more than 14 days away"),
    ],
)
def test_lease_window_problems(owner: str, expires_at: str, problem: str | None) -> None:
    """The owner/expiry window alone; it is not the stored-lease check of ``flakecore.lease``."""
    found = flakecore.lease_window_problems(owner, expires_at, now=NOW)
    assert found == [] if problem is None else any(problem in p for p in found), found
    assert not hasattr(flakecore, "lease_problems"), "one name, one meaning"


@given(
    verdict=st.sampled_from(["pass", "fail", None, "x"]),
    pin=st.sampled_from(["match", "mismatch", None]),
    origin=st.sampled_from([True, False, None, "false"]),
    pattern=st.text(alphabet="gr", max_size=7),
)
def test_property_failure_never_flake(
    verdict: str | None, pin: str | None, origin: object, pattern: str
) -> None:
    decision = classify(
        classify_report(
            property_verdict=verdict, pin_status=pin, origin_passed=origin, replays=replays(pattern)
        ),
        now=NOW,
    )
    if decision.code is K.FLAKE:
        assert verdict == "pass"
        assert pin == "match"
        assert origin is False
        assert len(pattern) == 5
        assert "g" in pattern
    if verdict != "pass" or pin != "match":
        assert not decision.freeze_allowed
