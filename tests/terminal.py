"""Run a command with its stderr on a pseudo-terminal: progress that only a terminal sees."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from typing import Any


def run_on_a_terminal(
    argv: list[str], **kwargs: Any
) -> tuple[subprocess.CompletedProcess[bytes], str]:
    """``subprocess.run(argv)`` with stdout piped and stderr on a pty; returns what the pty got."""
    master, slave = pty.openpty()
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other end closed
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        run = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=slave, check=False, timeout=120, **kwargs
        )
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return run, b"".join(shown).decode()
