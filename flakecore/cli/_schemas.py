"""``flakecore validate`` and ``flakecore schema``: the shipped JSON Schemas on the command line.

``validate`` lets a pipeline check any record against its schema without
writing Python; ``schema`` prints the exact file a non-Python runner needs.
Files are read with the same strict JSON reader as every other verb
(duplicate keys, NaN, lone surrogates and BOMs are unusable input), so a
file that validates here is one flakecore will read the same way.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Iterator

import attrs

from flakecore import validation
from flakecore.cli._common import die, input_exit
from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.errors import InputError, LimitError, UsageError
from flakecore.exits import (
    EXIT_DATAERR,
    EXIT_NOINPUT,
    EXIT_OK,
    EXIT_SOFTWARE,
    VALIDATE_INVALID,
)
from flakecore.files import read_bytes
from flakecore.jsonio import MAX_DOCUMENT_BYTES, load_object

__all__ = ["register"]

#: Worst first: a file that could not be checked outranks one found invalid.
_SEVERITY = (EXIT_NOINPUT, EXIT_DATAERR, VALIDATE_INVALID, EXIT_OK)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``validate`` and ``schema`` verbs."""
    parser = sub.add_parser(
        "validate",
        help="check records against flakecore's JSON Schemas",
        description=(
            "Validate records against the JSON Schemas shipped with flakecore. A file holds one "
            "JSON object, or JSON Lines (one object per line, each validated on its own). The "
            "kind comes from each record's 'format' field ('flakecore.<kind>') or from --kind; "
            "attempt-log lines carry no format, so they need --kind attempt-line. Each problem "
            "is printed on its own line as FILE[:LINE]: /json/pointer: message."
        ),
        epilog=(
            "exit: 0 every record valid, 1 a record is invalid (or names no known kind), "
            "65 unusable input (not strict JSON, not an object), 66 missing file, 64 usage "
            "error, 70 the 'schemas' extra is not installed. With several problems the exit "
            "is the worst: 66, then 65, then 1."
        ),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="record file (JSON or JSON Lines), or - for stdin"
    )
    parser.add_argument("--kind", metavar="KIND", help="validate every record as this kind")
    add_output_arguments(parser)
    parser.set_defaults(run=_run_validate)

    schema = sub.add_parser(
        "schema",
        help="print one of flakecore's JSON Schemas",
        description=(
            "Print a shipped JSON Schema exactly as installed; without NAME, list the names. "
            "With --format json: one object per schema, {kind, id} (and the schema itself "
            "with NAME)."
        ),
        epilog="exit: 0 printed, 64 unknown name (the known names are listed)",
    )
    schema.add_argument("name", nargs="?", metavar="NAME", help="schema name, e.g. decision")
    add_output_arguments(schema)
    schema.set_defaults(run=_run_schema)


@attrs.frozen
class _Unit:
    """One record to check: a whole file, or one line of a JSON Lines file."""

    where: str
    record: dict[str, object] | None = None
    error: InputError | None = None


def _read(name: str) -> bytes:
    if name != "-":
        return read_bytes(name, MAX_DOCUMENT_BYTES)
    data = sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise LimitError(f"larger than {MAX_DOCUMENT_BYTES} bytes", source=name)
    return data


def _units(name: str) -> Iterator[_Unit]:
    """The records of one file: the whole document, or else its JSON Lines.

    A file is JSON Lines only when the whole of it is not one JSON document
    and its first line, on its own, is a JSON object; otherwise the error of
    the whole document is the one worth reporting.
    """
    try:
        data = _read(name)
    except InputError as exc:
        yield _Unit(name, error=exc)
        return
    try:
        record = load_object(data, source=name)
    except InputError as exc:
        whole = exc
    else:
        yield _Unit(name, record=record)
        return
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) < 2 or not _is_object(lines[0], name):
        yield _Unit(name, error=whole)
        return
    for number, raw in enumerate(lines, start=1):
        where = f"{name}:{number}"
        if not raw.strip():
            yield _Unit(where, error=InputError("blank line", source=name, line=number))
            continue
        try:
            yield _Unit(where, record=load_object(raw, source=name, line=number))
        except InputError as exc:
            yield _Unit(where, error=exc)


def _is_object(line: bytes, name: str) -> bool:
    try:
        load_object(line, source=name, line=1)
    except InputError:
        return False
    return True


def _check(
    record: dict[str, object], kind: str | None
) -> tuple[str | None, list[validation.Problem]]:
    """The kind the record is checked as, and what its schema refuses."""
    if kind is None:
        try:
            kind = validation.kind_of(record)
        except validation.UnknownKindError as exc:
            return None, [validation.Problem("/format", str(exc), "format")]
        if kind is None:
            message = "missing: the record does not name its kind; give --kind"
            return None, [validation.Problem("/format", message, "format")]
    return kind, list(validation.iter_errors(record, kind))


def _run_validate(args: argparse.Namespace) -> int:
    try:
        return _validate_files(args)
    except validation.SchemasMissingError as exc:
        return die(str(exc), EXIT_SOFTWARE)


def _validate_files(args: argparse.Namespace) -> int:
    kind: str | None = args.kind
    if kind is not None and kind not in validation.schema_names():
        known = ", ".join(validation.schema_names())
        raise UsageError(f"--kind: unknown kind {kind!r}; known: {known}")
    out = Output.chosen(args, "flakecore validate")
    seen: set[int] = set()
    counts = {"valid": 0, "invalid": 0, "unusable": 0}
    for name in args.files:
        for unit in _units(name):
            if unit.record is None:
                assert unit.error is not None
                code = input_exit(unit.error)
                seen.add(code)
                counts["unusable"] += 1
                record = {"input": unit.where, "valid": False, "error": str(unit.error)}
                row = _row(name, None, "UNUSABLE", code, str(unit.error), unit.where)
                out.emit(Result(json=record, stderr=[str(unit.error)], row=row))
                continue
            used, problems = _check(unit.record, kind)
            seen.add(VALIDATE_INVALID if problems else EXIT_OK)
            counts["invalid" if problems else "valid"] += 1
            record = {
                "input": unit.where,
                "kind": used,
                "valid": not problems,
                "problems": [attrs.asdict(p) for p in problems],
            }
            why = "; ".join(str(p) for p in problems)
            bad = _row(name, used, "INVALID", VALIDATE_INVALID, why, unit.where)
            text = [f"{unit.where}: {p}" for p in problems]
            out.emit(Result(json=record, text=text, row=bad if problems else None))
    exit_code = next((code for code in _SEVERITY if code in seen), EXIT_OK)
    summary = ", ".join(f"{n} {label}" for label, n in counts.items())
    valid = _row("", None, "VALID", EXIT_OK, summary, ", ".join(args.files))
    out.emit(Result(stderr=[f"validate: {summary}"], row=None if exit_code else valid))
    return out.finish(exit_code)


def _row(  # noqa: PLR0917 - one GitHub row, its cells in column order
    file: str, kind: str | None, code: str, exit_code: int, reason: str, where: str
) -> SummaryRow:
    """A ``--format github`` row: refused unless ``code`` is VALID; annotated at the file."""
    return SummaryRow(
        test="",
        policy=f"validate {kind}" if kind else "validate",
        code=code,
        exit=exit_code,
        reason=reason,
        evidence=where,
        refused=code != "VALID",
        file=file if file and file != "-" else None,
    )


def _run_schema(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore schema")
    try:
        names = validation.schema_names()
    except validation.SchemasMissingError as exc:
        return die(str(exc), EXIT_SOFTWARE)
    if args.name is not None and args.name not in names:
        raise UsageError(f"schema: unknown name {args.name!r}; known: {', '.join(names)}")
    if args.name is not None and out.form == "text":
        sys.stdout.buffer.write(validation.schema_bytes(args.name))
        sys.stdout.flush()
        return EXIT_OK
    for name in [args.name] if args.name is not None else names:
        row = SummaryRow(
            test="",
            policy="schema",
            code=name,
            exit=EXIT_OK,
            reason=validation.schema_id(name),
            evidence="",
            refused=False,
        )
        record: dict[str, object] = {"kind": name, "id": validation.schema_id(name)}
        if args.name is not None:
            record["schema"] = validation.load_schema(name)
        out.emit(Result(json=record, text=[name], row=row))
    return out.finish(EXIT_OK)
