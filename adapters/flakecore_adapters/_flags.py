"""Attempt numbering and the repeated-test-id flag, shared by every format.

Why a window: a test id written as two *separate* elements (pytest-rerunfailures
writes each failed rerun into JUnit XML as a childless ``<testcase>`` that reads
as a pass) is only known to be repeated when the second element arrives, but
the flag must be on *every* attempt of that id.  So an attempt is emitted only
once ``reorder_window`` later attempts have been read; a repeat arriving at
most ``reorder_window`` attempts after an attempt of the same id flags all of
them.

Attempts are numbered in arrival order (their *index*).  A test id's
attempts that follow each other at most ``reorder_window`` apart form one
*state*; a repeat from a separate element flags the state, unless one of its
attempts is already further back than the window (it may already be
emitted): then the report is refused (``InputError``) rather than emitted
half-flagged.  A state ends once its last attempt is emitted.  A later
attempt of an id whose state ended may only continue a *flagged* state
(flagged ids may repeat at any distance); any other repeat is refused.

Memory: the live states are bounded by the window; beyond it each distinct id
costs one fingerprint (Python's per-process randomized 64-bit string hash) in
an open-addressing table of 8-byte slots kept at most half full: 16-32 bytes
per distinct id, never the id itself or its records.  The
fingerprint check runs when a state ends: an id whose earlier state already
ended unflagged is refused there (the error names the line of the repeat).
Two distinct ids with the same fingerprint are treated as one id: at worst a
spurious refusal, never a hidden repeat.  Every repeat of an id in a separate
element is flagged, whatever the outcomes: agreeing childless rerun elements
prove nothing.

Two outputs share this logic: ``Attempt`` objects (``iter_attempts``) and
JSON Lines text (``iter_jsonl``).  The text path may also hand over whole
*blocks* of attempts it rendered itself (:meth:`Emitter.claim` /
:meth:`Emitter.push_block`) when each is the first attempt of a new id:
attempt 1, unflagged unless a repeat arrives while it is held, which then
patches its line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore_adapters._common import CONFLICT, NO_FLAGS
from flakecore_adapters._render import add_conflict

__all__ = ["Emitter"]

_FIRST_SLOTS = 1 << 16  # fingerprint table slots to start with (512 KiB)
_MAX_FLAGGED_IDS = 1_000_000

#: Build one output record: ``(test_id, outcome, native, number, src,
#: duration, message, flags)`` -> an ``Attempt`` or a JSON line.
Builder = Callable[
    [str, Outcome, str, int, Any, float | None, str | None, frozenset[AttemptFlag]], Any
]

# A live state: [first index, last index, attempts so far, flagged, element serial,
# line of the first attempt].  A claimed (block) attempt is held in the live
# dict as its bare index (an int) until a repeat turns it into a state.
_FIRST, _LAST, _COUNT, _FLAGGED, _SERIAL, _LINE = range(6)


class _Fingerprints:
    """Set of 64-bit string hashes: one open-addressing table of 8-byte slots.

    One flat table (linear probing, at most half full, doubled when it gets
    there): a look-up touches one place in memory, which matters more than
    anything else here once a report has a million ids.
    """

    __slots__ = ("_count", "_mask", "_table")

    def __init__(self) -> None:
        self._table = memoryview(bytearray(_FIRST_SLOTS * 8)).cast("q")
        self._mask = _FIRST_SLOTS - 1
        self._count = 0

    def check_add(self, test_id: str) -> bool:
        """Add the id's fingerprint; True if it was already there."""
        h = hash(test_id) or 1  # 0 marks a free slot
        table = self._table
        mask = self._mask
        at = h & mask
        slot = table[at]
        while slot:
            if slot == h:
                return True
            at = (at + 1) & mask
            slot = table[at]
        table[at] = h
        self._count += 1
        if self._count * 2 > mask:
            self._grow()
        return False

    def forget_all(self, ids: Sequence[str], live: dict[str, Any]) -> int:
        """Remove each id from ``live`` and :meth:`check_add` it, in order.

        Returns the position of the first id whose fingerprint was already
        there, or -1.  (One loop for both: this runs once per attempt.)
        """
        table = self._table
        mask = self._mask
        count = self._count
        for position, test_id in enumerate(ids):
            del live[test_id]
            h = hash(test_id) or 1
            at = h & mask
            slot = table[at]
            while slot:
                if slot == h:
                    self._count = count
                    return position
                at = (at + 1) & mask
                slot = table[at]
            table[at] = h
            count += 1
            if count * 2 > mask:
                self._count = count
                self._grow()
                table = self._table
                mask = self._mask
        self._count = count
        return -1

    def _grow(self) -> None:
        old = self._table
        slots = (self._mask + 1) * 2
        table = memoryview(bytearray(slots * 8)).cast("q")
        mask = slots - 1
        for h in old:
            if h:
                at = h & mask
                while table[at]:
                    at = (at + 1) & mask
                table[at] = h
        old.release()
        self._table = table
        self._mask = mask


class Emitter:
    """Numbers attempts per test id, flags repeated ids, emits in input order.

    Parsers take a serial from :meth:`element` once per report element (a
    ``<testcase>``, a JSON test, a TAP test point, a reportlog rerun chain)
    and call :meth:`add` with it for each attempt the element holds.  Records
    that are ready collect in :attr:`out` after :meth:`ready` (call it every
    so often) and :meth:`finish` (at the end); the parser hands them on and
    clears the list.
    """

    __slots__ = (
        "_build",
        "_converted",
        "_element",
        "_fingerprints",
        "_flagged",
        "_live",
        "_next",
        "_only",
        "_queue",
        "_source",
        "_window",
        "counts",
        "out",
    )

    def __init__(
        self,
        *,
        source: str,
        window: int,
        build: Builder,
        only: str | None = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        self._source = source
        self._window = window
        self._only = only
        self._build = build
        #: Ready records, in input order.
        self.out: list[Any] = []
        #: Per-outcome counts and ``flagged`` of the emitted records (when given).
        self.counts = counts
        # Entries: (index, state, test_id, outcome, native, number, src, duration,
        # message, flags) or blocks: (last index, None, ids, lines, line numbers,
        # first index, counts).
        self._queue: deque[tuple[Any, ...]] = deque()
        self._live: dict[str, Any] = {}
        self._fingerprints = _Fingerprints()
        # Flagged ids whose state ended -> attempts so far: they may repeat at any distance.
        self._flagged: dict[str, int] = {}
        # Claimed ids that a repeat turned into a state while their block is held.
        self._converted: set[str] = set()
        self._next = 0
        self._element = 0

    def element(self) -> int:
        """A new element serial: attempts added under another serial are separate."""
        self._element += 1
        return self._element

    # -- arrival ----------------------------------------------------------------
    def add(  # noqa: PLR0917 - the per-attempt hot path: positional on purpose
        self,
        test_id: str,
        element: int,
        line: int | None,
        outcome: Outcome,
        native: str,
        src: Any,
        duration: float | None = None,
        message: str | None = None,
        flags: frozenset[AttemptFlag] = NO_FLAGS,
    ) -> None:
        """Queue one attempt (``src``: a ``Source``, or the source JSON for text output)."""
        if self._only is not None and test_id != self._only:
            return
        index = self._next
        self._next = index + 1
        oldest = index - self._window  # attempts before this index are out of reach
        live = self._live
        state = live.get(test_id)
        if state is None:
            count = self._flagged.get(test_id, 0) if self._flagged else 0
            state = [index, index, count + 1, count > 0, element, line]
            live[test_id] = state
        elif state.__class__ is int:  # a claimed first attempt, still unflagged
            if state < oldest:
                raise self._departed(test_id, line)
            state = [state, index, 2, True, element, None]  # line set when its block leaves
            live[test_id] = state
            self._converted.add(test_id)
        elif state[_LAST] < oldest:  # its state ended: only a flagged one may go on
            if not state[_FLAGGED]:
                raise self._departed(test_id, line)
            state = [index, index, state[_COUNT] + 1, True, element, line]
            live[test_id] = state
        else:
            if state[_SERIAL] != element:
                state[_SERIAL] = element
                if not state[_FLAGGED]:
                    if state[_FIRST] < oldest:
                        raise InputError(
                            f"test id {test_id[:200]!r} repeats after its earlier attempts were "
                            "emitted; they can no longer be flagged (raise Limits.reorder_window)",
                            source=self._source,
                            line=line,
                        )
                    state[_FLAGGED] = True
            state[_LAST] = index
            state[_COUNT] += 1
        self._queue.append(
            (index, state, test_id, outcome, native, state[_COUNT], src, duration, message, flags)
        )

    def claim(self, ids: Sequence[str]) -> int | None:
        """Reserve indexes for attempts that are each the first of a new, distinct id.

        Returns the first index, or None (nothing reserved) when any id is
        live, repeated within ``ids``, flagged before, or filtered out: the
        caller must then :meth:`add` them one by one.  After a claim the
        caller renders them as attempt 1 without flags and calls
        :meth:`push_block` before anything else.
        """
        if self._only is not None:
            return None
        live = self._live
        if not live.keys().isdisjoint(ids) or len(set(ids)) != len(ids):
            return None
        if self._flagged and not self._flagged.keys().isdisjoint(ids):
            return None
        first = self._next
        self._next = first + len(ids)
        live.update(zip(ids, range(first, self._next), strict=True))
        return first

    def push_block(
        self,
        ids: Sequence[str],
        lines: list[str] | Callable[[], list[str]],
        line_of: Callable[[int], int | None],
        first: int,
        counts: dict[str, int],
    ) -> None:
        """Queue claimed attempts.

        ``lines`` are their records (attempt 1, the same flags for all), or
        a function that renders them when the block leaves the window;
        ``line_of(i)`` is the report line of ``ids[i]`` (for errors);
        ``counts`` what they add to :attr:`counts`.
        """
        self._queue.append((first + len(ids) - 1, None, ids, lines, line_of, first, counts))

    # -- emission -----------------------------------------------------------------
    def ready(self) -> None:
        """Move every attempt no later repeat can flag any more to :attr:`out`."""
        self._emit(self._next - self._window)

    def finish(self) -> None:
        """Move every attempt still held to :attr:`out` (end of the report)."""
        self._emit(self._next + 1)

    def _emit(self, limit: int) -> None:
        queue = self._queue
        out = self.out
        build = self._build
        counts = self.counts
        while queue and queue[0][0] < limit:
            item = queue.popleft()
            if item[1] is None:
                self._emit_block(item)
                continue
            index, state, test_id, outcome, native, number, src, duration, message, flags = item
            if state[_FLAGGED]:
                flags = flags | CONFLICT
            if state[_LAST] == index:
                self._end(test_id, state)
            out.append(build(test_id, outcome, native, number, src, duration, message, flags))
            if counts is not None:
                counts[outcome.value] = counts.get(outcome.value, 0) + 1
                if flags:
                    counts["flagged"] = counts.get("flagged", 0) + 1

    def _emit_block(self, item: tuple[Any, ...]) -> None:
        _last, _, ids, lines, line_of, _first, block_counts = item
        if not isinstance(lines, list):
            lines = lines()
        converted = self._converted
        live = self._live
        flagged_extra = 0
        if converted and not converted.isdisjoint(ids):
            check_add = self._fingerprints.check_add
            lines = list(lines)
            for at, test_id in enumerate(ids):
                if test_id in converted:
                    converted.discard(test_id)
                    state = live[test_id]
                    state[_LINE] = line_of(at)
                    lines[at] = add_conflict(lines[at])
                    flagged_extra += not block_counts.get("flagged")
                else:
                    del live[test_id]
                    if check_add(test_id):
                        raise self._departed(test_id, line_of(at))
        else:
            at = self._fingerprints.forget_all(ids, live)
            if at >= 0:
                raise self._departed(ids[at], line_of(at))
        self.out += lines
        counts = self.counts
        if counts is not None:
            for key, value in block_counts.items():
                counts[key] = counts.get(key, 0) + value
            if flagged_extra:
                counts["flagged"] = counts.get("flagged", 0) + flagged_extra

    def _end(self, test_id: str, state: list[Any]) -> None:
        """A state's last attempt leaves: forget the id, keep its fingerprint."""
        if self._live.get(test_id) is state:
            del self._live[test_id]
        if self._fingerprints.check_add(test_id) and test_id not in self._flagged:
            raise self._departed(test_id, state[_LINE])
        if state[_FLAGGED]:
            self._flagged[test_id] = state[_COUNT]
            if len(self._flagged) > _MAX_FLAGGED_IDS:
                raise LimitError(
                    f"more than {_MAX_FLAGGED_IDS} repeated test ids", source=self._source
                )

    def _departed(self, test_id: str, line: int | None) -> InputError:
        return InputError(
            f"test id {test_id[:200]!r} repeats more than {self._window} attempts "
            "after its earlier attempts were emitted; they can no longer be flagged "
            "(raise Limits.reorder_window)",
            source=self._source,
            line=line,
        )
