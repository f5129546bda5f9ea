"""The ``flakecore`` command line: parse, call the core, print, exit by the table.

This is the outer layer: it may import adapters and jsonschema (lazily, in
the verbs that need them); the core never imports it.  Every failure leaves
as one line on stderr and an exit code from :mod:`flakecore.exits` — never a
traceback, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from flakecore import __version__
from flakecore.cli import (
    _attempts,
    _guard,
    _ingest,
    _lease,
    _ledger,
    _packet,
    _policies,
    _replay,
    _runner_id,
    _schemas,
    _triage,
)
from flakecore.cli._common import RecordWriteError, UsageArgumentParser, die, input_exit
from flakecore.errors import InputError, MissingExtra, UsageError
from flakecore.exits import EXIT_CANTCREAT, EXIT_IOERR, EXIT_NOINPUT, EXIT_SOFTWARE, EXIT_USAGE
from flakecore.gate.worktree import GitError

__all__ = ["build_parser", "main"]

#: In the order ``--help`` lists them.
_VERBS = (
    _policies,
    _attempts,
    _ingest,
    _schemas,
    _replay,
    _triage,
    _runner_id,
    _packet,
    _lease,
    _ledger,
    _guard,
)


def build_parser() -> UsageArgumentParser:
    """The full argument parser (used by ``main`` and by the docs)."""
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
    for module in _VERBS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    try:
        parser = build_parser()
        args = parser.parse(argv)
        return int(args.run(args))
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
