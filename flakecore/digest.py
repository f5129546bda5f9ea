"""The two digests of SPEC 2: raw file bytes, and canonical JSON.

Hash *after* a run: a loader that rewrote a file during the run must show up
as drift, so callers hash the file as it is when they decide.
"""

from __future__ import annotations

import hashlib
import os
import re

from flakecore.files import MAX_FILE_BYTES, iter_chunks
from flakecore.jsonio import canonical_bytes, loads_strict

__all__ = ["canonical_json_sha256", "file_sha256", "is_digest", "sha256_bytes"]

_DIGEST = re.compile(r"[0-9a-f]{64}")


def is_digest(value: object) -> bool:
    """True only for a string of exactly 64 lowercase hex digits."""
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def file_sha256(
    path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES, source: str | None = None
) -> str:
    """sha256 of a regular file's raw bytes, read in chunks (bytes and order matter).

    Read through :mod:`flakecore.files`: a FIFO, a device or a symlink out of
    its directory is an :class:`~flakecore.errors.InputError`, and so is a
    file over ``limit`` bytes.  ``source`` names the file in errors.
    """
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
