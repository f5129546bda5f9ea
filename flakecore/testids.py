"""One test, one id (docs/adapters.md): the rules that give a test the same id in every format.

Ledger rows, leases and attempt logs are keyed by the test id, so a test must
not get one id from one report format and another from the next.  For pytest
the id is the node id, ``tests/test_x.py::TestA::TestB::test_y[param]``; the
JSON formats carry it as it is, but pytest's JUnit XML does not: it writes
``classname`` (the node id's path as a dotted module, then the classes) and
``name`` (the last part, parameters included), and, in ``xunit1`` only, the
``file`` the test was defined in.  These functions convert between the two
forms, exactly as pytest's ``mangle_test_address`` does, and never guess.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

from flakecore.errors import UsageError

__all__ = ["closest_ids", "id_digest", "junit_form", "node_id_from_junit"]

_PY_SUFFIX = re.compile(r"\.py$")
#: How many near ids an error about a missing id lists.
CLOSEST = 3


def id_digest(test_id: str) -> str:
    """``sha256(test_id as UTF-8)`` in hex: the file-name stem for a test, never a path."""
    try:
        data = test_id.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("test id is not valid Unicode text") from None
    return hashlib.sha256(data).hexdigest()


def _mangle(node_id: str) -> tuple[str, str]:
    """pytest's ``junitxml.mangle_test_address``: ``(classname, name)``."""
    path, bracket, params = node_id.partition("[")
    names = path.split("::")
    names[0] = _PY_SUFFIX.sub("", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def junit_form(node_id: str) -> str | None:
    """The id the JUnit adapter gives the testcase pytest writes for ``node_id``.

    ``tests/test_x.py::TestA::test_y[1]`` -> ``tests.test_x.TestA::test_y[1]``
    (``classname::name``).  None for an id without ``::`` (not a node id).
    """
    if "::" not in node_id:
        return None
    classname, name = _mangle(node_id)
    return f"{classname}::{name}" if classname.strip() else name


@functools.lru_cache(maxsize=64)
def _module(file: str) -> tuple[str, str]:
    """``file`` with ``/`` separators, and pytest's dotted module for it (one per file, cached)."""
    path = file.replace("\\", "/")
    return path, _PY_SUFFIX.sub("", path.replace("/", "."))


def node_id_from_junit(file: str, classname: str, name: str) -> str | None:
    """The node id of a testcase of pytest's ``xunit1`` JUnit XML, or None.

    ``file`` (``tests/test_x.py``) tells where the dotted module in
    ``classname`` ends and the classes begin.  None when the three do not
    fit together (a method inherited from another file, ``junit_prefix``, a
    path with ``[`` or a class name with ``.``): the caller keeps the JUnit
    convention then, rather than guess.
    """
    path, module = _module(file)
    if not path or not name or not module:
        return None
    if classname == module:
        classes: list[str] = []
    elif classname.startswith(module + "."):
        classes = classname[len(module) + 1 :].split(".")
        if not all(classes):
            return None
    else:
        return None
    node_id = "::".join([path, *classes, name])
    return node_id if _mangle(node_id) == (classname, name) else None


def closest_ids(wanted: str, ids: Iterable[str], n: int = CLOSEST) -> list[str]:
    """Up to ``n`` distinct ids most like ``wanted`` (difflib), best first."""
    import difflib  # noqa: PLC0415 - only a run that names no id it found asks

    return difflib.get_close_matches(wanted, list(dict.fromkeys(ids)), n=n)
