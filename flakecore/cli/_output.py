"""Options every verb shares so CI sees one interface: the output format and the configuration.

``--format text|json|github`` (``--json`` is the shorthand for ``--format
json``).  ``github`` speaks GitHub Actions: one workflow-command annotation
per record (``::error`` for a refusal, ``::notice`` otherwise) on stdout, and
a Markdown table (test, policy, code, reason, evidence) appended to the file
named by ``$GITHUB_STEP_SUMMARY`` when that variable is set.

Everything a hostile packet can put in a message is escaped exactly as the
workflow-command rules say (``%``, ``\\r``, ``\\n`` in the message; also
``:`` and ``,`` in a property), so a test id cannot end an annotation early
or forge a second command; table cells escape ``|``, backslashes, HTML
metacharacters and newlines, so a reason cannot add a column or a row.

``--config PYPROJECT`` / ``--no-config`` choose the ``[tool.flakecore]``
table (default: the nearest ``pyproject.toml``); ``--policy NAME=VALUE``
overrides one policy number on top of it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from flakecore.errors import UsageError
from flakecore.exits import EXIT_IOERR, EXIT_OK
from flakecore.files import open_append
from flakecore.gate.config import GateConfig, load_config, parse_policy_override

__all__ = [
    "FORMATS",
    "GithubOutput",
    "SummaryRow",
    "add_config_arguments",
    "add_output_arguments",
    "annotation",
    "append_step_summary",
    "config_from_args",
    "escape_data",
    "escape_property",
    "flat",
    "markdown_cell",
    "output_format",
    "summary_markdown",
]

FORMATS: Final = ("text", "json", "github")
_SUMMARY_ENV: Final = "GITHUB_STEP_SUMMARY"
_COLUMNS: Final = ("test", "policy", "code", "reason", "evidence")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--format text|json|github`` and ``--json``."""
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format",
        dest="output_format",
        choices=FORMATS,
        default=None,
        help="text (default), json (one object per line) or github (Actions annotations "
        "and a $GITHUB_STEP_SUMMARY table)",
    )
    group.add_argument("--json", action="store_true", help="shorthand for --format json")


def output_format(args: argparse.Namespace) -> str:
    """The chosen format; ``--json`` together with another ``--format`` is a usage error."""
    chosen = getattr(args, "output_format", None)
    if getattr(args, "json", False):
        if chosen not in (None, "json"):
            raise UsageError(f"--json and --format {chosen} disagree")
        return "json"
    return str(chosen or "text")


def add_config_arguments(parser: argparse.ArgumentParser, *, policy: bool = True) -> None:
    """``--config``, ``--no-config`` and (with ``policy``) ``--policy NAME=VALUE``."""
    group = parser.add_argument_group("configuration")
    group.add_argument(
        "--config",
        metavar="PYPROJECT",
        help="read [tool.flakecore] from this file (default: the nearest pyproject.toml)",
    )
    group.add_argument(
        "--no-config", action="store_true", help="ignore pyproject.toml: defaults and flags only"
    )
    if policy:
        group.add_argument(
            "--policy",
            dest="policy_overrides",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="override one policy number, e.g. max_lease_days=7 (repeatable)",
        )


def config_from_args(args: argparse.Namespace, *, start: str = ".") -> GateConfig:
    """The configuration file (unless ``--no-config``), then ``--policy`` overrides on top."""
    if getattr(args, "no_config", False) and getattr(args, "config", None):
        raise UsageError("--config and --no-config exclude each other")
    if getattr(args, "no_config", False):
        config = GateConfig()
    else:
        config = load_config(getattr(args, "config", None), start=start)
    overrides = dict(parse_policy_override(t) for t in getattr(args, "policy_overrides", []))
    return config.with_policy(overrides)


def flat(text: str) -> str:
    """One line of plain output: whitespace runs (newlines included) become one space."""
    return " ".join(text.split())


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
    """One row of the step summary, and one annotation."""

    test: str
    policy: str
    code: str
    reason: str
    evidence: str
    refused: bool

    def cells(self) -> tuple[str, ...]:
        """The five cells, in column order."""
        return (self.test, self.policy, self.code, self.reason, self.evidence)


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


class GithubOutput:
    """One verb's records for ``--format github``: annotations now, the table at the end."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[SummaryRow] = []

    def add(self, row: SummaryRow, *, file: str | None = None) -> None:
        """Print the row's annotation (``::error`` when refused) and keep it for the table."""
        level = "error" if row.refused else "notice"
        title = f"flakecore {row.policy}: {row.test}" if row.test else f"flakecore {row.policy}"
        message = f"{row.code}: {row.reason}" if row.reason else row.code
        print(annotation(level, message, title=title, file=file or None), flush=True)
        self.rows.append(row)

    def finish(self, exit_code: int) -> int:
        """Append the table; a summary that cannot be written turns 0 into 74, never the reverse."""
        error = append_step_summary(self.title, self.rows)
        if error is None:
            return exit_code
        print(f"flakecore: {flat(error)}", file=sys.stderr)
        return EXIT_IOERR if exit_code == EXIT_OK else exit_code
