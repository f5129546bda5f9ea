"""The two digests (raw file bytes, canonical JSON), and git commit ids.

Hash *after* a run: a loader that rewrote a file during the run must show up
as drift, so callers hash the file as it is when they decide.  A file's
digest is sha256 (``sha256sum FILE``); a commit -- the base, a patch -- is
named by its full git id (``git rev-parse HEAD``), never by a digest of
something else (docs/trust.md).
"""

from __future__ import annotations

import binascii
import os
import re

from flakecore.files import MAX_FILE_BYTES, iter_chunks
from flakecore.jsonio import canonical_bytes, loads_strict

__all__ = [
    "canonical_json_sha256",
    "commit_id_problem",
    "file_sha256",
    "is_commit_id",
    "is_digest",
    "is_lower_hex",
    "sha256_bytes",
]

#: The patterns a ``str`` subclass is checked by (compiled by ``re``'s cache on first use):
#: a plain ``str`` takes :func:`is_lower_hex`.
_DIGEST = r"[0-9a-f]{64}"
_COMMIT_ID = r"[0-9a-f]{40}|[0-9a-f]{64}"


def is_lower_hex(text: str) -> bool:
    """Whether ``text`` (a ``str`` itself) is only lowercase hex digits, in C loops.

    ``unhexlify`` refuses every character but a hex digit (of either case)
    and ``hex`` writes lowercase, so the round trip gives ``text`` back
    exactly when it is lowercase hex: a third less work than the pattern,
    which a packet pays once per digest field.  Texts of even length
    joined pass exactly when each passes: a policy checks its digests as one.
    """
    if not text.isascii():
        return False
    try:
        return binascii.unhexlify(text).hex() == text
    except ValueError:  # binascii.Error: a character that is not a hex digit
        return False


def is_digest(value: object) -> bool:
    """True only for a string of exactly 64 lowercase hex digits."""
    if type(value) is not str:  # a subclass of str: by the pattern
        return isinstance(value, str) and re.fullmatch(_DIGEST, value) is not None
    return len(value) == 64 and is_lower_hex(value)


def is_commit_id(value: object) -> bool:
    """A full git commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex, as ``git rev-parse`` prints.

    This is the one rule for a patch hash and a base commit: an abbreviated
    id, a branch name or ``sha256:``-prefixed text is not one.
    """
    if type(value) is not str:  # a subclass of str: by the pattern
        return isinstance(value, str) and re.fullmatch(_COMMIT_ID, value) is not None
    return (len(value) == 40 or len(value) == 64) and is_lower_hex(value)


def commit_id_problem(name: str, value: object) -> str | None:
    """Why ``value`` (the field or flag ``name``) is not a commit id; None when it is one."""
    if is_commit_id(value):
        return None
    return f"{name} is not a git commit id (40 or 64 lowercase hex, as git rev-parse HEAD prints)"


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256 of ``data``."""
    import hashlib  # noqa: PLC0415 - OpenSSL's start-up is paid only by a verb that hashes

    return hashlib.sha256(data).hexdigest()


def file_sha256(
    path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES, source: str | None = None
) -> str:
    """sha256 of a regular file's raw bytes, read in chunks (bytes and order matter).

    Read through :mod:`flakecore.files`: a FIFO, a device or a symlink out of
    its directory is an :class:`~flakecore.errors.InputError`, and so is a
    file over ``limit`` bytes.  ``source`` names the file in errors.
    """
    import hashlib  # noqa: PLC0415 - as in sha256_bytes

    h = hashlib.sha256()
    for chunk in iter_chunks(path, limit, source=source):
        h.update(chunk)
    return h.hexdigest()


def canonical_json_sha256(document: object) -> str:
    """sha256 of a JSON value re-encoded canonically (key order and spacing ignored).

    ``document`` may be ``bytes`` (parsed strictly first) or an already
    decoded JSON value.
    """
    value = loads_strict(document) if isinstance(document, bytes) else document
    return sha256_bytes(canonical_bytes(value))
