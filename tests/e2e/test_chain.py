"""One tool: every record a verb writes is what the next verb reads, as it is.

The chain of docs/policies.md on a real repository, real pytest runs and
real git: ``runner-id`` -> run records -> ``packet --decide``;
``budget-run --out`` -> ``budget`` and ``ledger apply`` (a file and stdin);
the patch run's own JUnit report -> ``replay --patch-report``; the lease and
the ledger it fills -> ``lease check``.  No file a verb wrote is edited: the
only files written here are what a test harness writes (the run records
and the classify report, from ``runner-id``'s output and ``sha256sum``'s
digests), and every output of every verb validates against its schema with
``flakecore validate``.  Then every verb of the parser speaks
``--format json`` and ``--format github`` on the same files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from packets import NOW_TEXT, classify_report

from e2e.support import EPOCH_LOCK, FIXTURE, PROPERTY_FILE, TEST_ID, SampleRepo, make_repo
from e2e.support import pytest_command as property_run
from flakecore.cli import build_parser
from flakecore.gate.ledger import record_file_name

pytestmark = pytest.mark.e2e

IMAGE = "sha256:" + "d" * 64
ORACLE = "oracle-1"
#: The property of budget-run: the fixture's values are sorted (exit 0 holds).
SORTED = "import json, sys; v = json.load(open(sys.argv[1]))['values']; sys.exit(v != sorted(v))"
#: Exits that mean "the verb could not do its job" (usage, input, extras, output).
BROKEN = {64, 65, 66, 70, 73, 74}


@attrs.frozen
class Chain:
    """The repository, the folder of records, and what each step of the chain printed."""

    repo: SampleRepo
    files: Path
    steps: dict[str, subprocess.CompletedProcess[str]] = attrs.field(factory=dict)

    def file(self, name: str) -> str:
        return str(self.files / name)

    def run(
        self, *args: str, stdin: str = "", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The installed CLI in the repository, as a CI step runs it."""
        inherited = self.repo.env().items()
        environ = {k: v for k, v in inherited if k != "GITHUB_STEP_SUMMARY"} | (env or {})
        return subprocess.run(
            [sys.executable, "-m", "flakecore", *args],
            cwd=self.repo.path,
            env=environ,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    def step(self, name: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """One step of the chain, kept for the assertions."""
        self.steps[name] = done = self.run(*args, **kwargs)
        return done

    def out(self, name: str) -> list[dict[str, Any]]:
        """The JSON Lines a step printed, after checking that it exited 0."""
        done = self.steps[name]
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        return json_lines(done.stdout)

    @property
    def local_runner(self) -> str:
        return self.steps["runner-id local"].stdout.strip()

    @property
    def clean_runner(self) -> str:
        return self.steps["runner-id clean"].stdout.strip()

    @property
    def replay(self) -> dict[str, Any]:
        return self.out("replay")[0]


def sha256sum(path: Path) -> str:
    """What ``sha256sum FILE`` prints for it (the digest)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def harness_run_record(runner_id: str, chain_files: Path, repo: SampleRepo) -> dict[str, object]:
    """What a test harness writes for one run: runner-id's id, sha256sum's digests, the binding."""
    return {
        "format": "flakecore.run-record",
        "format_version": "1.0",
        "runner_id": runner_id,
        "class": "flake_shaped",
        "fixture_hash": sha256sum(repo.path / FIXTURE),
        "input_hash": sha256sum(chain_files / "minimized-input.json"),
        "completed": True,
        "property_cohort_passed": True,
        "test_id": TEST_ID,
        "patch_hash": repo.head,  # git rev-parse HEAD
        "oracle_version": ORACLE,
    }


def write(path: Path, record: object) -> str:
    path.write_text(json.dumps(record, indent=2) + "\n")
    return str(path)


def json_lines(text: str) -> list[dict[str, Any]]:
    values = [json.loads(line) for line in text.splitlines()]
    assert values and all(isinstance(v, dict) for v in values), text
    return values


def replay_args(chain: Chain, out: str, log: str | None, report: str, *extra: str) -> list[str]:
    repo = chain.repo
    return [
        "--base", repo.base, "--seed", "3", "--attempts", "2",
        "--property-file", PROPERTY_FILE, "--epoch-lock", EPOCH_LOCK,
        "--claimed-epoch", sha256sum(repo.path / EPOCH_LOCK),
        "--patch-report", report, "--report-format", "junit", "--test-id", TEST_ID,
        "--report", "report.xml", "--out", out, *(["--log", log] if log else []), "--no-config",
        *extra, "--", *property_run("--junitxml=report.xml"),
    ]  # fmt: skip


def budget_run_args(chain: Chain, out: str, *extra: str) -> list[str]:
    return [
        "--test-id", TEST_ID, "--base", chain.repo.base, "--fixture", FIXTURE,
        "--property-cmd", shlex.join([sys.executable, "-c", SORTED, "{fixture}"]),
        "--seeds", "1,2,3,4,5,6,7,8", "--out", out, "--no-config", *extra, "--", *property_run(),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    """The whole chain, once per test process; the tests check what each step did."""
    root = tmp_path_factory.mktemp("chain")
    repo = make_repo(root)
    files = root / "records"
    files.mkdir()
    (files / "minimized-input.json").write_text('{"seed": 3}\n')
    chain = Chain(repo=repo, files=files)
    f = chain.file
    # Two jobs, two runner ids: the local job runs in an image, the clean one does not.
    chain.step("runner-id local", "runner-id", env={"FLAKECORE_IMAGE_DIGEST": IMAGE})
    chain.step("runner-id clean", "runner-id")
    write(files / "local.json", harness_run_record(chain.local_runner, files, repo))
    write(files / "clean.json", harness_run_record(chain.clean_runner, files, repo))
    chain.step("packet", "packet", *packet_args(chain), "--out", f("packet.json"), "--json")
    chain.step("decide", "decide", f("packet.json"), "--json")
    # The red CI run of the patch: its own JUnit report is the patch evidence.
    red = subprocess.run(
        [a.replace("{seed}", "3") for a in property_run(f"--junitxml={f('patch.xml')}")],
        cwd=repo.path,
        env=repo.env(),
        capture_output=True,
        check=False,
    )
    assert red.returncode == 1, red.stdout
    chain.step(
        "replay",
        "replay",
        *replay_args(chain, f("freeze.json"), f("base.jsonl"), f("patch.xml"), "--json"),
    )
    chain.step("ingest", "ingest", f("patch.xml"), "--out", f("patch.jsonl"))
    chain.step("attempts", "attempts", f("base.jsonl"), "--json", "--no-config")
    # budget-run --out -> budget and ledger apply, as a file and on stdin.
    chain.step("budget-run", "budget-run", *budget_run_args(chain, f("budget.json"), "--json"))
    chain.step("budget", "budget", f("budget.json"), "--json", "--no-config")
    apply = ("--dir", f("ledger"), "--now", NOW_TEXT, "--json", "--no-config")
    chain.step("ledger apply", "ledger", "apply", f("budget.json"), *apply)
    budget_json = Path(f("budget.json")).read_text() if Path(f("budget.json")).exists() else ""
    chain.step("ledger apply -", "ledger", "apply", "-", *apply, stdin=budget_json)
    # A harness-made classify report of the replays; the lease; the enforcement step.
    write(
        files / "classify-report.json",
        classify_report(pinned_sha256=sha256sum(repo.path / FIXTURE), canary="nightly-canary"),
    )
    chain.step("lease open", "lease", "open", *lease_open_args(chain, files / "leases"))
    chain.step("lease check", "lease", "check", f("leases"), f("ledger"), "--now", NOW_TEXT,
               "--json", "--base", repo.base)  # fmt: skip
    yield chain
    repo.assert_clean()


def test_the_chain_from_a_red_run_to_decisions(chain: Chain) -> None:
    f = chain.file
    # runner-id -> run records -> packet --decide, and the packet decides alone too.
    assert chain.local_runner.startswith(f"img:{IMAGE}+nonce:")
    assert chain.clean_runner.startswith("img:local-uncontainerized+nonce:")
    decisions = [chain.out("packet")[0]["decision"], *chain.out("decide")]
    assert [d["code"] for d in decisions] == ["ELIGIBLE", "ELIGIBLE"]
    # The patch run's report -> replay: its one failed attempt is the patch miss.
    decisions.append(chain.replay)
    assert (chain.replay["code"], chain.replay["packet"]["patch_misses"]) == (
        "ACCEPT_PREEXISTING",
        1,
    )
    # budget-run --out -> budget and ledger apply (a file, and stdin), unchanged.
    decisions += [*chain.out("budget-run"), *chain.out("budget")]
    applied = [chain.out(step)[0] for step in ("ledger apply", "ledger apply -")]
    assert [a["action"] for a in applied] == ["wrote", "wrote"]
    decisions += [a["decision"] for a in applied]
    assert [d["code"] for d in decisions[3:]] == ["FLAKE_CANDIDATE"] * 4
    # The lease opened, and the enforcement step finds every record valid.
    assert chain.steps["lease open"].returncode == 0, chain.steps["lease open"].stdout
    assert [r["valid"] for r in chain.out("lease check")] == [True, True]
    assert chain.steps["ingest"].returncode == 0
    # Every record of the chain validates against its schema, as a pipeline checks it.
    Path(f("attempts.json")).write_text(chain.steps["attempts"].stdout)
    Path(f("decisions.jsonl")).write_text("".join(json.dumps(d) + "\n" for d in decisions))
    row = f"ledger/{record_file_name(TEST_ID)}"
    lease = f"leases/{record_file_name(TEST_ID)}"
    records = ["local.json", "clean.json", "packet.json", "budget.json", "freeze.json",
               "patch.jsonl", "attempts.json", "decisions.jsonl", row, lease]  # fmt: skip
    checked = chain.run("validate", *map(f, records), "--json")
    assert checked.returncode == 0, checked.stdout
    kinds = sorted({r["kind"] for r in json_lines(checked.stdout)})
    assert kinds == ["attempt-record", "attempts-summary", "budget-run", "decide-packet",
                     "decision", "freeze-record", "lease", "ledger-row", "run-record"]  # fmt: skip
    log = chain.run("validate", "--kind", "attempt-line", f("base.jsonl"))
    assert log.returncode == 0, log.stdout


# --------------------------------------------------------------------------- every verb


def verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every verb the parser knows, sub-verbs as their full path (``lease open``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path
    for action in subs:
        for name, sub in action.choices.items():
            yield from verbs(sub, (*path, name))


def packet_args(chain: Chain) -> list[str]:
    return [
        "--test-id", TEST_ID, "--patch-hash", chain.repo.head, "--oracle-version", ORACLE,
        "--local", chain.file("local.json"), "--clean", chain.file("clean.json"), "--decide",
        "--no-config",
    ]  # fmt: skip


def lease_open_args(chain: Chain, leases: Path) -> list[str]:
    return [
        "--report", chain.file("classify-report.json"), "--test-id", TEST_ID,
        "--replay-host", chain.clean_runner, "--accepted-by", "review-policy-job",
        "--patch-author", "coding-agent-7", "--patch-hash", chain.repo.head,
        "--oracle-version", ORACLE, "--now", NOW_TEXT, "--dir", str(leases), "--no-config",
    ]  # fmt: skip


#: What each verb is given, from the chain's files (the output flag is added by the test).
ARGS: dict[tuple[str, ...], Callable[[Chain, Path], Sequence[str]]] = {
    ("admit",): lambda c, t: [write(t / "admit.json", c.replay["packet"])],
    ("decide",): lambda c, t: [c.file("packet.json"), "--no-config"],
    ("budget",): lambda c, t: [c.file("budget.json"), "--no-config"],
    ("classify",): lambda c, t: [c.file("classify-report.json"), "--now", NOW_TEXT, "--no-config"],
    ("attempts",): lambda c, t: [c.file("base.jsonl"), "--no-config"],
    ("ingest",): lambda c, t: [c.file("patch.xml"), "--out", str(t / "patch.jsonl")],
    ("validate",): lambda c, t: [c.file("packet.json"), c.file("budget.json")],
    ("schema",): lambda c, t: ["run-record"],
    ("replay",): lambda c, t: replay_args(c, str(t / "freeze.json"), None, c.file("patch.xml")),
    ("budget-run",): lambda c, t: budget_run_args(c, str(t / "budget.json")),
    ("runner-id",): lambda c, t: [],
    ("packet",): lambda c, t: packet_args(c),
    ("lease", "open"): lambda c, t: lease_open_args(c, t / "leases"),
    ("lease", "show"): lambda c, t: [
        str(c.files / "leases" / record_file_name(TEST_ID)),
        "--now",
        NOW_TEXT,
        "--base",
        c.repo.base,
    ],
    ("lease", "check"): lambda c, t: [
        str(c.files / "leases"),
        str(c.files / "ledger"),
        "--now",
        NOW_TEXT,
        "--base",
        c.repo.base,
    ],
    ("ledger", "apply"): lambda c, t: [
        c.file("budget.json"),
        "--dir",
        str(t / "ledger"),
        "--now",
        NOW_TEXT,
        "--no-config",
    ],
    ("guard",): lambda c, t: ["--base", c.repo.base, "--no-config"],
    # The report names the red test but carries no seed: refused without a replay.
    ("triage",): lambda c, t: [
        "--base",
        c.repo.base,
        "--report",
        c.file("patch.xml"),
        "--out-dir",
        str(t / "triage"),
    ],
}
VERBS = sorted(verbs(build_parser()))


def test_every_verb_of_the_parser_is_in_the_table() -> None:
    assert sorted(ARGS) == VERBS


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
@pytest.mark.parametrize("form", ["json", "github"])
def test_every_verb_speaks_json_and_github(
    chain: Chain, tmp_path: Path, verb: tuple[str, ...], form: str
) -> None:
    summary = tmp_path / "summary.md"
    args = list(ARGS[verb](chain, tmp_path))
    at = args.index("--") if "--" in args else len(args)  # the output flag before the COMMAND
    args[at:at] = ["--format", form]
    done = chain.run(*verb, *args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode not in BROKEN, (done.stdout, done.stderr)
    if form == "json":
        json_lines(done.stdout)
        assert not summary.exists()
    else:
        lines = done.stdout.splitlines()
        assert lines and all(line.startswith(("::notice ", "::error ")) for line in lines), lines
        table = summary.read_text()
        assert f"### flakecore {' '.join(verb)}\n" in table
        assert "| test | policy | code | verdict | exit | reason | evidence |" in table
