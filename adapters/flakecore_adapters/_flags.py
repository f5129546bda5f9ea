"""Attempt numbering and the repeated-test-id flag, shared by every format.

Why a window: a test id written as two *separate* elements (pytest-rerunfailures
writes each failed rerun into JUnit XML as a childless ``<testcase>`` that reads
as a pass) is only known to be repeated when the second element arrives, but
the flag must be on *every* attempt of that id.  So attempts are held in a FIFO
of at most ``Limits.reorder_window`` entries before they are built and emitted;
a repeat found while the earlier attempts are still held flags all of them.

A repeat found after an earlier attempt of the same id already left the window
cannot be flagged correctly any more, so it is refused (``InputError``) rather
than emitted half-flagged.  Ids that already carry the flag may repeat at any
distance.

Memory: the window is bounded; beyond it each distinct id costs one 6-byte
fingerprint (62 bits of Python's per-process randomized string hash, split
over 2**14 byte buckets), never the id itself or its records.  Two distinct
ids with the same fingerprint are treated as one id: at worst a spurious
repeat (flagged or refused), never a hidden one.  Every repeat of an id in a separate element is
flagged, whatever the outcomes: agreeing childless rerun elements prove
nothing.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore.evidence import Attempt, Source
from flakecore_adapters._common import CONFLICT, NO_FLAGS

__all__ = ["Emitter"]

_BUCKET_BITS = 14
_BUCKET_MASK = (1 << _BUCKET_BITS) - 1
_KEY_MASK = (1 << 48) - 1
_KEY_BYTES = 6


class _Fingerprints:
    """Set of 62-bit fingerprints in 6 bytes each: the only per-id memory."""

    __slots__ = ("_buckets",)

    def __init__(self) -> None:
        self._buckets: list[bytearray | None] = [None] * (1 << _BUCKET_BITS)

    @staticmethod
    def split(test_id: str) -> tuple[int, bytes]:
        """``(bucket, key)`` of an id: computed once, used for lookup and insert."""
        h = hash(test_id)
        return h & _BUCKET_MASK, ((h >> _BUCKET_BITS) & _KEY_MASK).to_bytes(_KEY_BYTES, "little")

    def contains(self, where: tuple[int, bytes]) -> bool:
        bucket = self._buckets[where[0]]
        if bucket is None:
            return False
        key = where[1]
        at = bucket.find(key)
        while at >= 0:
            if at % _KEY_BYTES == 0:
                return True
            at = bucket.find(key, at + 1)
        return False

    def add(self, where: tuple[int, bytes]) -> None:
        index, key = where
        bucket = self._buckets[index]
        if bucket is None:
            self._buckets[index] = bytearray(key)
        else:
            bucket += key


class Emitter:
    """Numbers attempts per test id, flags repeated ids, emits in input order.

    Parsers take a serial from :meth:`element` once per report element (a
    ``<testcase>``, a JSON test, a TAP test point, a reportlog rerun chain)
    and call :meth:`add` with it for each attempt the element holds; ``add``
    returns the attempt that left the window, if any, and :meth:`flush`
    returns the rest at the end.
    """

    __slots__ = (
        "_element",
        "_flagged_counts",
        "_live",
        "_only",
        "_queue",
        "_seen",
        "_source",
        "_window",
    )

    def __init__(self, *, source: str, window: int, only: str | None = None) -> None:
        self._source = source
        self._window = window
        self._only = only
        self._queue: deque[list[Any]] = deque()
        # test id -> [attempts in queue, attempts so far, flagged, element serial,
        #             fingerprint (bucket, key), already in the fingerprint set]
        self._live: dict[str, list[Any]] = {}
        self._seen = _Fingerprints()
        # Flagged ids that left the window: they may repeat at any distance.
        self._flagged_counts: dict[str, int] = {}
        self._element = 0

    def element(self) -> int:
        """A new element serial: attempts added under another serial are separate."""
        self._element += 1
        return self._element

    def add(  # noqa: PLR0917 - the per-attempt hot path: positional on purpose
        self,
        test_id: str,
        element: int,
        outcome: Outcome,
        native: str,
        source: Source,
        duration: float | None = None,
        message: str | None = None,
        flags: frozenset[AttemptFlag] = NO_FLAGS,
    ) -> Attempt | None:
        """Queue one attempt; returns the attempt pushed out of the window, if any."""
        if self._only is not None and test_id != self._only:
            return None
        state = self._live.get(test_id)
        serial = element
        if state is None:
            where = self._seen.split(test_id)
            if self._seen.contains(where):
                count = self._flagged_counts.get(test_id)
                if count is None:
                    raise InputError(
                        f"test id {test_id[:200]!r} repeats more than {self._window} attempts "
                        "after its earlier attempts were emitted; they can no longer be flagged "
                        "(raise Limits.reorder_window)",
                        source=self._source,
                        line=source.line,
                    )
                state = [0, count, True, serial, where, True]
            else:
                state = [0, 0, False, serial, where, False]
            self._live[test_id] = state
        elif state[3] != serial:
            state[3] = serial
            if not state[2]:
                if state[0] < state[1]:
                    raise InputError(
                        f"test id {test_id[:200]!r} repeats after its earlier attempts were "
                        "emitted; they can no longer be flagged (raise Limits.reorder_window)",
                        source=self._source,
                        line=source.line,
                    )
                state[2] = True
        state[0] += 1
        state[1] += 1
        queue = self._queue
        queue.append([state, test_id, outcome, native, state[1], source, duration, message, flags])
        if len(queue) > self._window:
            return self._build(queue.popleft())
        return None

    def flush(self) -> list[Attempt]:
        """Every attempt still held, in input order."""
        queue = self._queue
        out = [self._build(entry) for entry in queue]
        queue.clear()
        return out

    def pending(self) -> int:
        """Attempts currently held back."""
        return len(self._queue)

    def _build(self, entry: list[Any]) -> Attempt:
        state, test_id, outcome, native, number, source, duration, message, flags = entry
        if state[2]:
            flags = flags | CONFLICT
        state[0] -= 1
        if state[0] == 0:
            del self._live[test_id]
            if not state[5]:
                self._seen.add(state[4])
            if state[2]:
                self._flagged_counts[test_id] = state[1]
                if len(self._flagged_counts) > 1_000_000:
                    raise LimitError("more than 1000000 repeated test ids", source=self._source)
        return Attempt(
            test_id=test_id,
            outcome=outcome,
            native=native,
            attempt=number,
            source=source,
            duration_s=duration,
            message=message,
            flags=flags,
        )
