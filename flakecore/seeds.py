"""Seeds given as command-line text: one rule for every flag that takes one.

A command line cannot say whether ``1234`` meant the integer or the string,
and seeds compare by value *and* type, so every flag (``budget-run
--seeds``, ``replay --seed``, the pytest plugin's ``--flakecore-seed``) reads
text the same way: a canonical decimal integer within +/-(2^53-1) is an
integer seed, anything else is a string seed, exactly as given.  ``str()`` of
the seed gives the text back, and reading that text again gives the same
seed, so a seed recorded in a log can be pinned again through ``{seed}``.
"""

from __future__ import annotations

import re

from flakecore._fields import MAX_SAFE_INTEGER, Seed
from flakecore.errors import UsageError

__all__ = ["fresh_seed", "seed_from_text"]

#: Canonical decimals only: ``007``, ``+7`` and ``-0`` stay strings (``int()``
#: would silently make them another seed's text).
_INTEGER = re.compile(r"0|-?[1-9][0-9]*")


def seed_from_text(text: str) -> Seed:
    """``"1234"`` -> ``1234``; ``"007"``, ``"abc"``, ``"2**60"`` stay strings; blank is refused."""
    if not text.strip():
        raise UsageError("a seed must not be blank")
    if _INTEGER.fullmatch(text):
        value = int(text)
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
    return text


def fresh_seed() -> int:
    """A seed drawn at random, in ``0 .. 2**32-1`` (every random source takes it as it is)."""
    import secrets  # noqa: PLC0415 - only a verb that draws a seed pays for it

    return secrets.randbelow(2**32)
