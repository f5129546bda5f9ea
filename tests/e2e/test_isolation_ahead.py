"""The isolation probe runs beside ``git worktree add`` only where the worktree cannot change it.

A replay without ``--setup`` asks :func:`flakecore.gate.isolation.find_leaks_ahead`
in a thread while git checks the base out.  Its answer must be the one
:func:`~flakecore.gate.isolation.find_leaks` gives in the worktree, or None
(asked again there) whenever anything it looks at is relative to the
worktree or the interpreter is a script (a shim that picks its Python from
the directory).  The attacks on the concurrency: a leak found ahead is still
refused; a probe running ahead that hangs is ended by a stop (SIGTERM) and by
a refusal that comes first (a dirty worktree), leaving no process and no
worktree.  The honest twin: the same interpreter, working, decides.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2e.support import SampleRepo, decision, git, make_repo, run_in
from flakecore.gate.isolation import find_leaks, find_leaks_ahead

pytestmark = pytest.mark.e2e

#: The compiled interpreter behind this test's ``python``.
REAL = os.path.realpath(sys.executable)


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _fake_venv(where: Path, *, fifo: bool = False) -> Path:
    """A venv around the real interpreter; with ``fifo`` its ``pyvenv.cfg`` blocks start-up."""
    (where / "bin").mkdir(parents=True)
    python = where / "bin" / "python3"
    python.symlink_to(REAL)
    cfg = where / "pyvenv.cfg"
    if fifo:
        os.mkfifo(cfg)
    else:
        cfg.write_text(f"home = {os.path.dirname(REAL)}\ninclude-system-site-packages = false\n")
    return python


class World:
    """A checkout, a worktree in its scratch directory, and interpreters of every kind."""

    def __init__(self, root: Path) -> None:
        self.checkout = root / "checkout"
        (self.checkout / "src").mkdir(parents=True)
        self.scratch = root / "scratch"
        self.worktree = self.scratch / "tree"
        (self.worktree / "src").mkdir(parents=True)
        (self.worktree / "py").mkdir()
        (self.worktree / "py" / "python3").symlink_to(REAL)
        # A venv whose .pth adds the checkout: the leak.
        self.leaky = _fake_venv(root / "leaky")
        site = root / "leaky" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        (site / "site-packages").mkdir(parents=True)
        (site / "site-packages" / "checkout.pth").write_text(f"{self.checkout}/src\n")
        self.clean = _fake_venv(root / "clean")
        self.shims = root / "shims"  # pyenv's kind: a script named python3
        _script(self.shims / "python3", f'#!/bin/sh\nexec {REAL} "$@"\n')
        self.tools = root / "tools"  # console scripts: absolute and relative #! lines
        _script(self.tools / "tool", f"#!{self.leaky}\nprint(1)\n")
        _script(self.tools / "reltool", "#!py/python3\nprint(1)\n")

    def path_of(self, kind: str) -> str:
        first = {
            "leaky": self.leaky.parent,
            "clean": self.clean.parent,
            "shim": self.shims,
            "tools": self.tools,
        }[kind]
        return f"{first}{os.pathsep}/usr/bin{os.pathsep}/bin"

    def answers(self, argv: list[str], env: dict[str, str]) -> tuple[list[str] | None, list[str]]:
        checkout, scratch, output = self.checkout, self.scratch, subprocess.DEVNULL
        ahead = find_leaks_ahead(argv, env=env, checkout=checkout, scratch=scratch, output=output)
        slow = find_leaks(
            argv, env=env, cwd=self.worktree, checkout=checkout, scratch=scratch, output=output
        )
        return ahead, slow


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("ahead"))


#: The command's program, and which directory comes first on its ``PATH``.
PROGRAMS: dict[str, Callable[[World], tuple[list[str], str]]] = {
    "leaky python": lambda w: ([str(w.leaky)], "leaky"),
    "clean python": lambda w: ([str(w.clean)], "clean"),
    "python3 on PATH": lambda w: (["python3"], "leaky"),
    "python3 shim on PATH": lambda w: (["python3"], "shim"),
    "relative python": lambda w: (["py/python3"], "clean"),
    "console script": lambda w: (["tool"], "tools"),
    "relative #! line": lambda w: (["reltool"], "tools"),
    "no python": lambda w: (["true"], "clean"),
}


def _command(
    w: World, program: str, flag: str | None, pythonpath: str | None
) -> tuple[list[str], dict[str, str]]:
    argv, path = PROGRAMS[program](w)
    argv = [*argv, *([flag] if flag else []), "-c", "pass"]
    env = {"PATH": w.path_of(path)}
    if pythonpath is not None:
        env["PYTHONPATH"] = {"inside": f"{w.checkout}/src", "relative": "src"}.get(
            pythonpath, pythonpath
        )
    return argv, env


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    program=st.sampled_from(sorted(PROGRAMS)),
    flag=st.sampled_from([None, "-I", "-S", "-E", "-s"]),
    pythonpath=st.sampled_from([None, "inside", "relative", "/nowhere/lib"]),
)
def test_the_answer_ahead_is_the_answer_in_the_worktree(
    world: World, program: str, flag: str | None, pythonpath: str | None
) -> None:
    ahead, slow = world.answers(*_command(world, program, flag, pythonpath))
    assert ahead is None or ahead == slow


@pytest.mark.parametrize(
    ("program", "pythonpath", "ahead", "leaks"),
    [
        ("leaky python", None, True, True),  # the attack, found ahead
        ("clean python", None, True, False),  # its honest twin
        ("python3 on PATH", "inside", True, True),
        ("console script", None, True, True),
        ("no python", None, True, False),
        ("relative python", None, False, False),
        ("python3 shim on PATH", None, False, False),
        ("relative #! line", None, False, False),
        ("clean python", "relative", False, False),
    ],
)
def test_what_is_asked_ahead(
    world: World, program: str, pythonpath: str | None, ahead: bool, leaks: bool
) -> None:
    early, slow = world.answers(*_command(world, program, None, pythonpath))
    assert (early is not None, bool(slow)) == (ahead, leaks)
    assert early is None or early == slow


def _cmdlines() -> dict[int, bytes]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
    return found


def _probes(marker: Path) -> list[int]:
    """Processes of the probe running ``marker``'s interpreter."""
    mark = str(marker).encode()
    return [pid for pid, cmd in _cmdlines().items() if mark in cmd and b"_probe.py" in cmd]


def _adding() -> bool:
    """A ``git worktree add`` runs now."""
    return any(b"worktree\0add" in cmd for cmd in _cmdlines().values())


def _replay(repo: SampleRepo, python: Path, seed: str = "3") -> list[str]:
    command = [str(python), "-c", "import sys; sys.exit(int(sys.argv[1]) % 3 == 0)", "{seed}"]
    args = repo.replay_args(seed=seed, out=repo.tmp.parent / "freeze.json", command=command)
    return [sys.executable, "-m", "flakecore", *args]


def _wait_for(what: Callable[[], list[int]], seconds: float = 60.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while not (found := what()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return found


def test_a_stop_ends_a_probe_that_runs_ahead(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    python = _fake_venv(tmp_path / "stuck", fifo=True)
    proc = subprocess.Popen(
        _replay(repo, python), cwd=repo.path, env=repo.env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # The worktree is there and the replay waits for the probe's answer.
        assert _wait_for(lambda: [] if _adding() else _probes(python)), "no probe started"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "stopped by" in err and "worktree removed" in err
    assert _probes(python) == []  # ended before flakecore exited
    assert not (tmp_path / "freeze.json").exists()
    repo.assert_clean()
    # The honest twin: the same interpreter with a readable pyvenv.cfg replays and decides.
    twin = _fake_venv(tmp_path / "working")
    run = run_in(repo.path, _replay(repo, twin), repo.env(), 120)
    d = decision(run)
    assert (run.returncode, d["code"]) == (0, "ACCEPT_PREEXISTING"), d["reasons"]
    assert [a["result"] for a in d["replay"]["attempts"]] == ["miss", "miss"]
    repo.assert_clean()


def test_a_refusal_first_ends_the_probe_ahead(tmp_path: Path) -> None:
    """A dirty worktree is refused at once; the hanging probe beside it ends with the replay."""
    repo = make_repo(tmp_path)
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "attributes").write_text("mylib.py filter=drop\n")
    ci_config = tmp_path / "ci.gitconfig"  # the CI's own filter (trusted), with a side effect
    dropping = 'sh -c "echo dropped > dropped-by-filter.txt; cat"'
    git(repo.path, "config", "--file", str(ci_config), "filter.drop.smudge", dropping)
    ci_env = repo.env({"GIT_CONFIG_GLOBAL": str(ci_config)})
    python = _fake_venv(tmp_path / "stuck", fifo=True)
    run = run_in(repo.path, _replay(repo, python), ci_env, 60)
    d = decision(run)
    assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
    (reason,) = d["reasons"]
    assert reason.startswith("base worktree is not clean: ?? dropped-by-filter.txt"), reason
    assert _probes(python) == []
    repo.assert_clean()
    # The honest twin: without the filter the same replay is not refused for its worktree.
    git(repo.path, "config", "--file", str(ci_config), "--unset", "filter.drop.smudge")
    twin = _fake_venv(tmp_path / "working")
    run = run_in(repo.path, _replay(repo, twin), ci_env, 120)
    assert (run.returncode, decision(run)["code"]) == (0, "ACCEPT_PREEXISTING")
    repo.assert_clean()
