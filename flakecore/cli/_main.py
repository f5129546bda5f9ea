"""The CLI's parser and its exit table: every failure one line on stderr and its exit code."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence

from flakecore import __version__
from flakecore.cli import VERBS, asks_version
from flakecore.cli._common import (
    RecordWriteError,
    UsageArgumentParser,
    die,
    flush_out,
    input_exit,
)
from flakecore.errors import GitError, InputError, MissingExtra, UsageError
from flakecore.exits import EXIT_CANTCREAT, EXIT_IOERR, EXIT_NOINPUT, EXIT_SOFTWARE, EXIT_USAGE

__all__ = ["build_parser", "parser_for", "run"]


def build_parser(verbs: Collection[str] | None = None) -> UsageArgumentParser:
    """The argument parser: every verb, or only ``verbs``.

    Each verb's module is imported and its ``register(sub, wanted)`` adds
    those of its verbs that ``wanted`` names (a module may add all of its own:
    ``validate`` and ``schema`` are added together).
    """
    parser = UsageArgumentParser(
        prog="flakecore",
        description=(
            "Decide from recorded evidence whether a red test may be frozen as a flake. "
            "Fails closed: missing, malformed or unknown evidence is a refusal."
        ),
        epilog=(
            "Exit codes: 0 accept; small numbers are policy refusals (see each verb's --help); "
            "64 usage error, 65 unusable input, 66 missing input file, 70 internal error or "
            "missing extra, 73 an output cannot be created or written, 74 I/O error (also: "
            "$GITHUB_STEP_SUMMARY not writable), 128+N stopped by signal N (130 for Ctrl-C)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"flakecore {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    wanted = list(VERBS if verbs is None else verbs)
    for module in dict.fromkeys(VERBS[verb] for verb in wanted):
        importlib.import_module(f"flakecore.cli.{module}").register(sub, wanted)
    return parser


def parser_for(argv: Sequence[str]) -> UsageArgumentParser:
    """The parser ``argv`` needs, which parses it exactly as the full one does.

    A call that starts with a verb gets that verb's module only; ``--version``
    (or an abbreviation argparse accepts) ends the parse before any verb is
    read, so it gets none.  Anything else (``--help``, no verb, an unknown
    one, an option before the verb) gets every verb, so help and errors name
    them all.
    """
    first = argv[0] if argv else ""
    if first in VERBS:
        return build_parser([first])
    if asks_version(argv):
        return build_parser([])
    return build_parser()


def run(arguments: Sequence[str], *, started: Callable[[], None] | None = None) -> int:
    """Parse ``arguments``, run the verb, turn every failure into one line and its exit.

    ``started`` is called once the arguments are parsed, before the verb runs.
    """
    try:
        args = parser_for(arguments).parse(arguments)
        if started is not None:
            started()
        code = int(args.run(args))
        flush_out()
        return code
    except UsageError as exc:
        return die(f"usage: {exc}", EXIT_USAGE)
    except RecordWriteError as exc:
        return die(str(exc), EXIT_CANTCREAT)
    except FileNotFoundError as exc:
        return die(f"{exc.filename}: no such file", EXIT_NOINPUT)
    except InputError as exc:
        return die(str(exc), input_exit(exc))
    except GitError as exc:
        # git cannot show the base revision the policy and the records are read from.
        return die(str(exc), EXIT_NOINPUT)
    except MissingExtra as exc:
        return die(str(exc), EXIT_SOFTWARE)
    except KeyboardInterrupt:
        return die("interrupted", 130)
    except BrokenPipeError:
        # The reader went away (``| head``): not an accept, and nothing more to say.
        return EXIT_IOERR
    except Exception as exc:
        return die(f"internal error ({type(exc).__name__}): {exc}", EXIT_SOFTWARE)
