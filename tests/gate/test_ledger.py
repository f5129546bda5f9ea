"""The ledger and the record store: ``apply_budget`` per code, row checks, directory checks.

"Untouched" is asserted on the directory's exact bytes, not on a message.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from identities import IDENTITIES
from packets import decide_packet

from flakecore.codes import BudgetCode, TrustReason
from flakecore.errors import InputError, UsageError
from flakecore.gate.basetrust import RecordTrust
from flakecore.gate.ledger import (
    apply_budget,
    check_directory,
    check_record,
    record_file_name,
    row_expired,
    row_problems,
)
from flakecore.gate.seedrun import BUDGET_RUN_FORMAT, observation_packet
from flakecore.policy import Policy
from flakecore.timeutil import format_rfc3339
from gate.support import (
    HOST,
    NOW,
    OWN_OUTPUT,
    TEST_ID,
    budget_packet,
    lease_record,
    listing,
    row_record,
    store,
)

TODAY = NOW.date()
NAME = record_file_name(TEST_ID)


def test_record_file_name_is_the_sha256_of_the_test_id() -> None:
    assert hashlib.sha256(TEST_ID.encode()).hexdigest() + ".json" == NAME


@given(st.text(max_size=200))
def test_no_test_id_becomes_a_path(test_id: str) -> None:
    name = record_file_name(test_id)
    assert re.fullmatch(r"[0-9a-f]{64}\.json", name)


# --------------------------------------------------------------------------- apply


def test_flake_candidate_writes_the_row(tmp_path: Path) -> None:
    action = apply_budget(str(tmp_path / "ledger"), budget_packet(test_id=TEST_ID), today=TODAY)
    assert action.decision.code is BudgetCode.FLAKE_CANDIDATE and action.action == "wrote"
    files = listing(tmp_path / "ledger")
    assert list(files) == [NAME]
    row = json.loads(files[NAME])
    assert row == row_record()
    assert row["expires_on"] == "2026-12-13" and row["code"] == "FLAKE_CANDIDATE"
    assert row_problems(row, today=TODAY) == []


def test_flake_candidate_replaces_the_previous_row(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    apply_budget(str(ledger), budget_packet(test_id=TEST_ID, passes=2), today=TODAY)
    later = TODAY + dt.timedelta(days=3)
    apply_budget(str(ledger), budget_packet(test_id=TEST_ID, passes=6), today=later)
    files = listing(ledger)
    assert list(files) == [NAME]
    row = json.loads(files[NAME])
    assert row["passes"] == 6 and row["expires_on"] == "2026-12-16"


def test_one_row_per_test_id(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    apply_budget(str(ledger), budget_packet(test_id="a"), today=TODAY)
    apply_budget(str(ledger), budget_packet(test_id="b"), today=TODAY)
    assert sorted(listing(ledger)) == sorted([record_file_name("a"), record_file_name("b")])


def test_stable_pass_deletes_only_this_tests_row(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    apply_budget(str(ledger), budget_packet(test_id=TEST_ID), today=TODAY)
    apply_budget(str(ledger), budget_packet(test_id="other"), today=TODAY)
    action = apply_budget(str(ledger), budget_packet(test_id=TEST_ID, passes=8), today=TODAY)
    assert action.decision.code is BudgetCode.STABLE_PASS and action.action == "deleted"
    assert list(listing(ledger)) == [record_file_name("other")]


def test_stable_pass_without_a_row(tmp_path: Path) -> None:
    action = apply_budget(str(tmp_path), budget_packet(passes=8), today=TODAY)
    assert action.action == "untouched" and listing(tmp_path) == {}


UNTOUCHED = [
    (budget_packet(test_id=TEST_ID, head_digest="c" * 64), BudgetCode.FIXTURE_DRIFT),
    (budget_packet(test_id=TEST_ID, property_holds=False), BudgetCode.PROPERTY_MISS),
    (budget_packet(test_id=TEST_ID, passes=0), BudgetCode.STABLE_FAIL),
    (budget_packet(test_id=TEST_ID, passes=None), BudgetCode.INSUFFICIENT_BUDGET),
    (
        budget_packet(test_id=TEST_ID, budget=5, seeds=[1, 2, 3, 4, 5]),
        BudgetCode.INSUFFICIENT_BUDGET,
    ),
    (budget_packet(test_id=TEST_ID, seeds=[1] * 8), BudgetCode.INSUFFICIENT_BUDGET),
    (budget_packet(test_id=TEST_ID, bogus=1), BudgetCode.INSUFFICIENT_BUDGET),
    (budget_packet(test_id=" "), BudgetCode.INSUFFICIENT_BUDGET),
]


@pytest.mark.parametrize(("packet", "code"), UNTOUCHED)
def test_every_other_code_leaves_the_ledger_untouched(
    tmp_path: Path, packet: dict[str, object], code: BudgetCode
) -> None:
    ledger = tmp_path / "ledger"
    apply_budget(str(ledger), budget_packet(test_id=TEST_ID), today=TODAY)
    apply_budget(str(ledger), budget_packet(test_id="other"), today=TODAY)
    before = listing(ledger)
    action = apply_budget(str(ledger), packet, today=TODAY + dt.timedelta(days=1))
    assert action.decision.code is code and action.action == "untouched"
    assert listing(ledger) == before


def test_flake_candidate_without_parent_commit_writes_nothing(tmp_path: Path) -> None:
    action = apply_budget(str(tmp_path), budget_packet(opened_against=...), today=TODAY)
    assert action.decision.code is BudgetCode.FLAKE_CANDIDATE
    assert action.action == "refused" and listing(tmp_path) == {}


def test_untouched_note_says_an_expired_row_is_absent(tmp_path: Path) -> None:
    apply_budget(str(tmp_path), budget_packet(test_id=TEST_ID), today=TODAY)
    later = TODAY + dt.timedelta(days=20)
    action = apply_budget(str(tmp_path), budget_packet(test_id=TEST_ID, passes=0), today=later)
    assert "counts as absent" in action.note


# --------------------------------------------------------------------------- rows


def test_valid_row_passes_until_it_expires() -> None:
    row = row_record()
    for days in range(14):
        assert row_problems(row, today=TODAY + dt.timedelta(days=days)) == [], days
    assert row_problems(row, today=TODAY + dt.timedelta(days=14))
    assert not row_expired(row, today=TODAY + dt.timedelta(days=13))
    assert row_expired(row, today=TODAY + dt.timedelta(days=14))


ROW_PROBLEMS = [
    ("expires today", {"expires_on": TODAY.isoformat()}, "expired"),
    ("expired", {"expires_on": "2026-01-01"}, "expired"),
    ("2099", {"expires_on": "2099-12-31"}, "permanent freeze"),
    ("15 days", {"expires_on": (TODAY + dt.timedelta(days=15)).isoformat()}, "days away"),
    ("no such day", {"expires_on": "2026-02-30"}, "YYYY-MM-DD"),
    ("timestamp", {"expires_on": "2026-12-13T00:00:00Z"}, "YYYY-MM-DD"),
    ("unknown field", {"owner": "x"}, "unknown field 'owner'"),
    ("missing field", {"opened_against": ...}, "opened_against is missing"),
    ("code", {"code": "STABLE_PASS"}, "only FLAKE_CANDIDATE"),
    ("all passed", {"passes": 8}, "STABLE_PASS"),
    ("none passed", {"passes": 0}, "STABLE_FAIL"),
    ("passes as string", {"passes": "5"}, "passes"),
    ("seed repeats", {"seeds": [11, 11, 47, 71, 97, 131, 173, 211]}, "repeats"),
    ("short budget", {"budget": 4, "seeds": [1, 2, 3, 4], "passes": 2}, "below the minimum"),
    ("digest", {"parent_digest": "A" * 64}, "parent_digest"),
    ("format", {"format": "flakecore.lease"}, "format"),
    ("version", {"format_version": "2.0"}, "format_version"),
]


@pytest.mark.parametrize(
    ("changes", "reason"), [pytest.param(c, r, id=i) for i, c, r in ROW_PROBLEMS]
)
def test_row_problems(changes: dict[str, Any], reason: str) -> None:
    problems = row_problems(row_record(**changes), today=TODAY)
    assert any(reason in p for p in problems), problems


def test_row_policy_applies() -> None:
    assert row_problems(row_record(), today=TODAY, policy=Policy(max_lease_days=7))
    assert row_problems(row_record(), today=TODAY, policy=Policy(min_seed_budget=9))


# --------------------------------------------------------------------------- directories


def test_check_directory_valid_set(tmp_path: Path) -> None:
    store(tmp_path, lease_record())
    store(tmp_path, row_record(test_id="other"))
    (tmp_path / ".gitkeep").write_text("")
    (tmp_path / f".{NAME}.1234.tmp").write_text("{half")
    checks = check_directory(str(tmp_path), trust=OWN_OUTPUT, now=NOW)
    assert sorted(c.kind for c in checks) == ["lease", "ledger-row"]
    assert all(c.valid for c in checks), [c.problems for c in checks]


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        (NAME, b"{not json", "invalid JSON"),
        (NAME, b'{"a": 1, "a": 2}', "duplicate key"),
        (NAME, b"[]", "a JSON object"),
        (NAME, b'{"format": "flakecore.freeze-record", "test_id": "x"}', "not a lease"),
        ("notes.txt", b"hello", "not a record file"),
        ("0" * 64 + ".json", json.dumps(lease_record()).encode(), "file name is not"),
    ],
)
def test_check_directory_flags_bad_files(
    tmp_path: Path, name: str, body: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(body)
    (checked,) = check_directory(str(tmp_path), trust=OWN_OUTPUT, now=NOW)
    assert not checked.valid and any(reason in p for p in checked.problems), checked.problems


def test_the_same_directory_in_a_checkout_counts_nothing(tmp_path: Path) -> None:
    """No base and no keys: a record inside the checkout is the patch's, whatever it says."""
    store(tmp_path, lease_record())
    (checked,) = check_directory(str(tmp_path), trust=RecordTrust(checkout=tmp_path), now=NOW)
    assert not checked.valid and checked.kind == "lease"
    assert checked.trust is not None and checked.trust.reason is TrustReason.NOT_SIGNED
    trust = checked.to_json()["trust"]
    assert isinstance(trust, dict) and trust["reason"] == "NOT_SIGNED"


def test_check_directory_flags_subdirectories(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (checked,) = check_directory(str(tmp_path), trust=OWN_OUTPUT, now=NOW)
    assert not checked.valid


def test_check_directory_unreadable(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        check_directory(str(tmp_path / "missing"), trust=OWN_OUTPUT, now=NOW)
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="not a directory"):
        check_directory(str(tmp_path / "file"), trust=OWN_OUTPUT, now=NOW)


def test_stored_decide_packet_is_bound_to_its_patch() -> None:
    packet = {"format": "flakecore.decide-packet", **decide_packet()}
    path = record_file_name(str(packet["test_id"]))
    ok = check_record(packet, path=path, now=NOW, patch_hash="a" * 64, oracle_version="oracle-3")
    assert ok.valid and ok.kind == "decide-packet", ok.problems
    rebound = check_record(
        packet, path=path, now=NOW, patch_hash="b" * 64, oracle_version="oracle-3"
    )
    assert any("another patch hash" in p for p in rebound.problems)
    new_oracle = check_record(packet, path=path, now=NOW, patch_hash="a" * 64, oracle_version="o4")
    assert any("another oracle version" in p for p in new_oracle.problems)
    unbound = check_record(packet, path=path, now=NOW)
    assert any("--patch-hash" in p for p in unbound.problems)
    refused = check_record(
        {**packet, "clean_class": "pass"},
        path=path,
        now=NOW,
        patch_hash="a" * 64,
        oracle_version="oracle-3",
    )
    assert any("CLASS_MISMATCH" in p for p in refused.problems)


_DEFECTS = st.one_of(
    st.builds(lambda o: {"owner": o}, st.text(alphabet=" \t\n\u3000", max_size=3)),
    st.builds(
        lambda s: {"expires_at": (NOW + dt.timedelta(seconds=s)).replace(tzinfo=None).isoformat()},
        st.integers(min_value=1, max_value=14 * 86400),
    ),
    st.builds(
        lambda s: {"expires_at": (NOW + dt.timedelta(seconds=s)).isoformat()},
        st.integers(min_value=-400 * 86400, max_value=0)
        | st.integers(min_value=14 * 86400 + 1, max_value=80 * 365 * 86400),
    ),
    st.builds(
        lambda f: {"accepted_by": f(HOST)}, st.sampled_from([str.upper, str.lower, str.strip])
    ),
)


@given(defect=_DEFECTS)
def test_no_defective_lease_ever_passes_the_directory_check(defect: dict[str, object]) -> None:
    """What ``lease check`` runs: a stored lease with any of these defects is reported."""
    with tempfile.TemporaryDirectory() as tmp:
        store(Path(tmp), lease_record(**defect))
        (checked,) = check_directory(tmp, trust=OWN_OUTPUT, now=NOW)
        assert not checked.valid and checked.kind == "lease"


@given(
    offset=st.integers(min_value=1, max_value=14 * 86400),
    owner=IDENTITIES,
)
def test_a_sound_lease_passes_the_directory_check(offset: int, owner: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        expiry = (NOW + dt.timedelta(seconds=offset)).isoformat()
        store(Path(tmp), lease_record(owner=owner, expires_at=expiry))
        (checked,) = check_directory(tmp, trust=OWN_OUTPUT, now=NOW)
        assert checked.valid, checked.problems


# --------------------------------------------------------------------------- the ends of the calendar

FAR = [
    (
        "opened and expiring in 9999",
        {"opened_at": "9999-12-31T00:00:00Z", "expires_at": "9999-12-31T12:00:00Z"},
        "in the future",
    ),
    ("expiring at the last second", {"expires_at": "9999-12-31T23:59:59Z"}, "days"),
    ("expiring past 9999 in UTC", {"expires_at": "9999-12-31T23:00:00-05:00"}, "outside years"),
    ("opened before year 1 in UTC", {"opened_at": "0001-01-01T00:00:00+05:00"}, "outside years"),
    ("opened in year 1", {"opened_at": "0001-01-01T00:00:00Z"}, "days after opened_at"),
]


@pytest.mark.parametrize(("changes", "reason"), [f[1:] for f in FAR], ids=[f[0] for f in FAR])
def test_a_lease_at_the_ends_of_the_calendar_is_judged_not_crashed(
    changes: dict[str, object], reason: str
) -> None:
    checked = check_record(lease_record(**changes), path=NAME, now=NOW)
    assert not checked.valid
    assert any(reason in p for p in checked.problems), checked.problems


def test_a_row_expiring_on_the_last_day_is_judged() -> None:
    assert "permanent freeze" in " ".join(
        row_problems(row_record(expires_on="9999-12-31"), today=TODAY)
    )
    last = dt.date(9999, 12, 30)
    assert row_problems(row_record(expires_on="9999-12-31"), today=last) == []


def test_a_row_cannot_be_opened_past_the_last_day(tmp_path: Path) -> None:
    """today + 14 days would pass 9999-12-31: a usage error, not an OverflowError; nothing written."""
    with pytest.raises(UsageError, match="no room"):
        apply_budget(str(tmp_path / "ledger"), budget_packet(), today=dt.date(9999, 12, 25))
    assert not (tmp_path / "ledger").exists()
    action = apply_budget(str(tmp_path / "ledger"), budget_packet(), today=dt.date(9999, 12, 17))
    assert action.action == "wrote" and action.row is not None
    assert action.row["expires_on"] == "9999-12-31"


_OFFSETS = st.builds(
    dt.timezone,
    st.timedeltas(
        min_value=dt.timedelta(hours=-23, minutes=-59), max_value=dt.timedelta(hours=23, minutes=59)
    ),
)
_STAMPS = st.builds(
    lambda when, z: format_rfc3339(when) if z else when.isoformat(),
    st.datetimes(timezones=_OFFSETS).map(lambda d: d.replace(microsecond=0)),
    st.booleans(),
) | st.sampled_from(
    ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"]
)


@given(opened=_STAMPS, expires=_STAMPS, now=st.datetimes(timezones=_OFFSETS), day=st.dates())
def test_every_record_gets_a_verdict_at_any_instant(
    opened: str, expires: str, now: dt.datetime, day: dt.date
) -> None:
    """check_record is total over the calendar: one far-off record never hides the others."""
    lease = check_record(lease_record(opened_at=opened, expires_at=expires), path=NAME, now=now)
    row = check_record(row_record(expires_on=day.isoformat()), path=NAME, now=now)
    assert lease.kind == "lease" and row.kind == "ledger-row"


# --------------------------------------------------------------------------- budget.json


def observation(**changes: Any) -> dict[str, Any]:
    """A ``budget.json`` as ``budget-run`` writes it: 5 of 8 seeds passed (FLAKE_CANDIDATE)."""
    packet = budget_packet(test_id=TEST_ID)
    results = ["pass", "miss", "pass", "miss", "pass", "miss", "pass", "pass"]
    seeds = packet["seeds"]
    assert isinstance(seeds, list)
    record: dict[str, Any] = {
        "format": BUDGET_RUN_FORMAT,
        "format_version": "1.0",
        "test_id": TEST_ID,
        "parent": {"base": "main", "commit": packet["opened_against"], "path": "f.json",
                   "digest": packet["parent_digest"], "digest_kind": "canonical-json"},
        "head": {"path": "f.json", "digest": packet["head_digest"], "digest_kind": "canonical-json"},
        "property": {"command": ["p"], "holds": True, "exit": 0, "timed_out": False,
                     "duration_s": 0.1},
        "runs": [{"seed": s, "result": r, "exit": int(r == "miss"), "duration_s": 0.1}
                 for s, r in zip(seeds, results, strict=True)],
        "packet": packet,
    }  # fmt: skip
    for path, value in changes.items():
        *parents, key = path.split(".")
        target = record
        for part in parents:
            target = target[part]
        target[key] = value
    return record


def test_an_honest_observation_yields_its_packet() -> None:
    record = observation()
    assert observation_packet(record) == (record["packet"], [])


def test_runs_stopped_by_a_timeout_give_null_passes() -> None:
    runs = observation()["runs"][:3]
    runs[-1]["result"] = "timeout"
    record = observation(runs=runs, **{"packet.passes": None})
    assert observation_packet(record) == (record["packet"], [])


SEEDS = [11, 23, 47, 71, 97, 131, 173, 211]
MISMATCHES = [
    ("passes", {"packet.passes": 4}, "passes is 4 but the record gives 5"),
    ("all-missed", {"runs": [{"seed": s, "result": "miss"} for s in SEEDS]},
     "passes is 5 but the record gives 0"),
    ("property", {"property.holds": False}, "seeds ran although the property was not found"),
    ("head", {"head.digest_after_run": "c" * 64}, f"head_digest is {'a' * 64!r} but"),
    ("parent", {"parent.commit": "3" * 40}, "opened_against is"),
    ("budget", {"packet.budget": 9}, "budget is 9 but the record gives 8"),
    ("seed-order", {"packet.seeds": [23, 11, 47, 71, 97, 131, 173, 211]}, "not one run per"),
    ("int-vs-str", {"packet.seeds": ["11", 23, 47, 71, 97, 131, 173, 211]}, "not one run per"),
    ("bad-result", {"runs": [{"seed": 11, "result": "green"}]}, "a run has no result"),
    ("after-error", {"runs": [{"seed": 11, "result": "error"}, {"seed": 23, "result": "pass"}]},
     "runs went on after one"),
    ("no-packet", {"packet": None}, "not a flakecore.budget-run record"),
    ("no-head", {"head": []}, "no seed list, parent or head"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "problem"), [pytest.param(c, p, id=i) for i, c, p in MISMATCHES]
)
def test_a_packet_that_disagrees_with_its_runs_is_refused(
    tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    record = observation(**changes)
    packet, problems = observation_packet(record)
    assert packet is None and any(problem in p for p in problems), problems
    ledger = tmp_path / "ledger"
    store(ledger, row_record())
    before = listing(ledger)
    action = apply_budget(str(ledger), record, today=TODAY)
    assert (action.action, action.decision.code) == ("refused", BudgetCode.INSUFFICIENT_BUDGET)
    assert action.decision.exit_code == 1 and listing(ledger) == before


def test_ledger_apply_reads_budget_json_in_place(tmp_path: Path) -> None:
    action = apply_budget(str(tmp_path / "ledger"), observation(), today=TODAY)
    assert (action.action, action.row) == ("wrote", row_record())
