"""One test, one id: the same pytest node id from every pytest report format and the plugin.

The fixtures under ``fixtures/reports/pytest-ids/`` are one sample suite run by
real pytest (``make.sh``) into JUnit xunit1 and xunit2, pytest-json-report,
pytest-reportlog and flakecore's own plugin logs.  xunit2 cannot carry the
node id (no ``file``): its testcases keep the JUnit id, and the node id given
as the test id to keep matches them by the documented rule.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import flakecore_adapters
import pytest

from flakecore import reduce_logs
from flakecore.errors import InputError
from flakecore.logdir import read_log_dir
from flakecore.testids import junit_form

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "pytest-ids"
REPORTS = ["xunit1.xml", "report.json", "reportlog.jsonl"]

#: The suite's node ids as pytest prints them (console-*.txt), in run order.
NODE_IDS = [
    "tests/pkg/test_deep_ids.py::TestPkg::test_values[0.5]",
    "tests/pkg/test_deep_ids.py::TestPkg::test_values[None]",
    "tests/pkg/test_deep_ids.py::TestPkg::test_values[x.y]",
    "tests/pkg/test_deep_ids.py::test_in_package",
    "tests/test_ids.py::test_plain",
    "tests/test_ids.py::test_fails",
    "tests/test_ids.py::test_param[a::b]",
    "tests/test_ids.py::test_param[c.d/e]",
    "tests/test_ids.py::test_param[[x]]",
    "tests/test_ids.py::test_param[sp ace]",
    "tests/test_ids.py::test_param[\\xfcn\\xef]",
    'tests/test_ids.py::test_param[q"uote]',
    "tests/test_ids.py::test_param[back\\\\slash]",
    "tests/test_ids.py::test_param[<&>]",
    "tests/test_ids.py::TestOuter::test_method",
    "tests/test_ids.py::TestOuter::test_numbers[1]",
    "tests/test_ids.py::TestOuter::test_numbers[2]",
    "tests/test_ids.py::TestOuter::TestInner::test_inner",
    "tests/test_ids.py::TestOuter::TestInner::TestDeepest::test_deepest[id::with.dots/and[brackets]]",
    "tests/test_ids.py::TestParamClass::test_m[A]",
    "tests/test_ids.py::TestParamClass::test_m[B]",
    "tests/test_ids.py::TestParamClass::test_skipped[A]",
    "tests/test_ids.py::TestParamClass::test_skipped[B]",
]
FAILING = {"tests/test_ids.py::test_fails", "tests/test_ids.py::TestOuter::TestInner::test_inner"}
SKIPPED = {i for i in NODE_IDS if "test_skipped" in i}
_CONSOLE = re.compile(r"^(.+) (PASSED|FAILED|SKIPPED \(.*\)) +\[ *\d+%\]$")


def _outcome(node_id: str) -> str:
    return "fail" if node_id in FAILING else "skip" if node_id in SKIPPED else "pass"


@pytest.mark.parametrize("console", sorted(p.name for p in HERE.glob("console-*.txt")))
def test_every_run_printed_these_node_ids(console: str) -> None:
    lines = (HERE / console).read_text(encoding="utf-8").splitlines()
    assert [m[1] for line in lines if (m := _CONSOLE.match(line))] == NODE_IDS


def test_same_ids_from_every_format_and_the_plugin() -> None:
    found = {report: list(flakecore_adapters.iter_test_ids(HERE / report)) for report in REPORTS}
    found["plugin-logs/"] = list(read_log_dir(HERE / "plugin-logs"))
    assert found == dict.fromkeys(found, NODE_IDS)
    # xunit2 keeps pytest's JUnit form of each (the node id cannot be derived from it).
    assert list(flakecore_adapters.iter_test_ids(HERE / "xunit2.xml")) == [
        junit_form(i) for i in NODE_IDS
    ]


@pytest.mark.parametrize("node_id", NODE_IDS)
def test_a_node_id_selects_its_attempt_in_every_format(node_id: str) -> None:
    for report in [*REPORTS, "xunit2.xml"]:
        got = [
            (a.test_id, a.outcome.value, a.attempt)
            for a in flakecore_adapters.iter_attempts(HERE / report, test_id=node_id)
        ]
        assert got == [(node_id, _outcome(node_id), 1)], report
        # The text path (what ``flakecore ingest --test-id`` writes) says the same.
        lines = b"".join(flakecore_adapters.iter_jsonl(HERE / report, test_id=node_id)).splitlines()
        assert [json.loads(line)["test_id"] for line in lines] == [node_id], report
    (log,) = read_log_dir(HERE / "plugin-logs")[node_id]
    summary = reduce_logs([log])
    miss = node_id in FAILING
    assert (summary.complete, summary.attempts, summary.misses, summary.seed) == (
        True,
        1,
        int(miss),
        1234,
    )
    assert summary.results == {{"fail": "miss"}.get(_outcome(node_id), _outcome(node_id)): 1}


def _ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flakecore", "ingest", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("report", [*REPORTS, "xunit2.xml"])
def test_list_ids(report: str) -> None:
    run = _ingest("--list-ids", str(HERE / report))
    assert run.returncode == 0, run.stderr
    want = NODE_IDS if report != "xunit2.xml" else [junit_form(i) for i in NODE_IDS]
    assert run.stdout.splitlines() == want
    assert run.stderr == "ingest: 23 test ids in 1 report\n"


def test_list_ids_of_several_reports_lists_each_id_once(tmp_path: Path) -> None:
    out = tmp_path / "ids.txt"
    run = _ingest(
        "--list-ids", "--out", str(out), *(str(HERE / r) for r in [*REPORTS, "xunit2.xml"])
    )
    assert run.returncode == 0, run.stderr
    assert out.read_text(encoding="utf-8").splitlines() == NODE_IDS + [
        junit_form(i) for i in NODE_IDS
    ]


def test_list_ids_and_test_id_together_is_a_usage_error() -> None:
    run = _ingest("--list-ids", "--test-id", NODE_IDS[0], str(HERE / "report.json"))
    assert (run.returncode, run.stdout) == (64, "")


def test_a_missing_id_names_the_closest_ones() -> None:
    wanted = "tests/test_ids.py::TestOuter::test_number[1]"
    run = _ingest("--test-id", wanted, str(HERE / "report.json"))
    assert run.returncode == 65
    assert run.stdout == ""
    assert run.stderr.splitlines()[-1] == (
        f"flakecore: ingest: no attempt of test {wanted!r} in the reports; closest: "
        "'tests/test_ids.py::TestOuter::test_numbers[1]', 'tests/test_ids.py::TestOuter::test_numbers[2]', "
        "'tests/test_ids.py::TestOuter::test_method'"
    )
    far = _ingest("--test-id", "zzz", str(HERE / "report.json"))
    assert far.stderr.splitlines()[-1] == (
        "flakecore: ingest: no attempt of test 'zzz' in the reports; "
        "none is close among its 23 ids (--list-ids prints them)"
    )


def test_an_unusable_report_lists_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_bytes((HERE / "xunit1.xml").read_bytes()[:-40])
    run = _ingest("--list-ids", str(bad))
    assert (run.returncode, run.stdout) == (65, "")
    with pytest.raises(InputError):
        list(flakecore_adapters.iter_test_ids(bad))
