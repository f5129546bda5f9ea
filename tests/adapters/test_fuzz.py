"""Any bytes into any parser: records with valid outcomes, or an InputError, nothing else."""

from __future__ import annotations

import io

import flakecore_adapters
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.codes import Outcome
from flakecore.errors import InputError

SEEDS = {
    "junit": [
        b'<testsuite><testcase name="a" time="1"><failure message="m">t</failure></testcase>'
        b'<testcase classname="c" name="b"><flakyFailure/></testcase></testsuite>'
    ],
    "pytest-json": [
        b'{"summary": {"rerun": 1}, "collectors": [{"nodeid": "m", "outcome": "failed"}],'
        b' "tests": [{"nodeid": "a", "outcome": "rerun", "call": {"outcome": "passed"}}]}'
    ],
    "pytest-reportlog": [
        b'{"$report_type": "SessionStart"}\n{"nodeid": "a", "when": "setup",'
        b' "outcome": "passed", "$report_type": "TestReport"}\n'
    ],
    "tap": [
        b"TAP version 14\n1..2\n# Subtest: s\n    1..1\n    not ok 1 - x\n  ---\n  a: 1\n  ...\n"
        b"ok 1 - s # TODO\nBail out!\nok 2\n"
    ],
}
LIMITS = flakecore_adapters.Limits(reorder_window=3, max_depth=20, max_line_bytes=4096)


def _mutations(fmt: str) -> st.SearchStrategy[bytes]:
    seed = SEEDS[fmt][0]
    return st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda cut, junk, at: seed[:at] + junk + seed[at + cut :],
            st.integers(0, 20),
            st.binary(max_size=20),
            st.integers(0, len(seed)),
        ),
    )


def _check(data: bytes, fmt: str) -> None:
    try:
        attempts = list(
            flakecore_adapters.iter_attempts(io.BytesIO(data), format=fmt, limits=LIMITS)
        )
    except InputError:
        return
    for attempt in attempts:
        assert isinstance(attempt.outcome, Outcome)
        assert attempt.attempt >= 1
        flakecore_adapters.attempt_line(attempt)


@pytest.mark.parametrize("fmt", ["auto", *SEEDS])
@settings(max_examples=300, database=None)
@given(data=st.data())
def test_any_bytes_give_records_or_input_error(fmt: str, data: st.DataObject) -> None:
    source = data.draw(st.sampled_from(sorted(SEEDS))) if fmt == "auto" else fmt
    _check(data.draw(_mutations(source)), fmt)
