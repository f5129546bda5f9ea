"""How messages count things: ``1 seed``, ``8 seeds``, never ``1 seeds``."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """The count and its noun in agreement (``nouns``: an irregular plural)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
