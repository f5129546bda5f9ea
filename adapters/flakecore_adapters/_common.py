"""Small helpers every format shares: durations, messages, ids, flag sets.

Kept in one place so the four parsers cannot drift apart on what a duration
or a message is (``1,5`` is not 15 seconds, ``NaN`` is not zero).
"""

from __future__ import annotations

import math
import re

from flakecore.codes import AttemptFlag
from flakecore.errors import InputError, LimitError

__all__ = [
    "BAILED",
    "CONFLICT",
    "DEFECT",
    "NO_FLAGS",
    "PLAN_ID",
    "PSEUDO_HOOK",
    "SESSION_ID",
    "UNEXPECTED",
    "check_id",
    "clip",
    "duration_from_number",
    "duration_from_text",
    "incomplete_flags",
]

#: Test id of the TAP pseudo-attempt for a plan that was not fulfilled.
PLAN_ID = "<plan>"
#: Test id of the pytest-reportlog pseudo-attempt for a session that never finished.
SESSION_ID = "<session>"

#: Names runners give the pseudo-test of a failing hook or a file that failed
#: to load (Gradle/JUnit 4, mocha, bats): such an attempt is an ``error``.
PSEUDO_HOOK = re.compile(
    r"(?:classMethod|initializationError|executionError|)\Z"
    r'|.*"(?:before|after) (?:all|each)" hook'
    r"|(?:setup|teardown)_(?:file|suite) failed\Z",
    re.DOTALL,
)

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

NO_FLAGS: frozenset[AttemptFlag] = frozenset()
CONFLICT = frozenset({AttemptFlag.CONFLICTING_DUPLICATE})
UNEXPECTED = frozenset({AttemptFlag.UNEXPECTED_PASS})
BAILED = frozenset({AttemptFlag.BAILED_OUT})
DEFECT = frozenset({AttemptFlag.STREAM_DEFECT})


def incomplete_flags() -> frozenset[AttemptFlag]:
    """Flags for attempts whose report kept fewer attempts than ran.

    Needs ``AttemptFlag.INCOMPLETE_HISTORY`` in the core; until the core has
    it, such attempts carry no flag (see docs/adapters.md, "core changes").
    """
    flag = getattr(AttemptFlag, "INCOMPLETE_HISTORY", None)
    return frozenset({flag}) if isinstance(flag, AttemptFlag) else NO_FLAGS


def duration_from_text(text: str | None) -> float | None:
    """Seconds from a report attribute; anything but a plain non-negative decimal is unknown.

    ``1,5``, ``NaN``, ``inf``, ``-1``, ``1_0`` and non-ASCII digits are all
    unknown (``None``), never a number ``float()`` would happily make of them.
    """
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    # float() also takes "nan", "inf", "1_0" and non-ASCII digits: none is a duration.
    if value >= 0 and value != math.inf and text.isascii() and "_" not in text:
        return value
    return None


def duration_from_number(value: object, scale: float = 1.0) -> float | None:
    """Seconds from a JSON number (``scale`` converts e.g. milliseconds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    seconds = float(value) * scale
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def clip(text: str | None, limit: int) -> str | None:
    """A message cut to ``limit`` characters; lone surrogates replaced (they are not text)."""
    if text is None:
        return None
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def check_id(test_id: str, limit: int, source: str, line: int | None) -> str:
    """Refuse a string that cannot be a test id; every format's ids go through here.

    A test id is never blank (empty or whitespace only) and holds no NUL or
    other control character (C0, DEL, C1): a ledger row or lease keyed by it
    must name one test, printably.  Also refused: longer than ``limit``, or
    not encodable as UTF-8 (a lone surrogate).
    """
    if test_id.isprintable() and len(test_id) <= limit and test_id and not test_id.isspace():
        return test_id  # the common case: one C-level pass each
    if len(test_id) > limit:
        raise LimitError(f"test id longer than {limit} characters", source=source, line=line)
    if not test_id or test_id.isspace():
        raise InputError(f"blank test id {test_id[:20]!r}", source=source, line=line)
    control = _CONTROL.search(test_id)
    if control is not None:
        raise InputError(
            f"test id {test_id[:200]!r} holds the control character U+{ord(control.group()):04X}",
            source=source,
            line=line,
        )
    try:
        test_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("test id holds a lone surrogate", source=source, line=line) from None
    return test_id
