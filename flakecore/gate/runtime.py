"""Running one command under test, turning signals into exceptions, atomic writes.

Both gate procedures (the base replay and the seed-budget run) start the
command under test the same way, and both must leave nothing behind when they
are stopped: SIGTERM's default action kills Python without running a single
``finally`` block, so a CI cancel would strand a git worktree.  Hence
:func:`signals_raise` (a signal becomes an exception, cleanup runs) and
:func:`signals_deferred` (a second signal cannot cut the cleanup short).

Each command runs in a fresh process in its own session and process group,
with standard input closed, so a per-attempt timeout (or our own shutdown)
can kill the whole group -- a test runner's worker processes included --
instead of orphaning it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import BinaryIO

import attrs

from flakecore.signing import SIGNING_KEY_ENV

__all__ = [
    "CommandRun",
    "Terminated",
    "atomic_file",
    "atomic_write",
    "child_env",
    "remove_file",
    "run_command",
    "signals_deferred",
    "signals_raise",
    "substitute",
]

#: Signals that stop a run; each becomes an exception while :func:`signals_raise` is active.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Variables that point git at another repository; a replay must see only its worktree.
_GIT_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
#: Variables no child process gets: the git redirects and the signing key.
_WITHHELD = frozenset({*_GIT_REDIRECTS, SIGNING_KEY_ENV})


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


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without variables that would point git elsewhere, and without the key.

    The signing key (:data:`~flakecore.signing.SIGNING_KEY_ENV`) never reaches
    a command under test or git; docs/trust.md says what this does not stop
    (a process of the same user reads ``/proc/<pid>/environ``).
    """
    env = {k: v for k, v in os.environ.items() if k not in _WITHHELD}
    env.update(extra or {})
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float | None,
    env: Mapping[str, str] | None = None,
    output: int = subprocess.DEVNULL,
) -> CommandRun:
    """Run ``argv`` once in a fresh process group; kill the whole group at the timeout.

    ``output`` receives the command's stdout and stderr (a file descriptor;
    the CLI passes its own stderr so its stdout stays machine-readable).  If
    anything interrupts the wait (a signal turned into an exception), the
    process group is killed before the exception goes on.
    """
    args = tuple(argv)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandRun(
            argv=args,
            returncode=None,
            timed_out=False,
            duration_s=time.monotonic() - start,
            start_error=f"{args[0]}: {exc.strerror or exc}",
        )
    try:
        returncode = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return CommandRun(
            argv=args, returncode=None, timed_out=True, duration_s=time.monotonic() - start
        )
    except BaseException:
        _kill_group(proc)
        raise
    # The leader exited; workers it left behind in its group must not outlive the attempt.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return CommandRun(
        argv=args, returncode=returncode, timed_out=False, duration_s=time.monotonic() - start
    )


def remove_file(path: Path) -> None:
    """Delete ``path`` if it is there (a stale record must never be inherited)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A file readers see whole or not at all: written beside ``path``, renamed on success.

    On any exception (or Ctrl-C) the temporary file is removed and ``path``
    keeps its old content.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove_file(tmp)
        raise


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_file`)."""
    with atomic_file(path) as fh:
        fh.write(data)
