"""``flakecore triage`` on a real repository, a real pytest suite and the plugin's real logs.

One red CI run of the patch, one ``triage`` command: the seeded flake that
base already has is accepted (freeze record, budget observation, lease
proposal -- each accepted as it is by the verb that reads it), the test the
patch broke is refused.  The refusals that need no replay (errors, no pinned
seed, too many red tests, nothing red) and the trust rules (policy from base,
records outside the checkout) each have their honest twin here too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from terminal import run_on_a_terminal

from e2e.suite import FLAKE, REGRESSION, SuiteRepo, make_suite, pyproject
from flakecore import validation
from flakecore.testids import id_digest

pytestmark = pytest.mark.e2e

#: Two base attempts a test keep the e2e runs short; the lease rests on the budget's 8 runs.
TABLE = pyproject(extra="attempt_cap = 2")
OWNER = ("--owner", "team-search", "--canary", "nightly-flakes")


def results(run: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON lines of a ``--json`` run, each a valid triage result (decisions included)."""
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    for line in lines:
        assert list(validation.iter_errors(line, "triage-result")) == []
    return lines


def key(path: Path) -> tuple[str, str]:
    """A signing key pair outside the checkout: (PEM file, the trusted-keys line's value)."""
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return str(path), f"ed25519:{raw.hex()}"


@pytest.fixture(scope="module")
def triaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRepo, Path, Path, Any]:
    """One red CI run and one signed ``triage --json`` of it (the expensive part, shared)."""
    root = tmp_path_factory.mktemp("triage")
    pem, public = key(root / "ci-local.pem")
    table = TABLE + f'\n[tool.flakecore.trust.keys]\nci-local = "{public}"\n'
    repo = make_suite(root, table=table)
    logs, report = repo.ci_run()
    out = root / "out"
    run = repo.flakecore(
        "triage", "--base", "main", "--log-dir", str(logs), "--report", str(report),
        "--out-dir", str(out), "--json", "--signing-key", pem, "--key-id", "ci-local", *OWNER,
    )  # fmt: skip
    return repo, logs, out, run


def test_one_command_accepts_the_flake_and_refuses_the_regression(triaged: Any) -> None:
    repo, logs, out, run = triaged
    assert run.returncode == 4, run.stderr
    flake, regression = results(run)
    assert (flake["test_id"], flake["verdict"], flake["code"]) == (
        FLAKE,
        "ACCEPT_PREEXISTING",
        "ACCEPT_PREEXISTING",
    )
    assert [d["code"] for d in flake["decisions"]] == ["ACCEPT_PREEXISTING", "FLAKE_CANDIDATE"]
    assert all(d["policy_source"]["revision"] == repo.base for d in flake["decisions"])
    assert (regression["test_id"], regression["verdict"]) == (REGRESSION, "REJECT_PATCH_INTRODUCED")
    assert flake["seed"] == regression["seed"] == 3
    assert str(logs) in flake["evidence"][-1]
    stem = id_digest(FLAKE)
    assert sorted(flake["records"]) == [
        "attempts", "budget", "budget-signed", "freeze", "freeze-signed",
        "lease-proposal", "lease-proposal-signed", "output",
    ]  # fmt: skip
    assert flake["records"]["lease-proposal"] == str(out / f"{stem}.lease-proposal.json")
    assert sorted(regression["records"]) == ["attempts", "output"]
    assert not (out / f"{id_digest(REGRESSION)}.freeze.json").exists()
    assert repo.run("git", "worktree", "list").stdout.count("\n") == 1


def test_every_record_is_accepted_as_it_is_by_the_verb_that_reads_it(triaged: Any) -> None:
    repo, _, out, run = triaged
    records = results(run)[0]["records"]
    checked = repo.flakecore("validate", records["freeze"], records["lease-proposal"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert repo.flakecore("attempts", records["attempts"]).returncode == 0
    ledger = repo.flakecore(
        "ledger", "apply", "--base", "main", "--dir", str(out.parent / "ledger"), records["budget"]
    )
    assert ledger.returncode == 0, ledger.stdout + ledger.stderr
    opened = repo.flakecore(
        "lease", "open", "--report", records["lease-proposal"], "--test-id", FLAKE,
        "--replay-host", "img:local-uncontainerized+nonce:0123456789abcdef",
        "--patch-author", "coding-agent-7", "--accepted-by", "reviewer-jane",
        "--dir", str(out.parent / "leases"), "--base", "main",
    )  # fmt: skip
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert "owner=team-search" in opened.stdout
    checked = repo.flakecore("lease", "check", "--base", "main", str(out.parent / "leases"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_signed_records_verify_with_the_trusted_key(triaged: Any) -> None:
    _, _, _, run = triaged
    from flakecore.gate.policy_source import load_trusted_config
    from flakecore.signing import verify_signed

    repo = triaged[0]
    keys = load_trusted_config(repo.path, "main").trusted_keys
    records = results(run)[0]["records"]
    for kind, name in (("freeze-record", "freeze"), ("budget-run", "budget")):
        data = Path(records[f"{name}-signed"]).read_bytes()
        verdict = verify_signed(data, keys=keys, kind=kind, check=lambda _r: [], test_id=FLAKE)
        assert verdict.trusted, verdict
        assert verdict.record == json.loads(Path(records[name]).read_text())


def test_jobs_2_gives_the_same_verdicts_records_and_order_with_progress_on_a_terminal(
    triaged: Any,
) -> None:
    repo, logs, out, serial = triaged
    parallel_out = out.parent / "out-jobs-2"
    argv = [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
            "--out-dir", str(parallel_out), "--json", "--jobs", "2", *OWNER]  # fmt: skip
    run, terminal = run_on_a_terminal(argv, cwd=repo.path, env=repo.env())
    assert run.returncode == 4
    assert "triage: 0/2 decided" in terminal and "replay 1/2" in terminal
    lines = [json.loads(line) for line in run.stdout.decode().splitlines()]
    once = results(serial)
    assert [(r["test_id"], r["verdict"], r["code"]) for r in lines] == [
        (r["test_id"], r["verdict"], r["code"]) for r in once
    ]
    unsigned = {Path(p).name for r in once for k, p in r["records"].items() if "signed" not in k}
    assert {p.name for p in parallel_out.iterdir()} == unsigned
    name = f"{id_digest(FLAKE)}.freeze.json"
    assert (parallel_out / name).read_bytes() == (out / name).read_bytes()


def test_policy_comes_from_base_not_from_the_patch(tmp_path: Path) -> None:
    """The patch rewrites the table: a command that 'misses' on base every time, a huge cap."""
    forged = pyproject(extra="attempt_cap = 1000").replace(
        '"-m", "pytest"', '"-c", "raise SystemExit(1)", "-m", "pytest"'
    )
    honest = pyproject(policies=("replay",), extra="attempt_cap = 2")
    repo = make_suite(tmp_path, table=honest, patch_files={"pyproject.toml": forged})
    logs, _ = repo.ci_run()
    run = repo.flakecore("triage", "--base", "main", "--log-dir", str(logs), "--out-dir",
                         str(tmp_path / "out"), "--json", "--policy", "attempt_cap=1")  # fmt: skip
    lines = results(run)
    assert [(r["test_id"], r["verdict"]) for r in lines if r["test_id"] == REGRESSION] == [
        (REGRESSION, "REJECT_PATCH_INTRODUCED")
    ]
    assert "the scored tree's [tool.flakecore] (pyproject.toml) differs from base" in run.stderr
    source = lines[0]["decisions"][0]["policy_source"]
    assert (source["revision"], source["scored_tree_differs"], source["overrides"]) == (
        repo.base,
        True,
        ["attempt_cap"],
    )


@pytest.fixture(scope="module")
def red_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[SuiteRepo, Path, Path]:
    """A red run whose triage needs no replay: an error beside the flake and the regression."""
    root = tmp_path_factory.mktemp("red")
    broken = (
        "import pytest\n\n\n@pytest.fixture\ndef db():\n    raise RuntimeError('no database')\n\n\n"
        "def test_query(db):\n    assert db\n"
    )
    repo = make_suite(root, table=TABLE, patch_files={"tests/test_db.py": broken})
    logs, report = repo.ci_run()
    return repo, logs, report


def test_an_error_is_never_a_flake_candidate_and_too_many_red_is_a_regression(
    red_run: tuple[SuiteRepo, Path, Path], tmp_path: Path
) -> None:
    repo, logs, report = red_run
    summary = tmp_path / "summary.md"
    args = ["triage", "--base", "main", "--log-dir", str(logs), "--report", str(report),
            "--out-dir", str(tmp_path / "out")]  # fmt: skip
    run = repo.run(
        sys.executable, "-m", "flakecore", *args, "--format", "github", "--policy",
        "max_red_tests=2",
    )  # fmt: skip
    assert run.returncode == 10, run.stdout + run.stderr
    assert run.stdout.count("::error ") == 3 and "REJECT_TOO_MANY_RED" in run.stdout
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written
    github = subprocess.run(
        [sys.executable, "-m", "flakecore", *args, "--format", "github", "--policy",
         "max_red_tests=2"],
        cwd=repo.path, env=repo.env({"GITHUB_STEP_SUMMARY": str(summary)}),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert github.returncode == 10
    table = summary.read_text()
    assert "| test | policy | code | verdict | exit | reason | evidence |" in table
    assert table.count("| REJECT_TOO_MANY_RED | REJECT_TOO_MANY_RED | 10 |") == 3


def test_without_a_pinned_seed_a_red_test_is_incomplete_and_an_error_is_refused(
    red_run: tuple[SuiteRepo, Path, Path], tmp_path: Path
) -> None:
    repo, _, report = red_run
    run = repo.flakecore(
        "triage", "--base", "main", "--report", str(report), "--out-dir", str(tmp_path / "out"),
        "--json",
    )  # fmt: skip
    assert run.returncode == 3, run.stderr  # REJECT_ERROR outranks REJECT_INCOMPLETE
    verdicts = {r["test_id"]: r["verdict"] for r in results(run)}
    assert verdicts == {
        FLAKE: "REJECT_INCOMPLETE",
        REGRESSION: "REJECT_INCOMPLETE",
        "tests/test_db.py::test_query": "REJECT_ERROR",
    }
    reasons = {r["test_id"]: r["reasons"] for r in results(run)}
    assert "no pinned seed" in reasons[FLAKE][0]


@pytest.mark.parametrize(
    ("where", "message"),
    [("repo/out", "is inside the scored checkout"), ("nonempty", "is not empty")],
)
def test_records_go_to_a_fresh_directory_outside_the_checkout(
    red_run: tuple[SuiteRepo, Path, Path], where: str, message: str
) -> None:
    repo, logs, _ = red_run
    target = repo.path.parent / where
    if where == "nonempty":
        target.mkdir(exist_ok=True)
        (target / "old.json").write_text("{}")
    run = repo.flakecore("triage", "--base", "main", "--log-dir", str(logs), "--out-dir",
                         str(target))  # fmt: skip
    assert run.returncode == 64 and message in run.stderr
    assert run.stderr.count("\n") == 1


def test_a_green_run_holds_nothing_to_accept(tmp_path: Path) -> None:
    repo = make_suite(tmp_path, table=TABLE, patch=False)
    logs = tmp_path / "logs"
    ran = repo.pytest(f"--flakecore-log={logs}", "--flakecore-seed=4")
    assert ran.returncode == 0, ran.stdout
    run = repo.flakecore("triage", "--base", "main", "--log-dir", str(logs), "--out-dir",
                         str(tmp_path / "out"))  # fmt: skip
    assert run.returncode == 11
    assert "holds no red test" in run.stderr


def test_a_base_without_a_triage_table_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_suite(tmp_path, table="[tool.flakecore]\nattempt_cap = 2\n")
    logs, _ = repo.ci_run()
    run = repo.flakecore("triage", "--base", "main", "--log-dir", str(logs), "--out-dir",
                         str(tmp_path / "out"))  # fmt: skip
    assert run.returncode == 64
    assert "has no triage table, so no red test can be replayed" in run.stderr


#: In base: every test run takes a second, so a replay outlasts the signal sent after its first.
_SLOW = "import time\n\n\ndef pytest_runtest_call(item):\n    time.sleep(1)\n"


def test_a_stop_signal_ends_every_replay_and_removes_every_worktree(tmp_path: Path) -> None:
    repo = make_suite(
        tmp_path, table=pyproject(policies=("replay",)), base_files={"conftest.py": _SLOW}
    )
    logs, _ = repo.ci_run()
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
         "--out-dir", str(out), "--jobs", "2"],
        cwd=repo.path, env=repo.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # Both replays are under way once each attempt log (in triage's scratch) holds a line.
    logs_now = repo.tmp.glob
    while (
        run.poll() is None
        and sum(bool(p.read_bytes()) for p in logs_now("flakecore-triage-*/*.jsonl")) < 2
    ):
        time.sleep(0.05)
    # Each replay has four more attempts of a second to go: still running, whatever the load.
    assert run.poll() is None, "triage ended before both replays were under way"
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.strip().splitlines()[-1].endswith("(worktrees removed, no record written)")
    assert not out.exists()
    assert repo.run("git", "worktree", "list").stdout.count("\n") == 1
    assert list(repo.tmp.iterdir()) == []


#: In the patch only: every pytest session on head notes which base worktrees exist then.
_SPY = """
import os


def pytest_sessionstart(session):
    if "SPY_LOG" not in os.environ:
        return
    seen = sorted(n for n in os.listdir(os.environ["TMPDIR"]) if n.startswith("flakecore-replay-"))
    with open(os.environ["SPY_LOG"], "a") as fh:
        fh.write(repr(seen) + "\\n")
"""
#: A second pre-existing flake, slow (1 s a run): its base replay outlasts the other's.
_TWIN = (
    "import random, time\n\nimport mylib\n\n\ndef test_checksum():\n"
    "    time.sleep(1)\n    assert mylib.checksum_ok(random.randrange(1000))\n"
)


def test_the_patchs_code_never_runs_beside_a_base_worktree(tmp_path: Path) -> None:
    """--jobs 2, two flakes to accept: every seed-budget run (head) starts after every replay."""
    repo = make_suite(
        tmp_path, table=TABLE, base_files={"tests/test_twin.py": _TWIN},
        patch_files={"conftest.py": _SPY},
    )  # fmt: skip
    logs, _ = repo.ci_run()
    spy = tmp_path / "spy.log"
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
         "--out-dir", str(tmp_path / "out"), "--jobs", "2", "--json"],
        cwd=repo.path, env=repo.env({"SPY_LOG": str(spy)}), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    verdicts = {r["test_id"]: r["verdict"] for r in results(run)}
    assert verdicts == {
        FLAKE: "ACCEPT_PREEXISTING",
        "tests/test_twin.py::test_checksum": "ACCEPT_PREEXISTING",
        REGRESSION: "REJECT_PATCH_INTRODUCED",
    }
    sessions = spy.read_text().splitlines()
    assert len(sessions) == 2 * 8  # one session per committed seed, for each flake
    assert set(sessions) == {"[]"}


#: In the patch only: a seed-budget run slips a forged lease proposal into the output directory.
_FORGER = """
import os


def pytest_sessionstart(session):
    if "FORGE_INTO" in os.environ:
        os.makedirs(os.environ["FORGE_INTO"], exist_ok=True)
        with open(os.path.join(os.environ["FORGE_INTO"], "forged.lease-proposal.json"), "w") as fh:
            fh.write("{}")
"""


def test_records_appear_only_after_the_patchs_code_ran_and_a_forged_one_fails_the_run(
    tmp_path: Path,
) -> None:
    repo = make_suite(tmp_path, table=TABLE, patch_files={"conftest.py": _FORGER})
    logs, _ = repo.ci_run()
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
         "--out-dir", str(out)],
        cwd=repo.path, env=repo.env({"FORGE_INTO": str(out)}), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert run.returncode == 73, run.stderr
    assert "something wrote into it while triage ran: no record written" in run.stderr
    assert sorted(p.name for p in out.iterdir()) == ["forged.lease-proposal.json"]
    assert list(repo.tmp.iterdir()) == []
