"""Base-only trust (docs/trust.md): a record counts when base holds the same bytes there.

The default, with no keys at all: a lease, ledger row, freeze record,
observation, run record or packet found in the scored checkout is evidence
only when ``git cat-file`` of the same path in the base commit gives the
same bytes -- it landed through review, in its own commit (a lease lands
in its own reviewed commit, docs/policies.md).  A record that base...HEAD adds or
changes is refused *with that reason*; with keys configured it may still
count through a signature (:func:`read_trusted_record`).

"The same path" is meant strictly.  The checkout is walked one directory
at a time without following a symbolic link, and a directory that is a
submodule's checkout ends the walk; base's entry must be a regular file
too, not a link or a gitlink.  Otherwise a committed
``.flakecore/leases -> elsewhere`` link would make base's reviewed bytes
vouch for a file the patch chose.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.attestation import Untrusted, is_envelope, open_statement, parse_envelope
from flakecore.codes import TrustReason
from flakecore.digest import is_commit_id
from flakecore.errors import InputError, MissingInputError, UnusableInputError, UsageError
from flakecore.files import read_bytes_at
from flakecore.gate.worktree import read_object, repo_toplevel, tree_entry
from flakecore.jsonio import MAX_DOCUMENT_BYTES, loads_strict
from flakecore.signing import RecordProblems, verify_signed
from flakecore.trust import TrustedKey, TrustVerdict, refused

__all__ = ["read_in_checkout", "read_trusted_record", "trusted_by_base"]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(path: str) -> list[str]:
    """``path`` as repository-relative components; :class:`Untrusted` when it leaves the tree."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise Untrusted(TrustReason.OUTSIDE_REPOSITORY, "not a repository path")
    norm = posixpath.normpath(path)
    parts = norm.split("/")
    if norm.startswith("/") or norm == "." or ".." in parts or ".git" in parts:
        raise Untrusted(
            TrustReason.OUTSIDE_REPOSITORY,
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
            return Untrusted(TrustReason.SYMLINK, f"{where} is a symbolic link: not the same path")
        return Untrusted(TrustReason.NOT_A_FILE, f"{where} is not a directory")
    return MissingInputError(f"cannot read: {exc.strerror}", source=where)


def _read_file(dir_fd: int, name: str, where: str, limit: int) -> bytes:
    try:
        mode: int | None = os.lstat(name, dir_fd=dir_fd).st_mode
    except OSError:
        mode = None  # the reader says why
    if mode is not None and stat.S_ISLNK(mode):
        raise Untrusted(TrustReason.SYMLINK, f"{where} is a symbolic link: not the same path")
    if mode is not None and not stat.S_ISREG(mode):
        raise Untrusted(TrustReason.NOT_A_FILE, f"{where} is not a regular file")
    try:
        return read_bytes_at(dir_fd, name, limit, source=where)
    except UnusableInputError as exc:  # swapped while being opened
        raise Untrusted(TrustReason.NOT_A_FILE, f"{where}: {exc.message}") from None


def read_in_checkout(top: Path, path: str, *, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of ``path`` under the checkout ``top``, reached without following any link.

    Raises :class:`~flakecore.attestation.Untrusted` for a path through a
    symbolic link (``SYMLINK``), into a submodule or onto anything but a
    regular file (``NOT_A_FILE``), or out of the tree
    (``OUTSIDE_REPOSITORY``); :class:`InputError` when the file is missing,
    unreadable or over ``limit``.
    """
    parts = _parts(path)
    fd = os.open(top, _DIR_FLAGS)
    try:
        for i, part in enumerate(parts[:-1]):
            where = "/".join(parts[: i + 1])
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refusal(fd, part, where, exc) from None
            os.close(fd)
            fd = inner
            if _has_git(fd):
                raise Untrusted(
                    TrustReason.NOT_A_FILE, f"{where} is a submodule (gitlink): not this repository"
                )
        return _read_file(fd, parts[-1], "/".join(parts), limit)
    finally:
        os.close(fd)


def _has_git(dir_fd: int) -> bool:
    try:
        os.lstat(".git", dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _base_verdict(top: Path, base_sha: str, path: str) -> tuple[TrustVerdict, bytes | None]:
    """The base-only verdict, and the checkout's bytes when they could be read."""
    if not is_commit_id(base_sha):
        raise UsageError(f"base {base_sha!r} is not a full commit id (resolve the ref first)")
    try:
        data = read_in_checkout(top, path)
    except Untrusted as exc:
        return refused(path, exc.reason, exc.detail), None
    name = posixpath.normpath(path)
    entry = tree_entry(top, base_sha, name)
    short = base_sha[:12]
    if entry is None:
        detail = f"base {short} has no file at this path: base...HEAD adds it"
        return refused(path, TrustReason.NOT_IN_BASE, detail), data
    if entry.mode == "120000":
        detail = f"a symbolic link in base {short}: not the same path"
        return refused(path, TrustReason.SYMLINK, detail), None
    if not entry.is_file:
        what = "a submodule (gitlink)" if entry.type == "commit" else f"a {entry.type}"
        return refused(path, TrustReason.NOT_A_FILE, f"{what} in base {short}"), None
    if entry.size == len(data) and read_object(top, entry.oid) == data:
        detail = f"byte-identical in base {short}"
        return TrustVerdict(
            path=path, reason=TrustReason.BASE_IDENTICAL, detail=detail, data=data
        ), data
    detail = f"base {short} holds other bytes here: base...HEAD changed it"
    return refused(path, TrustReason.CHANGED_SINCE_BASE, detail), data


def trusted_by_base(repo: Path, base_sha: str, path: str) -> TrustVerdict:
    """Whether ``path`` (relative to the repository top) counts because base holds it byte for byte.

    ``base_sha`` is the full commit id of the base (resolve refs first).  A
    trusted verdict carries the bytes in ``data``: read those, not the file
    again.  Refused: ``NOT_IN_BASE`` (the diff adds it), ``CHANGED_SINCE_BASE``,
    ``SYMLINK``, ``NOT_A_FILE``, ``OUTSIDE_REPOSITORY``.  A missing or
    unreadable file is an :class:`InputError`; a git failure a ``GitError``.
    """
    verdict, _ = _base_verdict(repo_toplevel(repo), base_sha, path)
    return verdict


def _open_record(
    verdict: TrustVerdict, data: bytes, kind: str, test_id: str | None
) -> TrustVerdict:
    """A base-identical file as a record: its JSON object, or the record its envelope carries."""
    try:
        value = loads_strict(data, source=verdict.path)
        if is_envelope(value):
            payload = parse_envelope(value).payload
            return attrs.evolve(
                verdict, record=open_statement(payload, kind=kind, test_id=test_id).record
            )
    except InputError as exc:
        return refused(verdict.path, TrustReason.INVALID_RECORD, f"not JSON: {exc.message}")
    except Untrusted as exc:
        return refused(verdict.path, exc.reason, exc.detail)
    if not isinstance(value, dict):
        return refused(verdict.path, TrustReason.INVALID_RECORD, "not a JSON object")
    return attrs.evolve(verdict, record=value)


def read_trusted_record(
    repo: Path,
    base_sha: str,
    path: str,
    *,
    keys: Sequence[TrustedKey],
    kind: str,
    check: RecordProblems,
    test_id: str | None = None,
) -> TrustVerdict:
    """One stored record as evidence: base-identical, or signed by a trusted key, or refused.

    A file base holds byte for byte counts (an envelope there is opened
    without its signature: review vouched for it).  A file the diff adds or
    changes counts only as a DSSE envelope that
    :func:`flakecore.signing.verify_signed` accepts against ``keys`` (which
    must come from the trusted configuration); an unsigned one is refused
    with the base reason.  Either way the record is then checked with
    ``check``, the reader's own rules for its kind, and handed back in
    ``record``.
    """
    top = repo_toplevel(repo)
    verdict, data = _base_verdict(top, base_sha, path)
    if data is None:
        return verdict
    if verdict.trusted:
        opened = _open_record(verdict, data, kind, test_id)
        if opened.record is None:
            return opened
        problems = list(check(opened.record))
        if problems:
            return refused(path, TrustReason.INVALID_RECORD, "; ".join(problems))
        return opened
    try:
        signed = is_envelope(loads_strict(data, source=path))
    except InputError:
        signed = False
    if not signed:
        return attrs.evolve(verdict, detail=f"{verdict.detail}, and it is not signed")
    return verify_signed(data, keys=keys, kind=kind, check=check, test_id=test_id, path=path)
