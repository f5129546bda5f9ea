"""``flakecore guard``: fail closed when one diff touches fixtures/tests and ledger/lease files.

A patch that edits a test and freezes it in the same diff is exactly what
the gate exists to stop; exit 9 when the diff couples them, 66 when git
cannot say what the diff is.  The globs and directories come from the base
revision's ``[tool.flakecore]`` (the patch could set ``fixture_globs =
["nothing"]`` in its own), unless ``--config`` or ``--no-config`` says otherwise.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import TYPE_CHECKING

from flakecore._wording import plural
from flakecore.cli._common import flat
from flakecore.cli._config import Need, add_config_arguments, config_from_args
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.errors import GitError
from flakecore.exits import EXIT_GUARD_TRIPPED, EXIT_NOINPUT, EXIT_OK
from flakecore.gate.guard import run_guard

if TYPE_CHECKING:
    from flakecore.cli._github import SummaryRow

__all__ = ["register"]


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``guard`` verb."""
    parser = sub.add_parser(
        "guard",
        help="fail when one diff touches both fixture/oracle/test files and ledger/lease files",
        description=(
            "Read 'git diff --name-only BASE...HEAD' and fail closed when it names both a "
            "fixture/oracle/test path and a ledger/lease path. Globs use fnmatch on the "
            "repository-relative path ('*' crosses '/'); a glob without '/' also matches the "
            "file name at any depth. The globs and directories are the base revision's "
            "[tool.flakecore] (never the scored tree's); flags replace them."
        ),
        epilog=(
            f"exit: 0 the diff does not couple them; {EXIT_GUARD_TRIPPED} it does; 64 usage; "
            "66 git failed (not a repository, unknown base, no merge base, git missing)"
        ),
    )
    parser.add_argument(
        "--base",
        required=True,
        metavar="REF",
        help="the merge target: one exact commit (the full SHA in CI)",
    )
    parser.add_argument(
        "--fixture-glob",
        action="append",
        metavar="GLOB",
        default=None,
        help="a fixture/oracle/test path glob (repeatable; replaces fixture_globs)",
    )
    parser.add_argument(
        "--ledger-glob",
        action="append",
        metavar="GLOB",
        default=None,
        help="a ledger/lease path glob (repeatable; replaces ledger_globs)",
    )
    parser.add_argument("--repo", default=".", metavar="DIR", help="repository (default: .)")
    add_output_arguments(parser)
    add_config_arguments(parser, policy=False, base=False)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore guard")
    try:
        configured = config_from_args(args, verb="guard", start=args.repo, need=Need.LOCATION)
        out.use(configured)
        config = configured.config
        fixture_globs = tuple(args.fixture_glob) if args.fixture_glob else config.fixture_globs
        ledger_globs = (
            tuple(args.ledger_glob) if args.ledger_glob else config.effective_ledger_globs
        )
        result = run_guard(
            args.repo,
            args.base,
            fixture_globs=fixture_globs,
            ledger_globs=ledger_globs,
            ledger_dirs=(config.ledger_dir, config.lease_dir),
            base_sha=configured.base,  # --base, resolved once by the configuration
        )
    except GitError as exc:
        message = f"guard: cannot read the diff: {exc}"
        row = _row(out, "GIT_FAILED", EXIT_NOINPUT, message, evidence=args.repo, refused=True)
        record = {"base": args.base, "tripped": None, "error": message}
        out.emit(Result(json=record, stderr=[message], row=row))
        return out.finish(EXIT_NOINPUT)
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
            f"{plural(len(result.paths), 'changed path')}: "
            f"{len(result.fixture_paths)} fixture/oracle/test, "
            f"{len(result.ledger_paths)} ledger/lease"
        )
    code = "TRIPPED" if result.tripped else "OK"
    evidence = f"git diff {args.base}...HEAD"
    row = _row(out, code, exit_code, reason, evidence=evidence, refused=result.tripped)
    text = f"guard: {'TRIPPED' if result.tripped else 'ok'} -- {flat(reason)}"
    record = {**result.to_json(), "exit": exit_code, "policy_source": config.source.to_json()}
    out.emit(Result(json=record, text=[text], row=row))
    return out.finish(exit_code)


def _row(
    out: Output, code: str, exit_code: int, reason: str, *, evidence: str, refused: bool
) -> SummaryRow | None:
    """guard's step-summary row, built (and the GitHub module loaded) for GitHub output only."""
    if out.form != "github":
        return None
    from flakecore.cli._github import SummaryRow  # noqa: PLC0415

    return SummaryRow(
        test="",
        policy="guard",
        code=code,
        exit=exit_code,
        reason=reason,
        evidence=evidence,
        refused=refused,
    )
