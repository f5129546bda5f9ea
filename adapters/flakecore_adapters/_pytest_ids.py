"""pytest's JUnit XML under the node id (``docs/adapters.md``, "One test, one id").

pytest names its suite ``pytest`` and, in ``xunit1``, writes each testcase's
``file``: with it the node id is derived exactly (:func:`flakecore.testids.node_id_from_junit`).
``xunit2`` has no ``file``, and the dotted classname alone cannot tell the
module from the classes, so such a testcase keeps the JUnit id
(``classname::name``); a node id given as the test id to keep also matches
that JUnit id (:func:`alias`), and the kept attempts carry the node id.
"""

from __future__ import annotations

from flakecore.testids import junit_form, node_id_from_junit

__all__ = ["PYTEST_SUITE", "alias", "node_id"]

#: The ``name`` of the ``<testsuite>`` pytest writes (unless ``junit_suite_name`` changes it).
PYTEST_SUITE = "pytest"


def node_id(attrs: dict[str, str], suite: str | None) -> str | None:
    """The node id of a testcase of pytest's xunit1 JUnit, or None (keep the JUnit id)."""
    if suite != PYTEST_SUITE:
        return None
    file, classname, name = attrs.get("file"), attrs.get("classname"), attrs.get("name")
    if file is None or classname is None or name is None:
        return None
    return node_id_from_junit(file, classname, name)


def alias(only: str | None) -> str | None:
    """The JUnit id that also matches ``only`` when ``only`` is a pytest node id."""
    if only is None:
        return None
    form = junit_form(only)
    return None if form == only else form
