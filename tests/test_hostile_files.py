"""Every hostile file kind x every CLI verb that reads a file, through the real CLI.

Each case plants one kind (``hostile_files``) where the verb reads its
evidence, runs the installed CLI with standard input a pipe that is never
closed and standard output a pipe (so ``/dev/stdin`` and
``/proc/self/fd/1`` would block a naive reader forever), and asserts: the
documented exit (66 nothing to read, 65 refused; ``lease check`` reports a
refused record as invalid, 8), exactly one output line naming the file, no
traceback, and nothing written anywhere in the workspace.  The subprocess
timeout only guards against a hang; it is not the assertion.  Every verb's
honest twins (a regular file, symlinks that stay in their directory) must
still be read and give the verb's accepting exit.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from e2e.support import EPOCH_LOCK, FIXTURE, PROPERTY_FILE, SampleRepo, make_repo
from gate.support import (
    AUTHOR,
    HOST,
    OTHER_HOST,
    PATCH,
    REVIEWER,
    TEST_ID,
    base_checkout,
    cli,
    lease_record,
    lease_report,
    run_record,
)
from hostile_files import HONEST, HOSTILE, Kind, snapshot
from packets import NOW_TEXT, budget_packet, decide_packet

from flakecore.exits import EXIT_INVALID_RECORDS
from flakecore.gate.ledger import record_bytes, record_file_name

NAME = record_file_name(TEST_ID)
JUNIT = b'<testsuite name="s"><testcase classname="c" name="t"/></testsuite>\n'
LOG = b'{"seed":"pinned","n":1,"result":"miss"}\n'
PYPROJECT = b"[tool.flakecore]\nmax_lease_days = 7\n"
#: A command that exits 1 (a miss) for every attempt or seed: no pytest start-up.
MISS = [sys.executable, "-c", "import sys; sys.exit(1)"]
PASS = [sys.executable, "-c", "import sys; sys.exit(0)"]


@attrs.frozen
class Workspace:
    root: Path
    evidence: Path
    """Where the file under test is planted (inside the repository for the git verbs,
    outside the checkout the other verbs run in)."""
    repo: SampleRepo | None


def _json(value: object) -> bytes:
    return record_bytes(value)  # type: ignore[arg-type]


@attrs.frozen
class Verb:
    """One reader of the CLI: the honest bytes it reads, its argv, and its exits."""

    name: str
    content: bytes | None
    """None: the committed file at that name, as checked out."""
    argv: Callable[[Workspace, str], list[str]]
    honest: int = 0
    missing: int = 66
    unusable: int = 65
    file_name: str = "input.json"
    git: bool = False
    skip: frozenset[str] = frozenset()
    """Kinds that mean something else to this verb (a directory *is* lease check's input)."""
    stdout_report: bool = False
    """The verb reports the bad file on stdout (``lease check``), not on stderr."""


def _lease_open(report: str, directory: Path) -> list[str]:
    return [
        "lease", "open", "--report", report, "--test-id", TEST_ID, "--replay-host", HOST,
        "--accepted-by", REVIEWER, "--patch-author", AUTHOR, "--now", NOW_TEXT,
        "--dir", str(directory), "--no-config",
    ]  # fmt: skip


def _ledger_apply(packet: str, directory: Path) -> list[str]:
    return ["ledger", "apply", packet, "--dir", str(directory), "--today", "2026-11-29",
            "--no-config"]  # fmt: skip


def _on_base() -> list[str]:
    """Verbs that judge stored records need a base (docs/trust.md); the files are outside it."""
    return ["--base", base_checkout()[1]]


def _packet(local: str, clean: Path, out: Path) -> list[str]:
    return [
        "packet", "--test-id", TEST_ID, "--patch-hash", PATCH, "--oracle-version", "o-3",
        "--local", local, "--clean", str(clean), "--out", str(out), "--no-config",
    ]  # fmt: skip


def _replay(ws: Workspace, *, property_file: str, patch_log: str) -> list[str]:
    assert ws.repo is not None
    return [
        "replay", "--base", ws.repo.base, "--seed", "pinned", "--attempts", "1",
        "--property-file", property_file, "--epoch-lock", EPOCH_LOCK,
        "--claimed-epoch", ws.repo.claimed_epoch, "--patch-log", patch_log,
        "--seed-env", "PROP_SEED", "--out", str(ws.root / "out" / "freeze.json"),
        "--no-config", "--", *MISS,
    ]  # fmt: skip


def _patch_log(ws: Workspace) -> str:
    log = ws.root / "patch.jsonl"
    log.write_bytes(LOG)
    return str(log)


def _budget(ws: Workspace, fixture: str) -> list[str]:
    assert ws.repo is not None
    prop = shlex.join([*PASS, "{fixture}"])
    return [
        "budget-run", "--test-id", TEST_ID, "--base", ws.repo.base, "--fixture", fixture,
        "--parent-fixture", FIXTURE, "--property-cmd", prop, "--seed-env", "S",
        "--out", str(ws.root / "out" / "budget.json"), "--no-config", "--", *PASS,
    ]  # fmt: skip


VERBS = (
    Verb("decide FILE", _json(decide_packet()), lambda ws, p: ["decide", p, "--no-config"]),
    Verb("validate FILE", _json(lease_record()), lambda ws, p: ["validate", p]),
    Verb("attempts LOG", LOG, lambda ws, p: ["attempts", p]),
    Verb(
        "lease show FILE",
        _json(lease_record()),
        lambda ws, p: ["lease", "show", p, "--now", NOW_TEXT, *_on_base()],
    ),
    Verb(
        "lease check FILE",
        _json(lease_record()),
        lambda ws, p: ["lease", "check", p, "--now", NOW_TEXT, *_on_base()],
        unusable=EXIT_INVALID_RECORDS,
        file_name=NAME,
        skip=frozenset({"directory"}),
        stdout_report=True,
    ),
    Verb(
        "lease check DIR",
        _json(lease_record()),
        lambda ws, p: ["lease", "check", str(ws.evidence), "--now", NOW_TEXT, *_on_base()],
        missing=EXIT_INVALID_RECORDS,
        unusable=EXIT_INVALID_RECORDS,
        file_name=NAME,
        skip=frozenset(k.name for k in HOSTILE if not k.in_directory),
        stdout_report=True,
    ),
    Verb(
        "lease open --report",
        _json(lease_report()),
        lambda ws, p: _lease_open(p, ws.root / "out" / "leases"),
    ),
    Verb(
        "ledger apply PACKET",
        _json(budget_packet(test_id=TEST_ID)),
        lambda ws, p: _ledger_apply(p, ws.root / "out" / "ledger"),
    ),
    Verb(
        "packet --local",
        _json(run_record(HOST)),
        lambda ws, p: _packet(p, ws.root / "clean.json", ws.root / "out" / "packet.json"),
    ),
    Verb(
        "--config FILE",
        PYPROJECT,
        lambda ws, p: ["lease", "check", "--config", p, "--now", NOW_TEXT, *_on_base()],
    ),
    Verb("ingest FILE", JUNIT, lambda ws, p: ["ingest", p], file_name="report.xml"),
    Verb(
        "ingest FILE --out",
        JUNIT,
        lambda ws, p: ["ingest", p, "--out", str(ws.root / "out" / "attempts.jsonl")],
        file_name="report.xml",
    ),
    Verb(
        "replay --patch-log",
        LOG,
        lambda ws, p: _replay(ws, property_file=PROPERTY_FILE, patch_log=p),
        file_name="patch.jsonl",
        git=True,
    ),
    Verb(
        "replay --property-file",
        None,
        lambda ws, p: _replay(ws, property_file=p, patch_log=_patch_log(ws)),
        file_name=Path(PROPERTY_FILE).name,
        git=True,
        # The property file must be inside the repository: a system path is a usage error.
        skip=frozenset(k.name for k in HOSTILE if not k.in_directory),
    ),
    Verb(
        "budget-run --fixture",
        None,
        _budget,
        honest=6,  # every seed passes: STABLE_PASS
        file_name=Path(FIXTURE).name,
        git=True,
    ),
)


@pytest.fixture
def workspace_for(tmp_path: Path) -> Callable[[Verb], Workspace]:
    def make(verb: Verb) -> Workspace:
        root = tmp_path / "ws"
        root.mkdir()
        (root / "out").mkdir()
        (root / "clean.json").write_bytes(_json(run_record(OTHER_HOST)))
        if not verb.git:
            evidence = root / "evidence"
            evidence.mkdir()
            return Workspace(root=root, evidence=evidence, repo=None)
        repo = make_repo(root)
        evidence = repo.path / Path(PROPERTY_FILE if "property" in verb.name else FIXTURE).parent
        if verb.name == "replay --patch-log":
            evidence = repo.path / "logs"
            evidence.mkdir()
        return Workspace(root=root, evidence=evidence, repo=repo)

    return make


def _run(ws: Workspace, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI with standard input a pipe that never ends: a read of it blocks."""
    read_end, write_end = os.pipe()
    try:
        if ws.repo is None:
            # Run in a reviewed checkout: the planted files lie outside it, the job's own.
            return cli(*argv, cwd=base_checkout()[0], stdin=read_end, timeout=120)
        env = {"TMPDIR": str(ws.repo.tmp)}
        return cli(*argv, cwd=ws.repo.path, env=env, stdin=read_end, timeout=120)
    finally:
        os.close(read_end)
        os.close(write_end)


def _plant(ws: Workspace, verb: Verb, kind: Kind) -> str:
    target = ws.evidence / verb.file_name
    content = verb.content
    if content is None:
        content = target.read_bytes()
        target.unlink()  # the committed file, replaced by the kind under test
    return kind.plant(ws.evidence, verb.file_name, content)


def _cases(kinds: tuple[Kind, ...]) -> list[object]:
    return [
        pytest.param(
            verb, kind, id=f"{verb.name} <- {kind.name}", marks=[pytest.mark.e2e] * verb.git
        )
        for verb in VERBS
        for kind in kinds
        if kind.name not in verb.skip
    ]


@pytest.mark.parametrize(("verb", "kind"), _cases(HOSTILE))
def test_hostile_files_are_refused_on_one_line_and_nothing_is_written(
    workspace_for: Callable[[Verb], Workspace], verb: Verb, kind: Kind
) -> None:
    ws = workspace_for(verb)
    path = _plant(ws, verb, kind)
    argv = verb.argv(ws, path)
    before = snapshot(ws.root)
    done = _run(ws, argv)
    assert done.returncode == (verb.missing if kind.missing else verb.unusable), done
    assert "Traceback" not in done.stderr + done.stdout
    report = done.stdout if verb.stdout_report else done.stderr
    naming = [line for line in report.splitlines() if path in line]
    assert len(naming) == 1, report
    assert snapshot(ws.root) == before


@pytest.mark.parametrize(("verb", "kind"), _cases(HONEST))
def test_the_honest_twins_are_read(
    workspace_for: Callable[[Verb], Workspace], verb: Verb, kind: Kind
) -> None:
    ws = workspace_for(verb)
    path = _plant(ws, verb, kind)
    done = _run(ws, verb.argv(ws, path))
    assert done.returncode == verb.honest, done


WRITERS: tuple[tuple[str, Callable[[Path, Path], list[str]]], ...] = (
    ("ingest --out", lambda root, out: ["ingest", str(root / "r.xml"), "--out", str(out)]),
    ("ledger apply", lambda root, out: _ledger_apply(str(root / "budget.json"), out.parent)),
    ("lease open", lambda root, out: _lease_open(str(root / "report.json"), out.parent)),
    ("packet --out", lambda root, out: _packet(str(root / "local.json"), root / "clean.json", out)),
)


@pytest.mark.parametrize(("name", "argv"), WRITERS, ids=[w[0] for w in WRITERS])
def test_a_symlink_planted_at_an_output_is_replaced_never_followed(
    tmp_path: Path, name: str, argv: Callable[[Path, Path], list[str]]
) -> None:
    ws = Workspace(root=tmp_path, evidence=tmp_path, repo=None)
    (tmp_path / "r.xml").write_bytes(JUNIT)
    (tmp_path / "budget.json").write_bytes(_json(budget_packet(test_id=TEST_ID)))
    (tmp_path / "report.json").write_bytes(_json(lease_report()))
    (tmp_path / "local.json").write_bytes(_json(run_record(HOST)))
    (tmp_path / "clean.json").write_bytes(_json(run_record(OTHER_HOST)))
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"must stay\n")
    out = tmp_path / "out" / NAME
    out.parent.mkdir()
    out.symlink_to(outside)
    done = _run(ws, argv(tmp_path, out))
    assert done.returncode == 0, done
    assert outside.read_bytes() == b"must stay\n"
    assert not out.is_symlink() and out.stat().st_size > 0
    assert [p.name for p in out.parent.iterdir()] == [NAME]  # no temporary left behind
    if name != "ingest --out":
        json.loads(out.read_text())


@pytest.mark.e2e
def test_a_property_command_that_links_its_fixture_copy_to_dev_zero_is_not_scored(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    swap = "import os, sys; os.unlink(sys.argv[1]); os.symlink('/dev/zero', sys.argv[1])"
    out = tmp_path / "budget.json"
    done = repo.flakecore(
        "budget-run", "--test-id", TEST_ID, "--base", repo.base, "--fixture", FIXTURE,
        "--property-cmd", shlex.join([sys.executable, "-c", swap, "{fixture}"]),
        "--seed-env", "S", "--out", str(out), "--no-config", "--", *PASS,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done  # INSUFFICIENT_BUDGET: the property was not scored
    assert "rewrote the parent fixture" in done.stdout
    assert json.loads(out.read_text())["property"]["holds"] is None
