"""The id rules: pytest node id <-> pytest's JUnit form, and the closest ids of a miss."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakecore.errors import UsageError
from flakecore.testids import closest_ids, id_digest, junit_form, node_id_from_junit

#: node id -> (classname, name) as pytest's junitxml writes them (mangle_test_address).
FORMS = [
    ("tests/test_a.py::test_x", "tests.test_a", "test_x"),
    ("test_a.py::test_x", "test_a", "test_x"),
    ("tests/test_a.py::TestA::test_x", "tests.test_a.TestA", "test_x"),
    ("tests/test_a.py::TestA::TestB::test_x[1-2]", "tests.test_a.TestA.TestB", "test_x[1-2]"),
    ("tests/test_a.py::test_x[a::b.c/d]", "tests.test_a", "test_x[a::b.c/d]"),
    ("tests/test_a.py::test_x[[x]]", "tests.test_a", "test_x[[x]]"),
    ("tests/sub/test_a.py::TestA::test_x", "tests.sub.test_a.TestA", "test_x"),
    (
        "tests/test_a.py::tests.test_a.doctested",
        "tests.test_a",
        "tests.test_a.doctested",
    ),  # a doctest item
]


@pytest.mark.parametrize(("node_id", "classname", "name"), FORMS)
def test_junit_form_and_back(node_id: str, classname: str, name: str) -> None:
    assert junit_form(node_id) == f"{classname}::{name}"
    file = node_id.split("::", 1)[0]
    assert node_id_from_junit(file, classname, name) == node_id


@pytest.mark.parametrize(
    ("file", "classname", "name", "why"),
    [
        (
            "tests/base.py",
            "tests.test_b.TestB",
            "test_inherited",
            "defined in another file than its class",
        ),
        ("tests/test_a.py", "prefix.tests.test_a", "test_x", "junit_prefix"),
        ("tests/test_a.py", "tests.test_a.", "test_x", "an empty class part"),
        ("tests/test_a.py", "tests.test_a..T", "test_x", "an empty class part"),
        ("tests/[x]/test_a.py", "", "tests/[x]/test_a.py::test_x", "'[' in the path"),
        ("tests/test_a.py", "tests.test_ab", "test_x", "another module with the same prefix"),
        ("", "tests.test_a", "test_x", "no file"),
        ("tests/test_a.py", "tests.test_a", "", "no name"),
    ],
)
def test_attributes_that_do_not_fit_keep_the_junit_id(
    file: str, classname: str, name: str, why: str
) -> None:
    assert node_id_from_junit(file, classname, name) is None, why


def test_windows_separators_in_file() -> None:
    assert node_id_from_junit("tests\\test_a.py", "tests.test_a.T", "t") == "tests/test_a.py::T::t"


def test_an_id_without_double_colon_is_no_node_id() -> None:
    assert junit_form("a > b") is None
    assert junit_form("pkg.Class::method") == "pkg.Class::method"  # already a JUnit id


_PART = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(
    st.lists(_PART, min_size=1, max_size=3),
    st.lists(_PART, max_size=3),
    _PART,
    st.text(alphabet=st.characters(blacklist_characters="\x00\n\r"), max_size=12),
)
def test_round_trip_of_python_test_ids(
    dirs: list[str], classes: list[str], function: str, param: str
) -> None:
    path = "/".join(dirs) + ".py"
    node_id = "::".join([path, *classes, function + (f"[{param}]" if param else "")])
    form = junit_form(node_id)
    assert form is not None
    classname, _, name = form.partition("::")
    assert node_id_from_junit(path, classname, name) == node_id


def test_closest_ids_best_first_and_distinct() -> None:
    ids = [
        "t.py::test_numbers[1]",
        "t.py::test_numbers[1]",
        "t.py::test_numbers[2]",
        "t.py::other",
        "zzz",
    ]
    assert closest_ids("t.py::test_number[1]", ids) == [
        "t.py::test_numbers[1]",
        "t.py::test_numbers[2]",
    ]
    assert closest_ids("nothing like it at all", ids) == []


def test_id_digest_is_the_sha256_of_the_utf8_bytes() -> None:
    assert id_digest("ünï") == hashlib.sha256("ünï".encode()).hexdigest()
    with pytest.raises(UsageError):
        id_digest("\ud800")
