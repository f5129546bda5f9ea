"""``flakecore runner-id``: a fresh runner identity for this job (``img:<digest>+nonce:<hex>``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Collection

from flakecore.cli._github import SummaryRow
from flakecore.cli._output import Output, Result, add_output_arguments
from flakecore.errors import UsageError
from flakecore.exits import EXIT_OK
from flakecore.identity import RunnerId

__all__ = ["IMAGE_ENV", "register"]

#: Environment variable naming the job's image digest for ``runner-id``.
IMAGE_ENV = "FLAKECORE_IMAGE_DIGEST"


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], wanted: Collection[str]
) -> None:
    """Add the ``runner-id`` verb."""
    parser = sub.add_parser(
        "runner-id",
        help="print a fresh runner identity (img:<digest>+nonce:<16 hex>)",
        description=(
            "Print a fresh runner identity for this job: the image digest from --image or "
            f"${IMAGE_ENV}, else the honest 'local-uncontainerized', and a new random nonce."
        ),
        epilog="exit: 0 printed; 64 the image digest is malformed",
    )
    parser.add_argument(
        "--image",
        metavar="DIGEST",
        help="the job's image digest, sha256:<64 hex> or <64 hex> (e.g. docker inspect "
        "--format '{{.Id}}' IMAGE)",
    )
    add_output_arguments(parser)
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    out = Output.chosen(args, "flakecore runner-id")
    image = args.image
    origin = "--image"
    if image is None:
        env = os.environ.get(IMAGE_ENV, "")
        image, origin = (env, f"${IMAGE_ENV}") if env.strip() else (None, "")
    try:
        runner = RunnerId.fresh(image)
    except ValueError as exc:
        raise UsageError(f"{origin}: {exc}") from None
    record = {
        "runner_id": str(runner),
        "image": runner.image,
        "nonce": runner.nonce,
        "containerized": runner.containerized,
    }
    row = SummaryRow(
        test="",
        policy="runner-id",
        code="ISSUED",
        exit=EXIT_OK,
        reason=str(runner),
        evidence=origin or "no image digest given: local-uncontainerized",
        refused=False,
    )
    out.emit(Result(json=record, text=[str(runner)], row=row))
    return out.finish(EXIT_OK)
