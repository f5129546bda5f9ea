"""RFC 3339 timestamps, strictly.

``datetime.fromisoformat`` accepts naive times and (on 3.11+) many ISO forms
that other languages' parsers do not.  A lease expiry must mean the same
thing to every runner, so only RFC 3339 with an explicit offset is accepted.

Arithmetic never overflows: every parsed instant is representable in UTC
(``9999-12-31T23:00:00-05:00`` is year 10000 there, and is refused), and
callers compare spans by subtracting two instants (``expiry - now >
max_lease``), never by adding a span to one, which overflows past year 9999.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import re

__all__ = ["format_rfc3339", "parse_rfc3339"]

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
# ``[0-9]``, not ``\d``: ``\d`` also matches Arabic-Indic and other Unicode digits.
_NAIVE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?")


def parse_rfc3339(text: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp with offset; raise ``ValueError`` otherwise.

    A naive timestamp (no offset) gets its own message: docs/policies.md calls it
    incomplete evidence, not a time in some guessed zone.  The answers for the
    last few hundred strings are kept (a datetime is a value; a refusal is
    raised afresh each time): a lease's expiry is read by several of its checks.
    """
    if not isinstance(text, str):
        raise ValueError("timestamp must be a string")
    # Only a plain str is a cache key: a subclass may compare equal to another text.
    return _parsed(text) if type(text) is str else _parse(text)


def _parse(text: str) -> dt.datetime:
    m = _RFC3339.fullmatch(text)
    if m is None:
        if _NAIVE.fullmatch(text):
            raise ValueError(f"naive timestamp {text!r} has no UTC offset")
        raise ValueError(f"{text[:64]!r} is not an RFC 3339 timestamp")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = m.group(7)
    micro = int((frac[1:] + "000000")[:6]) if frac else 0
    if m.group(8):
        tz = dt.timezone.utc
    else:
        sign = -1 if m.group(9) == "-" else 1
        hours, minutes = int(m.group(10)), int(m.group(11))
        if hours > 23 or minutes > 59:
            raise ValueError(f"offset out of range in {text!r}")
        tz = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
    if second == 60:  # leap second: RFC 3339 allows it, datetime does not
        second = 59
    when = dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    try:
        when.astimezone(dt.timezone.utc)
    except OverflowError:
        raise ValueError(f"{text!r} is outside years 0001..9999 in UTC") from None
    return when


_parsed = functools.lru_cache(maxsize=512)(_parse)


def format_rfc3339(when: dt.datetime) -> str:
    """Format an aware datetime as RFC 3339 in UTC with a ``Z`` suffix.

    An instant UTC cannot hold in ``datetime``'s range (only a caller's own
    datetime: :func:`parse_rfc3339` never returns one) keeps its own offset.
    """
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError("naive datetime")
    with contextlib.suppress(OverflowError):
        when = when.astimezone(dt.timezone.utc)
    return when.isoformat().replace("+00:00", "Z")
