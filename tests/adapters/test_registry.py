"""One format registry: the API, ``ingest`` and ``replay --report`` all read it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import flakecore_adapters
import pytest

from flakecore.errors import UsageError
from flakecore.exits import EXIT_USAGE

#: One small report per format, each sniffed as that format.
SAMPLES = {
    "junit": b'<testsuite><testcase classname="c" name="t"/></testsuite>',
    "pytest-json": b'{"created": 1, "tests": [{"nodeid": "t", "outcome": "passed"}]}',
    "pytest-reportlog": (
        b'{"$report_type": "TestReport", "nodeid": "t", "when": "call", "outcome": "passed"}\n'
    ),
    "tap": b"TAP version 14\n1..1\nok 1 - t\n",
}


def test_the_registry_is_the_one_list() -> None:
    registry = flakecore_adapters.REPORT_FORMATS
    assert tuple(registry) == flakecore_adapters.FORMATS
    assert set(registry) == set(SAMPLES), "every registered format has a sample here"
    for name, fmt in registry.items():
        assert fmt.name == name
        assert flakecore_adapters.report_format(name) is fmt
    with pytest.raises(TypeError):
        registry["x"] = registry["tap"]  # type: ignore[index]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_format_is_sniffed_and_read_through_the_registry(name: str) -> None:
    data = SAMPLES[name]
    assert flakecore_adapters.sniff(data) == name
    named = list(flakecore_adapters.iter_attempts(io.BytesIO(data), format=name, source_name="r"))
    sniffed = list(flakecore_adapters.iter_attempts(io.BytesIO(data), source_name="r"))
    assert named == sniffed and named
    lines = b"".join(flakecore_adapters.iter_jsonl(io.BytesIO(data), format=name, source_name="r"))
    assert lines == b"".join(flakecore_adapters.attempt_line(a) for a in named)


def test_an_unknown_name_lists_the_registry() -> None:
    with pytest.raises(UsageError) as caught:
        flakecore_adapters.report_format("nunit")
    for name in flakecore_adapters.FORMATS:
        assert name in str(caught.value)
    with pytest.raises(UsageError, match="nunit"):
        list(flakecore_adapters.iter_attempts(io.BytesIO(b"ok 1\n"), format="nunit"))


@pytest.mark.parametrize(
    "args",
    [
        ("ingest", "--report-format", "nunit", "-"),
        ("replay", "--base", "HEAD", "--seed", "1", "--property-file", "p", "--epoch-lock", "e",
         "--claimed-epoch", "d", "--patch-misses", "1", "--out", "f.json", "--no-config",
         "--report", "r.xml", "--report-format", "nunit", "--test-id", "t", "--", "true"),
    ],
)  # fmt: skip
def test_the_cli_checks_report_formats_against_the_registry(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "'nunit'" in done.stderr
    assert all(name in done.stderr for name in flakecore_adapters.FORMATS)
    assert done.stdout == ""
