"""The attempt reaper: run one command, then end every process it left behind.

flakecore never starts the command under test itself.  It starts this file
as its own tiny process (``python -I -S _reaper.py ...``: isolated, no
``site``, so nothing from the command's environment or the checkout runs in
it), and the reaper:

1. makes itself the *child subreaper* of everything below it (Linux
   ``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant that double-forks or
   calls ``setsid()`` is re-parented to the reaper, not to init, so it
   cannot slip away;
2. asks to be sent SIGTERM if flakecore dies (``PR_SET_PDEATHSIG``), so even
   a killed flakecore leaves no attempt running;
3. runs the command (in a new session, standard input as given), waits for
   it, or kills it at the timeout or on SIGTERM;
4. kills every descendant that is still there (found through ``/proc``),
   reaps them, and repeats until none is left;
5. only then writes one JSON status line to the file descriptor flakecore
   passed, and exits.

So by the time flakecore reads an attempt's result, no process of that
attempt exists.  One reaper per attempt means parallel attempts never kill
each other's processes.  This module imports only the standard library: it
runs as a script, and flakecore also imports its sweep for its own second
line of defence (:func:`flakecore.gate.runtime.adopt_orphans`).

Limits: without ``prctl`` and ``/proc`` (not Linux) only the command's
process group is killed, and the status says ``"contained": "process-group"``;
a process that is not a descendant (one a daemon, ``at``, ``systemd-run`` or
``docker`` started on the attempt's behalf) is out of reach; a descendant
that gained privileges (``sudo``) cannot be killed, and is reported as a
survivor, which fails the attempt.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection
from types import FrameType

__all__ = ["become_subreaper", "descendants", "end_descendants", "main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: How long to keep killing before reporting what is left as survivors.
SWEEP_LIMIT_S = 10.0


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants; False where that cannot be done."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1) and os.path.isdir("/proc/self")


def _parents() -> dict[int, tuple[int, int]]:
    """``{pid: (parent pid, session id)}`` for every process ``/proc`` shows."""
    parents: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 3:
            parents[int(name)] = (int(fields[1]), int(fields[3]))
    return parents


def descendants(
    root: int, *, skip: Collection[int] = (), spare_session: int | None = None
) -> list[int]:
    """Every process below ``root`` (children first), not entering the subtrees of ``skip``.

    With ``spare_session``, processes of that session (and what is below them)
    are left out too: an attempt runs in sessions of its own (its reaper's and
    the command's), so a process still in ``root``'s own session was started
    by ``root`` itself -- another thread's git, say -- and is nobody's orphan.
    """
    children: dict[int, list[int]] = {}
    for pid, (parent, session) in _parents().items():
        if session != spare_session:
            children.setdefault(parent, []).append(pid)
    found: list[int] = []
    queue = [pid for pid in children.get(root, []) if pid not in skip]
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue += [c for c in children.get(pid, []) if c not in skip]
    return found


def _reap(pids: Collection[int], *, any_child: bool) -> None:
    """Collect exit statuses: of any child (the reaper owns all of them) or of ``pids`` only."""
    if any_child:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


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
                os.kill(pid, signal.SIGKILL)
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


def _run(argv: list[str], timeout: float | None) -> dict[str, object]:
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, start_new_session=True)
    except OSError as exc:
        return {"start_error": f"{argv[0]}: {exc.strerror or exc}", "duration_s": 0.0}
    status: dict[str, object] = {}
    try:
        status["returncode"] = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        status["timed_out"] = True
    except _Stop:
        status["stopped"] = True
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    status["duration_s"] = time.monotonic() - start
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        with contextlib.suppress(ChildProcessError):
            proc.wait()
    return status


def main(args: list[str]) -> int:
    """``_reaper.py STATUS_FD PARENT_PID TIMEOUT -- COMMAND...`` (TIMEOUT empty: none)."""
    status_fd, parent, timeout = int(args[0]), int(args[1]), args[2]
    assert args[3] == "--" and len(args) > 4
    contained = become_subreaper()
    signal.signal(signal.SIGTERM, _stop)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # flakecore died before the request took effect
        return 1
    try:
        status = _run(args[4:], float(timeout) if timeout else None)
    except _Stop:
        status = {"stopped": True, "duration_s": 0.0}
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    if contained:
        status["survivors"] = end_descendants(os.getpid(), any_child=True)
    status["contained"] = "subreaper" if contained else "process-group"
    with os.fdopen(status_fd, "w") as out:
        out.write(json.dumps(status) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
