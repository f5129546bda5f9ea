"""What a patch can put at a name flakecore reads, each made for real (imported by the tests).

Every kind is planted at ``directory/name``: a real FIFO, a real socket,
real symlinks to ``/dev/zero``, ``/dev/stdin`` and ``/proc/self/fd/1``, the
kernel's own files named directly.  ``missing`` kinds have no file to read
(exit 66); the others are refused (exit 65).  The honest kinds are the
twins that must still be read: a regular file, and symlinks that stay in
their directory.  A test asserts what the reader returns for an honest kind
byte for byte, so a reader that refuses everything fails.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import attrs

__all__ = ["HONEST", "HOSTILE", "Kind", "snapshot"]


@attrs.frozen
class Kind:
    """One thing at a name; ``plant(directory, name, content)`` returns the path to pass."""

    name: str
    plant: Callable[[Path, str, bytes], str] = attrs.field(repr=False)
    missing: bool = False
    """No file to read there (66), rather than a file refused (65)."""
    in_directory: bool = True
    """Planted at ``directory/name``; False: a path of the system's own, named directly."""


def _regular(d: Path, name: str, content: bytes) -> str:
    (d / name).write_bytes(content)
    return str(d / name)


def _link(target: str) -> Callable[[Path, str, bytes], str]:
    def plant(d: Path, name: str, content: bytes) -> str:
        (d / name).symlink_to(target)
        return str(d / name)

    return plant


def _inside(d: Path, name: str, content: bytes) -> str:
    (d / f".real-{name}").write_bytes(content)
    (d / name).symlink_to(f".real-{name}")
    return str(d / name)


def _below(d: Path, name: str, content: bytes) -> str:
    (d / ".sub").mkdir(exist_ok=True)  # a dot-directory: record directories skip those
    (d / ".sub" / name).write_bytes(content)
    (d / name).symlink_to(f".sub/{name}")
    return str(d / name)


def _outside(d: Path, name: str, content: bytes) -> str:
    # The target is an honest file: only the symlink rule can refuse it.
    outside = d.parent / f"outside-{d.name}-{name}"
    outside.write_bytes(content)
    (d / name).symlink_to(os.path.relpath(outside, d))
    return str(d / name)


def _fifo(d: Path, name: str, content: bytes) -> str:
    os.mkfifo(d / name)
    return str(d / name)


def _socket(d: Path, name: str, content: bytes) -> str:
    here = os.getcwd()
    os.chdir(d)  # a relative bind: socket paths are limited to about 100 bytes
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(name)
    finally:
        os.chdir(here)
    return str(d / name)


def _directory(d: Path, name: str, content: bytes) -> str:
    (d / name).mkdir()
    return str(d / name)


def _loop(d: Path, name: str, content: bytes) -> str:
    (d / name).symlink_to(name)
    return str(d / name)


def _named(path: str) -> Callable[[Path, str, bytes], str]:
    return lambda d, name, content: path


HONEST = (
    Kind("regular file", _regular),
    Kind("symlink in its directory", _inside),
    Kind("symlink into a subdirectory", _below),
)

HOSTILE = (
    Kind("FIFO", _fifo),
    Kind("socket", _socket),
    Kind("directory", _directory, missing=True),
    Kind("dangling symlink", _link("nowhere.json"), missing=True),
    Kind("symlink loop", _loop),
    Kind("symlink out of its directory", _outside),
    Kind("symlink to /dev/zero", _link("/dev/zero")),
    Kind("symlink to /dev/stdin", _link("/dev/stdin")),
    Kind("symlink to /proc/self/fd/1", _link("/proc/self/fd/1")),
    Kind("/dev/zero", _named("/dev/zero"), in_directory=False),
    Kind("/dev/stdin", _named("/dev/stdin"), in_directory=False),
    Kind("/proc/self/fd/1", _named("/proc/self/fd/1"), in_directory=False),
    Kind("/proc/self/environ", _named("/proc/self/environ"), in_directory=False),
)


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root`` (``.git`` aside): a regular file's bytes, else its kind.

    Never opens anything but regular files, so it is safe over the hostile kinds.
    """
    seen: dict[str, object] = {}
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in (*dirs, *files):
            path = Path(here, name)
            if path.is_symlink():
                seen[str(path)] = ("symlink", os.readlink(path))
            elif path.is_file():
                seen[str(path)] = path.read_bytes()
            else:
                seen[str(path)] = ("other", path.lstat().st_mode)
    return seen
