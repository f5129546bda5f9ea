"""Public API: sniffing, options, errors, and the JSON Lines writer."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path
from typing import Any

import flakecore_adapters
import pytest

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, UsageError
from flakecore.evidence import Attempt, Source
from flakecore.jsonio import compact_line


def run(data: bytes, fmt: str = "auto", **kwargs: Any) -> list[Attempt]:
    """All attempts of ``data`` read as format ``fmt``."""
    stream = io.BytesIO(data)
    return list(flakecore_adapters.iter_attempts(stream, format=fmt, source_name="r", **kwargs))


@pytest.mark.parametrize(
    ("head", "fmt"),
    [
        (b'<?xml version="1.0"?><testsuites/>', "junit"),
        (b"\xef\xbb\xbf  <testsuite/>", "junit"),
        (b'{"created": 1, "tests": []}', "pytest-json"),
        (b'{\n  "created": 1}', "pytest-json"),
        (b"[]", "pytest-json"),
        (b'{"pytest_version": "9", "$report_type": "SessionStart"}\n', "pytest-reportlog"),
        (b"TAP version 14\n", "tap"),
        (b"1..3\n", "tap"),
        (b"ok 1\n", "tap"),
        (b"not ok 1\n", "tap"),
        (b"# Subtest: x\n", "tap"),
    ],
)
def test_sniff_reads_content(head: bytes, fmt: str) -> None:
    assert flakecore_adapters.sniff(head) == fmt


@pytest.mark.parametrize(
    ("head", "error"),
    [
        (b"", "empty"),
        (b"\x1f\x8b\x08", "gzip"),
        (b"\xfe\xff\x00<", "UTF-16"),
        (b"\x00\x00\xfe\xff", "UTF-32"),
        (b"<\x00t\x00", "NUL"),
        (b"hello world", "unrecognized"),
        (b"okay then", "unrecognized"),
        (b"build log\nok-ish\nokay\n", "unrecognized"),
    ],
)
def test_sniff_refuses(head: bytes, error: str) -> None:
    with pytest.raises(InputError, match=error):
        flakecore_adapters.sniff(head)


@pytest.mark.parametrize(
    "data",
    [
        b"make[1]: Entering directory '/src/t'\n1..2\nok 1 - a\nnot ok 2 - b\n",
        b"[INFO] running the suite\nTAP version 14\n1..1\nok 1 - a\n",
        b"building...\r\nnot ok 1 - a\r\n1..1\r\n",
        b"noise\n    ok 1 - child\n    1..1\nok 1 - parent\n1..1\n",
        b"starting\nBail out! no database\n",
    ],
    ids=["make", "bracket noise", "crlf", "indented first", "bail out"],
)
def test_sniff_agrees_with_the_tap_parser(data: bytes) -> None:
    """TAP behind a non-TAP first line: what --format tap reads, auto reads the same."""
    assert flakecore_adapters.sniff(data) == "tap"
    assert run(data) == run(data, "tap")


def test_format_is_decided_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "report.xml"
    path.write_bytes(b"1..1\nok 1 - a\n")
    (attempt,) = flakecore_adapters.iter_attempts(path)
    assert attempt.source.format == "tap"
    assert attempt.source.file == str(path)
    gz = tmp_path / "junit.xml"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    with pytest.raises(InputError, match="gzip"):
        list(flakecore_adapters.iter_attempts(gz))
    with pytest.raises(InputError, match="gzip"):
        list(flakecore_adapters.iter_attempts(gz, format="junit"))


def test_missing_file_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file") as info:
        list(flakecore_adapters.iter_attempts(tmp_path / "nope.xml"))
    assert info.value.source.endswith("nope.xml")
    with pytest.raises(InputError, match="directory"):
        list(flakecore_adapters.iter_attempts(tmp_path))
    with pytest.raises(UsageError):
        list(flakecore_adapters.iter_attempts(io.BytesIO(b""), format="xml"))
    with pytest.raises(UsageError):
        list(flakecore_adapters.iter_attempts(io.StringIO("1..0\n")))  # type: ignore[arg-type]


def test_explicit_format_mismatch_is_an_input_error() -> None:
    with pytest.raises(InputError):
        run(b"1..1\nok 1\n", "junit")
    with pytest.raises(InputError):
        run(b"<testsuite/>", "pytest-json")


def test_test_id_filter_keeps_numbering() -> None:
    data = b'<testsuite><testcase name="a"/><testcase name="b"/><testcase name="a"><failure/></testcase></testsuite>'
    got = run(data, test_id="a")
    assert [(a.test_id, a.attempt, a.outcome) for a in got] == [
        ("a", 1, Outcome.PASS),
        ("a", 2, Outcome.FAIL),
    ]


def test_source_name_is_used_in_records_and_errors() -> None:
    (attempt,) = run(b"1..1\nok 1 - a\n")
    assert attempt.source.file == "r"
    with pytest.raises(InputError) as info:
        run(b"<testsuite>")
    assert str(info.value).startswith("r:")


def test_size_limit() -> None:
    limits = flakecore_adapters.Limits(max_bytes=100)
    with pytest.raises(InputError, match="larger than 100"):
        list(
            flakecore_adapters.iter_attempts(io.BytesIO(b"1..1\n" + b"# x\n" * 100), limits=limits)
        )


def test_limits_validate() -> None:
    with pytest.raises(UsageError):
        flakecore_adapters.Limits(reorder_window=0)


def _reference_line(attempt: Attempt) -> bytes:
    """The attempt-record encoding, written out independently of the core and the writer."""
    src = attempt.source
    source: dict[str, object] = {}
    for key in ("file", "format", "line", "classname", "name", "suite", "number", "description"):
        value = getattr(src, key)
        if value is not None:
            source[key] = value
    if src.subtest_path:
        source["subtest_path"] = list(src.subtest_path)
    record = {
        "format": "flakecore.attempt-record",
        "format_version": "1.0",
        "test_id": attempt.test_id,
        "outcome": attempt.outcome.value,
        "native": attempt.native,
        "attempt": attempt.attempt,
        "duration_s": attempt.duration_s,
        "message": attempt.message,
        "flags": sorted(f.value for f in attempt.flags),
        "source": source,
    }
    return compact_line(record)


SAMPLES = [
    Attempt(
        test_id='ü "q" \u2028 <&>',
        outcome=Outcome.FAIL,
        native="failure",
        attempt=3,
        source=Source(file="f.xml", format="junit", line=7, classname="C", name="n", suite="s"),
        duration_s=0.1 + 0.2,
        message="line1\nline2 \ud83d\ude00",
        flags=frozenset({AttemptFlag.UNEXPECTED_PASS, AttemptFlag.CONFLICTING_DUPLICATE}),
    ),
    Attempt(
        test_id="a > b",
        outcome=Outcome.SKIP,
        native="ok # SKIP",
        attempt=1,
        source=Source(file="-", format="tap", number=2, description="b", subtest_path=("a",)),
        duration_s=1e-7,
    ),
]


@pytest.mark.parametrize("attempt", SAMPLES)
def test_attempt_line_matches_the_reference_encoding(attempt: Attempt) -> None:
    line = flakecore_adapters.attempt_line(attempt)
    assert line == _reference_line(attempt)
    assert json.loads(line)["test_id"] == attempt.test_id


@pytest.mark.parametrize("attempt", SAMPLES)
def test_attempt_line_matches_core_to_json(attempt: Attempt) -> None:
    assert flakecore_adapters.attempt_line(attempt) == compact_line(attempt.to_json())


def test_write_jsonl() -> None:
    out = io.BytesIO()
    attempts = run(b"1..300\n" + b"".join(b"ok %d - t%d\n" % (i, i) for i in range(1, 301)))
    assert flakecore_adapters.write_jsonl(attempts, out) == 300
    rows = out.getvalue().split(b"\n")
    assert rows[-1] == b""
    assert len(rows) == 301
    assert json.loads(rows[299])["test_id"] == "t300"


def test_file_is_closed_even_when_abandoned(tmp_path: Path) -> None:
    path = tmp_path / "r.tap"
    path.write_bytes(b"1..2\nok 1\nok 2\n")
    it = flakecore_adapters.iter_attempts(path, limits=flakecore_adapters.Limits(reorder_window=1))
    next(it)
    assert isinstance(it, types.GeneratorType)
    it.close()  # runs the generator's finally: the file is closed
