"""The gate verbs as a pipeline runs them: subprocesses, exit codes, files on disk."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from packets import replays

from flakecore.exits import EXIT_INVALID_RECORDS, EXIT_LEASE_REFUSED
from flakecore.gate.ledger import record_file_name
from flakecore.identity import RunnerId
from flakecore.lease import lease_problems
from gate.support import (
    AUTHOR,
    HOST,
    NOW,
    NOW_TEXT,
    OTHER_HOST,
    PATCH,
    REVIEWER,
    TEST_ID,
    budget_packet,
    cli,
    dump,
    lease_record,
    lease_report,
    listing,
    on_base,
    row_record,
    run_record,
    store,
)

NAME = record_file_name(TEST_ID)
IMAGE = "sha256:" + "d" * 64

# --------------------------------------------------------------------------- runner-id


def test_runner_id_fresh_each_time() -> None:
    a, b = cli("runner-id"), cli("runner-id")
    assert a.returncode == b.returncode == 0
    first, second = RunnerId.parse(a.stdout.strip()), RunnerId.parse(b.stdout.strip())
    assert first.image == "local-uncontainerized" and not first.containerized
    assert first.nonce != second.nonce


def test_runner_id_image_from_flag_or_environment() -> None:
    assert RunnerId.parse(cli("runner-id", "--image", IMAGE).stdout.strip()).image == IMAGE
    env = cli("runner-id", env={"FLAKECORE_IMAGE_DIGEST": IMAGE})
    assert RunnerId.parse(env.stdout.strip()).image == IMAGE
    flag_wins = cli("runner-id", "--image", "e" * 64, env={"FLAKECORE_IMAGE_DIGEST": IMAGE})
    assert RunnerId.parse(flag_wins.stdout.strip()).image == "e" * 64
    data = json.loads(cli("runner-id", "--json", "--image", IMAGE).stdout)
    assert data["image"] == IMAGE and data["containerized"] is True
    assert data["runner_id"] == f"img:{IMAGE}+nonce:{data['nonce']}"


@pytest.mark.parametrize("image", ["latest", "sha256:abc", "SHA256:" + "d" * 64, "a+nonce:x"])
def test_runner_id_refuses_a_malformed_image(image: str) -> None:
    assert cli("runner-id", "--image", image).returncode == 64
    assert cli("runner-id", env={"FLAKECORE_IMAGE_DIGEST": image}).returncode == 64


# --------------------------------------------------------------------------- packet

B, C = "b" * 64, "c" * 64


def packet(
    tmp_path: Path, local: dict[str, object], clean: dict[str, object], *extra: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "packet", "--test-id", TEST_ID, "--patch-hash", PATCH, "--oracle-version", "o-3",
        "--local", dump(tmp_path / "local.json", local),
        "--clean", dump(tmp_path / "clean.json", clean), "--no-config", *extra,
    )  # fmt: skip


def test_packet_eligible(tmp_path: Path) -> None:
    out = tmp_path / "packet.json"
    done = packet(tmp_path, run_record(HOST), run_record(OTHER_HOST), "--out", str(out), "--decide")
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data == {
        "format": "flakecore.decide-packet",
        "format_version": "1.0",
        "test_id": TEST_ID,
        "patch_hash": PATCH,
        "oracle_version": "o-3",
        "fixture_hash": B,
        "minimized_input_hash": C,
        "local_runner_id": HOST,
        "clean_runner_id": OTHER_HOST,
        "local_class": "flake_shaped",
        "clean_class": "flake_shaped",
        "clean_fixture_hash": B,
        "clean_input_hash": C,
        "property_cohort_passed": True,
        "clean_run_completed": True,
    }
    assert "decide=ELIGIBLE" in done.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no temp left"


@pytest.mark.parametrize("missing", ["fixture_hash", "input_hash"])
def test_packet_never_copies_an_unechoed_hash_from_the_local_run(
    tmp_path: Path, missing: str
) -> None:
    for clean in (
        run_record(OTHER_HOST, **{missing: ...}),
        run_record(OTHER_HOST, **{missing: None}),
    ):
        done = packet(tmp_path, run_record(HOST), clean, "--decide", "--json")
        assert done.returncode == 4, done.stderr
        data = json.loads(done.stdout)
        assert f"clean_{missing}" not in data["packet"]
        assert data["decision"]["code"] == "CLEAN_RUN_UNAVAILABLE"
        assert f"clean_{missing}" in data["omitted"]
        assert "left out" in done.stderr


@pytest.mark.parametrize(
    ("local", "clean", "code", "exit_code"),
    [
        ({}, {"completed": ...}, "CLEAN_RUN_UNAVAILABLE", 4),
        ({}, {"completed": False}, "CLEAN_RUN_UNAVAILABLE", 4),
        ({}, {"runner_id": HOST}, "NOT_DISTINCT_RUNNER", 4),
        ({}, {"class": "pass"}, "CLASS_MISMATCH", 3),
        ({"class": "deterministic"}, {}, "NOT_FLAKE_SHAPED", 3),
        ({}, {"fixture_hash": "e" * 64}, "FIXTURE_DRIFT", 3),
        ({}, {"input_hash": "e" * 64}, "INPUT_DRIFT", 3),
        ({}, {"property_cohort_passed": False}, "PROPERTY_OWNS_BUG", 3),
        ({}, {"property_cohort_passed": ...}, "PROPERTY_OWNS_BUG", 3),
        ({"property_cohort_passed": False}, {}, "PROPERTY_OWNS_BUG", 3),
        ({"runner_id": ...}, {}, "MISSING_FIELD", 2),
        ({"fixture_hash": ...}, {}, "MISSING_FIELD", 2),
    ],
)
def test_packet_decisions(
    tmp_path: Path,
    local: dict[str, object],
    clean: dict[str, object],
    code: str,
    exit_code: int,
) -> None:
    done = packet(
        tmp_path, run_record(HOST, **local), run_record(OTHER_HOST, **clean), "--decide", "--json"
    )
    assert done.returncode == exit_code, done.stderr
    assert json.loads(done.stdout)["decision"]["code"] == code


@pytest.mark.parametrize(
    "changes",
    [
        {"fixture_hash": "sha256:" + B},
        {"fixture_hash": B.upper()},
        {"completed": "true"},
        {"class": "flaky"},
        {"runner_id": "laptop"},
        {"extra": 1},
        {"format": "flakecore.lease"},
        {"patch_hash": "e" * 64},
        {"oracle_version": "o-2"},
        {"test_id": "another"},
    ],
)
def test_packet_refuses_a_malformed_or_rebound_run_record(
    tmp_path: Path, changes: dict[str, object]
) -> None:
    out = tmp_path / "packet.json"
    done = packet(tmp_path, run_record(HOST), run_record(OTHER_HOST, **changes), "--out", str(out))
    assert done.returncode == 65, done.stderr
    assert "clean.json" in done.stderr and not out.exists()


#: What `git rev-parse HEAD` prints in a SHA-1 repository: a patch hash (SPEC 8).
COMMIT = "9fceb02d0ae598e95dc970b74767f19372d61af8"


def test_a_commit_id_is_the_patch_hash_in_packet_decide_and_the_lease(tmp_path: Path) -> None:
    out = tmp_path / "packet.json"
    done = cli(
        "packet", "--test-id", TEST_ID, "--patch-hash", COMMIT, "--oracle-version", "o-3",
        "--local", dump(tmp_path / "local.json", run_record(HOST, patch_hash=COMMIT)),
        "--clean", dump(tmp_path / "clean.json", run_record(OTHER_HOST)),
        "--out", str(out), "--decide", "--no-config",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["patch_hash"] == COMMIT
    assert cli("decide", str(out), "--no-config").returncode == 0
    opened = lease_open(tmp_path, lease_report(), "--patch-hash", COMMIT)
    assert opened.returncode == 0, opened.stdout + opened.stderr
    lease = tmp_path / "leases" / NAME
    assert json.loads(lease.read_text())["patch_hash"] == COMMIT
    bound = ("--now", NOW_TEXT, "--patch-hash", COMMIT)
    assert on_base("lease", "show", str(lease), *bound).returncode == 0


@pytest.mark.parametrize("value", ["9fceb02", COMMIT.upper(), "sha256:" + "f" * 64, "main", " "])
@pytest.mark.parametrize(
    "verb",
    [
        ("packet", "--test-id", "t", "--oracle-version", "o", "--local", "l", "--clean", "c"),
        ("lease", "open", "--report", "r", "--test-id", "t", "--replay-host", "h",
         "--accepted-by", "a"),
        ("lease", "show", "f.json"),
        ("lease", "check"),
    ],
)  # fmt: skip
def test_a_patch_hash_that_is_no_commit_id_is_a_usage_error(
    verb: tuple[str, ...], value: str
) -> None:
    done = cli(*verb, "--patch-hash", value, "--no-config")
    assert done.returncode == 64
    assert f"argument --patch-hash: {value!r} is not a git commit id" in done.stderr
    assert "git rev-parse HEAD" in done.stderr and done.stderr.count("\n") == 1


def test_packet_refuses_a_run_record_bound_to_a_patch_hash_that_is_no_commit_id(
    tmp_path: Path,
) -> None:
    done = packet(tmp_path, run_record(HOST, patch_hash="9fceb02"), run_record(OTHER_HOST))
    assert done.returncode == 65
    assert "patch_hash is not a git commit id" in done.stderr


def test_packet_missing_file_and_usage(tmp_path: Path) -> None:
    done = cli("packet", "--test-id", "t", "--patch-hash", PATCH, "--oracle-version", "o",
               "--local", str(tmp_path / "nope.json"), "--clean", str(tmp_path / "nope.json"),
               "--no-config")  # fmt: skip
    assert done.returncode == 66
    assert cli("packet", "--test-id", "t").returncode == 64


def test_packet_prints_to_stdout_without_out(tmp_path: Path) -> None:
    done = packet(tmp_path, run_record(HOST), run_record(OTHER_HOST))
    assert done.returncode == 0
    assert json.loads(done.stdout)["clean_runner_id"] == OTHER_HOST


# --------------------------------------------------------------------------- lease open


def lease_open(
    tmp_path: Path, report: dict[str, object], *extra: str, **flags: str | None
) -> subprocess.CompletedProcess[str]:
    """``lease open`` with valid roles; a flag set to None is left out."""
    values: dict[str, str | None] = {
        "test-id": TEST_ID,
        "replay-host": HOST,
        "accepted-by": REVIEWER,
        "patch-author": AUTHOR,
        "now": NOW_TEXT,
        "dir": str(tmp_path / "leases"),
    }
    values.update({k.replace("_", "-"): v for k, v in flags.items()})
    args = [arg for key, value in values.items() if value is not None
            for arg in (f"--{key}", value)]  # fmt: skip
    report_path = dump(tmp_path / "report.json", report)
    return cli("lease", "open", "--report", report_path, *args, "--no-config", *extra)


def test_lease_open_writes_one_file_named_by_the_test_id(tmp_path: Path) -> None:
    done = lease_open(tmp_path, lease_report(), "--patch-hash", PATCH, "--oracle-version", "o-3")
    assert done.returncode == 0, done.stdout + done.stderr
    files = listing(tmp_path / "leases")
    assert list(files) == [NAME]
    record = json.loads(files[NAME])
    assert record["accepted_by"] == REVIEWER and record["replay_host"] == HOST
    assert record["patch_hash"] == PATCH and record["oracle_version"] == "o-3"
    assert "class=flake property=pass pin=match sha256:" in done.stdout
    assert lease_problems(record, now=NOW) == []


def test_lease_file_name_never_comes_from_the_test_id(tmp_path: Path) -> None:
    hostile = "../../escape/" + "x" * 300
    done = lease_open(tmp_path, lease_report(), test_id=hostile)
    assert done.returncode == 0
    assert list(listing(tmp_path / "leases")) == [record_file_name(hostile)]
    assert not (tmp_path / "escape").exists()


REFUSED = [
    ("acceptor is the replay host", {}, {"accepted_by": HOST}, EXIT_LEASE_REFUSED),
    ("acceptor is the host, case", {}, {"accepted_by": HOST.upper()}, EXIT_LEASE_REFUSED),
    ("acceptor is the author", {}, {"accepted_by": AUTHOR}, EXIT_LEASE_REFUSED),
    ("author, case+space", {}, {"accepted_by": f"  {AUTHOR.upper()} "}, EXIT_LEASE_REFUSED),
    (
        "author, nfkc",
        {},
        {"accepted_by": "\uff43\uff4f\uff44\uff49\uff4e\uff47-agent-7"},
        EXIT_LEASE_REFUSED,
    ),
    ("no patch author", {}, {"patch_author": None}, EXIT_LEASE_REFUSED),
    ("blank patch author", {}, {"patch_author": " "}, EXIT_LEASE_REFUSED),
    ("blank acceptor", {}, {"accepted_by": " "}, EXIT_LEASE_REFUSED),
    ("host is not a runner id", {}, {"replay_host": "ci-box"}, EXIT_LEASE_REFUSED),
    ("no canary", {"canary": ...}, {}, EXIT_LEASE_REFUSED),
    ("no pin digest", {"pinned_sha256": ...}, {}, EXIT_LEASE_REFUSED),
    ("owner blank", {"owner": " "}, {}, 6),
    ("expiry == now", {"expires_at": NOW_TEXT}, {}, 6),
    ("expiry 2099", {"expires_at": "2099-12-31T00:00:00Z"}, {}, 6),
    ("naive expiry", {"expires_at": "2026-12-01T00:00:00"}, {}, 6),
    (
        "stable red",
        {"replays": [{"attempt_id": f"r{i}", "passed": False} for i in range(5)]},
        {},
        5,
    ),
    ("pin mismatch", {"pin_status": "mismatch"}, {}, 3),
    ("property fails", {"property_verdict": "fail"}, {}, 2),
    ("budget not filled", {"replays": [{"attempt_id": "r1", "passed": True}]}, {}, 1),
]


@pytest.mark.parametrize(
    ("report", "flags", "exit_code"), [pytest.param(r, f, e, id=i) for i, r, f, e in REFUSED]
)
def test_lease_open_refusals_write_nothing(
    tmp_path: Path, report: dict[str, object], flags: dict[str, str], exit_code: int
) -> None:
    done = lease_open(tmp_path, lease_report(**report), **flags)
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert "refused" in done.stdout
    assert listing(tmp_path / "leases") == {}


def test_lease_open_refuses_a_renewal_on_the_same_attempts(tmp_path: Path) -> None:
    assert lease_open(tmp_path, lease_report()).returncode == 0
    before = listing(tmp_path / "leases")
    later = lease_open(tmp_path, lease_report(expires_at="2026-12-10T00:00:00Z"),
                       now="2026-12-01T00:00:00Z")  # fmt: skip
    assert later.returncode == EXIT_LEASE_REFUSED and "renewal" in later.stdout
    assert listing(tmp_path / "leases") == before
    new_replays = [{**r, "attempt_id": f"job2-{r['attempt_id']}"} for r in replays("ggrgg")]
    fresh = lease_report(expires_at="2026-12-10T00:00:00Z", replays=new_replays)
    assert lease_open(tmp_path, fresh, now="2026-12-01T00:00:00Z").returncode == 0


def test_lease_open_json(tmp_path: Path) -> None:
    done = lease_open(tmp_path, lease_report(), "--json")
    data = json.loads(done.stdout)
    assert data["opened"] is True and data["exit"] == 0 and data["lease"]["test_id"] == TEST_ID
    refused = lease_open(tmp_path, lease_report(), "--json", accepted_by=AUTHOR)
    data = json.loads(refused.stdout)
    assert data["opened"] is False and data["lease"] is None and data["reasons"]


def test_lease_open_unreadable_report(tmp_path: Path) -> None:
    base = ["lease", "open", "--test-id", "t", "--replay-host", HOST, "--accepted-by", REVIEWER,
            "--dir", str(tmp_path), "--no-config"]  # fmt: skip
    assert cli(*base, "--report", str(tmp_path / "nope.json")).returncode == 66
    (tmp_path / "bad.json").write_text('{"owner": "a", "owner": "b"}')
    assert cli(*base, "--report", str(tmp_path / "bad.json")).returncode == 65
    assert cli(*base).returncode == 64, "--report is required"


# --------------------------------------------------------------------------- lease show


def test_lease_show(tmp_path: Path) -> None:
    path = store(tmp_path, lease_record())
    assert cli("lease", "show", str(path), "--now", NOW_TEXT, "--no-config").returncode == 64
    done = on_base("lease", "show", str(path), "--now", NOW_TEXT)
    assert done.returncode == 0
    assert done.stdout.startswith("class=flake property=pass pin=match sha256:8e8e")
    assert "owner=ci-bot expires_at=2026-12-06T12:00:00Z canary=nightly-canary" in done.stdout
    data = json.loads(on_base("lease", "show", str(path), "--json", "--now", NOW_TEXT).stdout)
    assert data == lease_record()
    expired = on_base("lease", "show", str(path), "--now", "2027-01-01T00:00:00Z")
    assert expired.returncode == EXIT_INVALID_RECORDS and "not after now" in expired.stderr
    assert on_base("lease", "show", str(tmp_path / "nope.json")).returncode == 66


# --------------------------------------------------------------------------- lease check


def check(*dirs: Path, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return on_base("lease", "check", *map(str, dirs), "--now", NOW_TEXT, *extra)


def valid_set(tmp_path: Path) -> tuple[Path, Path]:
    leases, ledger = tmp_path / "leases", tmp_path / "ledger"
    store(leases, lease_record())
    store(leases, lease_record(test_id="tests/other.py::t"))
    store(ledger, row_record())
    store(ledger, row_record(test_id="tests/other.py::t"))
    return leases, ledger


def test_lease_check_passes_a_valid_set(tmp_path: Path) -> None:
    leases, ledger = valid_set(tmp_path)
    done = check(leases, ledger, extra=("--patch-hash", PATCH, "--oracle-version", "oracle-3"))
    assert done.returncode == 0, done.stdout
    assert "4 records, 0 invalid" in done.stdout
    assert check(leases, ledger).returncode == 0
    (tmp_path / "empty").mkdir()
    assert check(tmp_path / "empty").returncode == 0, "no records: nothing invalid"


BAD_RECORDS = [
    ("expired lease", "leases", lambda: lease_record(expires_at=NOW_TEXT), "not after now"),
    ("expired row", "ledger", lambda: row_record(expires_on="2026-11-29"), "expired"),
    ("2099 lease", "leases", lambda: lease_record(expires_at="2099-01-01T00:00:00Z"), "days"),
    ("2099 row", "ledger", lambda: row_record(expires_on="2099-01-01"), "permanent freeze"),
    ("blank owner", "leases", lambda: lease_record(owner=""), "owner"),
    ("unknown field", "leases", lambda: lease_record(auto_renew=True), "unknown field"),
    ("acceptor is host", "leases", lambda: lease_record(accepted_by=HOST), "replay host"),
    ("acceptor is author", "leases", lambda: lease_record(accepted_by=AUTHOR), "patch author"),
    ("wrong type", "ledger", lambda: row_record(passes="5"), "passes"),
]


@pytest.mark.parametrize(
    ("where", "make", "reason"), [pytest.param(w, m, r, id=i) for i, w, m, r in BAD_RECORDS]
)
def test_lease_check_fails_on_a_bad_record(
    tmp_path: Path, where: str, make: Callable[[], dict[str, object]], reason: str
) -> None:
    leases, ledger = valid_set(tmp_path)
    bad = make()
    bad["test_id"] = "tests/bad.py::t"
    path = store(tmp_path / where, bad)
    done = check(leases, ledger)
    assert done.returncode == EXIT_INVALID_RECORDS
    bad_lines = [line for line in done.stdout.splitlines() if "invalid" in line and ":" in line
                 and not line.startswith("lease check:")]  # fmt: skip
    assert len(bad_lines) == 1 and bad_lines[0].startswith(str(path)), done.stdout
    assert reason in bad_lines[0]


def test_lease_check_judges_every_record_when_one_is_in_year_9999(tmp_path: Path) -> None:
    """A year-9999 lease used to crash the check (OverflowError, exit 70) and hide the rest."""
    leases, ledger = valid_set(tmp_path)
    far = {
        "tests/far.py::opened": {
            "opened_at": "9999-12-31T00:00:00Z",
            "expires_at": "9999-12-31T12:00:00Z",
        },
        "tests/far.py::expires": {"expires_at": "9999-12-31T23:59:59Z"},
        "tests/far.py::utc-10000": {"expires_at": "9999-12-31T23:00:00-05:00"},
    }
    bad = {
        name: store(leases, lease_record(test_id=name, **changes)) for name, changes in far.items()
    }
    bad["row"] = store(ledger, row_record(test_id="tests/far.py::row", expires_on="9999-12-31"))
    bad["expired"] = store(
        leases, lease_record(test_id="tests/old.py::t", expires_at="2026-11-01T00:00:00Z")
    )
    done = check(leases, ledger, extra=("--json",))
    assert done.returncode == EXIT_INVALID_RECORDS, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    verdicts = {r["file"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert len(verdicts) == 4 + len(bad)
    assert {f for f, r in verdicts.items() if not r["valid"]} == {str(p) for p in bad.values()}
    assert all(verdicts[str(p)]["problems"] for p in bad.values())
    text = check(leases, ledger)
    assert text.returncode == EXIT_INVALID_RECORDS
    assert f"{4 + len(bad)} records, {len(bad)} invalid" in text.stdout


def test_lease_check_now_at_the_end_of_the_calendar(tmp_path: Path) -> None:
    leases, ledger = valid_set(tmp_path)
    done = on_base("lease", "check", str(leases), str(ledger), "--now", "9999-12-31T23:59:59Z")
    assert done.returncode == EXIT_INVALID_RECORDS, done.stderr
    assert "4 records, 4 invalid" in done.stdout
    late = on_base("lease", "check", str(leases), "--now", "9999-12-31T23:00:00-05:00")
    assert late.returncode == 64 and "outside years" in late.stderr


def test_ledger_apply_on_the_last_days_is_a_usage_error(tmp_path: Path) -> None:
    packet = dump(tmp_path / "b.json", budget_packet(test_id=TEST_ID))
    done = cli(
        "ledger",
        "apply",
        "--dir",
        str(tmp_path / "ledger"),
        packet,
        "--today",
        "9999-12-25",
        "--no-config",
    )
    assert done.returncode == 64 and "no room" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ledger").exists()


def test_lease_check_invalid_json(tmp_path: Path) -> None:
    leases, ledger = valid_set(tmp_path)
    (leases / ("f" * 64 + ".json")).write_text('{"format": "flakecore.lease",')
    done = check(leases, ledger)
    assert done.returncode == EXIT_INVALID_RECORDS and "invalid JSON" in done.stdout


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--patch-hash", "0" * 64), "another patch hash"),
        (("--oracle-version", "oracle-4"), "another oracle version"),
    ],
)
def test_lease_check_other_patch_or_oracle(
    tmp_path: Path, flags: tuple[str, ...], reason: str
) -> None:
    leases, _ = valid_set(tmp_path)
    done = check(leases, extra=flags)
    assert done.returncode == EXIT_INVALID_RECORDS
    assert done.stdout.count(reason) == 2


def test_lease_check_json_lists_every_record(tmp_path: Path) -> None:
    leases, ledger = valid_set(tmp_path)
    store(leases, lease_record(test_id="x", expires_at=NOW_TEXT))
    done = check(leases, ledger, extra=("--json",))
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 5 and sum(not r["valid"] for r in records) == 1


def test_lease_check_unreadable_directory(tmp_path: Path) -> None:
    leases, _ = valid_set(tmp_path)
    done = check(leases, tmp_path / "missing")
    assert done.returncode == 66
    assert check(tmp_path / "leases" / NAME).returncode == 0, "a file is checked as one record"


def test_lease_check_defaults_to_the_base_configured_dirs(tmp_path: Path) -> None:
    """The base's lease_dir is where lease check looks, from any directory of the checkout."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.test"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "pyproject.toml").write_text(
        '[tool.flakecore]\nlease_dir = "state/leases"\nledger_dir = "state/ledger"\n'
    )
    store(repo / "state" / "leases", lease_record(expires_at=NOW_TEXT))
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    done = cli("lease", "check", "--now", NOW_TEXT, "--base", "main", cwd=repo)
    assert done.returncode == EXIT_INVALID_RECORDS, done.stdout + done.stderr
    assert "not after now" in done.stdout
    assert "policy from base" in done.stderr
    inner = cli("lease", "check", "--now", NOW_TEXT, "--base", "main", cwd=repo / "state")
    assert inner.returncode == EXIT_INVALID_RECORDS


def test_no_renewal_anywhere(tmp_path: Path) -> None:
    """Checking an expired lease or applying the ledger never extends an expiry."""
    leases, ledger = valid_set(tmp_path)
    before = listing(tmp_path)
    assert on_base("lease", "check", str(leases), str(ledger), "--now",
                   "2027-01-01T00:00:00Z").returncode == EXIT_INVALID_RECORDS  # fmt: skip
    assert listing(tmp_path) == before


# --------------------------------------------------------------------------- ledger apply


LEDGER_CASES = [
    ("FLAKE_CANDIDATE", {}, 0, "wrote"),
    ("STABLE_PASS", {"passes": 8}, 6, "deleted"),
    ("STABLE_FAIL", {"passes": 0}, 5, "untouched"),
    ("PROPERTY_MISS", {"property_holds": False}, 2, "untouched"),
    ("FIXTURE_DRIFT", {"head_digest": "c" * 64}, 3, "untouched"),
    ("INSUFFICIENT_BUDGET", {"passes": None}, 1, "untouched"),
]


@pytest.mark.parametrize(("code", "changes", "exit_code", "action"), LEDGER_CASES)
def test_ledger_apply(
    tmp_path: Path, code: str, changes: dict[str, object], exit_code: int, action: str
) -> None:
    ledger = tmp_path / "ledger"
    store(ledger, row_record(today=None, test_id="tests/other.py::t"))
    store(ledger, row_record())
    before = listing(ledger)
    packet_path = dump(tmp_path / "p.json", budget_packet(test_id=TEST_ID, **changes))
    done = cli("ledger", "apply", "--dir", str(ledger), packet_path, "--today", "2026-11-30",
               "--no-config", "--json")  # fmt: skip
    assert done.returncode == exit_code, done.stderr
    out = json.loads(done.stdout)
    assert out["decision"]["code"] == code and out["action"] == action
    after = listing(ledger)
    other = record_file_name("tests/other.py::t")
    assert after[other] == before[other], "another test's row is never touched"
    if action == "wrote":
        assert json.loads(after[NAME])["expires_on"] == "2026-12-14"
    elif action == "deleted":
        assert NAME not in after
    else:
        assert after == before


def test_ledger_apply_unreadable_packet_changes_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    store(ledger, row_record())
    before = listing(ledger)
    (tmp_path / "bad.json").write_text("{")
    assert cli("ledger", "apply", "--dir", str(ledger), str(tmp_path / "bad.json"),
               "--no-config").returncode == 65  # fmt: skip
    assert cli("ledger", "apply", "--dir", str(ledger), str(tmp_path / "nope.json"),
               "--no-config").returncode == 66  # fmt: skip
    assert listing(ledger) == before


def test_ledger_apply_row_passes_lease_check(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    packet_path = dump(tmp_path / "p.json", budget_packet(test_id=TEST_ID))
    done = cli(
        "ledger", "apply", "--dir", str(ledger), packet_path, "--now", NOW_TEXT, "--no-config"
    )
    assert done.returncode == 0 and "ledger=wrote" in done.stdout
    assert check(ledger).returncode == 0
    assert on_base("lease", "check", str(ledger), "--now",
                   "2026-12-13T00:00:00Z").returncode == EXIT_INVALID_RECORDS  # fmt: skip


@pytest.mark.parametrize(
    "today",
    ["2026-13-01", "tomorrow", "2026-1-1", "\u0662\u0660\u0662\u0666-\u0661\u0661-\u0663\u0660"],
)
def test_ledger_apply_bad_today(tmp_path: Path, today: str) -> None:
    packet_path = dump(tmp_path / "p.json", budget_packet())
    assert cli("ledger", "apply", "--dir", str(tmp_path), packet_path, "--today", today,
               "--no-config").returncode == 64  # fmt: skip


def test_a_record_that_cannot_be_written_exits_73(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    packet_path = dump(tmp_path / "p.json", budget_packet(test_id=TEST_ID))
    done = cli("ledger", "apply", "--dir", str(blocker), packet_path, "--no-config")
    assert done.returncode == 73 and "cannot write" in done.stderr
    done = lease_open(tmp_path, lease_report(), dir=str(blocker))
    assert done.returncode == 73
    local = run_record(HOST)
    done = packet(tmp_path, local, run_record(OTHER_HOST), "--out", str(blocker / "p.json"))
    assert done.returncode == 73
