"""Path-coupling guard (docs/leases.md): one diff must not change both evidence and ledger.

A patch that edits a fixture, the oracle or a test body *and* writes the
ledger row or lease that freezes that test is grading its own homework.  The
guard reads ``git diff --raw BASE...HEAD`` (the changes on the branch since
it left ``BASE``, with each side's file mode) and fails closed when the diff
names both kinds of path.  The digest compare still runs elsewhere:
generators rewrite bytes without a friendly diff, so this guard is a second
line, not the only one.

What counts as a ledger path (documented in docs/leases.md):

- a path matching a ledger glob;
- the ledger or lease directory itself, anything under it, and every parent
  of it (``.flakecore`` replaced by a symlink or a submodule moves the
  ledger without touching a file the globs match);
- every symlink and every gitlink (submodule) the diff adds, changes or
  removes, on either side: git cannot show what lies behind one;
- the ``[tool.flakecore]`` table of the top ``pyproject.toml``, when it differs
  between the two commits (shown as ``pyproject.toml [tool.flakecore]``):
  policy is evidence about the freeze too.

Glob semantics: paths are the repository-relative, ``/``-separated paths git
prints; a glob is matched with :func:`fnmatch.fnmatchcase` against the whole
path (``*`` also crosses ``/``, matching is case-sensitive), and a glob with
no ``/`` is also matched against the last path component, so ``conftest.py``
matches at any depth.  A ledger path counts as a ledger path only, so a
ledger directory under ``tests/`` does not trip the guard by itself.  The
top ``pyproject.toml`` counts as a fixture path (test configuration) only
when something outside ``[tool.flakecore]`` changed.

Renames are turned off (``--no-renames``): a renamed ledger file shows both
its old and its new path.  Any git failure (not a repository, unknown base,
no merge base, git missing) is a :class:`GitError`, never an empty diff.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import subprocess
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from flakecore.errors import InputError
from flakecore.gate.config import flakecore_table, parse_toml
from flakecore.gate.worktree import GitError, read_blob, resolve_commit

__all__ = [
    "GIT_TIMEOUT_S",
    "POLICY_TABLE",
    "Change",
    "GitError",
    "GuardResult",
    "changed_entries",
    "changed_paths",
    "guard_paths",
    "path_matches",
    "policy_change",
    "run_guard",
]

#: A git call that takes longer than this is a failure, not an empty diff.
GIT_TIMEOUT_S: Final = 120.0
#: The file whose ``[tool.flakecore]`` table is policy, and the name its change is shown under.
_PYPROJECT: Final = "pyproject.toml"
POLICY_TABLE: Final = "pyproject.toml [tool.flakecore]"
#: What ``git diff --raw -z`` prints for each path (both modes, both object ids, a status),
#: when neither mode is a symlink's or a gitlink's.
_PLAIN_ENTRIES: Final = re.compile(
    r"(?::(?!1[26]0000 )[0-7]{6} (?!1[26]0000 )[0-7]{6} [0-9a-f]+ [0-9a-f]+ [A-Z][0-9]*"
    r"\0[^\0]*\0)*+"
)


@attrs.frozen
class Change:
    """One path in the diff, with its mode on each side (``000000``: absent there)."""

    path: str
    old_mode: str = "100644"
    new_mode: str = "100644"

    @property
    def link(self) -> str | None:
        """``symlink`` or ``submodule`` when either side is one, else None."""
        return _link(self.old_mode, self.new_mode)


def _link(old_mode: str, new_mode: str) -> str | None:
    """A gitlink's (a submodule's commit) or a symlink's mode on either side, by its name."""
    if "160000" in (old_mode, new_mode):
        return "submodule"
    return "symlink" if "120000" in (old_mode, new_mode) else None


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
    ledger_reasons: Mapping[str, str] = attrs.field(factory=dict)
    """Why a ledger path that no ledger glob matched is one."""

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
            "ledger_reasons": dict(self.ledger_reasons),
        }


def path_matches(path: str, pattern: str) -> bool:
    """Whether a repository-relative path matches one glob (see the module docstring)."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)


#: What in a glob is not literal text: ``*``, ``?``, a set as fnmatch reads one (a ``]``
#: right after ``[`` or ``[!`` is its first member, and a ``*`` in it is a member too), or a
#: ``[`` that opens none (fnmatch takes that one literally; leaving it out only keeps more).
_NOT_LITERAL = re.compile(r"[*?]|\[!?\]?[^\]]*\]|\[")


def _literals(glob: str) -> list[str]:
    """Text every path ``glob`` matches holds: its pieces between wildcards and sets."""
    return [piece for piece in _NOT_LITERAL.split(glob) if piece]


def _matcher(globs: Iterable[str], text: str) -> Callable[[str], object] | None:
    """``any(path_matches(path, g) for g in globs)`` for the paths in ``text``; None: none matches.

    Built once per call, as one compiled pattern, and only of the globs
    whose literal pieces all occur somewhere in ``text`` (the diff's paths
    joined): a glob that needs a text no path holds matches no path, so the
    usual dozen globs shrink to the few the diff can meet.  A glob without
    ``/`` is also tried on the file name: every ``dir/`` is taken first,
    possessively, so what is left is the name.
    """
    kept = [g for g in dict.fromkeys(globs) if all(piece in text for piece in _literals(g))]
    if not kept:
        return None
    pattern = "|".join(fnmatch.translate(g) for g in kept)
    names = [fnmatch.translate(g) for g in kept if "/" not in g]
    if names:
        pattern += "|(?:[^/]*/)*+(?:" + "|".join(names) + ")"
    return re.compile(pattern).match


def _dir_reason(path: str, directories: Iterable[str]) -> str | None:
    for directory in directories:
        if path == directory:
            return f"the ledger/lease directory {directory} itself"
        if directory.startswith(path + "/"):
            return f"a parent of the ledger/lease directory {directory}"
        if path.startswith(directory + "/"):
            return f"inside the ledger/lease directory {directory}"
    return None


def guard_paths(
    base: str,
    paths: Sequence[str | Change],
    fixture_globs: Iterable[str],
    ledger_globs: Iterable[str],
    *,
    base_sha: str = "",
    ledger_dirs: Iterable[str] = (),
    guarded: Mapping[str, str] | None = None,
    not_fixtures: Collection[str] = (),
) -> GuardResult:
    """Split ``paths`` into ledger/lease paths and fixture/oracle/test paths (pure).

    ``ledger_dirs`` are repository-relative; ``guarded`` adds named ledger
    entries with their reason (the policy table); ``not_fixtures`` are paths
    whose change is known not to touch test configuration.
    """
    changes = [c if isinstance(c, Change) else Change(c) for c in paths]
    links = {i: c.link for i, c in enumerate(changes) if c.link is not None}
    return _split(
        base,
        [c.path for c in changes],
        links,
        fixture_globs,
        ledger_globs,
        base_sha=base_sha,
        ledger_dirs=ledger_dirs,
        guarded=guarded or {},
        not_fixtures=not_fixtures,
    )


def _split(
    base: str,
    paths: list[str],
    links: Mapping[int, str],
    fixture_globs: Iterable[str],
    ledger_globs: Iterable[str],
    *,
    base_sha: str,
    ledger_dirs: Iterable[str],
    guarded: Mapping[str, str],
    not_fixtures: Collection[str],
) -> GuardResult:
    """:func:`guard_paths` over plain paths; ``links`` names the symlinks and gitlinks by index.

    The globs run over all paths at once (:func:`_matcher`, through
    ``filter``), and a path is asked for a directory reason only when it is
    a ledger directory, a parent of one, or below one: a set intersection,
    and a prefix test only when some path holds a ``DIR/``.
    """
    joined = "\0".join(paths)
    is_fixture, is_ledger = _matcher(fixture_globs, joined), _matcher(ledger_globs, joined)
    dirs = tuple(posixpath.normpath(d) for d in ledger_dirs)
    near = {*dirs, *(d[:i] for d in dirs for i, c in enumerate(d) if c == "/")}
    below = tuple(d + "/" for d in dirs)
    named = near.intersection(paths)
    if any(prefix in joined for prefix in below):
        named.update(p for p in paths if p.startswith(below))
    why = {i: f"a {link}: git cannot show what lies behind it" for i, link in links.items()}
    if named:
        for index, path in enumerate(paths):
            if path in named and index not in why and (reason := _dir_reason(path, dirs)):
                why[index] = reason
    ledger = list(filter(is_ledger, paths)) if is_ledger is not None else []
    if why:
        hit = set(ledger)
        ledger = [p for i, p in enumerate(paths) if i in why or p in hit]
    reasons = {paths[i]: why[i] for i in sorted(why)}
    for name, reason in guarded.items():
        ledger.append(name)
        reasons[name] = reason
    left_out = {*ledger, *not_fixtures}
    matched = () if is_fixture is None else filter(is_fixture, paths)
    fixture = tuple(p for p in matched if p not in left_out)
    return GuardResult(
        base=base,
        base_sha=base_sha,
        paths=tuple(paths),
        fixture_paths=fixture,
        ledger_paths=tuple(ledger),
        ledger_reasons=reasons,
    )


def _git_diff(repo: str, base_sha: str, timeout: float) -> bytes:
    command = [
        "git", "-C", repo, "-c", "core.quotePath=false", "diff", "--raw", "-z", "--no-abbrev",
        "--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none",
        "--end-of-options", f"{base_sha}...HEAD", "--",
    ]  # fmt: skip
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
        raise GitError(f"git diff {base_sha}...HEAD failed: {first}")
    return done.stdout


def changed_entries(repo: str, base: str, *, timeout: float = GIT_TIMEOUT_S) -> tuple[Change, ...]:
    """``git diff --raw -z --no-renames BASE...HEAD`` in ``repo``: each path with both modes.

    ``base`` must name exactly one commit (:func:`~flakecore.gate.worktree.resolve_commit`:
    a tag and a branch of the same name is a :class:`UsageError`); the diff
    is taken from that full commit id, so git never re-reads the name.
    """
    return _entries(repo, resolve_commit(Path(repo), base), timeout)


def _entries(repo: str, base_sha: str, timeout: float) -> tuple[Change, ...]:
    """:func:`changed_entries` from a commit id already resolved (no second ``rev-parse``)."""
    paths, metas, _ = _raw(repo, base_sha, timeout)
    return tuple(Change(path, *_modes(meta)) for path, meta in zip(paths, metas, strict=True))


def _raw(repo: str, base_sha: str, timeout: float) -> tuple[list[str], list[str], dict[int, str]]:
    """The diff's paths in order, each one's ``:OLD NEW ...`` field, and the links by index.

    A path that is not UTF-8 keeps its bytes as surrogate escapes; the
    output is decoded whole, which gives each path what decoding it alone
    gives (an invalid byte never reaches past the NUL that ends its path).
    Output in git's usual form with no symlink or gitlink passes one
    pattern; anything else is read field by field (:func:`_modes`), which
    names a bad one.
    """
    text = _git_diff(repo, base_sha, timeout).decode("utf-8", "surrogateescape")
    fields = text.split("\0")
    paths = fields[1::2]
    metas = fields[0 : 2 * len(paths) : 2]
    if _PLAIN_ENTRIES.fullmatch(text) is not None:
        return paths, metas, {}
    return paths, metas, {i: link for i, m in enumerate(metas) if (link := _link(*_modes(m)))}


def _modes(meta: str) -> tuple[str, str]:
    """The (old, new) mode of one ``:OLD NEW OLD_ID NEW_ID STATUS`` field, or :class:`GitError`."""
    parts = meta.split()
    if not meta.startswith(":") or len(parts) < 5 or not (parts[0] + parts[1]).isascii():
        shown = meta.encode("utf-8", "surrogateescape")[:80]
        raise GitError(f"git diff --raw printed an entry it should not: {shown!r}")
    return parts[0][1:], parts[1]


def changed_paths(repo: str, base: str, *, timeout: float = GIT_TIMEOUT_S) -> tuple[str, ...]:
    """The paths of :func:`changed_entries`."""
    return tuple(c.path for c in changed_entries(repo, base, timeout=timeout))


def _policy_parts(repo: Path, commit: str) -> tuple[str, str]:
    """The top pyproject at ``commit``, canonical: (its ``[tool.flakecore]``, everything else)."""
    try:
        data = read_blob(repo, commit, _PYPROJECT)
    except GitError:  # no such file at that commit
        return _canonical({}), "null"  # no table: the defaults
    document = parse_toml(data, source=f"{commit[:12]}:{_PYPROJECT}")
    if document is None:  # no TOML parser: compare the bytes themselves, both ways
        return data.hex(), data.hex()
    rest = {k: v for k, v in document.items() if k != "tool"}
    tool = document.get("tool")
    if isinstance(tool, Mapping):
        rest["tool"] = {k: v for k, v in tool.items() if k != "flakecore"}
    return _canonical(flakecore_table(document)), _canonical(rest)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def policy_change(repo: Path, base_sha: str) -> tuple[str | None, bool]:
    """Whether the diff changes ``[tool.flakecore]`` (then why), and anything else in the file.

    Both revisions are read from git (never the working tree).  A file that
    cannot be parsed on either side counts as changed in both ways: the
    guard must not pass on what it could not read.
    """
    try:
        old_table, old_rest = _policy_parts(repo, base_sha)
        new_table, new_rest = _policy_parts(repo, "HEAD")
    except InputError as exc:
        return f"the policy table cannot be compared: {exc}", True
    table = None
    if old_table != new_table:
        table = "the diff changes the [tool.flakecore] policy table"
    return table, old_rest != new_rest


def run_guard(
    repo: str,
    base: str,
    *,
    fixture_globs: Iterable[str],
    ledger_globs: Iterable[str],
    ledger_dirs: Iterable[str] = (),
    timeout: float = GIT_TIMEOUT_S,
    base_sha: str | None = None,
) -> GuardResult:
    """Read the diff of ``repo`` since ``base`` and split it; raises :class:`GitError`.

    ``ledger_dirs`` (the configured ledger and lease directories, relative to
    the repository top) count as ledger paths with their parents.
    ``base_sha`` is the commit ``base`` already resolved to in ``repo``
    (by the configuration), so it is not resolved a second time.
    """
    base_sha = base_sha or resolve_commit(Path(repo), base)
    paths, _, links = _raw(repo, base_sha, timeout)
    guarded: dict[str, str] = {}
    not_fixtures: set[str] = set()
    if _PYPROJECT in paths:
        table, rest = policy_change(Path(repo), base_sha)
        if table is not None:
            guarded[POLICY_TABLE] = table
        if not rest:
            not_fixtures.add(_PYPROJECT)
    return _split(
        base,
        paths,
        links,
        fixture_globs,
        ledger_globs,
        base_sha=base_sha,
        ledger_dirs=ledger_dirs,
        guarded=guarded,
        not_fixtures=not_fixtures,
    )
