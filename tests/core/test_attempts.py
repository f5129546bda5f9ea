"""Attempt logs: the append-only writer and every refusal of SPEC 2's reducer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flakecore import AttemptResult, AttemptWriter, InputError, LogStatus, Policy, reduce_logs


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def lines(*results: str, seed: str = '"pinned-seed"', start: int = 1) -> bytes:
    return b"".join(
        f'{{"seed":{seed},"n":{n},"result":"{r}"}}\n'.encode()
        for n, r in enumerate(results, start=start)
    )


def test_complete_log(tmp_path: Path) -> None:
    log = write(tmp_path, "a.jsonl", lines("pass", "miss", "error", "skip", "timeout", "miss"))
    summary = reduce_logs([log])
    assert summary.status is LogStatus.COMPLETE
    assert (summary.attempts, summary.misses) == (6, 2)
    assert summary.seed == "pinned-seed"
    assert summary.results == {"pass": 1, "miss": 2, "error": 1, "skip": 1, "timeout": 1}


def test_two_workers_sum(tmp_path: Path) -> None:
    a = write(tmp_path, "w1.jsonl", lines("pass", "miss"))
    b = write(tmp_path, "w2.jsonl", lines("miss"))
    summary = reduce_logs([a, b])
    assert summary.complete
    assert (summary.attempts, summary.misses) == (3, 2)


VALID = '{"seed":"s","n":1,"result":"pass"}\n'
BAD_LOGS = {
    "empty": b"",
    "missing final newline": b'{"seed":"s","n":1,"result":"pass"}',
    "blank line": VALID.encode() + b"\n",
    "leading blank line": b"\n" + VALID.encode(),
    "CRLF": b'{"seed":"s","n":1,"result":"pass"}\r\n',
    "surrounding whitespace": b' {"seed":"s","n":1,"result":"pass"}\n',
    "not compact": b'{"seed": "s", "n": 1, "result": "pass"}\n',
    "BOM": b'\xef\xbb\xbf{"seed":"s","n":1,"result":"pass"}\n',
    "no result": b'{"seed":"s","n":1}\n',
    "no seed": b'{"n":1,"result":"pass"}\n',
    "no n": b'{"seed":"s","result":"pass"}\n',
    "extra field": b'{"seed":"s","n":1,"result":"pass","note":"x"}\n',
    "result MISS": b'{"seed":"s","n":1,"result":"MISS"}\n',
    "result fail": b'{"seed":"s","n":1,"result":"fail"}\n',
    "result with space": b'{"seed":"s","n":1,"result":"pass "}\n',
    "result null": b'{"seed":"s","n":1,"result":null}\n',
    "n float": b'{"seed":"s","n":1.0,"result":"pass"}\n',
    "n string": b'{"seed":"s","n":"1","result":"pass"}\n',
    "n bool": b'{"seed":"s","n":true,"result":"pass"}\n',
    "n starts at 0": b'{"seed":"s","n":0,"result":"pass"}\n',
    "gap in n": lines("pass", "pass").replace(b'"n":2', b'"n":3'),
    "repeated n": lines("pass", "pass").replace(b'"n":2', b'"n":1'),
    "out of order": lines("pass", "miss", "pass")
    .replace(b'"n":2', b'"n":9')
    .replace(b'"n":3', b'"n":2')
    .replace(b'"n":9', b'"n":3'),
    "mixed seeds": lines("pass") + b'{"seed":"t","n":2,"result":"pass"}\n',
    "seed int vs string": b'{"seed":1234,"n":1,"result":"pass"}\n{"seed":"1234","n":2,"result":"pass"}\n',
    "seed float": b'{"seed":1.5,"n":1,"result":"pass"}\n',
    "duplicate key": b'{"seed":"s","n":1,"result":"miss","result":"pass"}\n',
    "top-level array": b'["s",1,"pass"]\n',
    "invalid utf-8": b'{"seed":"\xff","n":1,"result":"pass"}\n',
    "truncated mid-line": lines("pass") + b'{"seed":"pinned-se',
    "two workers concatenated": lines("pass", "miss") + lines("pass"),
    "U+2028 does not split": b'{"seed":"a\xe2\x80\xa8b","n":1,"result":"pass"}\n{"seed":"x","n":2,"result":"pass"}\n',
    "NaN": b'{"seed":NaN,"n":1,"result":"pass"}\n',
}


@pytest.mark.parametrize("data", list(BAD_LOGS.values()), ids=list(BAD_LOGS))
def test_refused(tmp_path: Path, data: bytes) -> None:
    summary = reduce_logs([write(tmp_path, "log.jsonl", data)])
    assert summary.status is LogStatus.INCOMPLETE
    assert summary.reasons


def test_u2028_inside_a_string_is_one_line(tmp_path: Path) -> None:
    data = b'{"seed":"a\xe2\x80\xa8b","n":1,"result":"miss"}\n'
    summary = reduce_logs([write(tmp_path, "log.jsonl", data)])
    assert summary.complete
    assert summary.misses == 1


def test_second_worker_with_another_seed(tmp_path: Path) -> None:
    a = write(tmp_path, "a", lines("pass"))
    b = write(tmp_path, "b", lines("pass", seed='"other"'))
    assert reduce_logs([a, b]).status is LogStatus.INCOMPLETE


def test_size_limit_refused_without_reading_to_the_end(tmp_path: Path) -> None:
    log = write(tmp_path, "big", lines(*["pass"] * 11) + b"garbage that is never read")
    summary = reduce_logs([log], policy=Policy(max_log_lines=10))
    assert summary.status is LogStatus.INCOMPLETE
    assert "more than 10 lines" in summary.reasons[0]
    exact = write(tmp_path, "exact", lines(*["pass"] * 10))
    assert reduce_logs([exact], policy=Policy(max_log_lines=10)).complete


def test_log_longer_than_cap_reduces_fine(tmp_path: Path) -> None:
    summary = reduce_logs([write(tmp_path, "log", lines(*["miss"] * 7))])
    assert summary.complete
    assert summary.attempts == 7


def test_huge_line_refused(tmp_path: Path) -> None:
    log = write(tmp_path, "log", b'{"seed":"' + b"x" * 100_000 + b'","n":1,"result":"pass"}\n')
    assert reduce_logs([log]).status is LogStatus.INCOMPLETE


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        reduce_logs([tmp_path / "absent"])


def test_no_files() -> None:
    assert reduce_logs([]).status is LogStatus.INCOMPLETE


def test_writer_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    with AttemptWriter(path, seed=1234) as writer:
        assert writer.append(AttemptResult.PASS) == 1
        assert writer.append(AttemptResult.MISS) == 2
    assert path.read_bytes() == (
        b'{"seed":1234,"n":1,"result":"pass"}\n{"seed":1234,"n":2,"result":"miss"}\n'
    )
    summary = reduce_logs([path])
    assert summary.complete
    assert summary.seed == 1234


def test_writer_never_reopens_an_existing_log(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    AttemptWriter(path, seed="s").close()
    with pytest.raises(FileExistsError):
        AttemptWriter(path, seed="s")


def test_writer_rejects_a_bad_seed(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        AttemptWriter(tmp_path / "w", seed=1.5)  # type: ignore[arg-type]


def test_writer_kill_mid_line_is_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    with AttemptWriter(path, seed="s") as writer:
        writer.append(AttemptResult.PASS)
    with open(path, "ab") as fh:  # what a writer killed inside os.write leaves
        fh.write(b'{"seed":"s","n":2,"res')
    assert reduce_logs([path]).status is LogStatus.INCOMPLETE


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200)
@given(data=st.binary(max_size=300))
def test_reducer_never_counts_more_misses_than_lines(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    summary = reduce_logs([path])
    assert summary.misses <= summary.attempts <= data.count(b"\n")
    if summary.complete:
        assert data.endswith(b"\n")
        assert os.path.getsize(path) > 0


@pytest.mark.parametrize("hold", [True, False])
def test_a_log_written_without_fsync_is_the_same_log(tmp_path: Path, hold: bool) -> None:
    """``durable=False`` (a replay's temporary log) skips the fsync and nothing else."""
    results = [AttemptResult.MISS, AttemptResult.PASS, AttemptResult.TIMEOUT, AttemptResult.MISS]
    logs = []
    for durable in (True, False):
        path = tmp_path / f"durable-{durable}.jsonl"
        with AttemptWriter(path, seed=7, hold=hold, durable=durable) as writer:
            for result in results:
                writer.append(result)
        logs.append(path)
    assert logs[0].read_bytes() == logs[1].read_bytes()
    one, other = (reduce_logs([p]) for p in logs)
    assert (one.status, one.attempts, one.misses) == (other.status, other.attempts, other.misses)
    assert (one.attempts, one.misses) == (4, 2)
