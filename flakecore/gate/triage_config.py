"""``[tool.flakecore.triage]`` as read: how ``flakecore triage`` replays one red test.

The table is parsed and checked with the rest of the configuration
(:func:`flakecore.gate.config.parse_table`); its class is here, apart, so
that a verb whose configuration has no such table does not build it
(docs/performance.md).
"""

from __future__ import annotations

import attrs

__all__ = ["TriageConfig"]


@attrs.frozen(kw_only=True)
class TriageConfig:
    """``[tool.flakecore.triage]``: how ``flakecore triage`` replays one red test.

    Read only from a trusted configuration in practice (the base revision):
    the command decides what a replay means, so the patch must not choose it.
    """

    command: tuple[str, ...]
    """One test with one seed: ``{test_id}`` and ``{seed}`` are replaced in each argument."""
    epoch_lock: str
    """The fixture epoch lock file, relative to the repository top."""
    policies: tuple[str, ...] = ("replay",)
    """The policies that must all accept (``gate.config.TRIAGE_POLICIES``), in that order."""
    report: str | None = None
    """A report the command writes (relative to the worktree): judge attempts from it."""
    report_format: str = "auto"
    """The report's format for the adapters (``auto`` sniffs it)."""
    setup: tuple[str, ...] = ()
    """Run once in the base worktree before the first attempt (the base's own environment)."""
    timeout_s: float | None = None
    """Per-attempt wall-clock limit, in seconds."""
    fixture: str | None = None
    """The seed budget's fixture (default: the epoch lock)."""
    property_command: tuple[str, ...] = ()
    """The seed budget's property check; ``{fixture}`` names the parent fixture."""

    @property
    def budget_fixture(self) -> str:
        """The file the seed budget compares between base and head."""
        return self.fixture if self.fixture is not None else self.epoch_lock
