"""``flakecore budget-run`` end to end: parent fixture from git, real property, real seed runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from e2e.support import (
    FIXTURE,
    TEST_ID,
    budget_args,
    decision,
    make_repo,
    pytest_command,
)

pytestmark = pytest.mark.e2e

#: A property the sample fixture violates.
REVERSED = (
    "import json, sys; v = json.load(open(sys.argv[1]))['values']; "
    "sys.exit(v != sorted(v, reverse=True))"
)
CANONICAL = hashlib.sha256(b'{"unit":"ms","values":[1,2,3]}').hexdigest()


def record(out: Path) -> dict[str, object]:
    value = json.loads(out.read_text())
    assert isinstance(value, dict)
    return value


def test_flake_candidate_one_run_per_committed_seed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)  # HEAD misses every 3rd and every 7th seed
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds="1,2,3,4,5,6,7,8"))
    d = decision(run)
    assert (run.returncode, d["code"], d["accepted"]) == (0, "FLAKE_CANDIDATE", True)
    assert d["reasons"] == ["5 of 8 seeds passed"]
    rec = record(out)
    assert (
        rec["packet"]
        == d["packet"]
        == {
            "format": "flakecore.budget-packet",
            "format_version": "1.0",
            "test_id": TEST_ID,
            "parent_digest": CANONICAL,
            "head_digest": CANONICAL,
            "property_holds": True,
            "seeds": [1, 2, 3, 4, 5, 6, 7, 8],
            "passes": 5,
            "budget": 8,
            "opened_against": repo.base,
        }
    )
    runs = rec["runs"]
    assert isinstance(runs, list)
    assert [(r["seed"], r["result"], r["exit"]) for r in runs] == [
        (1, "pass", 0), (2, "pass", 0), (3, "miss", 1), (4, "pass", 0),
        (5, "pass", 0), (6, "miss", 1), (7, "miss", 1), (8, "pass", 0),
    ]  # fmt: skip
    assert rec["parent"] == {
        "base": repo.base,
        "commit": repo.base,
        "path": FIXTURE,
        "digest": CANONICAL,
        "digest_kind": "canonical-json",
    }
    prop = rec["property"]
    assert isinstance(prop, dict) and (prop["holds"], prop["exit"]) == (True, 0)
    # The record's packet is what the budget verb reads, and it decides the same way.
    packet = tmp_path / "packet.json"
    packet.write_text(json.dumps(rec["packet"]))
    assert repo.flakecore("budget", str(packet)).returncode == 0


def test_stable_pass_over_the_default_seeds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)  # no default seed is a multiple of 3 or 7
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds=None))
    d = decision(run)
    assert (run.returncode, d["code"]) == (6, "STABLE_PASS")
    packet = record(out)["packet"]
    assert isinstance(packet, dict)
    assert (packet["seeds"], packet["passes"]) == ([11, 23, 47, 71, 97, 131, 173, 211], 8)


def test_stable_fail(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds="3,6,9,12,15,18,21,24"))
    d = decision(run)
    assert (run.returncode, d["code"]) == (5, "STABLE_FAIL")


def test_fixture_edited_on_head_is_drift_and_nothing_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, fixture_on_head='{"values": [1, 2, 4], "unit": "ms"}\n')
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds="1,2,3,4,5,6,7,8"))
    d = decision(run)
    assert (run.returncode, d["code"]) == (3, "FIXTURE_DRIFT")
    rec = record(out)
    assert (rec["property"], rec["runs"]) == (None, [])
    packet = rec["packet"]
    assert isinstance(packet, dict)
    assert (packet["property_holds"], packet["passes"]) == (None, None)
    assert packet["parent_digest"] == CANONICAL != packet["head_digest"]


def test_property_fails_on_parent_fixture_and_nothing_runs(tmp_path: Path) -> None:
    # The head fixture is only re-serialized: canonical JSON says it is not drift.
    repo = make_repo(tmp_path, fixture_on_head='{"unit":"ms",\n "values":[1,2,3]}')
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds="1,2,3,4,5,6,7,8", prop=REVERSED))
    d = decision(run)
    assert (run.returncode, d["code"]) == (2, "PROPERTY_MISS")
    rec = record(out)
    prop = rec["property"]
    assert isinstance(prop, dict) and (prop["holds"], prop["exit"]) == (False, 1)
    assert rec["runs"] == []
    assert isinstance(rec["head"], dict) and rec["head"]["digest"] == CANONICAL


def test_short_seed_list_spends_no_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = tmp_path / "budget.json"
    run = repo.flakecore(*budget_args(repo, out, seeds="1,2,3"))
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "INSUFFICIENT_BUDGET")
    assert "budget 3 is below the minimum of 8" in d["reasons"]
    assert record(out)["runs"] == []


def test_a_seed_run_that_errors_stops_the_budget(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = tmp_path / "budget.json"
    command = pytest_command("--no-such-option")  # pytest exit 4: usage error, not a miss
    run = repo.flakecore(*budget_args(repo, out, seeds="1,2,3,4,5,6,7,8", command=command))
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "INSUFFICIENT_BUDGET")
    rec = record(out)
    runs = rec["runs"]
    assert isinstance(runs, list)
    assert [(r["seed"], r["result"], r["exit"]) for r in runs] == [(1, "error", 4)]
    packet = rec["packet"]
    assert isinstance(packet, dict) and packet["passes"] is None


def test_unknown_base_is_insufficient_and_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = tmp_path / "budget.json"
    out.write_text("{}")
    args = budget_args(repo, out, seeds=None)
    args[args.index("--base") + 1] = "no-such-branch"
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "INSUFFICIENT_BUDGET")
    assert d["reasons"] == ["unknown revision 'no-such-branch': not a commit in this repository"]
    assert not out.exists()


def test_property_cmd_without_fixture_placeholder_is_usage(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    args = budget_args(repo, tmp_path / "budget.json", seeds=None)
    args[args.index("--property-cmd") + 1] = "true"
    run = repo.flakecore(*args)
    assert run.returncode == 64
    assert "{fixture}" in run.stderr
