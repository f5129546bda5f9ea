"""TAP 13/14: plans, directives, subtests, bail out, YAML kept as text."""

from __future__ import annotations

import io
import json
from typing import Any

import flakecore_adapters
import pytest

from flakecore.codes import AttemptFlag
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, blocking_flags


def run(data: bytes, fmt: str = "auto", **kwargs: Any) -> list[Attempt]:
    """All attempts of ``data`` read as format ``fmt``."""
    stream = io.BytesIO(data)
    return list(flakecore_adapters.iter_attempts(stream, format=fmt, source_name="r", **kwargs))


def summary(attempts: list[Attempt]) -> list[tuple[str, str, int, list[str]]]:
    """``(test_id, outcome, attempt, sorted flags)`` per attempt, for exact asserts."""
    return [
        (a.test_id, a.outcome.value, a.attempt, sorted(f.value for f in a.flags)) for a in attempts
    ]


def tap(text: str) -> list[tuple[str, str, int, list[str]]]:
    return summary(run(text.encode("utf-8"), "tap"))


def test_basic_points_and_directives_in_any_case() -> None:
    assert tap(
        "TAP version 14\n1..7\nok 1 - passes\nnot ok 2 - fails\nok 3 # skip no net\n"
        "not ok 4 - todo fails # todo later\nok 5 - todo passes # TODO later\n"
        "ok 6 # SkIp\nnot ok 7\n"
    ) == [
        ("passes", "pass", 1, []),
        ("fails", "fail", 1, []),
        ("#3", "skip", 1, []),
        ("todo fails", "skip", 1, []),
        ("todo passes", "pass", 1, ["unexpected-pass"]),
        ("#6", "skip", 1, []),
        ("#7", "fail", 1, []),
    ]


def test_native_words() -> None:
    attempts = run(b"1..3\nnot ok 1 a # TODO x\nok 2 b # TODO\nnot ok 3 c # SKIP\n", "tap")
    assert [a.native for a in attempts] == ["not ok # TODO", "ok # TODO", "not ok # SKIP"]


def test_escaped_hash_is_not_a_directive() -> None:
    attempts = run(b"1..2\nok 1 - a \\# SKIP not really\nok 2 - b\\\\ # SKIP yes\n", "tap")
    assert summary(attempts) == [("a # SKIP not really", "pass", 1, []), ("b\\", "skip", 1, [])]
    assert attempts[0].source.description == "a # SKIP not really"


@pytest.mark.parametrize(
    ("line", "test_id", "outcome"),
    [
        ("not ok 1 - foo # bar", "foo # bar", "fail"),  # no directive: the '#' stays
        ("ok 1 - hash # in name", "hash # in name", "pass"),  # node-tap 14 does not escape
        ("ok 1 - a # description # todo", "a # description # todo", "pass"),
        ("ok 1 - word#skip", "word", "skip"),  # Perl's TAP::Parser: the first unescaped '#'
        ("ok 1 - a#b # SKIP later", "a#b", "skip"),  # tap-parser: the first '#' after a blank
        ("not ok 1 - hello # todo hash # character", "hello", "skip"),
        ("ok 1 - a # SKIPPED: no network", "a", "skip"),  # a directive by its stem
        ("not ok 1 - a # ToDo", "a", "skip"),
        ("not ok 1 - a \\# TODO", "a # TODO", "fail"),  # escaped
        ("ok 1 - a # time=12.5ms", "a", "pass"),  # node-tap's timing, not the description
        ("not ok 1 - times out # timeout after 1s", "times out", "timeout"),  # bats
        ("not ok 1 - a # timeout", "a # timeout", "fail"),  # not bats' form: no directive
    ],
)
def test_only_known_directives_end_the_description(line: str, test_id: str, outcome: str) -> None:
    (attempt,) = run(f"1..1\n{line}\n".encode(), "tap")
    assert (attempt.test_id, attempt.outcome.value) == (test_id, outcome)
    assert attempt.source.description == test_id


def test_time_directive_is_the_duration_unless_yaml_says_otherwise() -> None:
    attempts = run(
        b"1..3\nok 1 - a # time=12.5ms\nok 2 - b # time=2s\n"
        b"not ok 3 - c # time=1ms\n  ---\n  duration_ms: 40\n  ...\n",
        "tap",
    )
    assert [a.duration_s for a in attempts] == [0.0125, 2.0, 0.04]


def test_plan_last_and_skip_all() -> None:
    assert tap("ok 1 - a\nok 2 - b\n1..2\n") == [("a", "pass", 1, []), ("b", "pass", 1, [])]
    assert tap("1..0 # SKIP no database\n") == []


DEFECT = "stream-defect"


def test_missing_or_unfulfilled_plan_is_an_error_pseudo_attempt() -> None:
    assert tap("ok 1 - a\n") == [("a", "pass", 1, [DEFECT]), ("<plan>", "error", 1, [DEFECT])]
    assert tap("1..3\nok 1 - a\n") == [
        ("a", "pass", 1, [DEFECT]),
        ("<plan>", "error", 1, [DEFECT]),
    ]
    assert tap("1..1\nok 1 - a\nok 2 - b\n") == [
        ("a", "pass", 1, [DEFECT]),
        ("b", "pass", 1, [DEFECT]),
        ("<plan>", "error", 1, [DEFECT]),
    ]


def test_duplicate_test_numbers_are_an_error_pseudo_attempt_and_flagged_repeats() -> None:
    attempts = run(b"1..2\nok 1 - a\nnot ok 1 - a\n", "tap")
    assert summary(attempts) == [
        ("a", "pass", 1, ["conflicting-duplicate", DEFECT]),
        ("a", "fail", 2, ["conflicting-duplicate", DEFECT]),
        ("<plan>", "error", 1, [DEFECT]),
    ]
    assert attempts[-1].message is not None
    assert "out of sequence" in attempts[-1].message


def test_bail_out_flags_every_point_and_later_ones_twice() -> None:
    attempts = run(b"1..3\nok 1 - before\nBail out! db down\nok 2 - after\n", "tap")
    assert summary(attempts) == [
        ("before", "pass", 1, [DEFECT]),
        ("after", "pass", 1, ["bailed-out", DEFECT]),
        ("<plan>", "error", 1, ["bailed-out", DEFECT]),
    ]
    assert attempts[-1].message is not None
    assert "Bail out! db down" in attempts[-1].message


#: One stream per class of stream-level defect; the target "t" passes in each.
STREAM_DEFECTS = {
    "count mismatch": "1..3\nok 1 - t\nok 2 - u\n",
    "no plan": "ok 1 - t\nok 2 - u\n",
    "two plans": "1..2\nok 1 - t\nok 2 - u\n1..2\n",
    "plan in the middle": "ok 1 - t\n1..2\nok 2 - u\n",
    "skip-all plan with tests": "1..0 # SKIP nothing\nok 1 - t\n",
    "SKIP on a plan that is not 1..0": "1..1 # SKIP why\nok 1 - t\n",
    "duplicate numbers": "1..2\nok 1 - t\nok 1 - u\n",
    "out-of-order numbers": "1..2\nok 2 - t\nok 1 - u\n",
    "zero number": "1..2\nok 0 - t\nok 1 - u\n",
    "mis-indented point": "1..2\nok 1 - t\nok 2 - u\n  not ok 3 - hidden\n",
    "bail out": "1..2\nok 1 - t\nok 2 - u\nBail out! gave up\n",
    "no final newline": "1..2\nok 1 - t\nnot ok 2 - u # TODO",
    "unterminated YAML block": "1..2\nok 1 - t\nnot ok 2 - u\n  ---\n  message: x\n",
    "YAML block cut by a point": "1..2\nok 1 - t\n  ---\n  x: 1\nnot ok 2 - u\n  ...\n",
    "subtest plan not kept": "1..2\nok 1 - t\n# Subtest: u\n    1..2\n    ok 1 - v\nok 2 - u\n",
}


@pytest.mark.parametrize("text", STREAM_DEFECTS.values(), ids=STREAM_DEFECTS)
def test_a_stream_level_defect_flags_every_attempt(text: str) -> None:
    """The target's own record carries the flag: a check of the <plan> record alone misses it."""
    attempts = run(text.encode(), "tap")
    target = [a for a in attempts if a.test_id == "t"]
    assert len(target) == 1
    assert all(AttemptFlag.STREAM_DEFECT in a.flags for a in attempts)
    assert blocking_flags(target)
    plan = [a for a in attempts if a.test_id.endswith("<plan>")]
    assert [a.outcome.value for a in plan] == ["error"]
    # The record-free path flags the same records.
    jsonl = b"".join(flakecore_adapters.iter_jsonl(io.BytesIO(text.encode()), format="tap"))
    assert all(DEFECT in json.loads(row)["flags"] for row in jsonl.splitlines())
    # One test's attempts are never taken from a defective stream.
    with pytest.raises(InputError, match="defect of the whole report"):
        run(text.encode(), "tap", test_id="t")


def test_honest_streams_carry_no_stream_flag() -> None:
    for text in (
        "1..2\nok 1 - t\nnot ok 2 - u\n",
        "ok 1 - t\nok 2 - u\n1..2\n",
        "1..0 # SKIP nothing to do\n",
        "1..2\nok 1 - t\nnot ok 2 - u\n  ---\n  message: x\n\n  ...\n",
        "1..2\nok 1 - t\n# Subtest: u\n    1..1\n    ok 1 - v\nok 2 - u\n",
    ):
        attempts = run(text.encode(), "tap")
        assert not blocking_flags(attempts), text
        assert [a.test_id for a in run(text.encode(), "tap", test_id="t")] == (
            ["t"] if "ok 1 - t" in text else []
        )


def test_a_defect_found_after_records_left_the_window_refuses_the_report() -> None:
    limits = flakecore_adapters.Limits(reorder_window=4)
    many = "".join(f"ok {n} - t{n}\n" for n in range(1, 11))
    with pytest.raises(InputError, match="can no longer be flagged"):
        list(
            flakecore_adapters.iter_attempts(
                io.BytesIO(f"1..11\n{many}".encode()), format="tap", limits=limits
            )
        )
    early = f"1..10\nok 1 - t1\nok 1 - dup\n{many[10:]}"  # found while every record is held
    attempts = list(
        flakecore_adapters.iter_attempts(io.BytesIO(early.encode()), format="tap", limits=limits)
    )
    assert all(AttemptFlag.STREAM_DEFECT in a.flags for a in attempts)


def test_unterminated_yaml_does_not_swallow_later_points() -> None:
    attempts = run(b"ok 1 - a\n  ---\n  x: 1\nnot ok 2 - b\n  ...\n1..1\n", "tap")
    assert summary(attempts) == [
        ("a", "pass", 1, [DEFECT]),
        ("b", "fail", 1, [DEFECT]),
        ("<plan>", "error", 1, [DEFECT]),
    ]
    assert attempts[-1].message is not None
    assert "YAML block of the test point at line 1 is not closed" in attempts[-1].message


def test_a_cut_last_line_is_a_defect_not_a_shorter_run() -> None:
    attempts = run(b"1..2\nok 1 - a\nnot ok 2 - x", "tap")  # cut from "... - x # TODO\n"
    assert [(a.test_id, a.outcome.value) for a in attempts] == [
        ("a", "pass"),
        ("x", "fail"),
        ("<plan>", "error"),
    ]
    assert all(AttemptFlag.STREAM_DEFECT in a.flags for a in attempts)


def test_yaml_block_is_text_never_parsed() -> None:
    bomb = "\n".join(
        ["  ---", '  a: &a ["lol","lol","lol","lol","lol"]']
        + [
            f"  {c}: &{c} [*{p},*{p},*{p},*{p},*{p}]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ]
        + ["  message: boom", "  ..."]
    )
    attempts = run(f"1..1\nnot ok 1 - t\n{bomb}\n".encode(), "tap")
    assert summary(attempts) == [("t", "fail", 1, [])]
    assert attempts[0].message is not None
    assert "&a" in attempts[0].message
    assert len(attempts[0].message) <= 2000


def test_yaml_keys_refine_failures() -> None:
    text = (
        "1..4\n"
        "not ok 1 - hook\n  ---\n  failureType: 'hookFailed'\n  ...\n"
        "not ok 2 - slow\n  ---\n  failureType: 'testTimeoutFailure'\n  ...\n"
        "not ok 3 - killed\n  ---\n  timeout_sec: 1\n  ...\n"
        "not ok 4 - file\n  ---\n  exitCode: 1\n  duration_ms: 1500\n  ...\n"
    )
    attempts = run(text.encode(), "tap")
    assert [a.outcome.value for a in attempts] == ["error", "timeout", "timeout", "error"]
    assert attempts[3].duration_s == 1.5


def test_subtests_tap14() -> None:
    text = (
        "TAP version 14\n1..2\n# Subtest: outer\n    1..2\n    ok 1 - inner a\n"
        "    # Subtest: deeper\n        1..1\n        not ok 1 - deep\n    not ok 2 - deeper\n"
        "not ok 1 - outer\nok 2 - last\n"
    )
    attempts = run(text.encode(), "tap")
    assert summary(attempts) == [
        ("outer > inner a", "pass", 1, []),
        ("outer > deeper > deep", "fail", 1, []),
        ("outer > deeper", "fail", 1, []),
        ("outer", "fail", 1, []),
        ("last", "pass", 1, []),
    ]
    assert attempts[1].source.subtest_path == ("outer", "deeper")
    assert attempts[1].source.number == 1


def test_unnamed_subtest_takes_the_parent_description() -> None:
    text = "1..1\n    1..1\n    ok 1 - child\nok 1 - parent\n"
    assert tap(text) == [("parent > child", "pass", 1, []), ("parent", "pass", 1, [])]


def test_parent_lying_about_its_children_is_an_error() -> None:
    text = "1..1\n# Subtest: p\n    1..2\n    ok 1 - a\n    not ok 2 - b\nok 1 - p\n"
    attempts = run(text.encode(), "tap")
    assert summary(attempts) == [
        ("p > a", "pass", 1, []),
        ("p > b", "fail", 1, []),
        ("p", "error", 1, []),
    ]
    assert attempts[-1].native.startswith("ok")


def test_subtest_plan_unfulfilled() -> None:
    text = "1..1\n# Subtest: p\n    1..3\n    ok 1 - a\nnot ok 1 - p\n"
    assert tap(text) == [
        ("p > a", "pass", 1, [DEFECT]),
        ("p > <plan>", "error", 1, [DEFECT]),
        ("p", "fail", 1, [DEFECT]),
    ]


def test_strict_pragma_refuses_garbage() -> None:
    assert tap("1..1\nhello\nok 1 - a\n") == [("a", "pass", 1, [])]
    with pytest.raises(InputError, match="strict"):
        run(b"pragma +strict\n1..1\nhello\nok 1 - a\n", "tap")


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"TAP version 99\n1..0\n", "version"),
        (b"1..1\nok 1 - a\x00\n", "NUL"),
        (b"1..1\nok 1 - \xff\n", "UTF-8"),
        (b"\xef\xbb\xbf1..0\n", "byte-order"),
        (b"1..1\nok 99999999999999999999 - a\n", "out of range"),
        (b"1..1\nok 1 - a\tb\n", "control character U\\+0009"),
        (b"1..1\nnot ok 1 - a\x1b[31mb\n", "control character U\\+001B"),
        (b"1..1\n# Subtest: s\x07\n    1..1\n    ok 1 - a\nok 1 - s\n", "U\\+0007"),
    ],
)
def test_hostile_streams_are_refused(data: bytes, error: str) -> None:
    with pytest.raises(InputError, match=error):
        run(data, "tap")


def test_very_long_line_is_a_limit_error() -> None:
    limits = flakecore_adapters.Limits(max_line_bytes=1000)
    with pytest.raises(LimitError):
        list(
            flakecore_adapters.iter_attempts(
                io.BytesIO(b"1..1\nok 1 - " + b"a" * 5000 + b"\n"), format="tap", limits=limits
            )
        )


def test_comments_after_a_failure_become_its_message_only_in_yaml() -> None:
    attempts = run(b"1..1\nnot ok 1 - t\n#   Failed test 't'\n", "tap")
    assert summary(attempts) == [("t", "fail", 1, [])]


def test_misindented_test_point_is_not_silently_ignored() -> None:
    assert tap("1..1\nok 1 - a\n  not ok 2 - hidden\n") == [
        ("a", "pass", 1, [DEFECT]),
        ("<plan>", "error", 1, [DEFECT]),
    ]


def test_crlf_lines() -> None:
    assert tap("1..1\r\nok 1 - a\r\n") == [("a", "pass", 1, [])]


def test_brace_subtests_blame_the_failing_child() -> None:
    """node-tap / Test2 buffered subtests: the parent's point first, then its child."""
    text = (
        "TAP version 13\n"
        "not ok 1 - parent # time=3.5ms {\n"
        "    ok 1 - child passes\n"
        "    not ok 2 - inner {\n"
        "        not ok 1 - deep fails\n"
        "        1..1\n"
        "    }\n"
        "    1..2\n"
        "}\n"
        "ok 2 - next\n"
        "1..2\n"
    )
    attempts = run(text.encode(), "tap")
    assert summary(attempts) == [
        ("parent > child passes", "pass", 1, []),
        ("parent > inner > deep fails", "fail", 1, []),
        ("parent > inner", "fail", 1, []),
        ("parent", "fail", 1, []),
        ("next", "pass", 1, []),
    ]
    assert attempts[1].source.subtest_path == ("parent", "inner")
    assert attempts[3].source.line == 2
    assert attempts[3].duration_s == 0.0035


def test_brace_after_the_parents_yaml_block_and_a_parent_that_lies() -> None:
    """node-tap's runner: the file's point, its YAML block, then "{" alone on a line."""
    text = (
        "ok 1 - file.js # time=9ms\n  ---\n  exitCode: 0\n  ...\n{\n"
        "    not ok 1 - inside\n    1..1\n}\n1..1\n"
    )
    assert tap(text) == [("file.js > inside", "fail", 1, []), ("file.js", "error", 1, [])]


@pytest.mark.parametrize(
    "text",
    [
        "1..2\nok 1 - t {\n    ok 1 - c\n    1..1\n",  # never closed
        "1..2\nok 1 - t {\n    ok 1 - c\n    1..1\nok 2 - u\n",  # a point at the parent's level
        "1..2\nok 1 - t {\n    ok 1 - c\n    1..1\n1..2\n",  # a plan at the parent's level
        "1..2\nok 1 - t {\n    ok 1 - c\n    ok 2 - d {\n        1..0\n}\n",  # outer "}" only
    ],
    ids=["unclosed", "point", "plan", "outer brace"],
)
def test_an_unclosed_brace_subtest_is_a_stream_defect(text: str) -> None:
    attempts = run(text.encode(), "tap")
    assert "t > c" in [a.test_id for a in attempts]  # the child still belongs to its parent
    assert all(AttemptFlag.STREAM_DEFECT in a.flags for a in attempts)
    messages = [a.message or "" for a in attempts if a.test_id.endswith("<plan>")]
    assert any("brace subtest of the test point at line" in m for m in messages)


def test_a_stray_closing_brace_is_not_tap() -> None:
    assert tap("1..1\nok 1 - a\n}\n") == [("a", "pass", 1, [])]
    with pytest.raises(InputError, match="strict"):
        run(b"pragma +strict\n1..1\nok 1 - a\n}\n", "tap")
