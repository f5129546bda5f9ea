"""Fast paths against their slow references: the same answer on every input.

Each reference here is the implementation the fast path replaced, kept only
as the oracle (it lives in the tests, not in the package).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.errors import InputError
from flakecore.jsonio import loads_strict

#: Strings with every kind of character JSON text can spell, lone surrogates included.
TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\\", '"', "u", "d"]),
    ),
    max_size=12,
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def _has_lone_surrogate(value: object) -> bool:
    """The walk ``loads_strict`` ran on every document before: any string, key or value."""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _spelled(value: object, ascii_only: bool, escape_all: bool) -> bytes:
    """JSON text of ``value``: raw UTF-8, ``\\u`` escapes, or every escape upper case."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    if escape_all:
        text = text.replace("\\ud", "\\uD")
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=800, deadline=None)
@given(VALUES, st.booleans(), st.booleans())
def test_lone_surrogates_are_refused_exactly_when_the_walk_finds_one(
    value: object, ascii_only: bool, escape_all: bool
) -> None:
    data = _spelled(value, ascii_only, escape_all)
    duplicate = False
    expected: str | None

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal duplicate
        duplicate = duplicate or len({k for k, _ in items}) < len(items)
        return dict(items)

    try:
        reference = json.loads(data, object_pairs_hook=pairs)  # stdlib: keeps lone surrogates
    except UnicodeDecodeError:
        expected = "invalid UTF-8"  # a raw surrogate
    else:
        expected = "duplicate key" if duplicate else None
    if expected is None and _has_lone_surrogate(reference):
        expected = "lone surrogate"
    elif expected is None:
        assert loads_strict(data) == reference
        return
    with pytest.raises(InputError, match=expected):
        loads_strict(data)


@pytest.mark.parametrize(
    ("data", "refused"),
    [
        (b'{"a":"\\ud800"}', True),
        (b'{"a":"\\uD800"}', True),
        (b'{"\\uDFFF":1}', True),
        (b'["x", ["\\udbff"]]', True),
        (b'["\\ud83d\\ude00"]', False),  # a pair: one character
        (b'["\\uDBFF\\uDFFF"]', False),
        (b'{"a":"\\\\ud800"}', False),  # an escaped backslash, then text
        (b'{"a":"\\u0064800"}', False),
        (b'{"a":"\\uE000"}', False),
    ],
)
def test_surrogate_escapes_by_hand(data: bytes, refused: bool) -> None:
    if refused:
        with pytest.raises(InputError, match="lone surrogate"):
            loads_strict(data)
    else:
        assert loads_strict(data) == json.loads(data)
