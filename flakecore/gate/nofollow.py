"""Read a file of the checkout without following any link (docs/trust.md): "the same path".

The checkout is walked one directory at a time with ``O_NOFOLLOW``, and a
directory that is a submodule's checkout ends the walk.  Kept apart from
:mod:`flakecore.gate.basetrust`, which reads records through it, so that a
verb that reads only the scored tree's ``[tool.flakecore]`` (``guard`` with
a base) loads no signing or attestation layer; a reason is looked up only
for a refusal.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from flakecore import codes
from flakecore.errors import InputError, MissingInputError, Untrusted, UnusableInputError
from flakecore.files import read_bytes_at
from flakecore.jsonio import MAX_DOCUMENT_BYTES

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["WALKED", "normal_parts", "read_in_checkout"]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

#: The directories of the records :func:`flakecore.gate.basetrust.base_files` reads ahead,
#: by ``(top, parts)``: None until the first record there is read, then the fd its walk
#: reached (a walk that followed no link), kept for the others.
WALKED: dict[tuple[Path, tuple[str, ...]], int | None] = {}


def _parts(path: str) -> list[str]:
    """``path`` as repository-relative components; :class:`Untrusted` when it leaves the tree."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise Untrusted(codes.TrustReason.OUTSIDE_REPOSITORY, "not a repository path")
    return normal_parts(posixpath.normpath(path))


def normal_parts(norm: str) -> list[str]:
    """:func:`_parts` of a path already normalized (``posixpath.normpath``)."""
    parts = norm.split("/")
    if norm.startswith("/") or norm == "." or ".." in parts or ".git" in parts:
        raise Untrusted(
            codes.TrustReason.OUTSIDE_REPOSITORY,
            "not a path inside the repository (absolute, '..' or '.git')",
        )
    return parts


def _refusal(dir_fd: int, name: str, where: str, exc: OSError) -> Exception:
    """Why ``name`` could not be opened without following a link: a refusal or an input error."""
    if isinstance(exc, FileNotFoundError):
        return MissingInputError("no such file", source=where)
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            return Untrusted(
                codes.TrustReason.SYMLINK, f"{where} is a symbolic link: not the same path"
            )
        return Untrusted(codes.TrustReason.NOT_A_FILE, f"{where} is not a directory")
    return MissingInputError(f"cannot read: {exc.strerror}", source=where)


def _read_file(dir_fd: int, name: str, where: str, limit: int) -> bytes:
    try:  # a regular file (the reader's own lstat says so): read it, no second lstat here
        return read_bytes_at(dir_fd, name, limit, source=where)
    except InputError:
        pass  # anything else is told apart below, as it always was
    try:
        mode: int | None = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        mode = None  # the reader says why
    if mode is not None and stat.S_ISLNK(mode):
        raise Untrusted(codes.TrustReason.SYMLINK, f"{where} is a symbolic link: not the same path")
    if mode is not None and not stat.S_ISREG(mode):
        raise Untrusted(codes.TrustReason.NOT_A_FILE, f"{where} is not a regular file")
    try:
        return read_bytes_at(dir_fd, name, limit, source=where)
    except UnusableInputError as exc:  # swapped while being opened
        raise Untrusted(codes.TrustReason.NOT_A_FILE, f"{where}: {exc.message}") from None


def read_in_checkout(top: Path, path: str, *, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of ``path`` under the checkout ``top``, reached without following any link.

    Raises :class:`~flakecore.errors.Untrusted` for a path through a
    symbolic link (``SYMLINK``), into a submodule or onto anything but a
    regular file (``NOT_A_FILE``), or out of the tree
    (``OUTSIDE_REPOSITORY``); :class:`InputError` when the file is missing,
    unreadable or over ``limit``.
    """
    parts = _parts(path)
    key = (top, tuple(parts[:-1]))
    held = WALKED.get(key)
    if held is not None:  # this directory was walked to already, inside basetrust.base_files
        return _read_file(held, parts[-1], "/".join(parts), limit)
    fd = _walk(top, parts[:-1])
    try:
        return _read_file(fd, parts[-1], "/".join(parts), limit)
    finally:
        if key in WALKED:  # a directory base_files reads ahead: its fd stays open for the rest
            WALKED[key] = fd
        else:
            os.close(fd)


def _walk(top: Path, directories: Sequence[str]) -> int:
    """An fd on ``top``'s directory ``directories``, reached without following any link."""
    fd = os.open(top, _DIR_FLAGS)
    try:
        for i, part in enumerate(directories):
            where = "/".join(directories[: i + 1])
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refusal(fd, part, where, exc) from None
            os.close(fd)
            fd = inner
            if _has_git(fd):
                raise Untrusted(
                    codes.TrustReason.NOT_A_FILE,
                    f"{where} is a submodule (gitlink): not this repository",
                )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _has_git(dir_fd: int) -> bool:
    try:
        os.lstat(".git", dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True
