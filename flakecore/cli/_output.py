"""One output convention for every verb: ``--format text|json|github`` and its printer.

A verb describes each record it reports once, as a :class:`Result` (its
JSON object, its text lines, its GitHub row with the reasons), and an
:class:`Output` prints the form the user chose: JSON Lines, text, or GitHub
Actions annotations plus a step-summary table (:mod:`flakecore.cli._github`).
``--json`` is the shorthand for ``--format json``.  Diagnostics that are not
a result (a field left out, why a stored record is invalid) go to stderr in
every format, through :func:`flakecore.cli._common.warn`.

The printer is also where every decision gets its policy source
(:meth:`Output.use`, :meth:`Output.decision`): a verb never prints a
decision that does not say where its policy came from.

Records reach stdout in batches, at most :data:`~flakecore.cli._common.FLUSH_S`
after they are printed, and always before a line goes to stderr and at
:meth:`Output.finish` (:func:`~flakecore.cli._common.out_line`).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from flakecore.cli._common import flush_out, out_line, warn, write_json_line
from flakecore.cli._config import Configured
from flakecore.codes import PolicyName
from flakecore.errors import UsageError
from flakecore.exits import EXIT_IOERR, EXIT_OK
from flakecore.jsonio import compact_text

if TYPE_CHECKING:
    from flakecore.classify import ClassifyDecision
    from flakecore.cli._github import SummaryRow
    from flakecore.decision import Decision

__all__ = [
    "FORMATS",
    "Output",
    "Result",
    "add_output_arguments",
    "as_classify",
    "output_format",
    "reason_text",
]

FORMATS: Final = ("text", "json", "github")


def _form(reports: bool) -> Callable[[str], str]:
    """The ``--format`` value check; on a verb that reads reports, a report format gets a hint."""

    def form(value: str) -> str:
        if value in FORMATS:
            return value
        message = f"{value!r} is not an output format (text, json or github)"
        if reports:
            message += f"; the format of a test report is --report-format {value}"
        raise argparse.ArgumentTypeError(message)

    return form


def add_output_arguments(parser: argparse.ArgumentParser, *, reports: bool = False) -> None:
    """``--format text|json|github`` and ``--json``; ``reports``: the verb has ``--report-format``.

    The old spelling of GitHub output, ``--github``, is refused with a hint.
    """
    group = parser.add_argument_group("output")
    group.add_argument(
        "--format",
        dest="output_format",
        type=_form(reports),
        default=None,
        metavar="text|json|github",
        help="text (default), json (one object per line) or github (Actions annotations "
        "and a $GITHUB_STEP_SUMMARY table)",
    )
    group.add_argument("--json", action="store_true", help="shorthand for --format json")
    group.add_argument(
        "--github", nargs=0, action=_Removed, help=argparse.SUPPRESS, default=argparse.SUPPRESS
    )


class _Removed(argparse.Action):
    """The removed ``--github``: a usage error that names the new spelling."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"{option_string} was removed: write --format github")


def output_format(args: argparse.Namespace) -> str:
    """The chosen format; ``--json`` together with another ``--format`` is a usage error."""
    chosen = getattr(args, "output_format", None)
    if getattr(args, "json", False):
        if chosen not in (None, "json"):
            raise UsageError(f"--json and --format {chosen} disagree")
        return "json"
    return str(chosen or "text")


#: Read once: on this interpreter an enum's class attribute runs Python code (twice a text line).
_CLASSIFY = PolicyName.CLASSIFY


def as_classify(decision: Decision[Any]) -> ClassifyDecision | None:
    """``decision`` when it is a classify verdict, else None.

    The classify module is imported only for a classify verdict (every one
    records that policy), so the other verbs do not load it.
    """
    if decision.policy is not _CLASSIFY:
        return None
    return decision if isinstance(decision, _classify_decision()) else None


@functools.cache
def _classify_decision() -> type[ClassifyDecision]:
    """The class, imported once (an import statement per packet is a batch's cost)."""
    from flakecore.classify import ClassifyDecision  # noqa: PLC0415 - see as_classify

    return ClassifyDecision


def reason_text(decision: Decision[Any]) -> str:
    """Every reason of a decision on one line; a ``FLAKE`` adds why its lease is refused."""
    reasons = "; ".join(decision.reasons)
    classified = as_classify(decision)
    if classified is not None and classified.lease_reasons:
        reasons += " (lease: " + "; ".join(classified.lease_reasons) + ")"
    return reasons


class Result:
    """One record a verb reports, in each format; a form left out prints nothing in that format.

    In the text format, ``text`` lines go to stdout and ``stderr`` lines to
    stderr as ``flakecore: ...`` (an unreadable input, a summary): there the
    JSON and GitHub forms carry the same facts.  ``json_text`` is the JSON
    form's line already encoded (what ``json`` would print), instead of ``json``.

    A plain class, not an attrs one: it only carries a verb's record to
    :meth:`Output.emit` (never compared, hashed or part of the library), and
    building an attrs class is a start-up cost of every verb
    (docs/performance.md, Start-up).
    """

    __slots__ = ("json", "json_text", "row", "stderr", "text")

    def __init__(
        self,
        *,
        json: Mapping[str, object] | None = None,
        json_text: str | None = None,
        text: Sequence[str] = (),
        stderr: Sequence[str] = (),
        row: SummaryRow | None = None,
    ) -> None:
        self.json = json
        self.json_text = json_text
        self.text = text
        self.stderr = stderr
        self.row = row


class Output:
    """Prints one verb's results in the chosen format; :meth:`finish` appends the step summary."""

    def __init__(self, title: str, form: str) -> None:
        if form not in FORMATS:
            raise ValueError(f"unknown output format {form!r}")
        self.title = title
        self.form = form
        self._rows: list[SummaryRow] = []
        self._source_json: dict[str, object] | None = None
        self._source_text: str | None = None
        self._notes: list[str] = []

    @classmethod
    def chosen(cls, args: argparse.Namespace, title: str) -> Output:
        """The output ``--format``/``--json`` chose."""
        return cls(title, output_format(args))

    def use(self, configured: Configured, *, announce: bool = False) -> None:
        """Decisions from now on record ``configured``'s policy source.

        With ``announce`` (a verb that reads the lease or ledger store) one
        stderr line says where the policy came from and which records count;
        a scored tree whose ``[tool.flakecore]`` differs from base's is said
        on stderr by every verb.  Both are printed by :meth:`finish`, so a
        verb that fails on the way still fails with one line.
        """
        self._source_json = configured.source.to_json()
        self._source_text = compact_text(self._source_json)
        self._notes = [configured.describe()] if announce else []
        reason = configured.scored_table_reason
        if reason is not None:
            self._notes.append(reason)

    def decision(self, decision: Decision[Any]) -> dict[str, object]:
        """A decision's record, with the policy source of :meth:`use` (when it was called).

        The source's JSON is built once, in :meth:`use`, and each record
        holds a copy of it.
        """
        if self._source_json is None:
            return decision.to_json()
        return decision.record(_copied(self._source_json))

    def emit_decision(self, decision: Decision[Any], source: str) -> None:
        """Print one decision's record, ``input`` set to ``source`` (the JSON form only).

        What ``emit(Result(json={**decision(d), "input": source}))`` prints;
        the policy source's text is encoded once, in :meth:`use`
        (:meth:`Decision.record_text <flakecore.decision.Decision.record_text>`).
        """
        if self._source_text is None:
            write_json_line({**decision.to_json(), "input": source})
        else:
            out_line(decision.record_text(self._source_text, source))

    def emit(self, result: Result) -> None:
        """Print ``result`` in the chosen form (for GitHub: its annotation, now)."""
        if self.form == "json" and result.json_text is not None:
            out_line(result.json_text)
        elif self.form == "json" and result.json is not None:
            write_json_line(result.json)
        elif self.form == "text":
            for line in result.text:
                out_line(line)
            for line in result.stderr:
                warn(line)
        elif self.form == "github" and result.row is not None:
            out_line(result.row.annotation())
            self._rows.append(result.row)

    def finish(self, exit_code: int) -> int:
        """The exit code, after the notes and the step summary (unwritable: 0 becomes 74)."""
        flush_out()
        for note in self._notes:
            warn(note)
        if self.form != "github":
            return exit_code
        from flakecore.cli._github import append_step_summary  # noqa: PLC0415 - GitHub's only

        error = append_step_summary(self.title, self._rows)
        if error is None:
            return exit_code
        warn(error)
        return EXIT_IOERR if exit_code == EXIT_OK else exit_code


def _copied(source: dict[str, object]) -> dict[str, object]:
    """A policy source's JSON, its lists copied too: no two records share a mutable part."""
    return {k: list(v) if isinstance(v, list) else v for k, v in source.items()}
