"""Path-coupling guard (SPEC 3.3): one diff must not change both the evidence and the ledger.

A patch that edits a fixture, the oracle or a test body *and* writes the
ledger row or lease that freezes that test is grading its own homework.  The
guard reads ``git diff --name-only BASE...HEAD`` (the changes on the branch
since it left ``BASE``) and fails closed when the diff names both kinds of
path.  The digest compare still runs elsewhere: generators rewrite bytes
without a friendly diff, so this guard is a second line, not the only one.

Glob semantics (documented in docs/leases.md): paths are the repository-
relative, ``/``-separated paths git prints; a glob is matched with
:func:`fnmatch.fnmatchcase` against the whole path (``*`` also crosses
``/``, matching is case-sensitive), and a glob with no ``/`` is also matched
against the last path component, so ``conftest.py`` matches at any depth.  A
path that matches a ledger glob counts as a ledger path only, so a ledger
directory under ``tests/`` does not trip the guard by itself.

Renames are turned off (``--no-renames``): a renamed ledger file shows both
its old and its new path.  Any git failure (not a repository, unknown base,
no merge base, git missing) is a :class:`GitError`, never an empty diff.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.gate.worktree import GitError, resolve_commit

__all__ = [
    "GIT_TIMEOUT_S",
    "GitError",
    "GuardResult",
    "changed_paths",
    "guard_paths",
    "path_matches",
    "run_guard",
]

#: A git call that takes longer than this is a failure, not an empty diff.
GIT_TIMEOUT_S: Final = 120.0


@attrs.frozen(kw_only=True)
class GuardResult:
    """The diff, split into the two kinds of path the guard keeps apart."""

    base: str
    """The base as given."""
    base_sha: str
    """The one commit it resolved to (``--base`` must be exact)."""
    paths: tuple[str, ...]
    fixture_paths: tuple[str, ...]
    ledger_paths: tuple[str, ...]

    @property
    def tripped(self) -> bool:
        """True when the one diff touches both kinds of path."""
        return bool(self.fixture_paths) and bool(self.ledger_paths)

    def to_json(self) -> dict[str, object]:
        """The JSON form printed by ``guard --json``."""
        return {
            "base": self.base,
            "base_sha": self.base_sha,
            "tripped": self.tripped,
            "changed": len(self.paths),
            "fixture_paths": list(self.fixture_paths),
            "ledger_paths": list(self.ledger_paths),
        }


def path_matches(path: str, pattern: str) -> bool:
    """Whether a repository-relative path matches one glob (see the module docstring)."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def guard_paths(
    base: str,
    paths: Sequence[str],
    fixture_globs: Iterable[str],
    ledger_globs: Iterable[str],
    *,
    base_sha: str = "",
) -> GuardResult:
    """Split ``paths`` into ledger/lease paths and fixture/oracle/test paths (pure)."""
    fixture_globs, ledger_globs = tuple(fixture_globs), tuple(ledger_globs)
    ledger = tuple(p for p in paths if any(path_matches(p, g) for g in ledger_globs))
    fixture = tuple(
        p for p in paths if p not in ledger and any(path_matches(p, g) for g in fixture_globs)
    )
    return GuardResult(
        base=base, base_sha=base_sha, paths=tuple(paths), fixture_paths=fixture, ledger_paths=ledger
    )


def changed_paths(repo: str, base: str, *, timeout: float = GIT_TIMEOUT_S) -> tuple[str, ...]:
    """``git diff --name-only --no-renames -z BASE...HEAD`` in ``repo``, as a tuple of paths.

    ``base`` must name exactly one commit (:func:`~flakecore.gate.worktree.resolve_commit`:
    a tag and a branch of the same name is a :class:`UsageError`); the diff
    is taken from that full commit id, so git never re-reads the name.
    """
    base = resolve_commit(Path(repo), base)
    command = [
        "git",
        "-C",
        repo,
        "-c",
        "core.quotePath=false",
        "diff",
        "--name-only",
        "--no-renames",
        "--no-ext-diff",
        "-z",
        "--end-of-options",
        f"{base}...HEAD",
        "--",
    ]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_PAGER": "cat"}
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            check=False,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git diff did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        first = message[0] if message else f"exit status {done.returncode}"
        raise GitError(f"git diff {base}...HEAD failed: {first}")
    try:
        text = done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        text = done.stdout.decode("utf-8", "surrogateescape")
    return tuple(p for p in text.split("\0") if p)


def run_guard(
    repo: str,
    base: str,
    *,
    fixture_globs: Iterable[str],
    ledger_globs: Iterable[str],
    timeout: float = GIT_TIMEOUT_S,
) -> GuardResult:
    """Read the diff of ``repo`` since ``base`` and split it; raises :class:`GitError`."""
    base_sha = resolve_commit(Path(repo), base)
    paths = changed_paths(repo, base_sha, timeout=timeout)
    return guard_paths(base, paths, fixture_globs, ledger_globs, base_sha=base_sha)
