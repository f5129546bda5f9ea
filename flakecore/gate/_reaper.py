"""The attempt reaper: run one command, then end every process it left behind.

flakecore never starts the command under test itself.  It starts this module
as its own tiny process (``python -I -S -B -c "...from _reaper import main..."``:
isolated, no ``site``, this directory appended after the standard library,
so nothing from the command's environment or the checkout runs in it, and
the import system uses the compiled module), and the reaper:

1. makes itself the *child subreaper* of everything below it (Linux
   ``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant that double-forks or
   calls ``setsid()`` is re-parented to the reaper, not to init, so it
   cannot slip away;
2. asks to be sent SIGTERM if flakecore dies (``PR_SET_PDEATHSIG``), so even
   a killed flakecore leaves no attempt running;
3. waits for its job on a socket only flakecore holds the other end of
   (the command, its directory and its timeout): flakecore may start a
   reaper ahead of its attempt, and sends the job only once the previous
   attempt has ended; an end of the socket without a whole job (flakecore
   abandoned it, or died) means exit without running anything;
4. runs the command (in a new session, standard input as given), waits for
   it, or kills it at the timeout or on SIGTERM;
5. kills every descendant that is still there (found through ``/proc``),
   reaps them, and repeats until none is left;
6. only then writes one JSON status line to the file descriptor flakecore
   passed, and exits.

So by the time flakecore reads an attempt's result, no process of that
attempt exists.  One reaper per attempt means parallel attempts never kill
each other's processes.  This module imports only the standard library, and
little of it (it starts once per attempt: ``posix`` rather than ``os``,
whose import of its ABCs was a sixth of the process; the command is started with
``posix_spawn``, its timeout is an interval timer, its status line is
written without the ``json`` module, and the sweep reads each process's
``children`` file instead of every ``/proc/PID/stat``): it runs as a script,
and flakecore also imports its sweep for its own second line of defence
(:func:`flakecore.gate.runtime.adopt_orphans`).

Limits: without ``prctl`` and ``/proc`` (not Linux) only the command's
process group is killed, and the status says ``"contained": "process-group"``;
a process that is not a descendant (one a daemon, ``at``, ``systemd-run`` or
``docker`` started on the attempt's behalf) is out of reach; a descendant
that gained privileges (``sudo``) cannot be killed, and is reported as a
survivor, which fails the attempt.
"""

from __future__ import annotations

import posix  # what ``os`` wraps: importing ``os`` (and its ABCs) was a sixth of this process
import sys
import time
from _json import encode_basestring_ascii  # the C encoder json uses: no json, no re to import
from _stat import S_ISDIR

TYPE_CHECKING = False  # typing is an import this process does not pay for
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Collection, Mapping
    from types import FrameType
    from typing import Any
else:  # the C module under ``signal``: the same functions, without building its enums
    import _signal as signal

__all__ = [
    "become_subreaper",
    "descendants",
    "end_descendants",
    "job",
    "job_message",
    "main",
    "status_line",
]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: How long to keep killing before reporting what is left as survivors.
SWEEP_LIMIT_S = 10.0
#: Signals Python ignores at start-up and a command must get back at their default.
_DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)
#: A timeout this long (about 31 years) is no timeout: the interval timer holds no more.
_FOREVER_S = 1e9


def _quietly(call: Callable[[int, int], object], pid: int, value: int) -> None:
    """``call(pid, value)``, an ``OSError`` (the process is gone or not ours) ignored."""
    try:  # noqa: SIM105 - contextlib is one more import per attempt
        call(pid, value)
    except OSError:
        pass


def _fsdecode(name: bytes) -> str:
    """``os.fsdecode(name)``."""
    return name.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def _fsencode(name: str) -> bytes:
    """``os.fsencode(name)``."""
    return name.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def _isdir(path: str) -> bool:
    """``os.path.isdir(path)``."""
    try:
        return S_ISDIR(posix.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _libc_prctl() -> Callable[..., int]:
    """``ctypes.CDLL(None, use_errno=True).prctl``, built from ``_ctypes`` alone.

    ``import ctypes`` is about half of this process's start-up, paid per
    attempt; what it does for this one call is four lines of
    ``ctypes/__init__.py`` (a C ``int`` result, a cdecl function that keeps
    ``errno``, ``dlopen(NULL, RTLD_LOCAL)``).  An interpreter whose
    ``_ctypes`` lacks them gets ``ctypes`` itself.
    """
    try:
        import _ctypes  # noqa: PLC0415 - here: flakecore imports this module for its sweep alone

        c: Any = _ctypes  # typeshed describes these through ctypes' classes, not as used here

        class CInt(c._SimpleCData):  # type: ignore[misc] # ctypes.c_int
            _type_ = "i"

        class Function(c.CFuncPtr):  # type: ignore[misc] # CDLL._FuncPtr, use_errno=True
            _flags_ = c.FUNCFLAG_CDECL | c.FUNCFLAG_USE_ERRNO
            _restype_ = CInt

        class Libc:  # what a function pointer reads of its CDLL: the handle
            _handle = c.dlopen(None, 0)  # ctypes.DEFAULT_MODE is RTLD_LOCAL, 0

        prctl: Callable[..., int] = Function(("prctl", Libc))
    except (ImportError, AttributeError):
        import ctypes  # noqa: PLC0415

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return int(_libc_prctl()(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants; False where that cannot be done."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1) and _isdir("/proc/self")


def _parents() -> dict[int, tuple[int, int]]:
    """``{pid: (parent pid, session id)}`` for every process ``/proc`` shows."""
    parents: dict[int, tuple[int, int]] = {}
    for name in posix.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        fields = _fields(stat)  # "state ppid pgrp session ..."
        if len(fields) > 3:
            parents[int(name)] = (int(fields[1]), int(fields[3]))
    return parents


def _fields(stat: bytes) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after ``comm`` (which may hold spaces and parentheses)."""
    return stat[stat.rfind(b")") + 2 :].split()


def _session(pid: int) -> int | None:
    """The session of ``pid`` (None: it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = _fields(fh.read())
    except OSError:
        return None
    return int(fields[3]) if len(fields) > 3 else None


def _children(pid: int) -> list[int] | None:
    """The children of ``pid`` from its threads' ``children`` files (None: no such files).

    The kernel lists a child under the thread that forked it (and an orphan
    under the thread it was re-parented to), so every thread is read.  A
    process that is gone has no children.
    """
    try:
        tasks = posix.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as fh:
                found += map(int, fh.read().split())
        except FileNotFoundError:
            if not _isdir(f"/proc/{pid}/task/{task}"):
                continue  # the thread ended meanwhile
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except OSError:
            continue
    return found


def _children_by_walk(spare_session: int | None) -> Mapping[int, list[int]]:
    """Every process's children, from ``/proc/*/stat`` (a kernel without ``children`` files)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, session) in _parents().items():
        if session != spare_session:
            children.setdefault(parent, []).append(pid)
    return children


def descendants(
    root: int, *, skip: Collection[int] = (), spare_session: int | None = None
) -> list[int]:
    """Every process below ``root`` (children first), not entering the subtrees of ``skip``.

    With ``spare_session``, processes of that session (and what is below them)
    are left out too: an attempt runs in sessions of its own (its reaper's and
    the command's), so a process still in ``root``'s own session was started
    by ``root`` itself -- another thread's git, say -- and is nobody's orphan.

    Read from each process's ``children`` files: only the tree below
    ``root`` is read, not every process of the machine.  Where the kernel
    has no such files, every ``/proc/PID/stat`` is read instead (the same
    answer: both name a process's parent as the kernel's ``real_parent``).
    """
    walked: Mapping[int, list[int]] | None = None
    found: list[int] = []
    queue = [root]
    while queue:
        pid = queue.pop(0)
        if walked is None:
            below = _children(pid)
            if below is None:
                walked = _children_by_walk(spare_session)
            elif spare_session is not None:  # (skip first: it reads no file)
                below = [c for c in below if c not in skip and _session(c) != spare_session]
        if walked is not None:
            below = walked.get(pid, [])
        assert below is not None
        below = [c for c in below if c not in skip]
        found += below
        queue += below
    return found


def _reap(pids: Collection[int], *, any_child: bool) -> None:
    """Collect exit statuses: of any child (the reaper owns all of them) or of ``pids`` only."""
    if any_child:
        while True:
            try:
                pid, _ = posix.waitpid(-1, posix.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
    for pid in pids:
        _quietly(posix.waitpid, pid, posix.WNOHANG)


def end_descendants(
    root: int,
    *,
    skip: Collection[int] = (),
    any_child: bool,
    limit_s: float = SWEEP_LIMIT_S,
    spare_session: int | None = None,
) -> list[int]:
    """SIGKILL every descendant of ``root`` and reap them until none is left.

    Returns the ones still there after ``limit_s`` seconds, or at once when
    every one left refuses the signal (a process with more privileges):
    survivors, which the caller must treat as a failed containment.
    ``root`` must be this process (only a parent can reap).
    """
    deadline = time.monotonic() + limit_s
    while True:
        found = descendants(root, skip=skip, spare_session=spare_session)
        refused = set()
        for pid in found:
            try:
                posix.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:
                refused.add(pid)
        _reap(found, any_child=any_child)
        if not found:
            return []
        if set(found) <= refused or time.monotonic() > deadline:
            return sorted(descendants(root, skip=skip, spare_session=spare_session))
        time.sleep(0.005)


class _Stop(Exception):
    """SIGTERM: flakecore (or its death) asks for the attempt to end now."""


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise _Stop


def status_line(status: Mapping[str, object]) -> str:
    """``json.dumps(status) + "\\n"`` for what a status holds (ints, floats, bools, text, lists)."""

    def value(item: object) -> str:
        if item is True or item is False:
            return "true" if item else "false"
        if isinstance(item, str):
            return str(encode_basestring_ascii(item))
        if isinstance(item, list):
            return "[" + ", ".join(map(value, item)) + "]"
        return repr(item)  # int, float: the text json writes

    pairs = (f"{encode_basestring_ascii(k)}: {value(v)}" for k, v in status.items())
    return "{" + ", ".join(pairs) + "}\n"


def _run(argv: list[str], timeout: float | None) -> dict[str, object]:
    start = time.monotonic()
    try:
        # A new session, the signals Python ignores back at their default, nothing else
        # inherited but stdin/stdout/stderr (the status pipe is close-on-exec).
        pid = posix.posix_spawnp(
            argv[0], argv, posix.environ, setsid=True, setsigdef=_DEFAULT_SIGNALS
        )
    except OSError as exc:
        return {"start_error": f"{argv[0]}: {exc.strerror or exc}", "duration_s": 0.0}
    expired = []

    def kill_at_timeout(_signum: int, _frame: FrameType | None) -> None:
        expired.append(True)
        _quietly(posix.killpg, pid, signal.SIGKILL)

    if timeout is not None and timeout < _FOREVER_S:
        signal.signal(signal.SIGALRM, kill_at_timeout)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    status: dict[str, object] = {}
    reaped = False
    try:
        _, code = posix.waitpid(pid, 0)  # the timer's kill ends this wait too
        reaped = True
        status["returncode"] = posix.waitstatus_to_exitcode(code)
    except _Stop:
        status["stopped"] = True
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if expired:
        status = {"timed_out": True}
    status["duration_s"] = time.monotonic() - start
    _quietly(posix.killpg, pid, signal.SIGKILL)
    if not reaped:  # (ChildProcessError: it was reaped just before the stop)
        _quietly(posix.waitpid, pid, 0)
    return status


def job(data: bytes) -> tuple[str, float | None, list[str]] | None:
    """The job flakecore sent: ``LENGTH\\n`` then ``CWD\\0TIMEOUT\\0ARG\\0ARG...``.

    None unless the message is whole (its length as announced, a command in
    it): a job cut short, by flakecore's death or otherwise, never runs.
    """
    head, newline, body = data.partition(b"\n")
    if not newline or not head.isdigit() or int(head) != len(body):
        return None
    cwd, timeout, *argv = map(_fsdecode, body.split(b"\0"))
    if not argv or not argv[0]:
        return None
    return cwd, float(timeout) if timeout else None, argv


def job_message(cwd: str, timeout: float | None, argv: list[str]) -> bytes:
    """What :func:`job` reads back as ``(cwd, timeout, argv)``."""
    fields = [cwd, "" if timeout is None else repr(float(timeout)), *argv]
    body = b"\0".join(map(_fsencode, fields))
    return b"%d\n" % len(body) + body


def _receive(job_fd: int) -> bytes:
    """Everything flakecore sends on the job socket, up to its end."""
    data = b""
    while chunk := posix.read(job_fd, 65536):
        data += chunk
    posix.close(job_fd)
    return data


def main(args: list[str]) -> int:
    """``STATUS_FD JOB_FD PARENT_PID``; the job (:func:`job`) arrives on ``JOB_FD``."""
    status_fd, job_fd, parent = int(args[0]), int(args[1]), int(args[2])
    posix.set_inheritable(status_fd, False)  # the command must not hold the status pipe
    posix.set_inheritable(job_fd, False)  # nor the job socket
    contained = become_subreaper()
    signal.signal(signal.SIGTERM, _stop)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if posix.getppid() != parent:  # flakecore died before the request took effect
        return 1
    try:
        given = job(_receive(job_fd))
    except _Stop:  # told to stop (or flakecore died) before any job: nothing ran
        return 1
    if given is None:  # abandoned: the socket ended without a whole job
        return 1
    cwd, timeout, argv = given
    status: dict[str, object]
    try:
        try:
            posix.chdir(cwd)
        except OSError as exc:  # no such directory: the command never starts
            error = f"cannot start the attempt in {cwd}: {exc.strerror or exc}"
            status = {"start_error": error, "duration_s": 0.0}
        else:
            status = _run(argv, timeout)
    except _Stop:
        status = {"stopped": True, "duration_s": 0.0}
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if contained:
        status["survivors"] = end_descendants(posix.getpid(), any_child=True)
    status["contained"] = "subreaper" if contained else "process-group"
    with open(status_fd, "w") as out:
        out.write(status_line(status))
    return 0
