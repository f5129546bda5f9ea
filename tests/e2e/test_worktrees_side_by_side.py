"""Replays side by side add their base worktrees one at a time: git keeps no lock over them.

``git worktree add`` lists the repository's other worktrees, reading each
entry under ``.git/worktrees/``; an add under way has written its entry's
``gitdir`` but not yet its ``commondir`` for a moment, and an add that reads
it then dies (``failed to read .git/worktrees/tree1/commondir``).  Two
replays of ``triage --jobs 2`` started together hit that window now and
then, on a loaded machine more often, and the test whose add died was
refused as ``REJECT_INCOMPLETE``.

Here a ``git`` first on ``PATH`` (the real git for everything else) holds the
first ``worktree add`` at that moment, its entry half written, and the
other replay's add runs only once that entry is there: without a lock in
flakecore it runs then and dies.  The first add goes on once the other has
run, or, when flakecore holds the other back, 2 s after both isolation
probes have answered (each starts just before its replay's add, so the
other replay is then waiting for the first add): a wait only the fixed code
pays, never a deadline the check depends on.

The same holds for two flakecore processes in one repository (two CI steps,
a ``triage`` beside a ``replay``): their adds and removals are serialised by
a lock on the repository's git directory, not only by one process's own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from e2e.support import git, init_repo
from flakecore.codes import AttemptResult
from flakecore.logdir import LogDirectory

pytestmark = pytest.mark.e2e

#: git, except that the first ``worktree add`` waits with an entry in git's mid-add state.
_GIT = r"""#!/bin/sh
case " $* " in *" worktree add "*) ;; *) exec "$REAL_GIT" "$@" ;; esac
state="$GIT_SHIM_STATE"
# Every wait gives up after 60 s (exit 97), so no shim outlives a test that died.
ticks=0
tick() { ticks=$((ticks + 1)); [ "$ticks" -lt 6000 ] || exit 97; sleep 0.01; }
if mkdir "$state/first" 2>/dev/null; then
    half="$("$REAL_GIT" rev-parse --path-format=absolute --git-common-dir)/worktrees/half-added"
    mkdir -p "$half"
    echo initializing > "$half/locked"
    echo "$state/nowhere/.git" > "$half/gitdir"
    : > "$half/commondir"
    mkdir "$state/held"
    probes() { ls "$TMPDIR"/flakecore-replay-*/interpreter-probe.json 2>/dev/null | wc -l; }
    # The other add comes at once unless flakecore holds it; past both probes, 2 s more.
    waited=0
    until [ -d "$state/second" ] || [ "$waited" -ge 200 ]; do
        [ "$(probes)" -ge 2 ] && waited=$((waited + 1))
        tick
    done
    while [ -d "$state/second" ] && [ ! -d "$state/second-done" ]; do tick; done
    rm -rf "$half"
    exec "$REAL_GIT" "$@"
fi
mkdir "$state/second" 2>/dev/null
until [ -d "$state/held" ]; do tick; done
"$REAL_GIT" "$@"
code=$?
mkdir "$state/second-done"
exit $code
"""
#: One "test": a plain command that misses (exit 1) on base and head alike.
_MISS = "import sys; sys.exit(1)"
TESTS = ("tests/test_a.py::test", "tests/test_b.py::test")


def _red_run(root: Path) -> tuple[Path, Path]:
    """A repository whose two tests miss on base, and the plugin-format logs of a red run."""
    return _red_repo(root), _red_logs(root / "logs", TESTS)


def _red_repo(root: Path) -> Path:
    """A repository whose two tests miss on base."""
    command = [sys.executable, "-c", _MISS, "{test_id}", "{seed}"]
    table = (
        "[tool.flakecore]\nattempt_cap = 2\n\n[tool.flakecore.triage]\n"
        f'command = {json.dumps(command)}\nepoch_lock = "fixtures/epoch.lock"\n'
    )
    files = {"pyproject.toml": table, "fixtures/epoch.lock": "epoch 1\n"}
    files |= {t.partition("::")[0]: "def test():\n    assert False\n" for t in TESTS}
    repo = root / "repo"
    init_repo(repo, files, "base")
    return repo


def _red_logs(logs: Path, tests: Sequence[str]) -> Path:
    """The plugin-format logs of a red run in which ``tests`` failed."""
    logs.mkdir()
    writer = LogDirectory(logs, "main", 1)
    for test_id in tests:
        writer.append(test_id, AttemptResult.MISS)
    writer.close()
    return logs


def _shim_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a flakecore whose ``git`` is :data:`_GIT`, with its own ``TMPDIR``."""
    real_git = shutil.which("git")
    assert real_git is not None
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(_GIT)
    (shim / "git").chmod(0o755)
    state, scratch = tmp_path / "state", tmp_path / "tmp"
    state.mkdir()
    scratch.mkdir()
    return {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}",
        "REAL_GIT": real_git,
        "GIT_SHIM_STATE": str(state),
        "TMPDIR": str(scratch),
    }


def _triage(logs: Path, out: Path, *jobs: str) -> list[str]:
    return [sys.executable, "-m", "flakecore", "triage", "--base", "main", "--log-dir", str(logs),
            "--out-dir", str(out), *jobs, "--json"]  # fmt: skip


def _verdicts(stdout: str) -> tuple[list[tuple[str, str]], list[object]]:
    """Each result's (test id, verdict), and the reasons to show when they are not the ones."""
    results = [json.loads(line) for line in stdout.splitlines()]
    return [(r["test_id"], r["verdict"]) for r in results], [r["reasons"] for r in results]


def _assert_held_and_gone(repo: Path, state: Path, scratch: Path) -> None:
    """The first add was held with its entry half written, the other ran; nothing is left."""
    assert (state / "first").is_dir()
    assert (state / "second-done").is_dir()
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not any((repo / ".git" / "worktrees").glob("*"))
    assert list(scratch.iterdir()) == []


def test_two_replays_adding_their_worktrees_at_once_are_both_decided(tmp_path: Path) -> None:
    repo, logs = _red_run(tmp_path)
    env = _shim_env(tmp_path)
    run = subprocess.run(
        _triage(logs, tmp_path / "out", "--jobs", "2"),
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    verdicts, reasons = _verdicts(run.stdout)
    assert verdicts == [(t, "ACCEPT_PREEXISTING") for t in TESTS], reasons
    assert run.returncode == 0, run.stderr
    _assert_held_and_gone(repo, tmp_path / "state", tmp_path / "tmp")


def test_two_processes_adding_their_worktrees_at_once_are_both_decided(tmp_path: Path) -> None:
    """Two ``triage`` processes in one repository, one red test each: both accepted."""
    repo = _red_repo(tmp_path)
    env = _shim_env(tmp_path)
    runs = []
    for i, test in enumerate(TESTS):
        argv = _triage(_red_logs(tmp_path / f"logs{i}", [test]), tmp_path / f"out{i}")
        pipes = subprocess.PIPE
        runs.append(
            subprocess.Popen(argv, cwd=repo, env=env, stdout=pipes, stderr=pipes, text=True)
        )
    answers = [run.communicate(timeout=300) for run in runs]
    for test, run, (stdout, stderr) in zip(TESTS, runs, answers, strict=True):
        verdicts, reasons = _verdicts(stdout)
        assert verdicts == [(test, "ACCEPT_PREEXISTING")], reasons
        assert run.returncode == 0, stderr
    _assert_held_and_gone(repo, tmp_path / "state", tmp_path / "tmp")
