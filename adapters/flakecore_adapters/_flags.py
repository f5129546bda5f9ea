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
costs one fingerprint (Python's per-process randomized 64-bit string hash),
about 8-20 bytes per distinct id, never the id itself or its records (see
:class:`_Seen`).  An id whose earlier state already ended unflagged is
refused when it is found again (the error names the line of the repeat): at
once while its fingerprint is among the newest, else at the next comparison
pass or at the end of the report.  A caller must never use the records of
a report whose iteration raised.  Every repeat of an id in a separate
element is flagged, whatever the outcomes: agreeing childless rerun elements
prove nothing.

A *stream-level defect* (a TAP plan not kept, a cut last line, ...) is a
defect of every record of the report, so :meth:`Emitter.taint` puts
``stream-defect`` on every attempt, those already held and those still to
come.  Attempts that already left the window cannot get it: a defect found
after that refuses the report (``InputError``), as a far repeat does.  So
does any defect when only one test id is kept (``only``): a caller asking
for one test's attempts takes them as that test's evidence.

Two outputs share this logic: ``Attempt`` objects (``iter_attempts``) and
JSON Lines text (``iter_jsonl``).  The text path may also hand over whole
*blocks* of attempts it rendered itself (:meth:`Emitter.claim` /
:meth:`Emitter.push_block`) when each is the first attempt of a new id:
attempt 1, unflagged unless a repeat arrives while it is held, which then
patches its line.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from itertools import chain, repeat
from typing import Any

from flakecore.codes import AttemptFlag, Outcome
from flakecore.errors import InputError, LimitError
from flakecore_adapters._common import CONFLICT, DEFECT, NO_FLAGS
from flakecore_adapters._render import add_flag

__all__ = ["Emitter"]

_MIN_PASS = 1 << 16  # fingerprints that wait before they are compared with the older ones
_SHARE = 6  # ... and until they are a sixth of the older ones
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


class _Seen:
    """Fingerprints of the test ids whose first state ended, to refuse a far repeat.

    Each id costs one 64-bit fingerprint (Python's per-process randomized
    string hash), never the id itself.  The newest wait in a set, where a
    repeat among them is found at once; when the set holds a sixth of the
    others (at least 65 536) it is compared with all of them in one C-level
    pass and appended to a flat array of 8-byte slots.  The passes read the
    array about seven times in all (a geometric series), in C, where a hash
    table would take one Python-level probe per id (at a million ids the two
    cost about the same time; this one never doubles a table): a million ids
    take 8 MiB in the array and a few MiB in the set.  Each older
    fingerprint read is a random probe into the set, a cache miss at these
    sizes: a set's probe reads one slot (hash and key side by side), where a
    dict's reads its index and then its entry, which made the passes about
    twice as slow; with an eighth (nine reads) the far-repeat check took
    about 1.2 s of a million-id report's CPU time and the same memory.  The
    waiting fingerprints' report lines are kept beside the set in the
    sequences they came in (a block's lines are the caller's, not copied),
    read only to name a repeat.  A repeat of an older id is therefore found
    at the next pass (or at the end of the report), not at once; the report
    is refused either way.  Two distinct ids with the same fingerprint count
    as one: at worst a spurious refusal, never a hidden repeat.
    """

    __slots__ = ("_blocks", "_done", "_new", "_refuse", "_single_lines", "_singles")

    def __init__(self, refuse: Callable[[str | None, int | None], InputError]) -> None:
        self._done = array("q")
        self._new: set[int] = set()
        #: The waiting fingerprints and their report lines (None or 0: none), for an error:
        #: blocks as ``(fingerprints, lines)``, single ids in two flat lists.
        self._blocks: list[tuple[Sequence[int], Sequence[int | None]]] = []
        self._singles: list[int] = []
        self._single_lines: list[int | None] = []
        #: ``refuse(test_id or None, line)``: the error for a repeat.
        self._refuse = refuse

    def add(self, test_id: str, line: int | None) -> None:
        """One id whose first state ended."""
        fingerprint = hash(test_id)
        new = self._new
        if fingerprint in new:
            raise self._refuse(test_id, line)
        new.add(fingerprint)
        self._singles.append(fingerprint)
        self._single_lines.append(line)
        if len(new) >= _MIN_PASS and len(new) * _SHARE >= len(self._done):
            self.check()

    def add_all(self, ids: Sequence[str], lines: Sequence[int | None]) -> None:
        """Ids that were each the first attempt of a new id, with their report lines."""
        fingerprints = list(map(hash, ids))
        new = self._new
        if not new.isdisjoint(fingerprints):
            at = next(at for at, fingerprint in enumerate(fingerprints) if fingerprint in new)
            raise self._refuse(ids[at], lines[at])
        size = len(new) + len(fingerprints)
        new.update(fingerprints)
        if len(new) != size:  # two ids of the block share a fingerprint
            first: dict[int, int] = {}
            for at, fingerprint in enumerate(fingerprints):
                if first.setdefault(fingerprint, at) != at:
                    raise self._refuse(ids[at], lines[at])
        self._blocks.append((fingerprints, lines))
        if size >= _MIN_PASS and size * _SHARE >= len(self._done):
            self.check()

    def check(self) -> None:
        """Compare the newest fingerprints with the older ones; keep them all."""
        new = self._new
        done = self._done
        if not new.isdisjoint(done):
            found = set(filter(new.__contains__, done))
            waiting = chain(
                chain.from_iterable(zip(*block, strict=True) for block in self._blocks),
                zip(self._singles, self._single_lines, strict=True),
            )
            hits = [line or 0 for fingerprint, line in waiting if fingerprint in found]
            raise self._refuse(None, min(hits) or None)
        # struct converts each int directly; array.extend parses each through
        # PyArg_Parse (about 600 instructions per fingerprint against ~100).
        done.frombytes(struct.pack(f"{len(new)}q", *new))
        new.clear()
        self._blocks.clear()
        self._singles.clear()
        self._single_lines.clear()


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
        "_alias",
        "_build",
        "_converted",
        "_defect",
        "_element",
        "_emitted",
        "_flagged",
        "_live",
        "_next",
        "_only",
        "_queue",
        "_seen",
        "_source",
        "_stream",
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
        alias: str | None = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        self._source = source
        self._window = window
        self._only = only
        # Another id the format gives the test ``only`` names (pytest's JUnit form of a node id):
        # its attempts are kept too, under ``only``.
        self._alias = alias
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
        self._seen = _Seen(self._departed)
        # Flagged ids whose state ended -> attempts so far: they may repeat at any distance.
        self._flagged: dict[str, int] = {}
        # Claimed ids that a repeat turned into a state while their block is held.
        self._converted: set[str] = set()
        self._next = 0
        self._element = 0
        # The first stream-level defect, the flags it adds to every record,
        # and whether any record left the window (then a defect is too late).
        self._defect: str | None = None
        self._stream: frozenset[AttemptFlag] = NO_FLAGS
        self._emitted = False

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
            if test_id != self._alias:
                return
            test_id = self._only
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
        if not live.keys().isdisjoint(ids):
            return None
        if self._flagged and not self._flagged.keys().isdisjoint(ids):
            return None
        first = self._next
        size = len(live) + len(ids)
        live.update(zip(ids, range(first, first + len(ids)), strict=True))
        if len(live) != size:  # an id repeats within ``ids``: undo
            deque(map(live.pop, ids, repeat(None)), 0)
            return None
        self._next = first + len(ids)
        return first

    def push_block(
        self,
        ids: Sequence[str],
        lines: list[str] | Callable[[], list[str]],
        lines_at: Sequence[int],
        first: int,
        counts: dict[str, int],
    ) -> None:
        """Queue claimed attempts.

        ``lines`` are their records (attempt 1, the same flags for all), or
        a function that renders them when the block leaves the window;
        ``lines_at[i]`` is the report line of ``ids[i]`` (for errors);
        ``counts`` what they add to :attr:`counts`.
        """
        self._queue.append((first + len(ids) - 1, None, ids, lines, lines_at, first, counts))

    def taint(self, defect: str, line: int | None) -> None:
        """A defect of the whole report: every record of it carries ``stream-defect``.

        Raises :class:`InputError` instead when a record already left the
        window (it can no longer be flagged) or only one test id is kept.
        """
        if self._defect is not None:
            return
        self._defect = defect
        self._stream = DEFECT
        if self._only is not None:
            raise InputError(
                f"{defect}: a defect of the whole report, so no test's attempts "
                "can be taken from it",
                source=self._source,
                line=line,
            )
        if self._emitted:
            raise InputError(
                f"{defect}: a defect of the whole report, found after some of its "
                "attempts were emitted; they can no longer be flagged "
                "(raise Limits.reorder_window)",
                source=self._source,
                line=line,
            )

    # -- emission -----------------------------------------------------------------
    def ready(self) -> None:
        """Move every attempt no later repeat can flag any more to :attr:`out`."""
        self._emit(self._next - self._window)

    def finish(self) -> None:
        """Move every attempt still held to :attr:`out` (end of the report)."""
        self._emit(self._next + 1)
        self._seen.check()

    def _emit(self, limit: int) -> None:
        queue = self._queue
        out = self.out
        build = self._build
        counts = self.counts
        stream = self._stream
        # A record left when the object path's would: a block's first one (its key is its last).
        if queue and (queue[0][0] if queue[0][1] is not None else queue[0][5]) < limit:
            self._emitted = True
        while queue and queue[0][0] < limit:
            item = queue.popleft()
            if item[1] is None:
                self._emit_block(item)
                continue
            index, state, test_id, outcome, native, number, src, duration, message, flags = item
            if state[_FLAGGED]:
                flags = flags | CONFLICT
            if stream:
                flags = flags | stream
            if state[_LAST] == index:
                self._end(test_id, state)
            out.append(build(test_id, outcome, native, number, src, duration, message, flags))
            if counts is not None:
                counts[outcome.value] = counts.get(outcome.value, 0) + 1
                if flags:
                    counts["flagged"] = counts.get("flagged", 0) + 1

    def _emit_block(self, item: tuple[Any, ...]) -> None:
        _last, _, ids, lines, lines_at, _first, block_counts = item
        if not isinstance(lines, list):
            lines = lines()
        converted = self._converted
        live = self._live
        flagged_extra = 0
        if converted and not converted.isdisjoint(ids):
            lines = list(lines)
            ended: list[str] = []
            ended_at: list[int] = []
            for at, test_id in enumerate(ids):
                if test_id in converted:  # its state goes on: it ends in _end
                    converted.discard(test_id)
                    live[test_id][_LINE] = lines_at[at]
                    lines[at] = add_flag(lines[at], AttemptFlag.CONFLICTING_DUPLICATE)
                    flagged_extra += not block_counts.get("flagged")
                else:
                    del live[test_id]
                    ended.append(test_id)
                    ended_at.append(lines_at[at])
            self._seen.add_all(ended, ended_at)
        else:
            deque(map(live.pop, ids), 0)
            self._seen.add_all(ids, lines_at)
        if self._stream:  # every record of a defective stream, whatever it had
            lines = [add_flag(line, AttemptFlag.STREAM_DEFECT) for line in lines]
            flagged_extra = len(ids) - block_counts.get("flagged", 0)
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
        if test_id not in self._flagged:  # else only a continuation of a flagged id ended
            self._seen.add(test_id, state[_LINE])
        if state[_FLAGGED]:
            self._flagged[test_id] = state[_COUNT]
            if len(self._flagged) > _MAX_FLAGGED_IDS:
                raise LimitError(
                    f"more than {_MAX_FLAGGED_IDS} repeated test ids", source=self._source
                )

    def _departed(self, test_id: str | None, line: int | None) -> InputError:
        """A repeat too late to flag (``test_id`` None: known only by its fingerprint)."""
        named = "the test id here" if test_id is None else f"test id {test_id[:200]!r}"
        return InputError(
            f"{named} repeats more than {self._window} attempts "
            "after its earlier attempts were emitted; they can no longer be flagged "
            "(raise Limits.reorder_window)",
            source=self._source,
            line=line,
        )
