"""``flakecore guard``: fail closed when one diff touches fixtures/tests and ledger/lease files.

A patch that edits a test and freezes it in the same diff is exactly what
the gate exists to stop; exit 9 when the diff couples them, 66 when git
cannot say what the diff is.
"""

from __future__ import annotations

import argparse
import sys

from flakecore.cli._common import write_json_line
from flakecore.cli._output import (
    GithubOutput,
    SummaryRow,
    add_config_arguments,
    add_output_arguments,
    config_from_args,
    flat,
    output_format,
)
from flakecore.exits import EXIT_GUARD_TRIPPED, EXIT_NOINPUT, EXIT_OK
from flakecore.gate.guard import GitError, run_guard

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``guard`` verb."""
    parser = sub.add_parser(
        "guard",
        help="fail when one diff touches both fixture/oracle/test files and ledger/lease files",
        description=(
            "Read 'git diff --name-only BASE...HEAD' and fail closed when it names both a "
            "fixture/oracle/test path and a ledger/lease path. Globs use fnmatch on the "
            "repository-relative path ('*' crosses '/'); a glob without '/' also matches the "
            "file name at any depth. Flags replace the configured globs."
        ),
        epilog=(
            f"exit: 0 the diff does not couple them; {EXIT_GUARD_TRIPPED} it does; 64 usage; "
            "66 git failed (not a repository, unknown base, no merge base, git missing)"
        ),
    )
    parser.add_argument("--base", required=True, metavar="REF")
    parser.add_argument("--fixture-glob", action="append", metavar="GLOB", default=None)
    parser.add_argument("--ledger-glob", action="append", metavar="GLOB", default=None)
    parser.add_argument("--repo", default=".", metavar="DIR", help="repository (default: .)")
    add_output_arguments(parser)
    add_config_arguments(parser, policy=False)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    config = config_from_args(args, start=args.repo)
    fixture_globs = tuple(args.fixture_glob) if args.fixture_glob else config.fixture_globs
    ledger_globs = tuple(args.ledger_glob) if args.ledger_glob else config.effective_ledger_globs
    try:
        result = run_guard(
            args.repo, args.base, fixture_globs=fixture_globs, ledger_globs=ledger_globs
        )
    except GitError as exc:
        message = f"guard: cannot read the diff: {exc}"
        if fmt == "json":
            write_json_line({"base": args.base, "tripped": None, "error": message})
        elif fmt == "github":
            gh = GithubOutput("flakecore guard")
            gh.add(
                SummaryRow(
                    test="",
                    policy="guard",
                    code="GIT_FAILED",
                    reason=message,
                    evidence=args.repo,
                    refused=True,
                )
            )
            return gh.finish(EXIT_NOINPUT)
        else:
            print(f"flakecore: {flat(message)}", file=sys.stderr)
        return EXIT_NOINPUT
    exit_code = EXIT_GUARD_TRIPPED if result.tripped else EXIT_OK
    if result.tripped:
        reason = (
            "one diff touches fixture/oracle/test paths ("
            + ", ".join(result.fixture_paths)
            + ") and ledger/lease paths ("
            + ", ".join(result.ledger_paths)
            + "): fail closed"
        )
    else:
        reason = (
            f"{len(result.paths)} changed paths: {len(result.fixture_paths)} fixture/oracle/test, "
            f"{len(result.ledger_paths)} ledger/lease"
        )
    if fmt == "json":
        out = result.to_json()
        out["exit"] = exit_code
        write_json_line(out)
    elif fmt == "github":
        gh = GithubOutput("flakecore guard")
        gh.add(
            SummaryRow(
                test="",
                policy="guard",
                code="TRIPPED" if result.tripped else "OK",
                reason=reason,
                evidence=f"git diff {args.base}...HEAD",
                refused=result.tripped,
            )
        )
        return gh.finish(exit_code)
    else:
        print(f"guard: {'TRIPPED' if result.tripped else 'ok'} -- {flat(reason)}")
    return exit_code
