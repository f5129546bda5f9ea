"""The replay's git calls folded into one give the answers (and errors) of the calls they fold.

``toplevel_and_commit`` asks ``rev-parse --show-toplevel ID^{commit} --``
once for a full commit id; it must agree with ``repo_toplevel`` then
``resolve_commit`` on every kind of id, from the top and from below it, and
outside any repository.  ``toplevel_commit_and_head`` adds ``HEAD^{commit}``
to that call for the replay: the same two answers, and ``HEAD`` as
``head_commit`` reads it (or None, when it must be asked the long way).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.support import git, make_repo
from flakecore.errors import FlakecoreError
from flakecore.gate.worktree import (
    head_commit,
    repo_toplevel,
    resolve_commit,
    toplevel_and_commit,
    toplevel_commit_and_head,
)

pytestmark = pytest.mark.e2e


def _slow(path: Path, ref: str) -> tuple[Path, str]:
    top = repo_toplevel(path)
    return top, resolve_commit(top, ref)


def _with_head(path: Path, ref: str) -> tuple[Path, str, str | None]:
    """The fold's answer, its ``HEAD`` checked against :func:`head_commit` (None: asked so)."""
    top, sha, head = toplevel_commit_and_head(path, ref)
    if head is not None:
        assert head == head_commit(top)
    return top, sha, head


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
    heads = []
    for name, ref in refs.items():
        for where in (repo.path, below, outside):
            fast, slow = _answer(toplevel_and_commit, where, ref), _answer(_slow, where, ref)
            assert fast == slow, (name, where)
            answers.append(fast)
            folded = _answer(_with_head, where, ref)
            if isinstance(slow, tuple) and isinstance(slow[0], Path):
                assert isinstance(folded, tuple) and folded[:2] == slow, (name, where)
                heads.append(folded[2])
            else:
                assert folded == slow, (name, where)
    assert (repo.path, repo.base) in answers  # the usual case answers
    assert any(isinstance(a, tuple) and isinstance(a[0], type) for a in answers)  # errors, too
    assert repo.head in heads  # a full id's one call told HEAD
    assert None in heads  # a name's long way did not


def test_an_unborn_head_is_asked_the_long_way(tmp_path: Path) -> None:
    """A branch with no commit yet fails ``HEAD^{commit}``: the base still resolves, HEAD is None."""
    repo = make_repo(tmp_path)
    git(repo.path, "checkout", "-q", "--orphan", "empty")
    assert _with_head(repo.path, repo.base) == (repo.path, repo.base, None)
    with pytest.raises(FlakecoreError):
        head_commit(repo.path)
