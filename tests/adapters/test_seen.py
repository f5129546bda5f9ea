"""The far-repeat check (``_Seen``): every id whose first state ended, by fingerprint.

A repeat must be refused whether it is found among the newest fingerprints
(at once) or against the older ones (at a comparison pass or at the end).
The model is a plain set of ids; the pass size is shrunk so that small
inputs cross many passes.
"""

from __future__ import annotations

import io
from typing import Any

import flakecore_adapters
import pytest
from flakecore_adapters import _flags
from hypothesis import given
from hypothesis import strategies as st

from flakecore.errors import InputError

IDS = st.sampled_from([f"t{i}" for i in range(40)])
# An operation: one id (Emitter._end) or a block of distinct ids (a fast lane).
OPS = st.lists(
    st.one_of(IDS.map(lambda i: [i, False]), st.lists(IDS, min_size=1, max_size=6, unique=True)),
    max_size=30,
)


def _refuse(test_id: str | None, line: int | None) -> InputError:
    return InputError(f"repeat of {test_id}", source="r", line=line)


def _feed(seen: Any, ops: list[list[Any]]) -> dict[int, str]:
    """Feed ``ops`` with increasing line numbers; returns line -> id."""
    at: dict[int, str] = {}
    line = 0
    for op in ops:
        if op[-1] is False:
            line += 1
            at[line] = op[0]
            seen.add(op[0], line)
        else:
            lines = list(range(line + 1, line + 1 + len(op)))
            at.update(zip(lines, op, strict=True))
            line = lines[-1]
            seen.add_all(op, lines)
    seen.check()
    return at


@pytest.mark.parametrize("min_pass", [1, 2, 5, 1 << 16])
@given(ops=OPS)
def test_a_repeat_is_refused_and_named_by_a_later_line(min_pass: int, ops: list[list[Any]]) -> None:
    ids = [i for op in ops for i in (op[:1] if op[-1] is False else op)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_flags, "_MIN_PASS", min_pass)
        seen = _flags._Seen(_refuse)
        if len(set(ids)) == len(ids):
            _feed(seen, ops)
            return
        with pytest.raises(InputError) as info:
            _feed(seen, ops)
    line = info.value.line
    assert line is not None
    # The named line is a repeat: the same id occurs on an earlier line.
    by_line = dict(enumerate(ids, start=1))
    assert by_line[line] in [by_line[n] for n in range(1, line)]


class _Model:
    """The far-repeat check as plainly as it can be written: every fingerprint in a set."""

    def __init__(self) -> None:
        self.done: set[int] = set()
        self.new: dict[int, int] = {}  # waiting fingerprint -> its line (0: none)

    def add(self, test_id: str, line: int | None) -> None:
        self.add_all([test_id], [line])

    def add_all(self, ids: list[str], lines: list[int | None]) -> None:
        fingerprints = [hash(i) for i in ids]
        for at, fingerprint in enumerate(fingerprints):
            if fingerprint in self.new:
                raise _refuse(ids[at], lines[at])
        for at, fingerprint in enumerate(fingerprints):
            if fingerprint in fingerprints[:at]:
                raise _refuse(ids[at], lines[at])
        self.new.update((f, line or 0) for f, line in zip(fingerprints, lines, strict=True))
        size = len(self.new)
        if size >= _flags._MIN_PASS and size * _flags._SHARE >= len(self.done):
            self.check()

    def check(self) -> None:
        hits = [line for fingerprint, line in self.new.items() if fingerprint in self.done]
        if hits:
            raise _refuse(None, min(hits) or None)
        self.done.update(self.new)
        self.new.clear()


# Ops with a line each (None: no line, as a report-level pseudo-attempt may have).
LINED = st.lists(
    st.one_of(
        st.tuples(IDS, st.none() | st.integers(1, 99)).map(lambda p: [p[0], p[1], False]),
        st.lists(st.tuples(IDS, st.none() | st.integers(1, 99)), min_size=1, max_size=6),
    ),
    max_size=40,
)


def _run(seen: Any, ops: list[Any]) -> int | str | None:
    """The line ``seen`` refuses at, or "read" when it takes every op."""
    try:
        for op in ops:
            if op[-1] is False:
                seen.add(op[0], op[1])
            else:
                seen.add_all([i for i, _ in op], [line for _, line in op])
        seen.check()
    except InputError as exc:
        return exc.line
    return "read"


@pytest.mark.parametrize("min_pass", [1, 2, 3, 1 << 16])
@given(ops=LINED)
def test_the_refusal_names_the_line_the_plain_model_names(min_pass: int, ops: list[Any]) -> None:
    # The waiting dict keeps a block's lines in the sequence they came in, not per id:
    # a repeat found at a pass names the same (smallest waiting) line as a plain model.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_flags, "_MIN_PASS", min_pass)
        assert _run(_flags._Seen(_refuse), ops) == _run(_Model(), ops)


def _tap_with_far_repeat(distinct: int) -> tuple[bytes, int]:
    """``distinct`` points (a failure every 50th), then point 1's id again."""
    rows = [b"TAP version 14"]
    for i in range(1, distinct + 1):
        rows.append(b"%s %d - t%d" % (b"not ok" if i % 50 == 0 else b"ok", i, i))
    rows.append(b"ok %d - t1" % (distinct + 1))
    rows.append(b"1..%d" % (distinct + 1))
    return b"\n".join(rows) + b"\n", len(rows) - 1


@pytest.mark.parametrize("distinct", [20_000, 150_000])
def test_a_far_repeat_past_the_window_is_refused_on_both_paths(distinct: int) -> None:
    # 20 000: found among the newest fingerprints; 150 000: against the
    # older ones, after at least one comparison pass (2**16 per pass at first).
    data, repeat_line = _tap_with_far_repeat(distinct)
    for run in (
        lambda: list(flakecore_adapters.iter_attempts(io.BytesIO(data), format="tap")),
        lambda: list(flakecore_adapters.iter_jsonl(io.BytesIO(data), format="tap")),
    ):
        with pytest.raises(InputError, match="repeats") as info:
            run()
        assert info.value.line == repeat_line


def test_the_same_report_without_the_repeat_reads() -> None:
    data, _ = _tap_with_far_repeat(150_000)
    data = data.replace(b"ok 150001 - t1\n", b"ok 150001 - t150001\n")
    counts: dict[str, int] = {}
    for _ in flakecore_adapters.iter_jsonl(io.BytesIO(data), format="tap", counts=counts):
        pass
    assert counts == {"pass": 147_001, "fail": 3_000}
