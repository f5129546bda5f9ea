"""Exceptions for input that cannot be used at all, and for a missing optional extra.

Verdicts are values, never exceptions: a policy that refuses returns a
decision.  These types exist only for input flakecore cannot read (a file that
is not JSON, a report that is not XML, a log over the size limit).  Every one
carries where the problem is, so the CLI can print one line that names the
file and the position.  :class:`MissingExtra` is the one error for a feature
whose optional dependencies are not installed (the CLI exits 70 on it), and
:class:`GitError` the one for a git command that failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flakecore.codes import TrustReason

__all__ = [
    "FlakecoreError",
    "GitError",
    "InputError",
    "LimitError",
    "MissingExtra",
    "MissingInputError",
    "Untrusted",
    "UnusableInputError",
    "UsageError",
    "WorktreeLockTimeout",
]


class FlakecoreError(Exception):
    """Root of every exception flakecore raises on purpose."""


class InputError(FlakecoreError, ValueError):
    """Input that cannot be used: malformed, truncated, hostile or unsupported.

    ``source`` names the file (or ``-`` / ``-:LINE`` for standard input),
    ``line`` and ``column`` are 1-based when known.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "<input>",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {_one_line(self.message)}"


class MissingInputError(InputError):
    """No file to read at that name: absent, a directory, a dangling symlink, no permission.

    The CLI exits 66 for this type and 65 for every other :class:`InputError`:
    the exit is decided by the type, never by the wording of the message.
    """


class UnusableInputError(InputError):
    """Something is at that name, and it is refused unread.

    A FIFO, a device, a socket, a kernel pseudo-file (``/proc``), or a
    symlink that leads out of its own directory (see :mod:`flakecore.files`).
    """


class LimitError(InputError):
    """Input larger or deeper than a hard limit; refused without reading it all."""


class UsageError(FlakecoreError, ValueError):
    """A caller asked for something that makes no sense (bad flag, bad policy value)."""


class GitError(FlakecoreError):
    """A git command failed: not a repository, unknown revision, worktree refused.

    For the gate this is missing evidence (a refusal), never a crash: the
    message is one line naming the git command and git's own complaint.
    Defined here, not with the git layer (:mod:`flakecore.gate.worktree`),
    so the CLI can catch it without importing that layer.
    """


class WorktreeLockTimeout(GitError):
    """Another replay held the repository's worktree lock past the deadline (docs/gate.md).

    A refusal like any other :class:`GitError`: the worktree was not added
    (or, on removal, its registration is left for ``git worktree prune``).
    """


class MissingExtra(FlakecoreError, ImportError):
    """A feature needs an optional extra that is not installed; the message says how to add it.

    ``extra`` names it (``adapters``, ``schemas``); ``name`` is the module
    that failed to import, as on any :class:`ImportError`.
    """

    def __init__(self, extra: str, *, needed_by: str, name: str | None = None) -> None:
        self.extra = extra
        missing = f" ({name} is not installed)" if name else ""
        super().__init__(
            f"{needed_by} needs the optional '{extra}' extra{missing}: "
            f"pip install 'flakecore[{extra}]'",
            name=name,
        )


def _one_line(text: str) -> str:
    """Keep hostile input from forging extra output lines."""
    flat = " ".join(text.split())
    return flat if len(flat) <= 300 else flat[:297] + "..."


class Untrusted(FlakecoreError, ValueError):
    """A record that cannot count, with the :class:`~flakecore.codes.TrustReason` that says why.

    Raised inside the readers of signed records (:mod:`flakecore.attestation`,
    which names it too) and of the checkout; :mod:`flakecore.signing` turns
    it into a :class:`~flakecore.trust.TrustVerdict`, so callers get a value.
    """

    def __init__(self, reason: TrustReason, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason.value}: {detail}")
