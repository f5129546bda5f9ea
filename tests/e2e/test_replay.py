"""``flakecore replay`` end to end: a real repository, a real worktree, real pytest runs.

Every test checks the exact code, exit and files, and that the worktree is
gone afterwards (``git worktree list`` shows only the checkout, TMPDIR is
empty) -- on the accept path, every reject path, a timeout and a signal.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminal import run_on_a_terminal

from e2e.support import (
    EPOCH_LOCK,
    PROPERTY_FILE,
    TEST_ID,
    SampleRepo,
    decision,
    git,
    make_repo,
    pytest_command,
)
from flakecore.attempts import AttemptWriter
from flakecore.codes import AttemptResult

pytestmark = pytest.mark.e2e

#: Appends a line to the file named by argv[1], then runs argv[2:]: a loader that rewrites.
_REWRITER = (
    "import pathlib, subprocess, sys; p = pathlib.Path(sys.argv[1]); "
    "p.write_bytes(p.read_bytes() + b'# rewritten during the run\\n'); "
    "sys.exit(subprocess.call(sys.argv[2:]))"
)
#: Writes its pid to argv[1], then sleeps: an attempt that hangs.
_SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"


@pytest.fixture
def repo(tmp_path: Path) -> SampleRepo:
    return make_repo(tmp_path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def results(d: dict[str, object]) -> list[object]:
    replay = d["replay"]
    assert isinstance(replay, dict)
    return [a["result"] for a in replay["attempts"]]


def assert_dead(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_preexisting_flake_is_accepted_and_the_freeze_record_written(
    repo: SampleRepo, tmp_path: Path
) -> None:
    out, log = tmp_path / "freeze.json", tmp_path / "base.jsonl"
    extra = ["--log", str(log), "--test-id", TEST_ID]
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, extra=extra))
    d = decision(run)
    assert (run.returncode, d["code"], d["exit"], d["accepted"]) == (
        0,
        "ACCEPT_PREEXISTING",
        0,
        True,
    )
    assert results(d) == ["miss", "miss"]
    prop, epoch = sha256(repo.path / PROPERTY_FILE), repo.claimed_epoch
    packet = {
        "format": "flakecore.admit-packet",
        "format_version": "1.0",
        "base_misses": 2,
        "base_attempts": 2,
        "patch_misses": 1,
        "property_sha256": prop,
        "base_property_sha256": prop,
        "fixture_epoch": epoch,
        "base_fixture_epoch": epoch,
        "claimed_epoch": epoch,
        "property_id": TEST_ID,
        "seed": 3,
        "base_sha": repo.base,
    }
    assert d["packet"] == packet
    assert json.loads(out.read_text()) == {
        "format": "flakecore.freeze-record",
        "format_version": "1.0",
        "property_id": TEST_ID,
        "seed": 3,
        "base_sha": repo.base,
        "property_sha256": prop,
        "base_property_sha256": prop,
        "fixture_epoch": epoch,
        "base_misses": 2,
        "base_attempts": 2,
        "patch_misses": 1,
        "verdict": "ACCEPT_PREEXISTING",
        "policy_values": {"attempt_cap": 5, "min_base_misses": 1},
    }
    assert log.read_bytes() == (
        b'{"seed":3,"n":1,"result":"miss"}\n{"seed":3,"n":2,"result":"miss"}\n'
    )
    # The packet it printed is one the admit verb decides the same way.
    packet_file = tmp_path / "packet.json"
    packet_file.write_text(json.dumps(packet))
    assert repo.flakecore("admit", str(packet_file)).returncode == 0
    repo.assert_clean()


def test_patch_introduced_miss_is_rejected_and_a_stale_record_deleted(
    repo: SampleRepo, tmp_path: Path
) -> None:
    out = tmp_path / "freeze.json"
    out.write_text('{"verdict": "ACCEPT_PREEXISTING"}\n')  # yesterday's record
    run = repo.flakecore(*repo.replay_args(seed="7", out=out))
    d = decision(run)
    assert (run.returncode, d["code"], d["accepted"]) == (4, "REJECT_PATCH_INTRODUCED", False)
    assert d["reasons"] == ["base missed 0 of 2; only the patch missed"]
    assert results(d) == ["pass", "pass"]
    assert not out.exists()
    repo.assert_clean()


def test_text_output_and_seed_env(repo: SampleRepo, tmp_path: Path) -> None:
    out = tmp_path / "freeze.json"
    command = [sys.executable, "-m", "pytest", "-q", PROPERTY_FILE]  # seed from PROP_SEED
    args = repo.replay_args(seed="6", out=out, command=command, attempts=1)
    args.remove("--json")
    args[args.index("--") : args.index("--")] = ["--seed-env", "PROP_SEED"]
    run = repo.flakecore(*args)
    assert run.returncode == 0
    assert run.stdout.splitlines() == [
        "exit=0 admit=ACCEPT_PREEXISTING base_misses=1/1 -- base missed 1 of 1 (floor 1)",
        f"freeze record: {out}",
    ]
    assert out.is_file()
    repo.assert_clean()


@pytest.mark.parametrize(
    ("path", "code", "exit_code", "note"),
    [
        (PROPERTY_FILE, "REJECT_PROPERTY_DRIFT", 2, "base_property changed during attempt 1"),
        (EPOCH_LOCK, "REJECT_FIXTURE_EPOCH", 3, "base_epoch_lock changed during attempt 1"),
    ],
    ids=["property-file", "epoch-lock"],
)
def test_a_file_rewritten_during_the_run_is_drift(
    repo: SampleRepo, tmp_path: Path, path: str, code: str, exit_code: int, note: str
) -> None:
    # Seed 3 misses on base: without the re-hash after each attempt this would be an accept.
    out = tmp_path / "freeze.json"
    command = [sys.executable, "-c", _REWRITER, path, *pytest_command()]
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command))
    d = decision(run)
    assert (run.returncode, d["code"], d["exit"]) == (exit_code, code, exit_code)
    assert note in d["reasons"]
    assert results(d) == ["miss", "miss"]
    assert not out.exists()
    repo.assert_clean()


def test_epoch_lock_changed_by_the_patch_is_a_fixture_epoch_reject(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo.path / EPOCH_LOCK).write_text("fixture-epoch: 2026-12 (generator v4)\n")
    git(repo.path, "commit", "-q", "-am", "regenerate fixtures")
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, attempts=1))
    d = decision(run)
    assert (run.returncode, d["code"]) == (3, "REJECT_FIXTURE_EPOCH")
    assert d["reasons"] == ["fixture epoch differs on the base run"]
    assert not out.exists()
    repo.assert_clean()


def test_claimed_epoch_that_is_a_name_is_incomplete_and_runs_nothing(
    repo: SampleRepo, tmp_path: Path
) -> None:
    args = repo.replay_args(seed="3", out=tmp_path / "freeze.json")
    args[args.index("--claimed-epoch") + 1] = "epoch-2026-11"
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["packet"] is None and results(d) == []
    repo.assert_clean()


#: Checkout side effects that leave a fresh worktree not exactly the base commit.
_DIRT = {
    "untracked-file": "echo generated > generated.txt; cat",
    "ignored-file": "mkdir -p __pycache__ && echo stale > __pycache__/mylib.cpython.pyc; cat",
    "modified-file": "cat; echo '# patched by a filter'",
}


@pytest.mark.parametrize("dirt", list(_DIRT), ids=list(_DIRT))
def test_dirty_base_worktree_is_incomplete_and_never_cleaned(
    repo: SampleRepo, tmp_path: Path, dirt: str
) -> None:
    # A fresh worktree of a commit can only be dirty if something ran in it: here a smudge
    # filter of the CI's own git config (LFS, a generator) with a side effect; hooks never run.
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "attributes").write_text("mylib.py filter=dirt\n")
    ci_config = tmp_path / "ci.gitconfig"
    git(
        repo.path,
        "config",
        "--file",
        str(ci_config),
        "filter.dirt.smudge",
        f'sh -c "{_DIRT[dirt]}"',
    )
    out = tmp_path / "freeze.json"
    run = repo.flakecore(
        *repo.replay_args(seed="3", out=out), env={"GIT_CONFIG_GLOBAL": str(ci_config)}
    )
    d = decision(run)
    assert (run.returncode, d["code"], d["exit"]) == (1, "REJECT_INCOMPLETE", 1)
    (reason,) = d["reasons"]
    assert isinstance(reason, str) and reason.startswith("base worktree is not clean: ")
    assert results(d) == []  # nothing ran in it
    assert not out.exists()
    repo.assert_clean()


@pytest.mark.parametrize("hooks", ["hooks-dir", "core.hooksPath"])
def test_the_repository_s_hooks_never_run(repo: SampleRepo, tmp_path: Path, hooks: str) -> None:
    # The patch's code may write .git/hooks during its own CI run.  A post-checkout hook that
    # leaves a process behind could rewrite the base worktree after it was verified: here it
    # would put head's mylib.py there a moment later, and seed 7 (which passes on base and
    # misses on head) would "miss" on base.  The hook must not run at all.
    ran = tmp_path / "hook-ran"
    head_copy = tmp_path / "head-mylib.py"
    head_copy.write_bytes((repo.path / "mylib.py").read_bytes())
    folder = repo.path / ".git" / "hooks"
    if hooks == "core.hooksPath":
        folder = tmp_path / "patch-hooks"
        folder.mkdir()
        git(repo.path, "config", "core.hooksPath", str(folder))
    hook = folder / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n(sleep 1; cp {head_copy} mylib.py) &\n")
    hook.chmod(0o755)
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="7", out=out))
    d = decision(run)
    assert not ran.exists()
    assert run.returncode != 0 and d["code"] != "ACCEPT_PREEXISTING", d
    assert "pass" in results(d) and not out.exists()
    repo.assert_clean()
    # The honest twin: a seed that misses on base too is still accepted, hook or not.
    run = repo.flakecore(*repo.replay_args(seed="3", out=out))
    assert (run.returncode, decision(run)["code"]) == (0, "ACCEPT_PREEXISTING")
    assert not ran.exists()


#: A smudge/clean pair that only the repository's own ``.git/config`` defines: checkout swaps
#: base's ``mylib.py`` for head's, and ``clean`` swaps it back, so ``git status`` sees nothing.
_SWAP = (
    "import sys; a, b = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read(); "
    "data = sys.stdin.buffer.read(); sys.stdout.buffer.write(b if data == a else data)"
)


@pytest.mark.parametrize("scope", ["local", "global"])
def test_a_base_worktree_that_git_status_calls_clean_but_is_not_base_is_incomplete(
    repo: SampleRepo, tmp_path: Path, scope: str
) -> None:
    # What the patch's own code, run in the checkout by its CI job, may leave in .git: a
    # smudge/clean pair that swaps head's mylib.py in and hides it from git status.  Defined
    # in .git/config it never runs; in a config the gate trusts, the bytes check catches it.
    base_copy, head_copy = tmp_path / "base-mylib.py", tmp_path / "head-mylib.py"
    base_copy.write_text(git(repo.path, "show", f"{repo.base}:mylib.py"))
    head_copy.write_bytes((repo.path / "mylib.py").read_bytes())
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "attributes").write_text("mylib.py filter=swap\n")
    config = ["--local"] if scope == "local" else ["--file", str(tmp_path / "ci.gitconfig")]
    for step, pair in (("smudge", (base_copy, head_copy)), ("clean", (head_copy, base_copy))):
        command = f'{sys.executable} -c "{_SWAP}" {pair[0]} {pair[1]}'
        git(repo.path, "config", *config, f"filter.swap.{step}", command)
    # Seed 7 passes on base and misses on head (the regression): replayed on the patch's code,
    # base would "miss" and the regression would be accepted as pre-existing.
    out = tmp_path / "freeze.json"
    env = {"GIT_CONFIG_GLOBAL": str(tmp_path / "ci.gitconfig")}
    run = repo.flakecore(*repo.replay_args(seed="7", out=out), env=env)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE"), d["reasons"]
    (reason,) = d["reasons"]
    expected = {
        "local": "the repository's own git config sets 'filter.swap.smudge': the base replay "
        "runs no filter that only .git/config defines (define it in the global git config)",
        "global": "base worktree does not hold the base commit's bytes: mylib.py",
    }
    assert reason == expected[scope], reason
    assert results(d) == [] and not out.exists()
    repo.assert_clean()


def test_base_s_own_attributes_and_ci_s_own_filters_still_replay(
    tmp_path: Path,
) -> None:
    # The honest twin: base's .gitattributes converts line ends and runs a filter that the CI
    # job's global git config defines (as `git lfs install` does); the replay is not refused.
    attributes = "fixtures/data.json text eol=crlf\nmylib.py filter=ci\n"
    repo = make_repo(tmp_path, base_files={".gitattributes": attributes})
    global_config = tmp_path / "ci.gitconfig"
    global_config.write_text('[filter "ci"]\n\tsmudge = cat\n\tclean = cat\n\trequired = true\n')
    # The same driver in the repository's own config too (`git lfs install --local`).
    git(repo.path, "config", "filter.ci.smudge", "cat")
    out = tmp_path / "freeze.json"
    run = repo.flakecore(
        *repo.replay_args(seed="3", out=out), env={"GIT_CONFIG_GLOBAL": str(global_config)}
    )
    d = decision(run)
    assert (run.returncode, d["code"]) == (0, "ACCEPT_PREEXISTING"), d["reasons"]
    assert results(d) == ["miss", "miss"]
    repo.assert_clean()


def test_not_a_repository_is_a_one_line_refusal(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "prop.py").write_text("")
    (plain / "epoch.lock").write_text("")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    run = subprocess.run(
        [
            sys.executable, "-m", "flakecore", "replay", "--base", "HEAD", "--seed", "3",
            "--property-file", "prop.py", "--epoch-lock", "epoch.lock",
            "--claimed-epoch", "a" * 64, "--patch-misses", "1", "--out", "rec.json",
            "--", "true", "{seed}",
        ],
        cwd=plain, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stdout.startswith("exit=1 admit=REJECT_INCOMPLETE base_misses=0/0 -- git rev-parse")
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("base", ["0" * 40, "no-such-branch", "HEAD~9"])
def test_unknown_base_is_incomplete(repo: SampleRepo, tmp_path: Path, base: str) -> None:
    args = repo.replay_args(seed="3", out=tmp_path / "freeze.json")
    args[args.index("--base") + 1] = base
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["reasons"] == [f"unknown revision {base!r}: not a commit in this repository"]
    assert "Traceback" not in run.stderr
    repo.assert_clean()


@pytest.mark.parametrize(
    ("extra", "command", "expected", "code"),
    [
        ((), pytest_command(), ["miss"], "ACCEPT_PREEXISTING"),  # pytest 1: tests failed
        ((), pytest_command("--no-such-option"), ["error"], "REJECT_PATCH_INTRODUCED"),  # 4
        ((), pytest_command("-k", "nothing_matches"), ["error"], "REJECT_PATCH_INTRODUCED"),  # 5
        (("--miss-exit-codes", "4"), pytest_command("--nope"), ["miss"], "ACCEPT_PREEXISTING"),
    ],
    ids=["exit-1-miss", "exit-4-error", "exit-5-error", "custom-miss-code"],
)
def test_exit_status_convention_without_a_report(
    repo: SampleRepo,
    tmp_path: Path,
    extra: tuple[str, ...],
    command: list[str],
    expected: list[str],
    code: str,
) -> None:
    args = repo.replay_args(seed="3", out=tmp_path / "r.json", command=command, attempts=1)
    run = repo.flakecore(*args[: args.index("--")], *extra, *args[args.index("--") :])
    d = decision(run)
    assert (d["code"], results(d)) == (code, expected)
    repo.assert_clean()


def test_timeout_kills_the_attempt_and_counts_it_as_a_timeout(
    repo: SampleRepo, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    command = [sys.executable, "-c", _SLEEPER, str(pid_file), "{seed}"]
    args = repo.replay_args(seed="3", out=tmp_path / "r.json", command=command, attempts=1)
    started = time.monotonic()
    # The timer starts with the command: 5 s, so that even a loaded machine's interpreter has
    # written its pid (the process this test shows dead) before the timeout ends it.
    run = repo.flakecore(*args[: args.index("--")], "--timeout", "5", *args[args.index("--") :])
    assert time.monotonic() - started < 60
    d = decision(run)
    assert (run.returncode, d["code"]) == (4, "REJECT_PATCH_INTRODUCED")  # a timeout is no miss
    assert results(d) == ["timeout"]
    assert_dead(int(pid_file.read_text()))
    repo.assert_clean()


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"]
)
def test_a_signal_mid_attempt_removes_the_worktree(
    repo: SampleRepo, tmp_path: Path, signum: int, exit_code: int
) -> None:
    pid_file, out = tmp_path / "pid", tmp_path / "freeze.json"
    out.write_text("{}")
    command = [sys.executable, "-c", _SLEEPER, str(pid_file), "{seed}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flakecore", *repo.replay_args(seed="3", out=out, command=command)],
        cwd=repo.path,
        env=repo.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert len(repo.worktrees()) == 2  # mid-attempt: the base worktree is there
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == exit_code
    assert stdout == ""
    assert "Traceback" not in stderr
    assert_dead(int(pid_file.read_text()))
    assert not out.exists()
    repo.assert_clean()


def test_usage_errors_exit_64_and_still_delete_a_stale_record(
    repo: SampleRepo, tmp_path: Path
) -> None:
    out = tmp_path / "freeze.json"
    for args, message in [
        (repo.replay_args(seed="3", out=out, attempts=6), "--attempts must be in 1..5"),
        (
            repo.replay_args(seed="3", out=out, command=["pytest", PROPERTY_FILE]),
            "put {seed} in it",
        ),
    ]:
        out.write_text("{}")
        run = repo.flakecore(*args)
        assert run.returncode == 64
        assert message in run.stderr and run.stdout == ""
        assert not out.exists()
    repo.assert_clean()


def _patch_log(path: Path, seed: str | int, *results: AttemptResult) -> Path:
    with AttemptWriter(path, seed) as writer:
        for result in results:
            writer.append(result)
    return path


def test_patch_log_is_reduced_for_patch_misses(repo: SampleRepo, tmp_path: Path) -> None:
    log = _patch_log(tmp_path / "patch.jsonl", 7, AttemptResult.PASS, AttemptResult.MISS)
    patch = ("--patch-log", str(log))
    run = repo.flakecore(*repo.replay_args(seed="7", out=tmp_path / "r.json", patch=patch))
    d = decision(run)
    assert (run.returncode, d["code"]) == (4, "REJECT_PATCH_INTRODUCED")
    packet = d["packet"]
    assert isinstance(packet, dict) and packet["patch_misses"] == 1
    repo.assert_clean()


def test_patch_log_of_another_seed_or_truncated_is_incomplete(
    repo: SampleRepo, tmp_path: Path
) -> None:
    other = _patch_log(tmp_path / "str-seed.jsonl", "3", AttemptResult.MISS)  # "3" is not 3
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_bytes(b'{"seed":3,"n":1,"result":"miss"}\n{"seed":3,"n":2,"res')
    for log, reason in [
        (other, "patch log seed '3' is not the pinned seed 3"),
        (truncated, "patch log is incomplete"),
    ]:
        args = repo.replay_args(seed="3", out=tmp_path / "r.json", patch=("--patch-log", str(log)))
        run = repo.flakecore(*args)
        d = decision(run)
        assert (run.returncode, d["code"], results(d)) == (1, "REJECT_INCOMPLETE", [])
        (text,) = d["reasons"]
        assert isinstance(text, str) and text.startswith(reason)
    missing = repo.flakecore(
        *repo.replay_args(seed="3", out=tmp_path / "r.json", patch=("--patch-log", "nope.jsonl"))
    )
    assert missing.returncode == 66
    repo.assert_clean()


def test_existing_log_is_never_appended_to(repo: SampleRepo, tmp_path: Path) -> None:
    log = tmp_path / "base.jsonl"
    log.write_bytes(b'{"seed":"3","n":1,"result":"miss"}\n')
    args = repo.replay_args(seed="7", out=tmp_path / "r.json", extra=["--log", str(log)])
    run = repo.flakecore(*args)
    assert run.returncode == 73
    assert log.read_bytes() == b'{"seed":"3","n":1,"result":"miss"}\n'
    repo.assert_clean()


def _report_args(repo: SampleRepo, out: Path, *, seed: str, command: list[str]) -> list[str]:
    args = repo.replay_args(seed=seed, out=out, command=command)
    report = ["--report", "report.xml", "--report-format", "junit", "--test-id", TEST_ID]
    return [*args[: args.index("--")], *report, *args[args.index("--") :]]


@pytest.mark.parametrize(
    ("seed", "exit_code", "code", "expected"),
    [
        ("3", 0, "ACCEPT_PREEXISTING", ["miss", "miss"]),
        ("7", 4, "REJECT_PATCH_INTRODUCED", ["pass", "pass"]),
    ],
    ids=["preexisting", "patch-introduced"],
)
def test_junit_report_decides_each_attempt(
    repo: SampleRepo, tmp_path: Path, seed: str, exit_code: int, code: str, expected: list[str]
) -> None:
    out = tmp_path / "freeze.json"
    command = pytest_command("--junitxml=report.xml")
    run = repo.flakecore(*_report_args(repo, out, seed=seed, command=command))
    d = decision(run)
    assert (run.returncode, d["code"], results(d)) == (exit_code, code, expected)
    assert out.exists() is (exit_code == 0)
    repo.assert_clean()


def test_a_pytest_node_id_selects_its_xunit2_testcase(repo: SampleRepo, tmp_path: Path) -> None:
    # pytest's default JUnit (xunit2) names the test tests.test_prop::test_property;
    # its node id matches it by the documented rule, and the packet carries the node id.
    out = tmp_path / "freeze.json"
    args = _report_args(repo, out, seed="3", command=pytest_command("--junitxml=report.xml"))
    node_id = "tests/test_prop.py::test_property"
    args[args.index("--test-id") + 1] = node_id
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"], results(d)) == (0, "ACCEPT_PREEXISTING", ["miss", "miss"])
    assert json.loads(out.read_text())["property_id"] == node_id
    repo.assert_clean()


@pytest.mark.parametrize(
    ("command", "test_id", "reason"),
    [
        (pytest_command(), TEST_ID, "no report at report.xml after the attempt (exit 1)"),
        (
            pytest_command("--junitxml=report.xml"),
            "tests.test_prop::test_other",
            "report report.xml has no record for 'tests.test_prop::test_other'; "
            "closest: 'tests.test_prop::test_property'",
        ),
    ],
    ids=["report-missing", "no-record-for-test-id"],
)
def test_unusable_report_is_incomplete(
    repo: SampleRepo, tmp_path: Path, command: list[str], test_id: str, reason: str
) -> None:
    out = tmp_path / "freeze.json"
    args = _report_args(repo, out, seed="3", command=command)
    args[args.index("--test-id") + 1] = test_id
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"], d["reasons"]) == (1, "REJECT_INCOMPLETE", [reason])
    assert results(d) == []
    assert not out.exists()
    repo.assert_clean()


def _patch_report(repo: SampleRepo, seed: str, report: Path) -> Path:
    """The red CI run on the patch: the real pytest on HEAD, its JUnit report kept."""
    subprocess.run(
        [arg.replace("{seed}", seed) for arg in pytest_command(f"--junitxml={report}")],
        cwd=repo.path,
        env=repo.env(),
        capture_output=True,
        check=False,
    )
    assert report.is_file()
    return report


@pytest.mark.parametrize(
    ("seed", "exit_code", "code"),
    [("3", 0, "ACCEPT_PREEXISTING"), ("7", 4, "REJECT_PATCH_INTRODUCED")],
    ids=["preexisting", "patch-introduced"],
)
def test_the_patch_runs_report_is_the_patch_evidence(
    repo: SampleRepo, tmp_path: Path, seed: str, exit_code: int, code: str
) -> None:
    """--patch-report: the report the red run wrote, as it is; its failed attempts count."""
    report = _patch_report(repo, seed, tmp_path / "patch.xml")
    out = tmp_path / "freeze.json"
    patch = ("--patch-report", str(report), "--report-format", "junit", "--test-id", TEST_ID)
    run = repo.flakecore(*repo.replay_args(seed=seed, out=out, patch=patch))
    d = decision(run)
    assert (run.returncode, d["code"], d["packet"]["patch_misses"]) == (exit_code, code, 1)
    # No --log: the temporary log went with the worktree, and the output names no file.
    assert d["replay"]["log"] is None
    assert out.exists() is (exit_code == 0)
    repo.assert_clean()


@pytest.mark.parametrize(
    ("report", "test_id", "reason"),
    [
        (b"TAP version 13\n1..1\nok 1 - t # TODO not yet\n", "t", "flagged: unexpected-pass"),
        (b"TAP version 13\n1..1\nnot ok 1 - t\n", "other", "no attempt of 'other'"),
    ],
    ids=["flagged", "no-attempt-of-the-test"],
)
def test_a_patch_report_that_cannot_explain_the_claim_is_incomplete_before_any_attempt(
    repo: SampleRepo, tmp_path: Path, report: bytes, test_id: str, reason: str
) -> None:
    path = tmp_path / "patch.tap"
    path.write_bytes(report)
    out = tmp_path / "freeze.json"
    patch = ("--patch-report", str(path), "--test-id", test_id)
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, patch=patch))
    d = decision(run)
    assert (run.returncode, d["code"], results(d)) == (1, "REJECT_INCOMPLETE", [])
    assert any(reason in r for r in d["reasons"]), d["reasons"]
    assert not out.exists()
    repo.assert_clean()


def test_an_unusable_patch_report_is_unusable_input(repo: SampleRepo, tmp_path: Path) -> None:
    path = tmp_path / "patch.xml"
    path.write_bytes(b"<testsuite><testcase")
    patch = ("--patch-report", str(path), "--test-id", TEST_ID)
    run = repo.flakecore(*repo.replay_args(seed="3", out=tmp_path / "f.json", patch=patch))
    assert run.returncode == 65 and run.stdout == ""
    assert str(path) in run.stderr and run.stderr.count("\n") == 1
    missing = ("--patch-report", str(tmp_path / "nope.xml"), "--test-id", TEST_ID)
    assert (
        repo.flakecore(
            *repo.replay_args(seed="3", out=tmp_path / "f.json", patch=missing)
        ).returncode
        == 66
    )
    repo.assert_clean()


def test_stale_report_in_the_base_commit_is_never_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    # The base commit itself carries a report in which the test passed.
    subprocess.run(
        [sys.executable, "-m", "pytest", PROPERTY_FILE, "--prop-seed=1", "--junitxml=report.xml"],
        cwd=repo.path,
        env=repo.env(),
        capture_output=True,
        check=True,
    )
    stale = (repo.path / "report.xml").read_text()
    git(repo.path, "add", "-f", "report.xml")
    git(repo.path, "commit", "-q", "-m", "a committed report")
    base = git(repo.path, "rev-parse", "HEAD").strip()
    out = tmp_path / "freeze.json"
    args = _report_args(repo, out, seed="1", command=pytest_command())  # writes no report
    args[args.index("--base") + 1] = base
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["reasons"] == ["no report at report.xml after the attempt (exit 0)"]
    assert (repo.path / "report.xml").read_text() == stale  # the checkout is never touched
    repo.assert_clean()


def test_progress_only_on_a_terminal(repo: SampleRepo, tmp_path: Path) -> None:
    args = repo.replay_args(seed="3", out=tmp_path / "r.json", attempts=2)
    piped = repo.flakecore(*args)
    assert "attempt 1/2" not in piped.stderr
    run, terminal = run_on_a_terminal(
        [sys.executable, "-m", "flakecore", *args], cwd=repo.path, env=repo.env()
    )
    assert run.returncode == 0
    assert "attempt 1/2 misses=1" in terminal
    assert "attempt 2/2 misses=2" in terminal
    assert json.loads(run.stdout)["code"] == "ACCEPT_PREEXISTING"
    repo.assert_clean()


def test_repository_policy_from_the_base_and_flags(tmp_path: Path) -> None:
    # [tool.flakecore] in the base commit raises the miss floor; the decision records it.
    floor = "[tool.flakecore]\nmin_base_misses = 3\n"
    (tmp_path / "policy").mkdir()
    repo = make_repo(tmp_path / "policy", base_files={"pyproject.toml": floor})
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="3", out=out))
    d = decision(run)
    assert d["policy_values"] == {"attempt_cap": 5, "min_base_misses": 3}
    assert (d["code"], run.returncode) == ("REJECT_PATCH_INTRODUCED", 4)  # 2 misses < floor 3
    source = d["policy_source"]
    assert (source["revision"], source["path"], source["scored_tree_differs"]) == (
        repo.base,
        "pyproject.toml",
        False,
    )
    assert not out.exists()
    flagged = repo.flakecore(
        *repo.replay_args(seed="3", out=out, extra=["--policy", "min_base_misses=2"])
    )
    assert decision(flagged)["policy_values"]["min_base_misses"] == 2
    assert decision(flagged)["policy_source"]["overrides"] == ["min_base_misses"]
    assert decision(flagged)["code"] == "ACCEPT_PREEXISTING"
    repo.assert_clean()


def test_github_output_annotates_and_appends_the_step_summary(
    repo: SampleRepo, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    args = [a for a in repo.replay_args(seed="7", out=tmp_path / "f.json") if a != "--json"]
    args.insert(args.index("--"), "--format")
    args.insert(args.index("--"), "github")
    run = subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        cwd=repo.path,
        env=repo.env({"GITHUB_STEP_SUMMARY": str(summary)}),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 4
    assert "::error title=flakecore admit" in run.stdout
    assert "REJECT_PATCH_INTRODUCED" in run.stdout
    text = summary.read_text()
    assert text.startswith("earlier step\n")
    assert "| admit | REJECT_PATCH_INTRODUCED |" in text
    # Nothing was written (a refusal, no --log): the evidence cell names no file.
    assert text.rstrip("\n").endswith(" |  |"), text
    repo.assert_clean()


def test_a_replay_given_the_resolved_base_is_the_replay_that_resolves_it(tmp_path: Path) -> None:
    """The CLI hands the replay the checkout, base and HEAD its configuration resolved: same outcome."""
    from flakecore.gate.replay import ExitStatusJudge, ReplayOutcome, ReplayRequest, run_replay

    repo = make_repo(tmp_path)
    miss_on_even = "import sys; sys.exit(int(sys.argv[1]) % 2)"
    request = ReplayRequest(
        checkout=repo.path, base=repo.base, seed="4", command=(sys.executable, "-c", miss_on_even, "{seed}"),
        property_file=Path(PROPERTY_FILE), epoch_lock=Path(EPOCH_LOCK),
        claimed_epoch=repo.claimed_epoch, attempts=2, patch_misses=1, property_id=TEST_ID,
    )  # fmt: skip
    judge = ExitStatusJudge(frozenset({1}))
    alone = run_replay(request, judge=judge)
    resolved = (repo.path.resolve(), repo.base)
    given = run_replay(request, judge=judge, resolved=resolved, head=repo.head)
    assert alone.base_sha == repo.base

    def timeless(outcome: ReplayOutcome) -> dict[str, object]:  # attempts differ in duration only
        data = outcome.to_json()
        for run in data["replay"]["attempts"]:  # type: ignore[index]
            del run["duration_s"]
        return data

    assert timeless(given) == timeless(alone)
    assert (given.decision.code, given.decision.reasons) == (
        alone.decision.code,
        alone.decision.reasons,
    )
    assert given.packet == alone.packet and given.packet is not None


def test_head_moved_during_the_replay_is_incomplete_and_writes_nothing(
    repo: SampleRepo, tmp_path: Path
) -> None:
    """``HEAD`` read with ``--base`` (one git call) is asked again after the attempts."""
    # (the checkout found from the worktree at run time: a path to it in argv is refused first)
    move = (
        "import os, subprocess; common = subprocess.run(['git', 'rev-parse', '--git-common-dir'], "
        "capture_output=True, text=True, check=True).stdout.strip(); "
        "subprocess.run(['git', '-C', os.path.dirname(os.path.abspath(common)), 'commit', '-q', "
        "'--allow-empty', '-m', 'moved'], check=True)"
    )
    out = tmp_path / "freeze.json"
    command = [sys.executable, "-c", move, "{seed}"]
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command, attempts=1))
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["reasons"] == ["HEAD of the scored checkout moved during the replay"]
    assert d["replay"]["head_sha"] == repo.head != git(repo.path, "rev-parse", "HEAD").strip()
    assert not out.exists()
    repo.assert_clean()
