"""The ``flakecore`` command line: parse, call the core, print, exit by the table.

This is the outer layer: it may import adapters and jsonschema (lazily, in
the verbs that need them); the core never imports it.  Every failure leaves
as one line on stderr and an exit code from :mod:`flakecore.exits` — never a
traceback, never 0.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import flakecore

if TYPE_CHECKING:
    from flakecore.cli._main import build_parser

__all__ = ["VERBS", "build_parser", "console", "main"]

#: Every verb and the module of ``flakecore.cli`` that registers it, in the
#: order ``--help`` lists them.  A call imports only its own verb's module.
VERBS: dict[str, str] = {
    "admit": "_policies",
    "decide": "_policies",
    "budget": "_policies",
    "classify": "_policies",
    "attempts": "_attempts",
    "ingest": "_ingest",
    "validate": "_schemas",
    "schema": "_schemas",
    "replay": "_replay",
    "budget-run": "_replay",
    "triage": "_triage",
    "runner-id": "_runner_id",
    "packet": "_packet",
    "lease": "_lease",
    "ledger": "_ledger",
    "guard": "_guard",
}


def __getattr__(name: str) -> object:
    """``build_parser``, loaded with the CLI's plumbing when it is first used."""
    if name == "build_parser":
        return importlib.import_module("flakecore.cli._main").build_parser
    raise AttributeError(f"module 'flakecore.cli' has no attribute {name!r}")


def asks_version(argv: Sequence[str]) -> bool:
    """Whether argparse would print the version first: ``--version`` (or a prefix) comes first."""
    return bool(argv) and len(argv[0]) > 2 and "--version".startswith(argv[0])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code.

    ``--version`` is answered here, as argparse's version action would print
    it, before the CLI's plumbing or any verb is imported.
    """
    return _dispatch(sys.argv[1:] if argv is None else list(argv), None)


def console() -> int:
    """The ``flakecore`` command (and ``python -m flakecore``): :func:`main` in a process it ends.

    Start-up (imports, classes, the parser) builds objects that live until
    the exit, so the cyclic collector is off until the arguments are
    parsed, and those objects are then frozen out of its passes
    (:func:`gc.freeze`); everything is frozen again at the end, so the
    interpreter's exit does not sweep it (about a tenth of a one-packet
    ``decide``).  The verb itself runs with the collector on, so its
    memory does not grow with its input.  :func:`main`, for callers in a
    process of their own, leaves their collector as they set it.
    """
    gc.disable()
    try:
        return _dispatch(sys.argv[1:], _collect_from_here)
    finally:
        gc.freeze()


def _collect_from_here() -> None:
    gc.freeze()
    gc.enable()


def _dispatch(arguments: Sequence[str], started: Callable[[], None] | None) -> int:
    if asks_version(arguments):
        sys.stdout.write(f"flakecore {flakecore.__version__}\n")
        sys.stdout.flush()
        return 0
    run = importlib.import_module("flakecore.cli._main").run
    return int(run(arguments, started=started))
