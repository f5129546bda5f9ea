"""Hard limits for hostile reports, in one frozen object.

The report under judgement may have been written by the patch being judged,
so every size an attacker controls is bounded here.  A report over a limit is
refused with :class:`~flakecore.errors.LimitError`; nothing is truncated
silently except messages, which are evidence for humans, not for decisions.
"""

from __future__ import annotations

import attrs

from flakecore.errors import UsageError

__all__ = ["DEFAULT_LIMITS", "Limits"]


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"limit {attribute.name} must be a positive integer, got {value!r}")


@attrs.frozen(kw_only=True)
class Limits:
    """Bounds applied while reading one report (defaults fit real CI reports)."""

    max_bytes: int = attrs.field(default=8 * 1024**3, validator=_positive)
    """Whole report; refused once this many bytes were read."""
    max_depth: int = attrs.field(default=256, validator=_positive)
    """XML element nesting, JSON nesting, TAP subtest nesting."""
    max_token_bytes: int = attrs.field(default=16 * 1024**2, validator=_positive)
    """One XML tag (with its attributes), comment or PI; one JSON array element."""
    max_text_bytes: int = attrs.field(default=256 * 1024**2, validator=_positive)
    """Character data inside one XML result element."""
    max_line_bytes: int = attrs.field(default=16 * 1024**2, validator=_positive)
    """One TAP line or one pytest-reportlog JSON line."""
    max_id_chars: int = attrs.field(default=64 * 1024, validator=_positive)
    """One test id (an id longer than this is hostile, not a test)."""
    max_message_chars: int = attrs.field(default=2000, validator=_positive)
    """Messages are cut to this many characters (the only silent truncation)."""
    reorder_window: int = attrs.field(default=16_384, validator=_positive)
    """Attempts held back before they are emitted, so that a repeated test id
    can still flag its earlier attempts (see docs/adapters.md)."""
    max_open_tests: int = attrs.field(default=100_000, validator=_positive)
    """pytest-reportlog tests started but not finished; TAP attempts waiting
    for the name of an unnamed subtest."""


DEFAULT_LIMITS = Limits()
