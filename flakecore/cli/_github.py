"""GitHub Actions output: workflow-command annotations and the step-summary table.

One annotation per record on stdout (``::error`` for a refusal, ``::notice``
otherwise), and a Markdown table (test, policy, code, verdict, exit, reason,
evidence) appended to the file named by ``$GITHUB_STEP_SUMMARY`` when that
variable is set, so accepted and refused rows differ at a glance.

Everything a hostile packet can put in a message is escaped exactly as the
workflow-command rules say (``%``, ``\\r``, ``\\n`` in the message; also
``:`` and ``,`` in a property), so a test id cannot end an annotation early
or forge a second command; table cells escape ``|``, backslashes, HTML
metacharacters and newlines, so a reason cannot add a column or a row.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from flakecore.files import open_append

__all__ = [
    "SummaryRow",
    "annotation",
    "append_step_summary",
    "escape_data",
    "escape_property",
    "markdown_cell",
    "summary_markdown",
]

_SUMMARY_ENV: Final = "GITHUB_STEP_SUMMARY"
_COLUMNS: Final = ("test", "policy", "code", "verdict", "exit", "reason", "evidence")


def escape_data(text: str) -> str:
    """Escape an annotation message (workflow commands: ``%``, ``\\r``, ``\\n``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape an annotation property value: as a message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str, message: str, *, title: str | None = None, file: str | None = None
) -> str:
    """One workflow command, e.g. ``::error file=a.json,title=flakecore decide::MISSING_FIELD``."""
    if level not in ("error", "warning", "notice"):
        raise ValueError(f"unknown annotation level {level!r}")
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{escape_data(message)}"


def markdown_cell(text: str) -> str:
    """A table cell that cannot add a column or a row, nor open HTML markup."""
    out = text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = out.replace("|", "\\|")
    out = out.replace("\r\n", "\n").replace("\r", "\n")
    return "<br>".join(out.split("\n"))


@attrs.frozen(kw_only=True)
class SummaryRow:
    """One record as GitHub sees it: a row of the step summary, and one annotation.

    ``reason`` is every reason the verb has for this record (a ``FLAKE``
    whose lease is refused says why the lease is refused); ``file`` is the
    file the annotation points at (not a column).
    """

    test: str
    policy: str
    code: str
    exit: int
    reason: str
    evidence: str
    refused: bool
    file: str | None = None
    verdict: str | None = None
    """The verdict column when a verb has a finer one than accepted/refused (``triage``)."""

    def cells(self) -> tuple[str, ...]:
        """The cells, in column order."""
        verdict = self.verdict or ("refused" if self.refused else "accepted")
        return (
            self.test,
            self.policy,
            self.code,
            verdict,
            str(self.exit),
            self.reason,
            self.evidence,
        )

    def annotation(self) -> str:
        """``::error`` when refused, else ``::notice``; titled by the policy and the test."""
        level = "error" if self.refused else "notice"
        title = f"flakecore {self.policy}: {self.test}" if self.test else f"flakecore {self.policy}"
        message = f"{self.code}: {self.reason}" if self.reason else self.code
        return annotation(level, message, title=title, file=self.file or None)


def summary_markdown(title: str, rows: Sequence[SummaryRow]) -> str:
    """A Markdown section: a heading, then one table row per record."""
    lines = [f"### {markdown_cell(title)}", ""]
    lines.append("| " + " | ".join(_COLUMNS) + " |")
    lines.append("|" + "---|" * len(_COLUMNS))
    for row in rows:
        lines.append("| " + " | ".join(markdown_cell(c) for c in row.cells()) + " |")
    return "\n".join(lines) + "\n\n"


def append_step_summary(
    title: str, rows: Sequence[SummaryRow], environ: Mapping[str, str] | None = None
) -> str | None:
    """Append the table to ``$GITHUB_STEP_SUMMARY`` when set; an error message if that failed."""
    env = os.environ if environ is None else environ
    path = env.get(_SUMMARY_ENV)
    if not path:
        return None
    try:
        with open(open_append(path, new=False), "a", encoding="utf-8", newline="\n") as fh:
            fh.write(summary_markdown(title, rows))
    except OSError as exc:
        return f"cannot append to ${_SUMMARY_ENV} ({path}): {exc.strerror}"
    return None
