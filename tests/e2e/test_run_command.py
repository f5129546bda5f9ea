"""``run_command`` on real processes: how an attempt ends, and what the command starts with.

The reaper starts the command with ``posix_spawn`` and times it with an
interval timer; these pin what ``subprocess`` gave it before: the exit
status (negative for a signal), a start error, a timeout that ends the
whole attempt, the signals Python ignores back at their default, and no
file descriptor but the three standard ones.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from flakecore.gate.runtime import run_command

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("argv", "returncode", "described"),
    [
        (["true"], 0, "exit 0"),
        (["sh", "-c", "exit 3"], 3, "exit 3"),
        (["sh", "-c", "kill -TERM $$"], -15, "killed by signal 15"),
    ],
)
def test_exit_status(argv: list[str], returncode: int, described: str, tmp_path: Path) -> None:
    done = run_command(argv, cwd=tmp_path, timeout_s=30)
    assert (done.returncode, done.timed_out, done.describe()) == (returncode, False, described)
    assert done.contained in ("subreaper", "process-group") and not done.survivors


def test_a_command_that_cannot_start(tmp_path: Path) -> None:
    done = run_command(["no-such-command-here"], cwd=tmp_path, timeout_s=None)
    assert done.returncode is None and not done.timed_out
    assert done.start_error == "no-such-command-here: No such file or directory"


def test_a_timeout_ends_the_command_and_what_it_left(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    ready = tmp_path / "ready"  # the grandchild is out of the session: the test can prove something
    script = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    open({str(ready)!r}, 'w').close()\n"
        "    time.sleep(3)\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    os._exit(0)\n"
        "time.sleep(30)\n"
    )
    # A loaded machine can start Python later than the timeout: then no grandchild was
    # left to end, and the attempt is run again with more time.
    for timeout in (0.5, 2.0, 8.0):
        done = run_command([sys.executable, "-c", script], cwd=tmp_path, timeout_s=timeout)
        if ready.exists():
            break
    else:
        pytest.fail("the command never forked its grandchild before its timeout")
    assert done.timed_out and done.returncode is None and not done.survivors
    assert done.duration_s >= timeout
    time.sleep(3.5)
    assert not marker.exists()  # the setsid grandchild ended with its attempt


def test_an_attempt_that_ends_before_its_timeout_is_no_timeout(tmp_path: Path) -> None:
    done = run_command(["sleep", "0.2"], cwd=tmp_path, timeout_s=30)
    assert (done.returncode, done.timed_out) == (0, False)


def test_the_command_starts_with_default_signals_and_three_descriptors(tmp_path: Path) -> None:
    out = tmp_path / "seen"
    probe = f"grep SigIgn /proc/self/status > {out}; ls /proc/self/fd >> {out}"
    done = run_command(["sh", "-c", probe], cwd=tmp_path, timeout_s=30)
    assert done.returncode == 0
    ignored, *fds = out.read_text().split("\n")
    mask = int(ignored.split()[1], 16)
    for signum in (13, 25):  # SIGPIPE, SIGXFSZ: Python ignores both, a command must not
        assert not mask & (1 << (signum - 1)), ignored
    assert sorted(int(fd) for fd in fds if fd) == [0, 1, 2, 3]  # 3: the directory ls reads
