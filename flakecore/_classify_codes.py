"""The exit classes of ``classify`` (docs/policies.md).

It lives apart from :mod:`flakecore.codes` (which re-exports it) so that a
verb builds only the codes it uses (docs/performance.md).
"""

from __future__ import annotations

import enum

__all__ = ["ClassifyClass"]


class ClassifyClass(str, enum.Enum):
    """Exit classes of ``classify`` (docs/policies.md)."""

    INCOMPLETE = "INCOMPLETE"  # verdict/pin missing, budget not filled, origin unknown
    FIXTURE = "FIXTURE"  # the fixture pin does not match
    PROPERTY = "PROPERTY"  # the property fails: the code owns the bug
    STABLE_RED = "STABLE_RED"  # red on every replay
    FLAKE = "FLAKE"  # at least one green in a full budget
