"""Strict JSON, digests, timestamps and runner identities."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakecore import (
    InputError,
    LimitError,
    RunnerId,
    canonical_json_sha256,
    file_sha256,
    is_digest,
    load_object,
    loads_strict,
    same_runner,
)
from flakecore.timeutil import format_rfc3339, parse_rfc3339

REFUSED_JSON = {
    "duplicate key": (b'{"a":1,"a":2}', "duplicate key 'a'"),
    "nested duplicate": (b'{"x":{"k":true,"k":false}}', "duplicate key 'k'"),
    "NaN": (b'{"a":NaN}', "NaN"),
    "Infinity": (b'{"a":-Infinity}', "Infinity"),
    "1e400": (b'{"a":1e400}', "out of range"),
    "huge integer": (b'{"a":' + b"9" * 100 + b"}", "out of range"),
    "invalid utf-8": (b'{"a":"\xc3\x28"}', "invalid UTF-8"),
    "lone surrogate": (b'{"a":"\\ud800"}', "lone surrogate"),
    "lone surrogate key": (b'{"\\udfff":1}', "lone surrogate"),
    "trailing garbage": (b'{"a":1} x', "Extra data"),
    "two documents": (b'{"a":1}{"b":2}', "Extra data"),
    "BOM": (b'\xef\xbb\xbf{"a":1}', "byte-order mark"),
    "truncated": (b'{"a":', "invalid JSON"),
    "empty": (b"", "invalid JSON"),
    "deep nesting": (b"[" * 100 + b"]" * 100, "nested deeper"),
}


@pytest.mark.parametrize(("data", "message"), REFUSED_JSON.values(), ids=list(REFUSED_JSON))
def test_strict_json_refuses(data: bytes, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        loads_strict(data, source="packet.json")
    assert str(info.value).startswith("packet.json")
    assert "\n" not in str(info.value)


def test_error_names_line_and_column() -> None:
    with pytest.raises(InputError) as info:
        loads_strict(b'{\n  "a": tru\n}', source="p.json")
    assert str(info.value).startswith("p.json:2:8: invalid JSON")


def test_size_limit() -> None:
    with pytest.raises(LimitError):
        loads_strict(b" " * (16 * 1024 * 1024 + 1))


def test_top_level_must_be_an_object() -> None:
    with pytest.raises(InputError, match="expected a JSON object, got an array"):
        load_object(b"[1]", source="x")
    assert load_object(b'{"a":[1,{"b":null}]}') == {"a": [1, {"b": None}]}


def test_canonical_digest_ignores_order_and_spacing() -> None:
    a = canonical_json_sha256(b'{"b": [1, 2], "a": "\xc3\xa9"}')
    b = canonical_json_sha256({"a": "é", "b": [1, 2]})
    assert a == b
    expected = hashlib.sha256(b'{"a":"\\u00e9","b":[1,2]}').hexdigest()
    assert a == expected
    assert canonical_json_sha256({"a": 1}) != canonical_json_sha256({"a": "1"})


def test_canonical_digest_refuses_nan() -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        canonical_json_sha256({"a": float("nan")})


def test_file_digest(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "f"
    path.write_bytes(b"x" * 3_000_000)
    assert file_sha256(path) == hashlib.sha256(b"x" * 3_000_000).hexdigest()


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a" * 64, True),
        ("A" * 64, False),
        ("a" * 63, False),
        ("a" * 64 + "\n", False),
        ("sha256:" + "a" * 64, False),
        ("g" * 64, False),
        (None, False),
    ],
)
def test_is_digest(value: object, ok: bool) -> None:
    assert is_digest(value) is ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-20T00:00:00Z", dt.datetime(2026, 10, 20, tzinfo=dt.timezone.utc)),
        ("2026-10-20T02:00:00+02:00", dt.datetime(2026, 10, 20, tzinfo=dt.timezone.utc)),
        ("2026-10-20t00:00:00.5z", dt.datetime(2026, 10, 20, 0, 0, 0, 500000, dt.timezone.utc)),
    ],
)
def test_rfc3339(text: str, expected: dt.datetime) -> None:
    assert parse_rfc3339(text) == expected


@pytest.mark.parametrize(
    "text",
    ["2026-10-20T00:00:00", "2026-10-20", "soon", "2026-10-20T00:00:00+2", "2026-13-01T00:00:00Z"],
)
def test_rfc3339_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"RFC 3339|naive|month"):
        parse_rfc3339(text)


@pytest.mark.parametrize(
    "text",
    [
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59.999999+00:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:00:00+05:00",
        "0001-01-01T00:00:00-05:00",
    ],
)
def test_rfc3339_at_the_ends_of_the_calendar(text: str) -> None:
    """Instants UTC can hold parse and format back without overflow."""
    when = parse_rfc3339(text)
    assert parse_rfc3339(format_rfc3339(when)) == when


@pytest.mark.parametrize("text", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+00:01"])
def test_rfc3339_refuses_an_instant_outside_utc_years(text: str) -> None:
    """Year 10000 (or 0) in UTC: refused at the parse, so no later arithmetic overflows."""
    with pytest.raises(ValueError, match=r"outside years 0001\.\.9999 in UTC"):
        parse_rfc3339(text)


@given(
    st.datetimes(
        timezones=st.builds(
            dt.timezone,
            st.timedeltas(
                min_value=dt.timedelta(hours=-23, minutes=-59),
                max_value=dt.timedelta(hours=23, minutes=59),
            ),
        )
    )
)
def test_format_rfc3339_is_total(when: dt.datetime) -> None:
    """Even a caller's own datetime past year 9999 in UTC formats (keeping its offset)."""
    text = format_rfc3339(when)
    assert text.isascii()
    assert dt.datetime.fromisoformat(text.replace("Z", "+00:00")) == when


def test_naive_message() -> None:
    with pytest.raises(ValueError, match="naive"):
        parse_rfc3339("2026-10-20T00:00:00")
    with pytest.raises(ValueError, match="naive"):
        format_rfc3339(dt.datetime(2026, 1, 1))


def test_runner_identity() -> None:
    a, b = RunnerId.fresh(), RunnerId.fresh("sha256:" + "e" * 64)
    assert not a.containerized
    assert b.containerized
    assert str(a).startswith("img:local-uncontainerized+nonce:")
    assert RunnerId.parse(str(b)) == b
    assert a.nonce != RunnerId.fresh().nonce
    with pytest.raises(ValueError, match="is not 'img:"):
        RunnerId.parse("img:latest+nonce:0123456789abcdef")
    with pytest.raises(ValueError, match="image digest"):
        RunnerId.fresh("ubuntu:latest")


@given(st.text(max_size=30))
def test_same_runner_is_reflexive_under_folding(text: str) -> None:
    assert same_runner(text, " " + text.upper() + "\t")
