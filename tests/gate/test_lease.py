"""``flakecore.lease``: opening a lease (classify + roles) and judging a stored one.

Each refusal row has an accepted twin (the valid record/report in support.py
passes), so a checker that refuses everything fails here.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from identities import DISTINCT, HONEST, IDENTITIES, NOT_PLAIN
from packets import replays

from flakecore.codes import ClassifyClass
from flakecore.lease import (
    LEASE_FIELDS,
    LEASE_REQUIRED,
    build_lease,
    lease_problems,
    role_problems,
    short_form,
)
from flakecore.policy import Policy
from flakecore.timeutil import format_rfc3339
from gate.support import (
    AUTHOR,
    DIGEST,
    HOST,
    NOW,
    OTHER_HOST,
    PATCH,
    REVIEWER,
    TEST_ID,
    lease_record,
    lease_report,
    roles,
)

DAY = dt.timedelta(days=1)


def at(delta: dt.timedelta) -> str:
    return format_rfc3339(NOW + delta)


# --------------------------------------------------------------------------- opening


def test_open_accepted_records_every_field() -> None:
    outcome = build_lease(lease_report(), test_id=TEST_ID, roles=roles(), now=NOW)
    assert outcome.opened and outcome.reasons == ()
    record = outcome.record
    assert record is not None
    assert tuple(record) == LEASE_FIELDS
    assert record["class"] == "FLAKE"
    assert record["pinned_sha256"] == DIGEST
    assert record["origin_passed"] is False
    assert record["budget"] == 5 and record["greens"] == 4
    assert record["attempt_ids"] == ["r1", "r2", "r3", "r4", "r5"]
    assert record["replay_host"] == HOST and record["accepted_by"] == REVIEWER
    assert record["patch_author"] == AUTHOR
    assert record["opened_at"] == "2026-11-29T12:00:00Z"
    assert record["canary"] == "nightly-canary"
    assert lease_problems(record, now=NOW) == []


def test_open_without_patch_binding_leaves_the_optional_fields_out() -> None:
    outcome = build_lease(
        lease_report(), test_id=TEST_ID, roles=roles(patch_hash=None, oracle_version=None), now=NOW
    )
    assert outcome.record is not None
    assert "patch_hash" not in outcome.record and "oracle_version" not in outcome.record


FOLDED_SAME = [
    pytest.param(REVIEWER, id="exact"),
    pytest.param(REVIEWER.upper(), id="case"),
    pytest.param(f"  {REVIEWER} ", id="spaces"),
    pytest.param("Re Viewer@Example.test", id="case and an inner space"),
]


@pytest.mark.parametrize("author", FOLDED_SAME)
def test_open_refused_when_the_acceptor_is_the_patch_author(author: str) -> None:
    outcome = build_lease(
        lease_report(), test_id=TEST_ID, roles=roles(patch_author=author), now=NOW
    )
    assert not outcome.opened
    assert any("patch author" in r for r in outcome.reasons)


@pytest.mark.parametrize("field", ["accepted_by", "patch_author"])
@pytest.mark.parametrize(
    ("text", "code_point"), [c[1:] for c in NOT_PLAIN], ids=[c[0] for c in NOT_PLAIN]
)
def test_open_refused_when_a_role_is_a_look_alike(field: str, text: str, code_point: int) -> None:
    """SPEC 8: a look-alike of the author (or anyone) is no identity, never a different one."""
    outcome = build_lease(lease_report(), test_id=TEST_ID, roles=roles(**{field: text}), now=NOW)
    assert not outcome.opened
    assert any(
        r.startswith(f"{field} is not printable ASCII: U+{code_point:04X}") for r in outcome.reasons
    )


@pytest.mark.parametrize("owner", [t for _, t, _ in NOT_PLAIN], ids=[c[0] for c in NOT_PLAIN])
def test_open_refused_when_the_owner_is_a_look_alike(owner: str) -> None:
    outcome = build_lease(lease_report(owner=owner), test_id=TEST_ID, roles=roles(), now=NOW)
    assert not outcome.opened
    assert outcome.decision.code is ClassifyClass.FLAKE and not outcome.decision.freeze_allowed
    assert any(r.startswith("owner is not printable ASCII") for r in outcome.reasons)


@pytest.mark.parametrize(("author", "acceptor"), DISTINCT)
def test_open_accepts_distinct_honest_roles(author: str, acceptor: str) -> None:
    """The twin: honest identities that differ (even ``o`` and ``0``) stay apart."""
    outcome = build_lease(
        lease_report(),
        test_id=TEST_ID,
        roles=roles(patch_author=author, accepted_by=acceptor),
        now=NOW,
    )
    assert outcome.opened, outcome.reasons


@pytest.mark.parametrize("owner", HONEST)
def test_open_accepts_every_honest_owner(owner: str) -> None:
    outcome = build_lease(lease_report(owner=owner), test_id=TEST_ID, roles=roles(), now=NOW)
    assert outcome.opened, outcome.reasons


@pytest.mark.parametrize(
    "acceptor",
    [HOST, HOST.upper(), f" {HOST} ", HOST.replace("img", "\uff49\uff4d\uff47")],
    ids=["exact", "case", "spaces", "fullwidth"],
)
def test_open_refused_when_the_acceptor_is_the_replay_host(acceptor: str) -> None:
    outcome = build_lease(
        lease_report(), test_id=TEST_ID, roles=roles(accepted_by=acceptor), now=NOW
    )
    assert not outcome.opened
    assert any("replay host" in r or "printable ASCII" in r for r in outcome.reasons)


def test_open_accepts_another_runner_on_the_same_image_as_acceptor() -> None:
    outcome = build_lease(
        lease_report(), test_id=TEST_ID, roles=roles(accepted_by=OTHER_HOST), now=NOW
    )
    assert outcome.opened, outcome.reasons


OPEN_REFUSALS = [
    # (report changes, role changes, test id, expected class, substring of a reason)
    ({"owner": ""}, {}, TEST_ID, ClassifyClass.FLAKE, "owner"),
    ({"owner": "   "}, {}, TEST_ID, ClassifyClass.FLAKE, "owner"),
    ({"owner": ...}, {}, TEST_ID, ClassifyClass.FLAKE, "owner"),
    ({"expires_at": "2026-11-29T12:00:00Z"}, {}, TEST_ID, ClassifyClass.FLAKE, "not after now"),
    ({"expires_at": "2026-11-28T12:00:00Z"}, {}, TEST_ID, ClassifyClass.FLAKE, "not after now"),
    ({"expires_at": "2099-01-01T00:00:00Z"}, {}, TEST_ID, ClassifyClass.FLAKE, "14 days"),
    ({"expires_at": "2026-12-01T00:00:00"}, {}, TEST_ID, ClassifyClass.FLAKE, "naive"),
    ({"replays": replays("rrrrr")}, {}, TEST_ID, ClassifyClass.STABLE_RED, "classify"),
    ({"replays": replays("ggrg")}, {}, TEST_ID, ClassifyClass.INCOMPLETE, "classify"),
    ({"property_verdict": "fail"}, {}, TEST_ID, ClassifyClass.PROPERTY, "classify"),
    ({"pinned_sha256": ...}, {}, TEST_ID, ClassifyClass.FLAKE, "pinned_sha256"),
    ({"canary": ...}, {}, TEST_ID, ClassifyClass.FLAKE, "canary"),
    ({"canary": " "}, {}, TEST_ID, ClassifyClass.FLAKE, "canary"),
    ({}, {"patch_author": None}, TEST_ID, ClassifyClass.FLAKE, "patch_author"),
    ({}, {"patch_author": " "}, TEST_ID, ClassifyClass.FLAKE, "patch_author"),
    ({}, {"accepted_by": ""}, TEST_ID, ClassifyClass.FLAKE, "accepted_by"),
    ({}, {"replay_host": "ci-runner-3"}, TEST_ID, ClassifyClass.FLAKE, "runner id"),
    ({}, {"patch_hash": " "}, TEST_ID, ClassifyClass.FLAKE, "patch_hash"),
    ({}, {"patch_hash": "ph-1"}, TEST_ID, ClassifyClass.FLAKE, "git commit id"),
    ({}, {"patch_hash": "F" * 64}, TEST_ID, ClassifyClass.FLAKE, "git commit id"),
    ({}, {"patch_hash": "f" * 7}, TEST_ID, ClassifyClass.FLAKE, "git commit id"),
    ({}, {}, "  ", ClassifyClass.FLAKE, "test_id"),
]


@pytest.mark.parametrize(("report", "role", "test_id", "klass", "reason"), OPEN_REFUSALS)
def test_open_refusals(
    report: dict[str, object],
    role: dict[str, object],
    test_id: str,
    klass: ClassifyClass,
    reason: str,
) -> None:
    outcome = build_lease(lease_report(**report), test_id=test_id, roles=roles(**role), now=NOW)
    assert outcome.record is None and not outcome.opened
    assert outcome.decision.code is klass
    assert any(reason in r for r in outcome.reasons), outcome.reasons


def test_open_canary_from_argument_and_conflict() -> None:
    report = lease_report(canary=...)
    ok = build_lease(report, test_id=TEST_ID, roles=roles(), now=NOW, canary="canary-job")
    assert ok.record is not None and ok.record["canary"] == "canary-job"
    same = build_lease(
        lease_report(), test_id=TEST_ID, roles=roles(), now=NOW, canary="nightly-canary"
    )
    assert same.opened
    clash = build_lease(lease_report(), test_id=TEST_ID, roles=roles(), now=NOW, canary="other")
    assert not clash.opened and any("differs" in r for r in clash.reasons)


def test_open_honours_the_policy_window() -> None:
    short = Policy(max_lease_days=3)
    outcome = build_lease(lease_report(), test_id=TEST_ID, roles=roles(), now=NOW, policy=short)
    assert not outcome.opened and any("3 days" in r for r in outcome.reasons)


# --------------------------------------------------------------------------- stored leases


def test_valid_lease_passes_with_and_without_binding() -> None:
    record = lease_record()
    assert lease_problems(record, now=NOW) == []
    assert lease_problems(record, now=NOW + 6 * DAY) == []
    assert lease_problems(record, now=NOW, patch_hash=PATCH, oracle_version="oracle-3") == []


STORED_PROBLEMS = [
    ("expiry == now", {"expires_at": at(dt.timedelta(0))}, NOW, "not after now"),
    ("expired", {}, NOW + 7 * DAY, "not after now"),
    ("long expired", {}, NOW + 400 * DAY, "not after now"),
    ("2099", {"expires_at": "2099-01-01T00:00:00Z"}, NOW, "days away"),
    (
        "window from opened_at",
        {"opened_at": at(-10 * DAY), "expires_at": at(10 * DAY)},
        NOW,
        "after opened_at",
    ),
    ("opened in the future", {"opened_at": at(DAY)}, NOW, "in the future"),
    (
        "expiry before opening",
        {"opened_at": at(-DAY), "expires_at": at(-2 * DAY)},
        NOW,
        "not after opened_at",
    ),
    ("naive expiry", {"expires_at": "2026-12-01T00:00:00"}, NOW, "naive"),
    ("garbage expiry", {"expires_at": "next tuesday"}, NOW, "expires_at"),
    ("naive opened_at", {"opened_at": "2026-11-29T00:00:00"}, NOW, "opened_at"),
    ("blank owner", {"owner": " "}, NOW, "owner"),
    ("missing owner", {"owner": ...}, NOW, "owner"),
    ("unknown field", {"renewed": True}, NOW, "unknown field 'renewed'"),
    ("missing canary", {"canary": ...}, NOW, "canary is missing"),
    ("missing attempt ids", {"attempt_ids": ...}, NOW, "attempt_ids is missing"),
    ("wrong format", {"format": "flakecore.freeze-record"}, NOW, "format"),
    ("major version", {"format_version": "2.0"}, NOW, "format_version"),
    ("leading zero minor", {"format_version": "1.01"}, NOW, "format_version"),
    ("class", {"class": "STABLE_RED"}, NOW, "class"),
    ("budget as string", {"budget": "5"}, NOW, "budget"),
    ("greens as bool", {"greens": True}, NOW, "greens"),
    ("greens disagree", {"greens": 5}, NOW, "green"),
    ("origin as string", {"origin_passed": "false"}, NOW, "origin_passed"),
    ("origin passed", {"origin_passed": True}, NOW, "origin_passed"),
    ("pin mismatch", {"pin_status": "mismatch"}, NOW, "FIXTURE"),
    ("property fail", {"property_verdict": "fail"}, NOW, "PROPERTY"),
    ("digest prefix", {"pinned_sha256": "sha256:" + DIGEST}, NOW, "pinned_sha256"),
    ("short replays", {"replays": replays("ggrg")}, NOW, "INCOMPLETE"),
    ("all red", {"replays": replays("rrrrr"), "greens": 1}, NOW, "STABLE_RED"),
    ("attempt ids disagree", {"attempt_ids": ["a", "b", "c", "d", "e"]}, NOW, "attempt ids"),
    ("attempt ids repeat", {"attempt_ids": ["r1", "r1", "r3", "r4", "r5"]}, NOW, "repeat"),
    ("acceptor is host", {"accepted_by": HOST.upper()}, NOW, "replay host"),
    ("acceptor is author", {"accepted_by": " " + AUTHOR.upper()}, NOW, "patch author"),
    ("host not a runner id", {"replay_host": "laptop"}, NOW, "runner id"),
    ("blank author", {"patch_author": ""}, NOW, "patch_author"),
    ("blank patch hash", {"patch_hash": " "}, NOW, "patch_hash"),
    ("patch hash not a commit id", {"patch_hash": "0"}, NOW, "git commit id"),
    ("blank oracle version", {"oracle_version": "\t"}, NOW, "oracle_version"),
]


@pytest.mark.parametrize(
    ("changes", "now", "reason"),
    [pytest.param(c, n, r, id=i) for i, c, n, r in STORED_PROBLEMS],
)
def test_stored_lease_problems(changes: dict[str, object], now: dt.datetime, reason: str) -> None:
    problems = lease_problems(lease_record(**changes), now=now)
    assert any(reason in p for p in problems), problems


@pytest.mark.parametrize(
    ("changes", "kwargs", "reason"),
    [
        ({}, {"patch_hash": "0" * 64}, "another patch hash"),
        ({}, {"oracle_version": "oracle-4"}, "another oracle version"),
        ({"patch_hash": ...}, {"patch_hash": PATCH}, "not bound to a patch hash"),
        ({"oracle_version": ...}, {"oracle_version": "oracle-3"}, "not bound to a oracle version"),
    ],
)
def test_stored_lease_bound_elsewhere(
    changes: dict[str, object], kwargs: dict[str, Any], reason: str
) -> None:
    problems = lease_problems(lease_record(**changes), now=NOW, **kwargs)
    assert any(reason in p for p in problems), problems


@pytest.mark.parametrize("record", [None, [], "lease", 5])
def test_stored_lease_not_an_object(record: object) -> None:
    assert lease_problems(record, now=NOW) == ["a lease must be a JSON object"]


def test_every_required_field_is_required() -> None:
    for name in LEASE_REQUIRED:
        assert lease_problems(lease_record(**{name: ...}), now=NOW), name


def test_policy_of_the_check_applies() -> None:
    assert lease_problems(lease_record(), now=NOW, policy=Policy(max_lease_days=3))
    assert lease_problems(lease_record(), now=NOW, policy=Policy(replay_budget=6))


def test_role_problems_apart() -> None:
    assert role_problems(HOST, REVIEWER, AUTHOR) == []
    assert role_problems(HOST, OTHER_HOST, AUTHOR) == []


def test_short_form() -> None:
    assert short_form(lease_record()) == (
        f"class=flake property=pass pin=match sha256:{DIGEST} origin=fail replays=5 budget=5 "
        "greens=4 owner=ci-bot expires_at=2026-12-06T12:00:00Z canary=nightly-canary"
    )


def test_short_form_quotes_values_that_could_forge_a_field_or_a_line() -> None:
    line = short_form(lease_record(owner="a b\nclass=flake", canary="x=y"))
    assert "\n" not in line
    assert 'owner="a b\\nclass=flake"' in line and 'canary="x=y"' in line
    assert short_form({}).startswith("class=? property=? pin=? sha256:? origin=?")


# --------------------------------------------------------------------------- invariants

_BLANKS = st.text(alphabet=" \t\n\r\u00a0\u2003\u3000", max_size=4)
_OFFSETS = st.integers(min_value=-30 * 86400, max_value=80 * 365 * 86400)
_WINDOW = 14 * 86400


@given(owner=_BLANKS, offset=_OFFSETS)
def test_no_blank_owner_ever_passes(owner: str, offset: int) -> None:
    record = lease_record(owner=owner, expires_at=at(dt.timedelta(seconds=offset)))
    assert lease_problems(record, now=NOW)


@given(offset=_OFFSETS.filter(lambda s: s <= 0 or s > _WINDOW))
def test_no_out_of_window_expiry_ever_passes(offset: int) -> None:
    record = lease_record(expires_at=at(dt.timedelta(seconds=offset)))
    assert lease_problems(record, now=NOW)


@given(offset=st.integers(min_value=1, max_value=_WINDOW))
def test_naive_expiry_never_passes(offset: int) -> None:
    naive = (NOW + dt.timedelta(seconds=offset)).replace(tzinfo=None).isoformat()
    assert lease_problems(lease_record(expires_at=naive), now=NOW)


_CASE = st.sampled_from([str.upper, str.lower, str.title, lambda s: s])
_PAD = st.text(alphabet=" \t\u3000\u200b", max_size=3)


@given(case=_CASE, left=_PAD, right=_PAD, offset=st.integers(min_value=1, max_value=_WINDOW))
def test_acceptor_equal_to_the_replay_host_never_passes(
    case: object, left: str, right: str, offset: int
) -> None:
    acceptor = left + case(HOST) + right  # type: ignore[operator]
    record = lease_record(accepted_by=acceptor, expires_at=at(dt.timedelta(seconds=offset)))
    assert lease_problems(record, now=NOW)


@given(
    owner=IDENTITIES,
    offset=st.integers(min_value=1, max_value=_WINDOW),
    elapsed=st.integers(min_value=0, max_value=_WINDOW),
)
def test_a_lease_inside_its_window_passes(owner: str, offset: int, elapsed: int) -> None:
    """The twin of the refusals: a checker that refuses everything fails here."""
    record = lease_record(owner=owner, expires_at=at(dt.timedelta(seconds=offset)))
    now = NOW + dt.timedelta(seconds=min(elapsed, offset - 1))
    assert lease_problems(record, now=now) == []
