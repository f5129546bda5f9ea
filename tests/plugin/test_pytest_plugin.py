"""The pytest plugin, run for real: pytester sessions in fresh interpreters, exact log bytes.

Every session here is a subprocess (``runpytest_subprocess``), so the plugin
is loaded the way a user gets it: through the ``pytest11`` entry point of the
installed wheel.  Expected file names are computed here from the node ids
(sha256), not through the plugin's own helpers.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re

import pytest

from flakecore import reduce_logs
from flakecore.logdir import read_log_dir

pytest_plugins = ["pytester"]

#: One test per attempt result the plugin tells apart, classes and odd parameters included.
SUITE = """
import pytest


@pytest.fixture
def broken_setup():
    raise RuntimeError("set-up exploded")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown exploded")


def test_pass():
    assert True


def test_assert():
    assert 1 == 2


def test_exception():
    raise ValueError("not an assertion")


def test_pytest_fail():
    pytest.fail("an explicit failure is not an assertion")


def test_setup_error(broken_setup):
    pass


def test_teardown_error(broken_teardown):
    pass


def test_assert_then_teardown_error(broken_teardown):
    assert False


def test_skip():
    pytest.skip("not here")


@pytest.mark.skip(reason="marked")
def test_skip_marker():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="known")
def test_xpass():
    pass


@pytest.mark.xfail(reason="known", strict=True)
def test_xpass_strict():
    pass


def test_group():
    raise ExceptionGroup("two", [AssertionError("a"), AssertionError("b")])


def test_mixed_group():
    raise ExceptionGroup("two", [AssertionError("a"), OSError("b")])


class TestOuter:
    class TestInner:
        @pytest.mark.parametrize("p", ["a::b", "c/d.e", "[x]"])
        def test_param(self, p):
            assert p != "c/d.e"
"""

#: node id -> the attempt result the plugin must record for it.
RESULTS = {
    "test_suite.py::test_pass": "pass",
    "test_suite.py::test_assert": "miss",
    "test_suite.py::test_exception": "error",
    "test_suite.py::test_pytest_fail": "error",
    "test_suite.py::test_setup_error": "error",
    "test_suite.py::test_teardown_error": "error",
    "test_suite.py::test_assert_then_teardown_error": "error",
    "test_suite.py::test_skip": "skip",
    "test_suite.py::test_skip_marker": "skip",
    "test_suite.py::test_xfail": "skip",
    "test_suite.py::test_xpass": "pass",
    "test_suite.py::test_xpass_strict": "error",
    "test_suite.py::test_group": "miss",
    "test_suite.py::test_mixed_group": "error",
    "test_suite.py::TestOuter::TestInner::test_param[a::b]": "pass",
    "test_suite.py::TestOuter::TestInner::test_param[c/d.e]": "miss",
    "test_suite.py::TestOuter::TestInner::test_param[[x]]": "pass",
}


def _name(node_id: str, worker: str) -> str:
    return hashlib.sha256(node_id.encode()).hexdigest() + f".{worker}.jsonl"


def _line(seed: int | str, n: int, result: str) -> bytes:
    return (
        json.dumps({"seed": seed, "n": n, "result": result}, separators=(",", ":")).encode() + b"\n"
    )


def _index(node_ids: list[str], worker: str) -> bytes:
    lines = (
        json.dumps({"test_id": i, "log": _name(i, worker)}, separators=(",", ":")) + "\n"
        for i in node_ids
    )
    return "".join(lines).encode()


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    backport = (
        "" if hasattr(builtins, "ExceptionGroup") else "from exceptiongroup import ExceptionGroup\n"
    )
    pytester.makepyfile(test_suite=backport + SUITE)
    return pytester


def test_every_result_exactly_one_log_per_test(suite: pytest.Pytester) -> None:
    run = suite.runpytest_subprocess(
        "-p", "no:cacheprovider", "--flakecore-log", "logs", "--flakecore-seed", "1234"
    )
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    run.stdout.fnmatch_lines(
        ["flakecore: seed 1234 (pinned; again: --flakecore-seed 1234), attempt logs in *logs"]
    )
    logs = suite.path / "logs"
    expected = {_name(i, "main"): _line(1234, 1, r) for i, r in RESULTS.items()}
    expected["index.main.jsonl"] = _index(list(RESULTS), "main")
    assert {p.name: p.read_bytes() for p in logs.iterdir()} == expected
    tests = read_log_dir(logs)
    assert tests == {i: (logs / _name(i, "main"),) for i in RESULTS}
    summary = reduce_logs(tests["test_suite.py::test_assert"])
    assert (summary.complete, summary.attempts, summary.misses, summary.seed) == (True, 1, 1, 1234)


def test_reruns_append_n_and_a_string_seed_stays_a_string(suite: pytest.Pytester) -> None:
    run = suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--reruns",
        "2",
        "--flakecore-log",
        "logs",
        "--flakecore-seed",
        "007",
        "test_suite.py::test_pass",
        "test_suite.py::test_assert",
        "test_suite.py::test_setup_error",
    )
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    logs = suite.path / "logs"
    assert (logs / _name("test_suite.py::test_pass", "main")).read_bytes() == _line(
        "007", 1, "pass"
    )
    assert (logs / _name("test_suite.py::test_assert", "main")).read_bytes() == b"".join(
        _line("007", n, "miss") for n in (1, 2, 3)
    )
    assert (logs / _name("test_suite.py::test_setup_error", "main")).read_bytes() == b"".join(
        _line("007", n, "error") for n in (1, 2, 3)
    )


def test_a_test_collected_twice_continues_its_log(suite: pytest.Pytester) -> None:
    run = suite.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--keep-duplicates",
        "--flakecore-log",
        "logs",
        "--flakecore-seed",
        "5",
        "test_suite.py",
        "test_suite.py",
        "-k",
        "test_assert and not teardown",
    )
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    log = suite.path / "logs" / _name("test_suite.py::test_assert", "main")
    assert log.read_bytes() == _line(5, 1, "miss") + _line(5, 2, "miss")


def test_xdist_workers_write_their_own_logs_with_the_drawn_seed(suite: pytest.Pytester) -> None:
    run = suite.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--flakecore-log", "logs")
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    (header,) = [line for line in run.outlines if line.startswith("flakecore: seed")]
    match = re.fullmatch(
        r"flakecore: seed (\d+) \(drawn for this session; again: --flakecore-seed \1\), attempt logs in .*logs",
        header,
    )
    assert match is not None
    seed = int(match[1])
    logs = suite.path / "logs"
    tests = read_log_dir(logs)
    assert set(tests) == set(RESULTS)
    workers = {p.name.split(".")[1] for p in logs.iterdir()}
    assert workers == {"gw0", "gw1"}  # both ran tests (17 tests, load scheduling)
    for node_id, (log,) in tests.items():
        worker = log.name.split(".")[1]
        assert log.name == _name(node_id, worker)
        assert log.read_bytes() == _line(seed, 1, RESULTS[node_id])
    for worker in ("gw0", "gw1"):
        ran = [i for i, (log,) in tests.items() if log.name.endswith(f".{worker}.jsonl")]
        index = (logs / f"index.{worker}.jsonl").read_bytes()
        assert sorted(index.splitlines(keepends=True)) == sorted(
            _index(ran, worker).splitlines(keepends=True)
        )


NUMPY = """
import numpy


def test_numpy():
    print("NUMPY", numpy.random.randint(0, 2**31))
"""

PINNED = """
import os, random
import pytest
from hypothesis import given, settings, strategies as st

SEEN = []


@pytest.fixture
def drawn_in_fixture():
    return random.random()


def test_random(drawn_in_fixture):
    print("PIN", os.environ.get("FLAKECORE_SEED"), drawn_in_fixture, random.random())


@settings(max_examples=5, database=None)
@given(st.integers())
def test_hypothesis(x):
    SEEN.append(x)


def test_hypothesis_draws():
    print("HYPOTHESIS", SEEN)
"""


def _pins(pytester: pytest.Pytester, *args: str) -> dict[str, str]:
    """What each sample test printed: ``{"PIN": "42 0.1 0.2", "NUMPY": ..., "HYPOTHESIS": ...}``."""
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", *args)
    assert run.ret == pytest.ExitCode.OK, run.stdout.str()
    found = (re.search(r"(PIN|NUMPY|HYPOTHESIS) (.*)", line) for line in run.outlines)
    return {m[1]: m[2] for m in found if m}


def test_seed_pins_random_numpy_hypothesis_and_the_environment(pytester: pytest.Pytester) -> None:
    pytest.importorskip("numpy")
    pytester.makepyfile(test_pinned=PINNED, test_numpy=NUMPY)
    first = _pins(pytester, "--flakecore-seed", "42")
    assert sorted(first) == ["HYPOTHESIS", "NUMPY", "PIN"]
    assert first == _pins(pytester, "--flakecore-seed", "42")
    other = _pins(pytester, "--flakecore-seed", "43")
    assert all(first[k] != other[k] for k in first)
    env, fixture_value, body_value = first["PIN"].split()
    assert env == "42"
    assert fixture_value != body_value  # one stream: the fixture drew first, the body next
    assert _pins(pytester, "--flakecore-seed", "abc")["PIN"].startswith("abc ")


def test_without_options_the_plugin_does_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pinned=PINNED)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert run.ret == pytest.ExitCode.OK
    assert "flakecore: seed" not in run.stdout.str()
    assert re.search(r"^plugins: .*\bflakecore-", run.stdout.str(), re.MULTILINE)  # loaded, idle
    assert _pins(pytester)["PIN"].split()[0] == "None"  # no FLAKECORE_SEED
    assert _pins(pytester) != _pins(pytester)  # nothing pinned: fresh draws each run
    made = {p.name for p in pytester.path.iterdir() if not p.name.startswith("runpytest-")}
    assert made == {"test_pinned.py", "stdout", "stderr"}  # pytester's own capture files
    helptext = pytester.runpytest_subprocess("--help").stdout.str()
    assert "--flakecore-log=DIR" in helptext and "--flakecore-seed=SEED" in helptext


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--flakecore-seed", " "], "flakecore: a seed must not be blank"),
        (["--flakecore-log", "full"], "flakecore: --flakecore-log * is not empty: *"),
        (["--flakecore-log", "afile"], "flakecore: --flakecore-log *afile: File exists"),
    ],
)
def test_refusals_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_one="def test_one():\n    assert True\n")
    (pytester.path / "full").mkdir()
    (pytester.path / "full" / "index.main.jsonl").write_bytes(b"")
    (pytester.path / "afile").write_bytes(b"")
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert (pytester.path / "full" / "index.main.jsonl").read_bytes() == b""
