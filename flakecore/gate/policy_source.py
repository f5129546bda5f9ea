"""Policy from the trusted revision (docs/trust.md): ``[tool.flakecore]`` from base, not the tree.

The patch under judgement can edit ``pyproject.toml`` like any other file:
``attempt_cap = 1000`` farms a base miss, ``max_lease_days = 100000`` makes
a lease permanent, an empty ``fixture_globs`` disarms the guard.  So a verb
that judges a patch reads the table from the base commit through git
(``git cat-file`` of base's blob, no filters), and a verb without a base
reads an explicit file that lies *outside* the checkout.  Either way the
configuration carries its :class:`~flakecore.policy.PolicySource` (revision,
path, canonical digest of the table) for every decision to record, and
:func:`compare_scored_table` says whether the scored tree's own table
differs from the one used.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Final

import attrs

from flakecore.digest import canonical_json_sha256
from flakecore.errors import InputError, LimitError, Untrusted, UsageError
from flakecore.files import read_bytes
from flakecore.gate.config import (
    MAX_CONFIG_BYTES,
    GateConfig,
    flakecore_table,
    mentions_flakecore,
    needs_toml_parser,
    parse_table,
    parse_toml,
)
from flakecore.gate.nofollow import read_in_checkout
from flakecore.gate.worktree import read_object, repo_toplevel, resolve_commit, tree_entry
from flakecore.policy import EMPTY_TABLE_SHA256

__all__ = [
    "PYPROJECT",
    "base_config",
    "compare_scored_table",
    "load_outside_config",
    "load_trusted_config",
    "scored_table_reason",
]

#: Where the table lives, relative to the repository top, unless CI says otherwise.
PYPROJECT: Final = "pyproject.toml"


def _relative(path: str) -> str:
    norm = posixpath.normpath(path)
    if not path or norm.startswith("/") or norm == "." or norm.split("/")[0] == "..":
        raise UsageError(f"{path!r}: the policy file must be a path inside the repository")
    return norm


def load_trusted_config(repo: Path, base: str, *, path: str = PYPROJECT) -> GateConfig:
    """``[tool.flakecore]`` as the base commit holds it, with trust keys; never the working tree.

    ``path`` is relative to the repository top (a monorepo names its
    package's file; the patch cannot move it, because CI chooses it).  A
    base without the file, or without the table, means the defaults, and
    the source still names the revision.  Directories in the table are
    relative to that file's directory in the checkout.  A base entry that
    is a link or a submodule is refused.
    """
    top = repo_toplevel(repo)
    return _load_at(top, resolve_commit(top, base), path)


def _load_at(top: Path, sha: str, path: str) -> GateConfig:
    """:func:`load_trusted_config` in the checkout ``top`` at the full commit id ``sha``."""
    name = _relative(path)
    root = str(top / posixpath.dirname(name)) if posixpath.dirname(name) else str(top)
    where = f"{sha[:12]}:{name}"
    entry = tree_entry(top, sha, name)
    if entry is None:
        return parse_table({}, root=root, path=name, revision=sha)
    if not entry.is_file:
        kind = "a symbolic link" if entry.mode == "120000" else f"a {entry.type}"
        raise InputError(
            f"{kind} in base: the policy is read only from a regular file", source=where
        )
    if entry.size is not None and entry.size > MAX_CONFIG_BYTES:
        raise LimitError(f"larger than {MAX_CONFIG_BYTES} bytes", source=where)
    data = read_object(top, entry.oid)
    document = parse_toml(data, source=where)
    if document is None:
        if mentions_flakecore(data):
            raise needs_toml_parser(where)
        return parse_table({}, root=root, path=name, revision=sha)
    return parse_table(flakecore_table(document), root=root, path=name, revision=sha)


def load_outside_config(path: str, *, checkout: str | os.PathLike[str]) -> GateConfig:
    """``[tool.flakecore]`` from a file CI provides, which must lie outside the scored checkout.

    For verbs that have no base (``lease check`` without ``--base``).  A file
    inside ``checkout`` -- as written or through a symbolic link -- is a
    usage error: the patch could have written it.  Directories in the table
    are relative to ``checkout``, where the records are.
    """
    from flakecore.trust import inside  # noqa: PLC0415 - the trust layer, for a file CI names

    if inside(path, checkout):
        raise UsageError(
            f"{path}: the configuration is inside the scored checkout, where the patch could "
            "have written it; use the base revision or a file outside the checkout"
        )
    found = os.path.abspath(path)
    data = read_bytes(found, MAX_CONFIG_BYTES)
    document = parse_toml(data, source=found)
    if document is None:
        raise needs_toml_parser(found)
    return parse_table(flakecore_table(document), root=os.path.realpath(checkout), path=found)


def _scored_sha256(top: Path, name: str) -> str | None:
    """The digest of the scored tree's table; None when it cannot be one a policy could be."""
    if not os.path.lexists(top / name):
        return EMPTY_TABLE_SHA256  # no file: no table, the defaults
    try:
        data = read_in_checkout(top, name, limit=MAX_CONFIG_BYTES)
        document = parse_toml(data, source=name)
    except (InputError, Untrusted):
        return None  # unreadable, not TOML, a link or a submodule: not the file base reviewed
    if document is None:  # no TOML parser: only a file that never names flakecore compares
        return None if mentions_flakecore(data) else EMPTY_TABLE_SHA256
    try:
        return canonical_json_sha256(flakecore_table(document))
    except (TypeError, ValueError):
        return None  # TOML dates and times have no JSON form: not a valid table either


def compare_scored_table(config: GateConfig, *, checkout: Path) -> GateConfig:
    """``config`` with ``source.scored_tree_differs`` set, for a table read from a revision.

    The scored tree's table differs when its canonical digest is not the
    base table's, and also when it is not readable as one (not TOML, a
    link, a submodule).  Configurations not read from a revision come back
    unchanged: there is no base table to compare with.
    """
    source = config.source
    if source.revision is None or source.path is None:
        return config
    return _compared(config, repo_toplevel(checkout))


def _compared(config: GateConfig, top: Path) -> GateConfig:
    """:func:`compare_scored_table` of a table read from a revision, in the checkout ``top``."""
    source = config.source
    assert source.path is not None  # read from a revision: it names its file
    differs = _scored_sha256(top, source.path) != source.sha256
    return attrs.evolve(config, source=attrs.evolve(source, scored_tree_differs=differs))


def base_config(top: Path, sha: str) -> GateConfig:
    """The base's table compared with the scored tree's, for a top and a commit id already known.

    ``compare_scored_table(load_trusted_config(top, sha), checkout=top)``
    without the two git calls that would find ``top`` and resolve ``sha``
    again: ``top`` and ``sha`` are what
    :func:`~flakecore.gate.worktree.toplevel_and_commit` returned.
    """
    return _compared(_load_at(top, sha, PYPROJECT), top)


def scored_table_reason(config: GateConfig) -> str | None:
    """The line a verb prints when the scored tree's table differs from base's (else None)."""
    source = config.source
    if not source.scored_tree_differs or source.revision is None:
        return None
    return (
        f"the scored tree's [tool.flakecore] ({source.path}) differs from base "
        f"{source.revision[:12]}'s; the base's policy was used"
    )
