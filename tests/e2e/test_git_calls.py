"""The replay's git calls folded into one give the answers (and errors) of the calls they fold.

``toplevel_and_commit`` asks ``rev-parse --show-toplevel ID^{commit} --``
once for a full commit id; it must agree with ``repo_toplevel`` then
``resolve_commit`` on every kind of id, from the top and from below it, and
outside any repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.support import git, make_repo
from flakecore.errors import FlakecoreError
from flakecore.gate.worktree import repo_toplevel, resolve_commit, toplevel_and_commit

pytestmark = pytest.mark.e2e


def _slow(path: Path, ref: str) -> tuple[Path, str]:
    top = repo_toplevel(path)
    return top, resolve_commit(top, ref)


def _answer(call: object, path: Path, ref: str) -> object:
    assert callable(call)
    try:
        return call(path, ref)
    except FlakecoreError as exc:
        return type(exc), str(exc)


def test_one_call_answers_as_the_two_it_folds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    git(repo.path, "tag", "-a", "-m", "reviewed", "reviewed", repo.base)
    refs = {
        "base": repo.base,
        "head": repo.head,
        "tree": git(repo.path, "rev-parse", f"{repo.base}^{{tree}}").strip(),
        "blob": git(repo.path, "rev-parse", f"{repo.base}:tests/test_prop.py").strip(),
        "annotated tag": git(repo.path, "rev-parse", "reviewed").strip(),
        "unknown": "0123456789abcdef" * 2 + "01234567",
        "upper case": repo.base.upper(),
        "a name": "main",
        "abbreviated": repo.base[:12],
    }
    below = repo.path / "tests"
    outside = tmp_path / "tmp"
    answers = []
    for name, ref in refs.items():
        for where in (repo.path, below, outside):
            fast, slow = _answer(toplevel_and_commit, where, ref), _answer(_slow, where, ref)
            assert fast == slow, (name, where)
            answers.append(fast)
    assert (repo.path, repo.base) in answers  # the usual case answers
    assert any(isinstance(a, tuple) and isinstance(a[0], type) for a in answers)  # errors, too
