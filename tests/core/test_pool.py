"""``pool.in_order``: side by side, yet the results a loop gives, in its order, up to its stop."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flakecore.gate.pool import in_order

#: (value, milliseconds it takes, what it is): runs that finish in any order.
ITEMS = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 4), st.sampled_from(["ok", "ok", "ok", "last"])),
    max_size=10,
)


class Boom(Exception):
    pass


def work(item: tuple[int, int, str]) -> tuple[int, str]:
    value, ms, kind = item
    time.sleep(ms / 1000)
    if kind == "raise":
        raise Boom(value)
    return value, kind


def is_last(result: tuple[int, str]) -> bool:
    return result[1] == "last"


@settings(max_examples=60)
@given(ITEMS, st.integers(2, 4))
def test_the_same_results_in_the_same_order_as_a_loop(
    items: list[tuple[int, int, str]], jobs: int
) -> None:
    loop = list(in_order(items, work, jobs=1, last=is_last))
    assert list(in_order(items, work, jobs=jobs, last=is_last)) == loop
    stop = next((i for i, item in enumerate(items) if item[2] == "last"), len(items) - 1)
    assert loop == [(v, k) for v, _, k in items[: stop + 1]]


@settings(max_examples=40)
@given(ITEMS, st.integers(0, 9), st.integers(1, 4))
def test_a_failing_run_in_the_loops_reach_fails_it_side_by_side_too(
    items: list[tuple[int, int, str]], at: int, jobs: int
) -> None:
    items = [*items[:at], (99, 1, "raise"), *items[at:]]
    stop = next((i for i, item in enumerate(items) if item[2] != "ok"), None)
    if items[stop or 0][2] != "raise":
        return  # a last result comes first: the loop never reaches the failure
    with pytest.raises(Boom):
        list(in_order(items, work, jobs=jobs, last=is_last))


def test_no_run_starts_after_a_last_result_and_the_running_ones_are_waited_for() -> None:
    started: list[int] = []
    finished: list[int] = []
    one_runs = threading.Event()

    def slow(item: int) -> int:
        started.append(item)
        if item == 0:
            assert one_runs.wait(10)  # the last result comes while 1 is surely running
            return -1
        one_runs.set()
        time.sleep(0.2)
        finished.append(item)
        return item

    results = list(in_order(list(range(10)), slow, jobs=3, last=lambda r: r < 0))
    assert results == [-1]
    # 2 was queued with 0 and 1; it may have started before the last result or been
    # cancelled: nothing after the jobs already handed out starts.
    assert {0, 1} <= set(started) <= {0, 1, 2}
    assert sorted(finished) == sorted(set(started) - {0})  # every running one waited for
    assert not [t for t in threading.enumerate() if t.name.startswith("flakecore-run")]


def test_jobs_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="jobs"):
        list(in_order([1], lambda x: x, jobs=0, last=lambda _: False))
