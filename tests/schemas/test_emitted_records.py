"""Property tests: what the library emits validates, and the schemas never let a refusal through.

Two directions, over generated evidence (mostly valid packets with a few
fields broken, and plain garbage):

- every record flakecore writes (decisions, freeze records, ledger rows,
  attempt records, log summaries) is valid against its schema;
- a packet its schema rejects is never accepted by the policy, and a log the
  reducer accepts has only schema-valid lines.  (The reverse is not claimed:
  the schemas cannot see every policy rule, e.g. ``5.0`` or cross-field checks.)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from packets import admit_packet, budget_packet, classify_report, decide_packet

import flakecore
from flakecore import (
    Attempt,
    AttemptFlag,
    AttemptResult,
    AttemptWriter,
    LogStatus,
    Outcome,
    Source,
    lease,
    validation,
)

A, B, C = "a" * 64, "b" * 64, "c" * 64
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
DROP = "<drop>"
SETTINGS = settings(max_examples=150)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
#: Values that look almost right: the inputs a careless writer produces.
TRICKY = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        5.0,
        2.5,
        "",
        " ",
        "\t",
        "\u3000",
        "\u00a0",
        "\u001c",
        "\u0085",
        "\ufeff",
        "\u200b",
        "false",
        "true",
        "5",
        "pass",
        "PASS",
        "miss",
        "sha256:" + A,
        A.upper(),
        A + "\n",
        A[:63],
        A + "a",
        "epoch-2026-11",
        "1" * 40,
        "1" * 39,
        [],
        {},
        [1],
        {"a": 1},
        "2026-12-01T00:00:00",
        "soon",
        "2026-12-01T00:00:00Z",
        "img:local-uncontainerized+nonce:0123456789abcdef",
    ]
)
GARBAGE = TRICKY | JSON_VALUES
FORMATS = st.sampled_from(["1.0", "1.4", "2.0", "1", 1.0, None, DROP])


def assert_valid(record: object, kind: str) -> None:
    problems = [str(p) for p in validation.iter_errors(record, kind)]
    assert problems == [], (kind, record)


@st.composite
def mutated(
    draw: st.DrawFn,
    base: dict[str, object],
    good: Mapping[str, st.SearchStrategy[Any]],
    kind: str,
) -> Any:
    """``base`` with a few fields changed to another good value, garbage, or nothing."""
    if draw(st.integers(0, 19)) == 0:
        return draw(JSON_VALUES)  # not even an object
    packet = dict(base)
    keys = draw(st.lists(st.sampled_from(sorted(good)), max_size=3, unique=True))
    for key in keys:
        how = draw(st.sampled_from(["good", "good", "garbage", "drop"]))
        if how == "drop":
            packet.pop(key, None)
        else:
            packet[key] = draw(good[key] if how == "good" else GARBAGE)
    if draw(st.booleans()):
        packet["format"] = f"flakecore.{kind}" if draw(st.booleans()) else "flakecore.lease"
        version = draw(FORMATS)
        if version != DROP:
            packet["format_version"] = version
    if draw(st.integers(0, 9)) == 0:
        name = next(iter(base))
        packet[draw(st.sampled_from(["notes", name.capitalize(), name + " "]))] = draw(GARBAGE)
    return packet


DIGESTS = st.sampled_from([A, B])
SEEDS = st.integers(-5, 300) | st.text(max_size=4)
TEXT = st.text(max_size=12)
RUNNERS = st.sampled_from(
    [
        "img:sha256:" + A + "+nonce:0123456789abcdef",
        "img:sha256:" + A + "+nonce:fedcba9876543210",
        "IMG:SHA256:" + A.upper() + "+NONCE:0123456789ABCDEF",
        "laptop",
    ]
)

ADMIT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "base_misses": st.integers(-1, 7),
    "base_attempts": st.integers(-1, 7),
    "patch_misses": st.integers(-1, 3),
    "property_sha256": DIGESTS,
    "base_property_sha256": DIGESTS,
    "fixture_epoch": DIGESTS,
    "base_fixture_epoch": DIGESTS,
    "claimed_epoch": DIGESTS,
    "property_id": TEXT,
    "seed": SEEDS,
    "base_sha": st.sampled_from(["1" * 40, A, B]),
}
DECIDE_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "test_id": TEXT,
    "patch_hash": DIGESTS | TEXT,
    "fixture_hash": st.sampled_from([B, C]),
    "minimized_input_hash": st.sampled_from([B, C]),
    "oracle_version": TEXT,
    "local_runner_id": RUNNERS,
    "clean_runner_id": RUNNERS,
    "local_class": st.sampled_from(["flake_shaped", "deterministic", "environment", "pass"]),
    "clean_class": st.sampled_from(["flake_shaped", "deterministic", "environment", "pass"]),
    "clean_fixture_hash": st.sampled_from([B, C, ""]),
    "clean_input_hash": st.sampled_from([B, C, ""]),
    "property_cohort_passed": st.booleans(),
    "clean_run_completed": st.booleans(),
}
BUDGET_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "test_id": TEXT,
    "parent_digest": DIGESTS,
    "head_digest": DIGESTS,
    "property_holds": st.none() | st.booleans(),
    "seeds": st.lists(SEEDS, max_size=10)
    | st.sampled_from([[11, 23, 47, 71, 97, 131, 173, 211], [1, "1", 2, "2", 3, "3", 4, "4"]]),
    "passes": st.none() | st.integers(-1, 10),
    "budget": st.integers(-1, 10),
    "opened_against": st.sampled_from(["2" * 40, A, "2" * 12]),
}


def timestamps() -> st.SearchStrategy[str]:
    offsets = st.sampled_from([0, 330, -480, 60 * 14 - 1])

    def show(hours: float, offset: int, zulu: bool) -> str:
        when = NOW + dt.timedelta(hours=hours)
        text = when.astimezone(dt.timezone(dt.timedelta(minutes=offset))).isoformat()
        return text.replace("+00:00", "Z") if zulu else text

    return st.builds(show, st.floats(-72, 24 * 30), offsets, st.booleans())


REPLAYS = st.lists(
    st.fixed_dictionaries(
        {
            "attempt_id": st.sampled_from(["r1", "r2", "r3", "r4", "r5", "r6"]) | TEXT,
            "passed": st.booleans(),
        },
        optional={
            "exit_code": st.sampled_from([0, 1, None, -9]),
            "duration_s": st.none() | st.floats(0, 100),
        },
    ),
    max_size=7,
)
CLASSIFY_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "property_verdict": st.sampled_from(["pass", "fail"]),
    "pin_status": st.sampled_from(["match", "mismatch"]),
    "origin_passed": st.booleans(),
    "replays": REPLAYS,
    "owner": TEXT | st.just("ci-bot"),
    "expires_at": timestamps(),
    "budget": st.integers(0, 7),
    "pinned_sha256": DIGESTS,
    "canary": st.none() | TEXT,
}


def check_policy(
    packet: Any,
    kind: str,
    judge: Callable[[Any], flakecore.Decision[Any]],
) -> flakecore.Decision[Any]:
    decision = judge(packet)
    record = decision.to_json()
    assert_valid(record, "decision")
    assert_valid({**record, "input": "-:1"}, "decision")
    if not validation.is_valid(packet, kind):
        assert not decision.accepted, "the schema refuses a packet the policy accepts"
    return decision


@SETTINGS
@given(mutated(admit_packet(), ADMIT_FIELDS, "admit-packet"))
def test_admit(packet: Any) -> None:
    decision = check_policy(packet, "admit-packet", flakecore.admit)
    record = flakecore.freeze_record(packet)
    assert (record is not None) is decision.accepted
    if record is not None:
        assert_valid(record, "freeze-record")


@SETTINGS
@given(mutated(decide_packet(), DECIDE_FIELDS, "decide-packet"))
def test_decide(packet: Any) -> None:
    check_policy(packet, "decide-packet", flakecore.decide)


@SETTINGS
@given(
    mutated(budget_packet(), BUDGET_FIELDS, "budget-packet"),
    st.dates(dt.date(2000, 1, 1), dt.date(2100, 1, 1)),
)
def test_budget(packet: Any, today: dt.date) -> None:
    decision = check_policy(packet, "budget-packet", flakecore.budget)
    row = flakecore.ledger_row(packet, today=today)
    if row is not None:
        assert decision.accepted
        assert_valid(row, "ledger-row")


@SETTINGS
@given(
    mutated(classify_report(), CLASSIFY_FIELDS, "classify-report"),
    st.sampled_from([0, 1, -7 * 24, 10 * 24]),
    st.sampled_from([0, 60, -300]),
)
def test_classify(report: Any, shift_hours: int, offset_minutes: int) -> None:
    now = (NOW + dt.timedelta(hours=shift_hours)).astimezone(
        dt.timezone(dt.timedelta(minutes=offset_minutes))
    )
    check_policy(report, "classify-report", lambda r: flakecore.classify(r, now=now))


SOURCES = st.builds(
    Source,
    file=st.sampled_from(["-", "reports/junit.xml"]) | TEXT,
    format=st.sampled_from(["junit", "pytest-json", "pytest-reportlog", "tap"]),
    line=st.none() | st.integers(1, 10**6),
    classname=st.none() | TEXT,
    name=st.none() | TEXT,
    suite=st.none() | TEXT,
    number=st.none() | st.integers(0, 10**4),
    description=st.none() | TEXT,
    subtest_path=st.lists(TEXT, max_size=3).map(tuple),
)


@SETTINGS
@given(
    st.builds(
        Attempt,
        test_id=TEXT.filter(lambda s: s.strip() != ""),
        outcome=st.sampled_from(Outcome),
        native=TEXT,
        attempt=st.integers(1, 50),
        source=SOURCES,
        duration_s=st.none() | st.floats() | st.integers(-5, 5),
        message=st.none() | st.text(max_size=40),
        flags=st.frozensets(st.sampled_from(AttemptFlag)),
    )
)
def test_attempt_records(attempt: Attempt) -> None:
    record = attempt.to_json()
    assert_valid(record, "attempt-record")
    assert_valid(json.loads(json.dumps(record)), "attempt-record")


#: Ways an attempt log goes wrong on disk (SPEC 2); the reducer refuses each.
DEFECTS = st.sampled_from(
    [
        None,
        None,
        "no-newline",
        "blank-line",
        "crlf",
        "gap",
        "extra-field",
        "bad-result",
        "seed",
        "empty",
        "float-n",
        "bom",
    ]
)


def _corrupt(lines: list[bytes], defect: str | None) -> bytes:
    if defect == "empty":
        return b""
    if defect == "gap" and len(lines) > 1:
        del lines[0]
    elif defect == "extra-field":
        lines[-1] = lines[-1][:-2] + b',"worker":2}\n'
    elif defect == "bad-result":
        lines[-1] = lines[-1].replace(b'"result":"', b'"result":"X')
    elif defect == "seed":
        lines[-1] = (
            json.dumps({**json.loads(lines[-1]), "seed": [1]}, separators=(",", ":")).encode()
            + b"\n"
        )
    elif defect == "float-n":
        obj = json.loads(lines[-1])
        lines[-1] = (
            json.dumps({**obj, "n": float(obj["n"])}, separators=(",", ":")).encode() + b"\n"
        )
    data = b"".join(lines)
    if defect == "no-newline":
        data = data[:-1]
    elif defect == "blank-line":
        data += b"\n"
    elif defect == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif defect == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.integers(-3, 3) | st.text(max_size=4),
            st.lists(st.sampled_from(AttemptResult), min_size=1, max_size=6),
            DEFECTS,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_attempt_logs_and_their_summary(
    workers: list[tuple[Any, list[AttemptResult], str | None]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (seed, results, defect) in enumerate(workers):
            path = os.path.join(tmp, f"worker-{i}.jsonl")
            with AttemptWriter(path, seed) as writer:
                for result in results:
                    writer.append(result)
            with open(path, "rb") as fh:
                written = fh.read().splitlines(keepends=True)
            for line in written:
                assert_valid(json.loads(line), "attempt-line")  # what the writer writes
            with open(path, "wb") as fh:
                fh.write(_corrupt(written, defect))
            paths.append(path)
        summary = flakecore.reduce_logs(paths)
        assert_valid(summary.to_json(), "attempts-summary")
        if summary.status is LogStatus.COMPLETE:
            for path in paths:  # an accepted log has only schema-valid lines
                with open(path, "rb") as fh:
                    for line in fh.read().split(b"\n")[:-1]:
                        assert validation.is_valid(json.loads(line), "attempt-line")


LINE_VALUES = st.fixed_dictionaries(
    {},
    optional={
        "seed": SEEDS | GARBAGE,
        "n": st.just(1) | GARBAGE,
        "result": st.sampled_from([r.value for r in AttemptResult]) | GARBAGE,
        "Result": GARBAGE,
        "attempt": GARBAGE,
    },
)


@SETTINGS
@given(LINE_VALUES)
def test_a_line_the_schema_refuses_is_refused_by_the_reducer(line: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log.jsonl")
        with open(path, "wb") as fh:
            fh.write(json.dumps(line, separators=(",", ":"), ensure_ascii=True).encode() + b"\n")
        summary = flakecore.reduce_logs([path])
    if not validation.is_valid(line, "attempt-line"):
        assert summary.status is LogStatus.INCOMPLETE


LEASE_REPORT = classify_report(pinned_sha256=A, canary="nightly-canary")
HOSTS = st.sampled_from(
    [
        "img:sha256:" + A + "+nonce:0123456789abcdef",
        "img:local-uncontainerized+nonce:fedcba9876543210",
        "img:" + B + "+nonce:00000000000000ff",
    ]
) | st.sampled_from(["ci-runner-7", "", "img:local-uncontainerized+nonce:FEDCBA9876543210"])
#: Mostly roles that are apart, sometimes not (blank, or the author in disguise).
ACCEPTORS = st.sampled_from(["review-policy-job", "release-manager"]) | st.sampled_from(
    ["", " ", "Coding-Agent-7 ", "img:local-uncontainerized+nonce:fedcba9876543210"]
)
AUTHORS = st.sampled_from(["coding-agent-7"]) | st.sampled_from(["", "review-policy-job"]) | TEXT
PEOPLE = ACCEPTORS | AUTHORS


@SETTINGS
@given(
    mutated(LEASE_REPORT, CLASSIFY_FIELDS, "classify-report"),
    HOSTS,
    ACCEPTORS,
    AUTHORS,
    st.none() | st.just(A) | TEXT,
    st.none() | st.just("oracle-3"),
    st.sampled_from([None, None, None, "nightly-canary", "other-canary", ""]),
)
def test_leases_the_library_opens_validate(
    report: Any,
    host: str,
    acceptor: str,
    author: str,
    patch_hash: str | None,
    oracle: str | None,
    canary: str | None,
) -> None:
    if not isinstance(report, dict):
        return
    roles = lease.Roles(
        replay_host=host,
        accepted_by=acceptor,
        patch_author=author,
        patch_hash=patch_hash,
        oracle_version=oracle,
    )
    outcome = lease.build_lease(
        report, test_id="tests/t.py::t", roles=roles, now=NOW, canary=canary
    )
    if outcome.record is not None:
        assert_valid(outcome.record, "lease")
        assert lease.lease_problems(outcome.record, now=NOW) == []


LEASE_FIELDS_GOOD: dict[str, st.SearchStrategy[Any]] = {
    "test_id": TEXT,
    "owner": TEXT,
    "canary": TEXT,
    "accepted_by": PEOPLE,
    "patch_author": PEOPLE,
    "replay_host": HOSTS,
    "greens": st.integers(-1, 6),
    "budget": st.integers(-1, 6),
    "expires_at": timestamps(),
    "opened_at": timestamps(),
    "pinned_sha256": DIGESTS,
    "patch_hash": TEXT,
    "oracle_version": TEXT,
    "attempt_ids": st.lists(st.sampled_from(["r1", "r2", "r3", "r4", "r5", " "]), max_size=6),
}


@SETTINGS
@given(st.data())
def test_a_lease_the_schema_refuses_is_refused_by_the_checker(data: st.DataObject) -> None:
    roles = lease.Roles(
        replay_host="img:local-uncontainerized+nonce:fedcba9876543210",
        accepted_by="review-policy-job",
        patch_author="coding-agent-7",
        patch_hash=A,
    )
    opened = lease.build_lease(LEASE_REPORT, test_id="tests/t.py::t", roles=roles, now=NOW)
    assert opened.record is not None
    record = data.draw(mutated(opened.record, LEASE_FIELDS_GOOD, "lease"))
    if not validation.is_valid(record, "lease"):
        assert lease.lease_problems(record, now=NOW) != []


@settings(max_examples=60)
@given(
    st.lists(
        st.text(min_size=1, max_size=40).filter(str.strip), min_size=1, max_size=5, unique=True
    ),
    st.sampled_from(["main", "gw0", "gw17"]),
)
def test_log_directory_index_lines_are_valid(test_ids: list[str], worker: str) -> None:
    from flakecore.logdir import LogDirectory, index_name, read_log_dir

    with tempfile.TemporaryDirectory() as tmp:
        logs = LogDirectory(tmp, worker, "s")
        for test_id in test_ids:
            logs.append(test_id, AttemptResult.PASS)
        logs.close()
        with open(os.path.join(tmp, index_name(worker)), "rb") as fh:
            lines = fh.read().splitlines()
        assert len(lines) == len(test_ids)
        for line in lines:
            assert_valid(json.loads(line), "log-index-line")  # what the writer writes
        assert sorted(read_log_dir(tmp)) == sorted(test_ids)  # and what the reader accepts
