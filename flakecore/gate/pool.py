"""Independent runs side by side, their results in the order a sequential loop gives them.

A seed budget runs one command per seed and stops at the first run that
neither passed nor missed.  With ``jobs`` workers the seeds start in order,
up to ``jobs`` at a time; the results come back in seed order, and the first
result that stops the loop ends it exactly where the sequential loop would
have ended: no seed after it starts any more, the ones already running are
waited for, and their results are never handed out.  So what the caller
records is what the sequential loop records, as long as each run does not
depend on the others (a seed's run is a fresh process under its own
reaper: :mod:`flakecore.gate.runtime`).

An exception from any run that was started (a run whose processes could not
be ended) is raised once every started run has ended: it fails the whole
observation closed, even when the sequential loop would not have reached
that run.  An exception in the consumer (a signal) ends every running
attempt (:func:`flakecore.gate.runtime.stop_all`) before it goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from flakecore.gate.runtime import stop_all

__all__ = ["in_order"]

T = TypeVar("T")
R = TypeVar("R")


def in_order(
    items: Sequence[T], work: Callable[[T], R], *, jobs: int, last: Callable[[R], bool]
) -> Iterator[R]:
    """``work(item)`` for each item, ``jobs`` at a time, yielded in item order.

    The first result for which ``last`` is true is the last one yielded and
    starts no further item.  ``jobs`` 1 runs each item in the caller's
    thread, one after the other: exactly a loop.
    """
    if jobs < 1:
        raise ValueError("jobs must be 1 or more")
    if jobs == 1:
        for item in items:
            result = work(item)
            yield result
            if last(result):
                return
        return
    yield from _pooled(items, work, jobs, last)


def _pooled(
    items: Sequence[T], work: Callable[[T], R], jobs: int, last: Callable[[R], bool]
) -> Iterator[R]:
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="flakecore-run")
    started: list[Future[R]] = []
    stopped = False  # a result that ends the loop has come: start nothing more
    done = 0
    try:
        while done < len(items):
            while not stopped and len(started) < len(items) and len(started) - done < jobs:
                started.append(pool.submit(work, items[len(started)]))
            running = [f for f in started[done:] if not f.done()]
            head = started[done]
            if not head.done():
                wait(running, return_when=FIRST_COMPLETED)
                stopped = stopped or any(_ends(f, last) for f in started[done:] if f.done())
                continue
            if head.exception() is not None:
                stopped = True
                break
            result = head.result()
            done += 1
            yield result
            if last(result):
                stopped = True
                break
    except BaseException:
        stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for future in started:  # every started run has ended: a failure of any fails it all
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error


def _ends(future: Future[R], last: Callable[[R], bool]) -> bool:
    """Whether a finished run stops new starts: it failed, or it is a last result."""
    return future.exception() is not None or last(future.result())
