"""Reapers started ahead of their attempts run nothing until flakecore hands them their job.

A replay starts the reapers of its probe and attempts while git checks the
base out (:class:`flakecore.gate.runtime.Reapers`), so their start-up is off
the critical path.  Containment stays what it was: one reaper per attempt,
and an attempt's command starts only when flakecore sends its reaper the
job, after the previous attempt ended and both trees were re-hashed.  The
attacks: a job cut short or a socket closed without one (an abandoned
reaper, a flakecore that died), a waiting reaper killed, a process of the
same user writing a job through ``/proc``, an attempt that would start the
next one early.  Each refusal has its honest twin.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from e2e.support import decision, make_repo
from flakecore.gate import _reaper, runtime
from flakecore.gate.runtime import Reapers

pytestmark = pytest.mark.e2e

#: Text as argv and paths carry it: no NUL, no lone surrogate.
ARG = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"))


@given(
    cwd=ARG,
    timeout=st.none() | st.floats(0.001, 1e6),
    argv=st.lists(ARG, min_size=1).filter(lambda a: a[0] != ""),
)
def test_a_job_is_run_only_when_it_arrived_whole(
    cwd: str, timeout: float | None, argv: list[str]
) -> None:
    message = _reaper.job_message(cwd, timeout, argv)
    assert _reaper.job(message) == (cwd, timeout, argv)
    for cut in range(len(message)):  # flakecore died or closed mid-message
        assert _reaper.job(message[:cut]) is None
    assert _reaper.job(message + b"\0extra") is None


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _gone_within(pids: list[int], seconds: float = 30.0) -> bool:
    """Every process of ``pids`` ended (polled: they need not be our children)."""
    deadline = time.monotonic() + seconds
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(map(_alive, pids))


def _waiting(reapers: Reapers) -> list[runtime._Reaper]:
    """The reapers waiting for a job, once the thread that starts them is done."""
    reapers._started.wait()
    return [r for r in reapers._waiting if isinstance(r, runtime._Reaper)]


def _touch(marker: Path) -> list[str]:
    return [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]


def test_a_socket_that_ends_without_a_job_runs_nothing() -> None:
    """flakecore abandoned the reaper: it exits at once, reporting nothing."""
    reaper = runtime._start_reaper(None, subprocess.DEVNULL)
    reaper.job.close()
    assert reaper.proc.wait(timeout=60) == 1
    assert os.read(reaper.status, 100) == b""  # no status: nothing ran
    os.close(reaper.status)
    runtime._live.discard(reaper.proc.pid)


def test_a_job_cut_short_runs_nothing_and_a_whole_one_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    message = _reaper.job_message(str(tmp_path), None, _touch(marker))
    cut = runtime._start_reaper(None, subprocess.DEVNULL)
    cut.job.sendall(message[:-1])
    cut.job.close()
    assert cut.proc.wait(timeout=60) == 1
    assert not marker.exists()
    os.close(cut.status)
    runtime._live.discard(cut.proc.pid)
    # The honest twin: the whole message, through the way flakecore sends it.
    whole = runtime._start_reaper(None, subprocess.DEVNULL)
    done = runtime._run_on(whole, tuple(_touch(marker)), tmp_path, None, time.monotonic())
    assert (done.returncode, done.start_error) == (0, None) and marker.exists()


def test_abandoned_reapers_end_and_run_nothing(tmp_path: Path) -> None:
    reapers = Reapers(3)
    pids = [r.proc.pid for r in _waiting(reapers)]
    assert len(pids) == 3 and all(map(_alive, pids))
    done = reapers.run(_touch(tmp_path / "first"), cwd=tmp_path, timeout_s=60)
    assert done.returncode == 0
    reapers.close()
    assert _gone_within(pids)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first"]
    assert not set(pids) & runtime._live


def test_a_reaper_killed_before_its_job_is_an_attempt_that_could_not_start(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    with Reapers(1) as reapers:
        (waiting,) = _waiting(reapers)
        os.kill(waiting.proc.pid, signal.SIGKILL)
        waiting.proc.wait()
        done = reapers.run(_touch(marker), cwd=tmp_path, timeout_s=60)
    assert done.start_error == "the attempt's reaper ended without a report"
    assert not marker.exists()
    # The honest twin: the same run on a reaper left alone.
    with Reapers(1) as reapers:
        done = reapers.run(_touch(marker), cwd=tmp_path, timeout_s=60)
    assert (done.returncode, done.start_error) == (0, None) and marker.exists()


def _sockets(pid: int) -> list[str]:
    """The ``/proc`` links of ``pid``'s open sockets (a starting interpreter opens and closes
    files of its own meanwhile: a link gone before it is read is not one)."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            if os.readlink(fd).startswith("socket:"):
                found.append(str(fd))
    return found


def test_no_process_of_the_user_can_hand_a_waiting_reaper_a_job(tmp_path: Path) -> None:
    """No ``/proc/PID/fd`` link opens a socket, flakecore's end or the reaper's."""
    with Reapers(1) as reapers:
        (waiting,) = _waiting(reapers)
        links = [f"/proc/self/fd/{waiting.job.fileno()}"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the reaper's end, once it is exec'd and running
            theirs = _sockets(waiting.proc.pid)
            if theirs:
                break
            time.sleep(0.01)
        links += theirs
        assert len(links) == 2
        for link in links:
            with pytest.raises(OSError) as refused:  # noqa: PT011 - the errno is checked below
                os.open(link, os.O_WRONLY)
            assert refused.value.errno == errno.ENXIO
        done = reapers.run(_touch(tmp_path / "honest"), cwd=tmp_path, timeout_s=60)
    assert done.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["honest"]


#: argv: MARKS SEED MODE.  Marks ``start-N``, and ``overlap-N`` if anything an earlier attempt
#: left is still there.  MODE ``forge``: tries to open every descriptor of flakecore and of the
#: reapers waiting for later attempts for writing (marking ``opened-a-socket`` if a job socket
#: opens: told by the descriptor it opened, as a starting reaper may close its own meanwhile),
#: and leaves a setsid grandchild behind (``left-N``: its pid); ``kill`` also kills the
#: waiting reapers; ``honest`` does none of it.  Then it misses (exit 1).
_ATTEMPT = r"""
import os, signal, sys, time
from pathlib import Path
marks, mode = Path(sys.argv[1]), sys.argv[3]
n = len(list(marks.glob("start-*"))) + 1
(marks / f"start-{n}").write_text("")
for left in marks.glob("left-*"):
    if os.path.exists(f"/proc/{left.read_text()}"):
        (marks / f"overlap-{n}").write_text(left.name)
reaper = os.getppid()
stat = open(f"/proc/{reaper}/stat").read()
flakecore = int(stat[stat.rfind(")") + 2 :].split()[1])
siblings = []
for task in os.listdir(f"/proc/{flakecore}/task"):
    for pid in open(f"/proc/{flakecore}/task/{task}/children").read().split():
        if int(pid) != reaper and "_reaper" in open(f"/proc/{pid}/cmdline").read():
            siblings.append(int(pid))
if mode != "honest":
    for pid in siblings + [flakecore]:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                out = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            if os.readlink(f"/proc/self/fd/{out}").startswith("socket:"):  # what it opened
                (marks / "opened-a-socket").write_text(f"{pid} {fd}")
            os.close(out)
if mode == "kill":
    for pid in siblings:
        os.kill(pid, signal.SIGKILL)
if mode != "honest" and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        (marks / f"left-{n}").write_text(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
while mode != "honest" and not (marks / f"left-{n}").exists():
    time.sleep(0.01)
sys.exit(1)
"""


def _replay(tmp_path: Path, mode: str, attempts: int = 3) -> tuple[int, dict[str, object], Path]:
    repo = make_repo(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    command = [sys.executable, "-c", _ATTEMPT, str(marks), "{seed}", mode]
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command, attempts=attempts))
    repo.assert_clean()
    return run.returncode, decision(run), marks


@pytest.mark.parametrize("mode", ["forge", "honest"])
def test_an_attempt_starts_only_after_the_previous_one_ended(tmp_path: Path, mode: str) -> None:
    """No attempt sees anything of the one before, nor can it start the next one early."""
    code, d, marks = _replay(tmp_path, mode)
    assert (code, d["code"]) == (0, "ACCEPT_PREEXISTING")  # every attempt missed: base did too
    seen = sorted(p.name for p in marks.iterdir())
    left = ["left-1", "left-2", "left-3"] if mode == "forge" else []
    assert seen == sorted(["start-1", "start-2", "start-3", *left])  # no overlap, no socket
    assert _gone_within([int((marks / name).read_text()) for name in left])


@pytest.mark.parametrize("mode", ["kill", "honest"])
def test_an_attempt_that_kills_the_waiting_reapers_is_refused(tmp_path: Path, mode: str) -> None:
    code, d, marks = _replay(tmp_path, mode, attempts=2)
    if mode == "honest":
        assert (code, d["code"]) == (0, "ACCEPT_PREEXISTING")
        return
    assert (code, d["code"]) == (1, "REJECT_INCOMPLETE")
    assert d["reasons"] == [
        "the command could not start: the attempt's reaper ended without a report"
    ]
    assert not (marks / "start-2").exists()  # attempt 2 never ran


#: argv: MARKS SEED.  Attempt 1 writes the pids of the reapers waiting for later attempts, then
#: kills flakecore itself; a later attempt would write ``ran-N``.
_KILL_FLAKECORE = r"""
import os, signal, sys
from pathlib import Path
marks = Path(sys.argv[1])
n = len(list(marks.glob("ran-*"))) + 1
(marks / f"ran-{n}").write_text("")
reaper = os.getppid()
stat = open(f"/proc/{reaper}/stat").read()
flakecore = int(stat[stat.rfind(")") + 2 :].split()[1])
waiting = [
    pid
    for task in os.listdir(f"/proc/{flakecore}/task")
    for pid in open(f"/proc/{flakecore}/task/{task}/children").read().split()
    if int(pid) != reaper and "_reaper" in open(f"/proc/{pid}/cmdline").read()
]
(marks / "waiting").write_text(" ".join(waiting))
os.kill(flakecore, signal.SIGKILL)
"""


def test_reapers_waiting_when_flakecore_dies_run_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    command = [sys.executable, "-c", _KILL_FLAKECORE, str(marks), "{seed}"]
    out = tmp_path / "freeze.json"
    run = repo.flakecore(*repo.replay_args(seed="3", out=out, command=command, attempts=3))
    assert run.returncode == -signal.SIGKILL
    waiting = [int(pid) for pid in (marks / "waiting").read_text().split()]
    assert len(waiting) == 2  # the reapers of attempts 2 and 3
    assert _gone_within(waiting)
    assert sorted(p.name for p in marks.iterdir()) == ["ran-1", "waiting"]
    assert not out.exists()


def test_the_wait_for_a_reaper_to_exit_ends_with_the_exit_or_the_timeout() -> None:
    done = subprocess.Popen(["true"])
    runtime._exited(done, 60)
    assert done.returncode == 0
    hanging = subprocess.Popen(["sleep", "60"])
    with pytest.raises(subprocess.TimeoutExpired):
        runtime._exited(hanging, 0.05)
    hanging.kill()
    hanging.wait()
