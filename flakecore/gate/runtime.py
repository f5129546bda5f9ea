"""Running one command under test, contained; signals as exceptions.

Both gate procedures (the base replay and the seed-budget run) start the
command under test the same way, and both must leave nothing behind when they
are stopped: SIGTERM's default action kills Python without running a single
``finally`` block, so a CI cancel would strand a git worktree.  Hence
:func:`signals_raise` (a signal becomes an exception, cleanup runs) and
:func:`signals_deferred` (a second signal cannot cut the cleanup short).

Every attempt ends completely before anything reads its result (docs/trust.md):
:func:`run_command` starts the command under its own reaper process
(:mod:`flakecore.gate._reaper`), which is the subreaper of the attempt and
kills and reaps every descendant -- also one that called ``setsid()`` or
forked twice -- before it reports the exit status.  A verb that owns its
process (the CLI) also calls :func:`adopt_orphans`, so that flakecore itself
is the second line: whatever a reaper that was killed left behind is
re-parented to flakecore and ended after the attempt.
"""

from __future__ import annotations

import _socket  # socketpair, without socket's enum classes: a start-up cost of every verb
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

import attrs

from flakecore._env import child_env  # re-exported: the gate procedures start children with it
from flakecore.gate import _reaper

__all__ = [
    "REAPERS_AHEAD",
    "WEAK_CONTAINMENT",
    "CommandRun",
    "Reapers",
    "Terminated",
    "adopt_orphans",
    "child_env",
    "remove_file",
    "run_command",
    "signals_deferred",
    "signals_raise",
    "stop_all",
    "stopping",
    "substitute",
]

#: Signals that stop a run; each becomes an exception while :func:`signals_raise` is active.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived.

    A ``BaseException`` (like ``KeyboardInterrupt``) so that no ``except
    Exception`` on the way swallows it: it must unwind to the caller, running
    every ``finally`` (worktree removal) on the way.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def _raise(signum: int, _frame: FrameType | None) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """While active, SIGINT raises ``KeyboardInterrupt``, SIGTERM/SIGHUP raise :class:`Terminated`.

    Only the main thread can own signal handlers; elsewhere this does nothing
    (the caller's own handling applies).  The previous handlers come back on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold stop signals until the block ends, so a second Ctrl-C cannot cut cleanup short.

    A signal that arrives meanwhile is delivered (and raises) when the block
    ends, after the cleanup it would have interrupted.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@attrs.frozen(kw_only=True)
class CommandRun:
    """How one execution of the command under test ended."""

    argv: tuple[str, ...]
    """The command as run (placeholders substituted)."""
    returncode: int | None
    """Exit status; negative for a signal; None when it timed out or never started."""
    timed_out: bool
    """Killed (with its whole process group) at the per-attempt timeout."""
    duration_s: float
    """Wall-clock seconds from start to exit."""
    start_error: str | None = None
    """Why the command could not start at all (not found, not executable)."""
    survivors: tuple[int, ...] = ()
    """Processes of the attempt that could not be ended (containment failed)."""
    contained: str = "subreaper"
    """How the attempt was ended: ``subreaper`` (every descendant), ``process-group``
    (no subreaper on this platform), or ``lost`` (its reaper was killed, and no
    second line caught what it left)."""

    @property
    def weakly_contained(self) -> bool:
        """Only the process group was ended (no subreaper here): a reason must say so."""
        return self.contained == "process-group" and self.start_error is None

    @property
    def containment_failure(self) -> str | None:
        """Why this attempt may still be running somewhere (None: it ended completely)."""
        if self.survivors:
            pids = ", ".join(str(p) for p in self.survivors[:5])
            return (
                f"{len(self.survivors)} process(es) the attempt started could not be ended "
                f"(pid {pids}): the attempt did not end completely"
            )
        if self.contained == "lost":
            return (
                "the attempt's reaper was killed before it reported: processes the attempt "
                "started may still be running"
            )
        return None

    def describe(self) -> str:
        """A few words for reasons and logs: ``exit 1``, ``timeout after 3.0 s``..."""
        if self.start_error is not None:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timeout after {self.duration_s:.1f} s"
        assert self.returncode is not None
        if self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        return f"exit {self.returncode}"


def substitute(argv: Sequence[str], **values: str) -> tuple[str, ...]:
    """Replace ``{name}`` by ``values[name]`` in every argument.

    Plain text replacement, not ``str.format``: other braces in a command
    (shell snippets, JSON) are left exactly as given.
    """
    out: list[str] = []
    for arg in argv:
        text = arg
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        out.append(text)
    return tuple(out)


#: The note a decision carries when its attempts could only be ended by process group.
WEAK_CONTAINMENT = (
    "attempts were ended by process group only (no subreaper on this platform): "
    "a descendant that left the group may have outlived its attempt"
)
#: The reaper's start: ``python -I -S`` never reads the command's environment nor puts the
#: working directory on the path; the reaper's own directory goes last, after the standard
#: library, and the import system runs its compiled module when that is current
#: (compiling the file as a script cost more than the rest of the reaper's start-up);
#: ``posix``, not ``os``: nothing in the reaper imports ``os`` (a sixth of its instructions);
#: ``-B``: the reaper writes no bytecode of its own.
_REAPER_START = (
    "import posix, sys; "
    f"sys.path.append({os.path.dirname(os.path.abspath(_reaper.__file__))!r}); "
    "from _reaper import main; posix._exit(main(sys.argv[1:]))"
)
#: How long a reaper may take past the attempt's timeout before it is killed itself.
_REAPER_GRACE_S = 30.0
#: A status line longer than this is no status line.
_MAX_STATUS = 1 << 20
#: How often a wait for a status line also looks whether the reaper is still there.
_STATUS_POLL_S = 0.25
#: Set by :func:`adopt_orphans`: this process is the second-line subreaper.
_second_line = False
#: Reapers running now; the second-line sweep never enters their subtrees.
_live: set[int] = set()
#: Held from a reaper's start until it is in ``_live``, and by every sweep: a sweep run by
#: one thread must never take another thread's reaper, just started, for an orphan.
_spawning = threading.Lock()
#: Set by :func:`stop_all`: no attempt starts any more in this process.
_stopped = threading.Event()


def adopt_orphans() -> bool:
    """Make this process the subreaper of everything it starts (second line of containment).

    Only for a process flakecore owns (the CLI calls it): after each attempt,
    every process below this one that is not under a running reaper is
    killed, whoever started it.  Returns False where that is impossible
    (not Linux); the reapers' own containment still applies.
    """
    global _second_line  # noqa: PLW0603 - one process-wide switch, like the prctl itself
    _second_line = _second_line or _reaper.become_subreaper()
    return _second_line


def _sweep() -> tuple[int, ...]:
    """The second line: end what a reaper that died left re-parented to us.

    Processes in our own session are spared: attempts run in sessions of their
    own, so those are ours (another thread's git, a reaper being started).
    """
    if not _second_line:
        return ()
    with _spawning:
        return tuple(
            _reaper.end_descendants(
                os.getpid(),
                skip=frozenset(_live),
                any_child=False,
                spare_session=os.getsid(0),
            )
        )


def stop_all() -> None:
    """End every attempt running in this process, and start none from now on.

    For a caller that runs attempts in several threads and was asked to stop
    (a signal reaches only the main thread): each reaper is told to end its
    attempt, exactly as a timeout would, and every later :func:`run_command`
    returns at once as a run that could not start.  For the rest of the process.
    """
    _stopped.set()
    with _spawning:
        reapers = list(_live)
    for pid in reapers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)


def stopping() -> bool:
    """Whether :func:`stop_all` was called: a wait of this process's (a lock) ends at once."""
    return _stopped.is_set()


def _stop_reaper(proc: subprocess.Popen[bytes]) -> None:
    """Ask the reaper to end its attempt (SIGTERM); kill it if it does not within the grace."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        proc.wait(timeout=_REAPER_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_status(
    proc: subprocess.Popen[bytes], fd: int, timeout: float | None, data: bytes = b""
) -> tuple[bytes, bool]:
    """The reaper's status line as it arrives, and whether the wait ended before ``timeout``.

    Read as the reaper writes it (no polling for its exit: that slept up to
    50 ms past every attempt).  The line ends the wait, and so does the
    reaper's end: an end of file, or its exit while a process it could not
    end still holds the pipe (then whatever came is the status).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while b"\n" not in data and len(data) <= _MAX_STATUS:
        wait = _STATUS_POLL_S
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                return data, False
        if not poller.poll(wait * 1000):
            if proc.poll() is not None and not poller.poll(0):
                break  # the reaper is gone and nothing more is coming
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data, True


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """``proc.wait(timeout)``, woken by the exit itself rather than by ``wait``'s sleeps.

    ``Popen.wait`` with a timeout polls, sleeping 0.5 ms, then 1 ms, 2 ms...:
    about a millisecond past every attempt.  A pidfd (Linux 5.3) becomes
    readable when the process exits; without one, ``wait`` as before.
    ``subprocess.TimeoutExpired`` when it has not exited within ``timeout``.
    """
    try:
        pidfd = os.pidfd_open(proc.pid)  # not reaped yet, so the pid is still this process's
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(timeout * 1000)
    finally:
        os.close(pidfd)
    proc.wait(timeout=0)


def _parse_status(data: bytes) -> dict[str, object] | None:
    if len(data) > _MAX_STATUS:
        return None
    try:
        status = json.loads(data)
    except ValueError:
        return None
    return status if isinstance(status, dict) else None


def _ended(
    args: tuple[str, ...], status: dict[str, object] | None, elapsed: float, *, hung: bool
) -> CommandRun:
    """The run as the reaper reported it, plus what the second-line sweep found.

    ``hung``: the reaper itself outlived the timeout and was stopped (a timeout).
    """
    swept = _sweep()
    if status is None:  # the reaper was killed: only the second line can have ended the rest
        return CommandRun(
            argv=args,
            returncode=None,
            timed_out=hung,
            duration_s=elapsed,
            start_error=None if hung else "the attempt's reaper ended without a report",
            survivors=swept,
            contained="subreaper" if _second_line else "lost",
        )
    code, duration = status.get("returncode"), status.get("duration_s")
    left, error = status.get("survivors"), status.get("start_error")
    survivors = tuple(p for p in left if type(p) is int) if isinstance(left, list) else ()
    return CommandRun(
        argv=args,
        returncode=code if type(code) is int else None,
        timed_out=hung or status.get("timed_out") is True,
        duration_s=float(duration) if isinstance(duration, (int, float)) else elapsed,
        start_error=error if isinstance(error, str) else None,
        survivors=survivors + swept,
        contained=str(status.get("contained", "process-group")),
    )


def _reaper_argv(status_fd: int, job_fd: int) -> list[str]:
    start = [sys.executable, "-I", "-S", "-B", "-c", _REAPER_START]
    return [*start, str(status_fd), str(job_fd), str(os.getpid())]


class _Reaper:
    """A reaper process, started and waiting for its job (or the end of its socket)."""

    __slots__ = ("job", "proc", "status")

    def __init__(self, proc: subprocess.Popen[bytes], status: int, job: _socket.socket) -> None:
        self.proc = proc
        self.status = status
        """The read end of its status pipe."""
        self.job = job
        """Flakecore's end of its job socket: nobody else can write to it (no ``/proc`` path
        opens a socket), so only flakecore can start its command."""

    def abandon(self) -> None:
        """End it unused: the socket ends without a job (so it would exit by itself) and it is
        killed; it never ran anything."""
        self.job.close()
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        _live.discard(self.proc.pid)
        os.close(self.status)


def _start_reaper(env: Mapping[str, str] | None, output: int) -> _Reaper:
    """A new reaper, waiting for its job; ``OSError`` when it cannot be started."""
    read_end, write_end = os.pipe()
    ours, theirs = _socket.socketpair()
    try:
        with _spawning:
            if _stopped.is_set():
                raise OSError("the run was stopped")
            proc = subprocess.Popen(
                _reaper_argv(write_end, theirs.fileno()),
                cwd="/",  # its job names the command's directory, which may not exist yet
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
                pass_fds=(write_end, theirs.fileno()),
            )
            _live.add(proc.pid)
    except BaseException:
        os.close(read_end)
        ours.close()
        raise
    finally:
        os.close(write_end)
        theirs.close()
    return _Reaper(proc, read_end, ours)


def _not_started(args: tuple[str, ...], cwd: Path, error: OSError, start: float) -> CommandRun:
    return CommandRun(
        argv=args,
        returncode=None,
        timed_out=False,
        duration_s=time.monotonic() - start,
        start_error=f"cannot start the attempt in {cwd}: {error.strerror or error}",
    )


def _run_on(
    reaper: _Reaper, args: tuple[str, ...], cwd: Path, timeout_s: float | None, start: float
) -> CommandRun:
    """Send ``reaper`` its job and wait until it reports that every process of it is gone."""
    proc, read_end = reaper.proc, reaper.status
    try:
        hung = False
        try:
            # The reaper waits in "/": a relative directory is flakecore's, as it was for Popen.
            where = os.fspath(cwd) if os.path.isabs(cwd) else os.path.join(os.getcwd(), cwd)
            with contextlib.suppress(OSError):  # a reaper gone already: its status says so
                reaper.job.sendall(_reaper.job_message(where, timeout_s, list(args)))
            reaper.job.close()
            # The reaper keeps the timeout; this deadline only guards against one that hangs.
            limit = None if timeout_s is None else timeout_s + _REAPER_GRACE_S
            data, arrived = _wait_status(proc, read_end, limit)
            if arrived:
                _exited(proc, _REAPER_GRACE_S)  # it exits right after its status line
            else:
                hung = True
                _stop_reaper(proc)  # told to stop, it still reports what it ended
                data, _ = _wait_status(proc, read_end, _REAPER_GRACE_S, data)
        except subprocess.TimeoutExpired:
            hung = True
            _stop_reaper(proc)
        except BaseException:
            with signals_deferred():
                _stop_reaper(proc)
                _live.discard(proc.pid)
                _sweep()
            raise
        finally:
            _live.discard(proc.pid)
        return _ended(args, _parse_status(data), time.monotonic() - start, hung=hung)
    finally:
        reaper.job.close()
        os.close(read_end)


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float | None,
    env: Mapping[str, str] | None = None,
    output: int = subprocess.DEVNULL,
) -> CommandRun:
    """Run ``argv`` once under its own reaper; return only when every process of it is gone.

    ``output`` receives the command's stdout and stderr (a file descriptor;
    the CLI passes its own stderr so its stdout stays machine-readable).  The
    reaper kills the attempt at ``timeout_s``; if anything interrupts the wait
    (a signal turned into an exception), the reaper is told to end the
    attempt, and the exception goes on only after it has.  (:class:`Reapers`
    starts the reapers of several runs ahead of them.)
    """
    args, start = tuple(argv), time.monotonic()
    try:
        reaper = _start_reaper(env, output)
    except OSError as exc:
        return _not_started(args, cwd, exc, start)
    return _run_on(reaper, args, cwd, timeout_s, start)


#: The most reapers :class:`Reapers` keeps waiting at once (each an idle interpreter).
REAPERS_AHEAD = 8


class Reapers:
    """The reapers of the next few runs, started ahead so that their start-up is off the path.

    Each run still gets a reaper of its own, and its command starts only when
    :meth:`run` is called: a waiting reaper runs nothing until flakecore
    sends it the job, over a socket nobody else can write to.  Every reaper
    not used is ended on :meth:`close` (also on an error or a signal), and a
    reaper whose flakecore dies exits without running anything.  All runs
    share ``env`` and ``output`` (see :func:`run_command`).  The first ones
    are started by a thread of their own, so that the caller goes on (a
    replay adds its worktree meanwhile); one caller thread at a time uses
    the rest, and another may :meth:`stop` it.
    """

    def __init__(
        self, runs: int, *, env: Mapping[str, str] | None = None, output: int = subprocess.DEVNULL
    ) -> None:
        self._env, self._output = env, output
        self._unstarted = runs
        self._waiting: list[_Reaper | OSError] = []
        self._started, self._closed = threading.Event(), threading.Event()
        self._stop = threading.Event()
        self._running: _Reaper | None = None
        self._starting = threading.Thread(target=self._start_ahead, name="reapers", daemon=True)
        self._starting.start()

    def _start_ahead(self) -> None:
        try:
            self._top_up()
        finally:
            self._started.set()
        # A reaper's PR_SET_PDEATHSIG fires when the *thread* that started it ends: this one
        # lasts until every reaper it started is done with.
        self._closed.wait()

    def _top_up(self) -> None:
        while self._unstarted > 0 and len(self._waiting) < REAPERS_AHEAD:
            self._unstarted -= 1
            try:
                self._waiting.append(_start_reaper(self._env, self._output))
            except OSError as exc:
                self._waiting.append(exc)

    def run(self, argv: Sequence[str], *, cwd: Path, timeout_s: float | None) -> CommandRun:
        """:func:`run_command` on the next waiting reaper (a new one past the runs announced)."""
        args, start = tuple(argv), time.monotonic()
        self._started.wait()
        if not self._waiting:
            self._unstarted += 1
            self._top_up()
        reaper = self._waiting.pop(0)
        self._top_up()  # the next one starts while this run goes on
        if isinstance(reaper, OSError):
            return _not_started(args, cwd, reaper, start)
        self._running = reaper  # (before the look at the flags: see stop)
        try:
            if _stopped.is_set() or self._stop.is_set():
                reaper.abandon()
                return _not_started(args, cwd, OSError("the run was stopped"), start)
            return _run_on(reaper, args, cwd, timeout_s, start)
        finally:
            self._running = None

    def stop(self) -> None:
        """End the run going on on these reapers (as a timeout would) and start none from now.

        Called from another thread than the one that runs (the replay's,
        while its isolation probe runs ahead in a thread): a run it cuts short
        ends as any stopped run, every process of it gone before it returns.
        """
        self._stop.set()
        running = self._running
        if running is not None:
            with contextlib.suppress(ProcessLookupError):
                running.proc.send_signal(signal.SIGTERM)  # (not once it is reaped)

    def close(self) -> None:
        """End every reaper still waiting; none of them ran anything."""
        with signals_deferred():
            self._started.wait()
            waiting, self._waiting, self._unstarted = self._waiting, [], 0
            for reaper in waiting:
                if isinstance(reaper, _Reaper):
                    reaper.abandon()
            self._closed.set()
            self._starting.join()

    def __enter__(self) -> Reapers:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def remove_file(path: Path) -> None:
    """Delete ``path`` if it is there (a stale record must never be inherited)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
