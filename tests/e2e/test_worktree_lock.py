"""The worktree lock: one ``flock`` on the git common directory, a deadline, nothing left behind.

Replays in one repository, threads of one process or processes side by side,
add and remove their worktrees one at a time (test_worktrees_side_by_side.py
shows the race it closes).  Here: the directory locked is the one git keeps
``worktrees/`` in, read from ``.git`` as git reads it (held to ``git rev-parse
--git-common-dir`` on every layout); a lock held past the deadline is a
:class:`WorktreeLockTimeout` (the replay's refusal, exit 1), never a hang; a
signal while waiting leaves nothing registered, and so does an add of a
process asked to stop (``stop_all``), which waits no more; a removal that
cannot get the lock in time still deletes the folder and leaves git's entry
to a prune.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from e2e.support import decision, git, init_repo, make_repo
from flakecore.errors import GitError, WorktreeLockTimeout
from flakecore.gate import worktree
from flakecore.gate.worktree import DetachedWorktree, _git_common_dir

pytestmark = pytest.mark.e2e


def _gits_common_dir(top: Path) -> Path:
    out = git(top, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    return Path(os.path.realpath(out))


def _layout(root: Path, kind: str, relative: bool, ending: str, absolute_common: bool) -> Path:
    """A checkout's top of ``kind``, its ``.git`` file (and ``commondir``) spelled as drawn."""
    main = root / "main"
    init_repo(main, {"f": "x\n"}, "base")
    if kind == "main":
        return main
    if kind == "symlinked .git":
        (main / ".git").rename(root / "moved")
        (main / ".git").symlink_to(root / "moved")
        return main
    if kind == "linked":
        top = root / "linked"
        git(main, "worktree", "add", "-q", "--detach", str(top))
        entry = main / ".git" / "worktrees" / "linked"
        common = str(main / ".git") if absolute_common else "../.."
        (entry / "commondir").write_text(common + ending)
        target = entry
    else:  # "separate": git init --separate-git-dir, a gitdir with no commondir
        top, target = root / "separate", root / "store"
        git(root, "init", "-q", "--separate-git-dir", str(target), str(top))
    shown = os.path.relpath(target, top) if relative else str(target)
    (top / ".git").write_text(f"gitdir: {shown}{ending}")
    return top


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["main", "symlinked .git", "linked", "separate"]),
    relative=st.booleans(),
    ending=st.sampled_from(["", "\n", "\r\n", "\n\n"]),
    absolute_common=st.booleans(),
)
def test_the_common_dir_read_from_dot_git_is_gits(
    kind: str, relative: bool, ending: str, absolute_common: bool
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        top = _layout(Path(os.path.realpath(scratch)), kind, relative, ending, absolute_common)
        assert _git_common_dir(top) == _gits_common_dir(top)


def test_a_dot_git_it_cannot_read_is_asked_of_git(tmp_path: Path) -> None:
    init_repo(tmp_path / "repo", {"f": "x\n"}, "base")
    sub = tmp_path / "repo" / "sub"
    sub.mkdir()
    (sub / ".git").write_text("not a gitdir line\n")  # git itself refuses it
    with pytest.raises(GitError):
        _git_common_dir(sub)
    (sub / ".git").write_text("gitdir: nowhere\n")  # no such directory
    with pytest.raises(GitError):
        _git_common_dir(sub)


@contextlib.contextmanager
def _flock_held(directory: Path) -> Iterator[None]:
    """What another flakecore process holds while it adds or removes a worktree."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _nothing_left(repo: Path, tmp: Path) -> None:
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not (repo / ".git" / "worktrees").exists() or not any(
        (repo / ".git" / "worktrees").iterdir()
    )
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("holder", ["another process", "another thread"])
def test_a_lock_held_past_the_deadline_is_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holder: str
) -> None:
    repo = make_repo(tmp_path)
    monkeypatch.setattr(worktree, "WORKTREE_LOCK_TIMEOUT_S", 0.3)
    tree = DetachedWorktree(repo.path, repo.base, tmp_root=repo.tmp)
    if holder == "another process":
        held: contextlib.AbstractContextManager[object] = _flock_held(repo.path / ".git")
    else:
        held = _held_by_a_thread()
    with held, pytest.raises(WorktreeLockTimeout) as info:
        tree.create()
    assert str(repo.path) in str(info.value)
    tree.remove()  # nothing was added: nothing for git to do, and no wait
    _nothing_left(repo.path, repo.tmp)
    with tree:  # once the lock is free, the same tree is added and removed
        assert tree.path is not None and not tree.problems()
    _nothing_left(repo.path, repo.tmp)


@contextlib.contextmanager
def _held_by_a_thread() -> Iterator[None]:
    got, done = threading.Event(), threading.Event()

    def hold() -> None:
        with worktree._WORKTREES:
            got.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    got.wait(30)
    try:
        yield
    finally:
        done.set()
        holder.join()


def test_a_removal_without_the_lock_in_time_deletes_the_folder_and_leaves_a_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    monkeypatch.setattr(worktree, "WORKTREE_LOCK_TIMEOUT_S", 0.3)
    tree = DetachedWorktree(repo.path, repo.base, tmp_root=repo.tmp)
    tree.create()
    with _flock_held(repo.path / ".git"):
        tree.remove()
    assert list(repo.tmp.iterdir()) == []
    assert "prunable" in git(repo.path, "worktree", "list", "--porcelain")
    git(repo.path, "worktree", "prune")
    _nothing_left(repo.path, repo.tmp)


def test_a_replay_refused_on_the_lock_exits_as_for_a_git_failure(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    patched = (
        "import sys; import flakecore.gate.worktree as w; w.WORKTREE_LOCK_TIMEOUT_S = 0.3; "
        "from flakecore.cli import console; sys.argv[0] = 'flakecore'; raise SystemExit(console())"
    )
    args = repo.replay_args(seed="3", out=tmp_path / "rec.json")
    with _flock_held(repo.path / ".git"):
        run = subprocess.run(
            [sys.executable, "-c", patched, *args],
            cwd=repo.path, env=repo.env(), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    found = decision(run)
    assert found["code"] == "REJECT_INCOMPLETE", found
    assert "worktree lock" in " ".join(found["reasons"])
    assert run.returncode == 1, run.stderr
    assert not (tmp_path / "rec.json").exists()
    _nothing_left(repo.path, repo.tmp)


_WAITER = """
import sys
from pathlib import Path
from flakecore.gate.runtime import signals_raise
from flakecore.gate.worktree import DetachedWorktree

tree = DetachedWorktree(Path(sys.argv[1]), sys.argv[2], tmp_root=Path(sys.argv[3]))
try:
    with signals_raise():
        tree.create(meanwhile=lambda scratch: print("waiting", flush=True))
finally:
    tree.remove()
"""


def _until_it_holds_open(pid: int, directory: Path) -> None:
    """Return once ``pid`` has ``directory`` open: it is trying the lock (where /proc tells)."""
    fds = Path(f"/proc/{pid}/fd")
    if not fds.is_dir():
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) == str(directory) for fd in fds.iterdir()):
                return
        time.sleep(0.01)
    raise AssertionError(f"{pid} never opened {directory}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_waiting_for_the_lock_leaves_nothing_registered(
    tmp_path: Path, signum: int
) -> None:
    repo = make_repo(tmp_path)
    with _flock_held(repo.path / ".git"):
        waiter = subprocess.Popen(
            [sys.executable, "-c", _WAITER, str(repo.path), repo.base, str(repo.tmp)],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert waiter.stdout is not None
            assert waiter.stdout.readline() == "waiting\n"
            _until_it_holds_open(waiter.pid, repo.path / ".git")
            waiter.send_signal(signum)
            _, err = waiter.communicate(timeout=60)  # long before the lock's deadline
        finally:
            if waiter.returncode is None:
                waiter.kill()
                waiter.communicate()
    expected = "KeyboardInterrupt" if signum == signal.SIGINT else "Terminated"
    assert expected in err, err
    _nothing_left(repo.path, repo.tmp)


_STOPPED = """
import sys
from pathlib import Path
from flakecore.errors import GitError, WorktreeLockTimeout
from flakecore.gate.runtime import stop_all
from flakecore.gate.worktree import DetachedWorktree

stop_all()  # what triage --jobs does on a signal, for its worker threads
tree = DetachedWorktree(Path(sys.argv[1]), sys.argv[2], tmp_root=Path(sys.argv[3]))
try:
    tree.create()
except WorktreeLockTimeout:
    print("timed out")
except GitError:
    print("stopped")
finally:
    tree.remove()
"""


def test_an_add_of_a_process_asked_to_stop_waits_no_more(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    with _flock_held(repo.path / ".git"):
        run = subprocess.run(
            [sys.executable, "-c", _STOPPED, str(repo.path), repo.base, str(repo.tmp)],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert (run.stdout, run.returncode) == ("stopped\n", 0), run.stderr
    _nothing_left(repo.path, repo.tmp)
