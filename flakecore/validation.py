"""Validate flakecore records against the JSON Schemas shipped inside the package.

The schemas (``schemas/<kind>.v1.json`` in the repository, ``flakecore/schemas``
in the wheel) are the cross-language contract: a runner in any language
validates the same records with the same files.  This module is the Python
view of them, in the three forms jsonschema itself offers: :func:`is_valid`
(a bool), :func:`iter_errors` (every problem, lazily) and :func:`validate`
(raise the most relevant one).

Why it is built this way:

- The schemas are package data read with :mod:`importlib.resources`, never
  from a path built on ``__file__`` and never from the repository checkout:
  a wheel that lost its schemas must fail here, not quietly use the tree.
- ``jsonschema`` and ``referencing`` are the optional ``schemas`` extra.  They
  are imported inside the functions that need them, so ``import flakecore``
  (and this module) never imports them, and a missing extra is an
  :class:`~flakecore.errors.MissingExtra` (an :class:`ImportError`) that says
  how to install it.
- Every schema is registered in a :class:`referencing.Registry` whose
  ``retrieve`` refuses every URI it does not already hold: a ``$ref`` to a
  remote document is refused, never fetched.  The ``$id`` host is in the
  reserved ``.invalid`` domain, so nothing could be fetched anyway.
- The schemas are strictly JSON Schema: a JSON number with a zero fraction
  (``5.0``) *is* an integer there, while the policies refuse it.  This module
  keeps the standard answer so that Python and other languages agree (see
  ``docs/schemas.md``, "Known discrepancies").
"""

from __future__ import annotations

import copy
import functools
import re
import sys
from collections.abc import Iterator, Mapping
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Final

import attrs

from flakecore.errors import FlakecoreError, MissingExtra
from flakecore.jsonio import loads_strict

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = [
    "SCHEMA_BASE",
    "SCHEMA_MAJOR",
    "Problem",
    "SchemaViolation",
    "SchemasMissingError",
    "UnknownKindError",
    "is_valid",
    "iter_errors",
    "kind_of",
    "load_schema",
    "schema_bytes",
    "schema_id",
    "schema_names",
    "validate",
]

#: Base of every schema ``$id``; ``.invalid`` is reserved and never resolves.
SCHEMA_BASE: Final = "https://flakecore.invalid/schemas/"
#: The major format version this library reads and writes.
SCHEMA_MAJOR: Final = 1
#: Records name their kind as ``flakecore.<kind>`` in their ``format`` field.
_FORMAT_PREFIX: Final = "flakecore."
_SCHEMA_FILE = re.compile(rf"(?P<kind>[a-z][a-z0-9-]*)\.v{SCHEMA_MAJOR}\.json")
#: One problem message stays on one line and within reason, whatever the record holds.
_MAX_MESSAGE = 300


class UnknownKindError(FlakecoreError, LookupError):
    """A record kind (schema name) that this flakecore does not ship a schema for."""


class SchemasMissingError(FlakecoreError, RuntimeError):
    """This installation has no ``flakecore/schemas``: a broken wheel, or a source tree.

    There is deliberately no fallback to a repository checkout: tests and
    tools must see the schemas the wheel really ships.
    """


class SchemaViolation(FlakecoreError, ValueError):
    """A record its schema refuses; raised by :func:`validate` with the most relevant problem."""

    def __init__(self, kind: str, problem: Problem) -> None:
        self.kind = kind
        self.problem = problem
        super().__init__(f"{kind} record: {problem}")


@attrs.frozen
class Problem:
    """One thing a schema refuses in a record.

    ``pointer`` is an RFC 6901 JSON pointer into the record (``""`` is the
    record itself).  For a missing required field it points where the field
    should be, and an unknown field gets a problem of its own, so each line
    a tool prints names exactly one field.  ``keyword`` is the JSON Schema
    keyword that failed (``required``, ``pattern``, ...).
    """

    pointer: str
    message: str
    keyword: str

    def __str__(self) -> str:
        """``/pointer: message`` on one line: control and invisible characters escaped."""
        return f"{_printable(self.pointer) or '(root)'}: {_printable(self.message)}"


def _printable(text: str) -> str:
    """Keep a hostile key (a newline, a bidi override) from forging or disguising output."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _schema_dir() -> Traversable:
    return files("flakecore").joinpath("schemas")


@functools.cache
def schema_names() -> tuple[str, ...]:
    """The record kinds this installation ships schemas for, sorted."""
    found = []
    try:
        entries = list(_schema_dir().iterdir())
    except OSError as exc:
        raise SchemasMissingError(
            "this flakecore installation has no schemas (flakecore/schemas is missing); "
            "install flakecore from its wheel"
        ) from exc
    for entry in entries:
        match = _SCHEMA_FILE.fullmatch(entry.name)
        if match is not None and entry.is_file():
            found.append(match["kind"])
    return tuple(sorted(found))


def schema_id(kind: str) -> str:
    """The ``$id`` of a kind's schema (``https://flakecore.invalid/schemas/<kind>.v1.json``)."""
    return f"{SCHEMA_BASE}{kind}.v{SCHEMA_MAJOR}.json"


def _check_kind(kind: str) -> None:
    if kind not in schema_names():
        raise UnknownKindError(f"unknown record kind {kind!r}; known: {', '.join(schema_names())}")


@functools.cache
def schema_bytes(kind: str) -> bytes:
    """The schema file exactly as shipped (what ``flakecore schema KIND`` prints)."""
    _check_kind(kind)
    return _schema_dir().joinpath(f"{kind}.v{SCHEMA_MAJOR}.json").read_bytes()


@functools.cache
def _schema(kind: str) -> Mapping[str, Any]:
    document = loads_strict(schema_bytes(kind), source=f"flakecore/schemas/{kind}")
    if not isinstance(document, dict) or document.get("$id") != schema_id(kind):
        raise UnknownKindError(f"the shipped schema for {kind!r} does not carry its $id")
    return document


def load_schema(kind: str) -> dict[str, Any]:
    """A kind's schema as a JSON value (a fresh copy: changing it changes nothing here)."""
    return copy.deepcopy(dict(_schema(kind)))


@functools.cache
def _registry() -> Any:
    """Every shipped schema under its ``$id``; any other URI is refused, never fetched."""
    try:
        from referencing import Registry  # noqa: PLC0415
        from referencing.exceptions import NoSuchResource  # noqa: PLC0415
        from referencing.jsonschema import DRAFT202012  # noqa: PLC0415
    except ImportError as exc:
        raise MissingExtra("schemas", needed_by="flakecore.validation", name=exc.name) from exc

    def refuse(uri: str) -> Any:
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg,unused-ignore]

    resources = [(schema_id(k), DRAFT202012.create_resource(_schema(k))) for k in schema_names()]
    return Registry(retrieve=refuse).with_resources(resources).crawl()  # type: ignore[call-arg,unused-ignore]


@functools.cache
def _validator(kind: str) -> Any:
    _check_kind(kind)
    try:
        from jsonschema import (  # type: ignore[import-untyped,unused-ignore]  # noqa: PLC0415
            Draft202012Validator,
        )
    except ImportError as exc:
        raise MissingExtra("schemas", needed_by="flakecore.validation", name=exc.name) from exc
    schema = _schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=_registry())


def _pointer(path: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_MESSAGE else flat[: _MAX_MESSAGE - 3] + "..."


def _follow(document: Any, path: Any) -> Any:
    """The value at ``path`` (keys and indexes) in ``document``, or None."""
    for part in path:
        try:
            document = document[part]
        except (KeyError, IndexError, TypeError):
            return None
    return document


class _Explainer:
    """Turns jsonschema's errors for one record into problems that each name one field."""

    def __init__(self, record: object, kind: str) -> None:
        self.record = record
        self.schema = _schema(kind)
        self.forbidden_seen: dict[tuple[object, ...], int] = {}

    def __call__(self, error: Any) -> list[Problem]:
        path = list(error.absolute_path)
        keyword = str(error.validator)
        instance = error.instance
        if keyword == "required" and isinstance(instance, dict):
            for name in error.validator_value:
                if name not in instance and str(error.message).startswith(repr(name)):
                    return [Problem(_pointer([*path, name]), "missing (required)", keyword)]
        if keyword == "additionalProperties" and isinstance(instance, dict):
            problems = self._unknown_fields(error, path, instance)
            if problems:
                return problems
        if error.validator is None and error.schema is False:
            return [self._forbidden_field(error, path)]
        return [Problem(_pointer(path), _one_line(str(error.message)), keyword)]

    @staticmethod
    def _unknown_fields(error: Any, path: list[Any], instance: dict[str, Any]) -> list[Problem]:
        known = error.schema.get("properties", {})
        if error.schema.get("patternProperties"):
            return []
        folded = {name.casefold(): name for name in known}
        problems = []
        for name in instance:
            if name in known:
                continue
            message = "unknown field (the schema does not define it)"
            twin = folded.get(str(name).casefold())
            if twin is not None:
                message += f"; did you mean {twin!r}?"
            problems.append(Problem(_pointer([*path, name]), message, "additionalProperties"))
        return problems

    def _forbidden_field(self, error: Any, path: list[Any]) -> Problem:
        """A field a ``false`` subschema forbids (e.g. classify's fields on an admit decision).

        jsonschema reports these without the field's name in the path, so the
        name is recovered: the forbidden names the parent object carries, in
        schema order, one per error.
        """
        names: list[str] = []
        properties = _follow(self.schema, error.schema_path)
        parent = _follow(self.record, path)
        if isinstance(properties, dict) and isinstance(parent, dict):
            names = [k for k, v in properties.items() if v is False and k in parent]
        key = (*error.schema_path, None, *path)
        index = self.forbidden_seen.get(key, 0)
        self.forbidden_seen[key] = index + 1
        where = [*path, names[index]] if index < len(names) else path
        return Problem(_pointer(where), "not allowed here", "false")


def iter_errors(record: object, kind: str) -> Iterator[Problem]:
    """Every problem the ``kind`` schema finds in ``record``, lazily.

    Raises :class:`UnknownKindError` for a kind with no schema, and
    :class:`ImportError` without the ``schemas`` extra, when called (not on
    the first ``next``).
    """
    validator = _validator(kind)

    def problems() -> Iterator[Problem]:
        explain = _Explainer(record, kind)
        for error in validator.iter_errors(record):
            yield from explain(error)

    return problems()


def is_valid(record: object, kind: str) -> bool:
    """Whether the ``kind`` schema accepts ``record``."""
    return bool(_validator(kind).is_valid(record))


def validate(record: object, kind: str) -> None:
    """Raise :class:`SchemaViolation` with the most relevant problem, if there is one."""
    validator = _validator(kind)
    try:
        from jsonschema.exceptions import (  # type: ignore[import-untyped,unused-ignore]  # noqa: PLC0415
            best_match,
        )
    except ImportError as exc:  # pragma: no cover - _validator already imported jsonschema
        raise MissingExtra("schemas", needed_by="flakecore.validation", name=exc.name) from exc
    error = best_match(validator.iter_errors(record))
    if error is not None:
        raise SchemaViolation(kind, _Explainer(record, kind)(error)[0])


def kind_of(record: Mapping[str, object]) -> str | None:
    """The kind a record names in its ``format`` field (``flakecore.<kind>``).

    None when the record has no ``format`` (attempt-log lines never do, and
    input packets may leave it out); :class:`UnknownKindError` when it names
    something this flakecore has no schema for.
    """
    if "format" not in record:
        return None
    name = record["format"]
    if isinstance(name, str) and name.startswith(_FORMAT_PREFIX):
        kind = name[len(_FORMAT_PREFIX) :]
        if kind in schema_names():
            return kind
    raise UnknownKindError(
        f"format {name!r} is not one of: " + ", ".join(_FORMAT_PREFIX + k for k in schema_names())
    )
