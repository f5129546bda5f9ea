"""The gate's verbs at CI speed: each row against its floor, measured in the same run.

Every row of the goal list in docs/performance.md, each timed as a fresh
process (what CI pays per call) and compared with a floor timed in the same
run, interleaved (every repeat measures the row and its floor once, so a
change of machine load hits both).  A ratio is the median of the per-repeat
ratios; ``seconds`` columns are medians.

* start-up: ``flakecore --version`` and ``decide`` on one packet file,
  against ``python -c pass``;
* batches: ``admit``/``decide``/``budget``/``classify`` over N packets as
  JSON Lines on stdin, text and ``--json``, against a strict ``json.loads``
  loop over the same lines in a fresh interpreter;
* ``lease check`` over N leases, against reading each file and
  ``json.loads`` of it;
* ``guard`` at N changed paths, against ``git diff --name-only`` plus the
  interpreter's start-up;
* ``budget-run --jobs 2`` against the same run sequential (8 seeds of a
  0.5 s test);
* ``replay``: its fixed overhead over the same git calls and attempts run
  by hand (milliseconds, not a ratio).

Each floor does the same work as its row (the same lines, files, paths or
runs; checked on every run: a mismatch stops the benchmark).  The adapters'
ingest rows are ``bench/run.py``'s; ``nox -s bench`` runs both.

Usage: ``python bench/verbs.py`` (full size) or ``python bench/verbs.py
--small`` for a smoke run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"

__all__ = ["main"]

#: Evaluation time of every batch and lease check (the examples' leases are valid then).
NOW = "2026-11-29T12:00:00Z"
POLICIES = ("admit", "decide", "budget", "classify")
#: ``python`` reading the same JSON Lines: the batches' floor.
JSON_LOOP = (
    "import json, sys\n"
    "n = 0\n"
    "for line in sys.stdin.buffer:\n"
    "    json.loads(line)\n"
    "    n += 1\n"
    "print(n)\n"
)
#: ``python`` reading every file of a directory and decoding it: lease check's floor.
READ_LOOP = (
    "import json, os, sys\n"
    "n = 0\n"
    "for name in sorted(os.listdir(sys.argv[1])):\n"
    "    with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n"
    "        json.loads(fh.read())\n"
    "    n += 1\n"
    "print(n)\n"
)
GOALS = {
    "start-up": 4.0,
    "batch": 4.0,
    "lease check": 2.5,
    "signed": 2.5,
    "guard": 3.0,
    "budget-run --jobs 2": 0.65,
}
#: Replay's fixed overhead above its own git calls and attempts, in milliseconds.
REPLAY_GOAL_MS = 100.0


def _flakecore() -> list[str]:
    """The console script next to this interpreter (what CI runs), else ``python -m``."""
    script = Path(sys.executable).with_name("flakecore")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "flakecore"]


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@flakecore.invalid", *args],
        cwd=repo,
        input=stdin,
        capture_output=True,
        check=True,
        env=env,
    )
    return done.stdout.decode()


def _run(
    argv: Sequence[str],
    *,
    stdin: Path | None = None,
    cwd: Path | None = None,
    ok: Sequence[int] = (0,),
) -> bytes:
    """The stdout of one fresh process; a surprising exit stops the bench."""
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run(argv, stdin=source, capture_output=True, cwd=cwd, check=False)
    if done.returncode not in ok:
        raise SystemExit(
            f"{shlex.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
        )
    return done.stdout


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(work: Callable[[], int]) -> tuple[float, float, int]:
    """Wall seconds, child CPU seconds and units of work of one call of ``work``."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = work()
    return time.perf_counter() - start, _children_cpu() - cpu, done


class Row:
    """One goal: a measured command and its floor, timed in turns."""

    def __init__(
        self,
        group: str,
        name: str,
        run: Callable[[], int],
        floor: Callable[[], int],
        floor_name: str,
    ) -> None:
        self.group, self.name, self.floor_name = group, name, floor_name
        self.run, self.floor = run, floor
        self.seconds: list[float] = []
        self.floor_seconds: list[float] = []
        self.cpu: list[float] = []
        self.floor_cpu: list[float] = []

    def measure(self, floor_first: bool = False) -> None:
        """One turn of each; both must have done the same amount of work.

        Turns alternate which of the two goes first, so that what one leaves
        behind (the disk's writeback of a checkout, say) weighs on both alike.
        """
        if floor_first:
            floor_took, floor_cpu, floor_work = _timed(self.floor)
            took, cpu, work = _timed(self.run)
        else:
            took, cpu, work = _timed(self.run)
            floor_took, floor_cpu, floor_work = _timed(self.floor)
        if work != floor_work:
            raise SystemExit(f"{self.name}: did {work} units of work, its floor {floor_work}")
        self.seconds.append(took)
        self.floor_seconds.append(floor_took)
        self.cpu.append(cpu)
        self.floor_cpu.append(floor_cpu)

    def line(self) -> str:
        """The table row: medians, the ratios (wall and CPU), the goal and the verdict."""
        median = statistics.median(self.seconds)
        floor = statistics.median(self.floor_seconds)
        wall = list(zip(self.seconds, self.floor_seconds, strict=True))
        cpu = list(zip(self.cpu, self.floor_cpu, strict=True))
        head = f"{self.name:<36} {median:>8.3f} {self.floor_name:<30} {floor:>8.3f}"
        if self.group == "replay":  # a fixed overhead in milliseconds, not a ratio
            over = statistics.median(a - b for a, b in wall) * 1e3
            over_cpu = statistics.median(a - b for a, b in cpu) * 1e3
            verdict = "met" if over <= REPLAY_GOAL_MS else "MISSED"
            return (
                f"{head} {over:>+6.0f}ms {over_cpu:>+6.0f}ms"
                f"  goal <= +{REPLAY_GOAL_MS:.0f} ms: {verdict}"
            )
        ratio = statistics.median(a / b for a, b in wall)
        ratio_cpu = statistics.median(a / max(b, 1e-9) for a, b in cpu)
        if self.group == "context":  # no goal: what a goal above is up against
            return f"{head} {ratio:>7.2f}x {ratio_cpu:>7.2f}x  (context)"
        goal = GOALS[self.group]
        verdict = "met" if ratio <= goal else "MISSED"
        return f"{head} {ratio:>7.2f}x {ratio_cpu:>7.2f}x  goal <= {goal}x: {verdict}"


def _count(out: bytes) -> int:
    return len(out.splitlines())


# -- start-up and batches ---------------------------------------------------------------


def _examples(policy: str) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((EXAMPLES / policy).glob("*.json"))]


def _write_batch(directory: Path, policy: str, count: int) -> Path:
    """``count`` packets as JSON Lines: the policy's examples in turn (accepts and refusals)."""
    path = directory / f"{policy}.jsonl"
    examples = itertools.cycle(_examples(policy))
    with open(path, "w", encoding="ascii") as fh:
        for _ in range(count):
            fh.write(json.dumps(next(examples), separators=(",", ":")) + "\n")
    return path


def _startup_rows(directory: Path) -> list[Row]:
    flakecore = _flakecore()
    packet = EXAMPLES / "decide" / "eligible.json"

    def floor() -> int:
        _run([sys.executable, "-c", "pass"])
        return 1  # the one line each row prints

    def version() -> int:
        return _count(_run([*flakecore, "--version"]))

    def one_packet() -> int:
        return _count(_run([*flakecore, "decide", "--no-config", str(packet)], cwd=directory))

    def attrs_only() -> int:
        _run([sys.executable, "-c", "import attrs"])
        return 1

    return [
        Row("start-up", "flakecore --version", version, floor, "python -c pass"),
        Row("start-up", "flakecore decide FILE (one packet)", one_packet, floor, "python -c pass"),
        Row("context", "python -c 'import attrs'", attrs_only, floor, "python -c pass"),
    ]


def _batch_rows(directory: Path, count: int) -> list[Row]:
    flakecore = _flakecore()
    rows = []
    for policy in POLICIES:
        batch = _write_batch(directory, policy, count)

        def floor(batch: Path = batch) -> int:
            return int(_run([sys.executable, "-c", JSON_LOOP], stdin=batch))

        for form in ((), ("--json",)):
            argv = [*flakecore, policy, "--no-config", *form, "-"]
            if policy == "classify":
                argv[-1:-1] = ["--now", NOW]

            def run(argv: list[str] = argv, batch: Path = batch) -> int:
                # Refusals are part of the mix: any policy exit is fine, 64-78 is not.
                return _count(_run(argv, stdin=batch, cwd=directory, ok=range(10)))

            name = f"{policy} - {' '.join(form) or '(text)'} x{count}"
            rows.append(Row("batch", name, run, floor, "json.loads loop"))
    return rows


# -- lease check -----------------------------------------------------------------------


def _leases(count: int) -> dict[str, bytes]:
    """``count`` valid leases (valid at :data:`NOW`), by file name."""
    from flakecore.gate.ledger import record_bytes, record_file_name
    from flakecore.lease import Roles, build_lease
    from flakecore.timeutil import parse_rfc3339

    report = json.loads((EXAMPLES / "classify" / "flake-with-lease.json").read_text())
    roles = Roles(
        replay_host="img:sha256:" + "a" * 64 + "+nonce:0123456789abcdef",
        accepted_by="reviewer@example.test",
        patch_author="coding-agent-7",
        patch_hash="f" * 40,
        oracle_version="oracle-3",
    )
    now = parse_rfc3339(NOW)
    leases = {}
    for i in range(count):
        test_id = f"tests/test_mod{i // 50}.py::test_case_{i}"
        outcome = build_lease(report, test_id=test_id, roles=roles, now=now)
        assert outcome.record is not None, outcome.reasons
        leases[record_file_name(test_id)] = record_bytes(outcome.record)
    return leases


def _lease_repo(directory: Path, count: int) -> tuple[Path, str]:
    """A repository whose base commit holds ``count`` leases (reviewed: they count)."""
    repo = directory / "lease-repo"
    leases = repo / ".flakecore" / "leases"
    leases.mkdir(parents=True)
    for name, data in _leases(count).items():
        (leases / name).write_bytes(data)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: reviewed leases")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def _lease_check(repo: Path, base: str, leases: Path) -> Callable[[], int]:
    """``lease check --base`` over ``leases``: the number of valid records it printed."""
    argv = [
        *_flakecore(), "lease", "check", "--base", base, "--json", "--now", NOW, str(leases)
    ]  # fmt: skip

    def run() -> int:
        out = _run(argv, cwd=repo)
        return sum(json.loads(line)["valid"] is True for line in out.splitlines())

    return run


def _lease_rows(directory: Path, count: int) -> list[Row]:
    repo, base = _lease_repo(directory, count)
    leases = repo / ".flakecore" / "leases"
    run = _lease_check(repo, base, leases)

    def floor() -> int:
        return int(_run([sys.executable, "-c", READ_LOOP, str(leases)]))

    rows = [Row("lease check", f"lease check x{count} (base)", run, floor, "read + json.loads")]
    return rows + _signed_lease_rows(directory, count)


#: securesystemslib's own loop over the same envelopes: parse each, verify its signature.
VERIFY_LOOP = (
    "import json, os, sys\n"
    "from securesystemslib.dsse import Envelope\n"
    "from securesystemslib.signer import SSlibKey\n"
    "key = SSlibKey(sys.argv[2], 'ed25519', 'ed25519', {'public': sys.argv[3]})\n"
    "n = 0\n"
    "for name in sorted(os.listdir(sys.argv[1])):\n"
    "    with open(os.path.join(sys.argv[1], name), 'rb') as fh:\n"
    "        Envelope.from_dict(json.loads(fh.read())).verify([key], 1)\n"
    "    n += 1\n"
    "print(n)\n"
)


def _signed_lease_rows(directory: Path, count: int) -> list[Row]:
    """Leases the patch adds, each signed by the key base trusts: every signature is verified."""
    from securesystemslib.signer import CryptoSigner

    from flakecore.signing import load_signer, sign_record

    keys = directory / "keys"
    keys.mkdir()
    (keys / "ci.pem").write_bytes(CryptoSigner.generate_ed25519().private_bytes)
    repo = directory / "signed-repo"
    repo.mkdir()
    signer = load_signer(keyid="ci", checkout=repo, key_file=str(keys / "ci.pem"))
    public = signer.key.public
    (repo / "pyproject.toml").write_text(f'[tool.flakecore.trust.keys]\nci = "ed25519:{public}"\n')
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: the trusted key")
    base = _git(repo, "rev-parse", "HEAD").strip()
    leases = repo / ".flakecore" / "leases"
    leases.mkdir(parents=True)
    for name, data in _leases(count).items():
        envelope = sign_record(json.loads(data), kind="lease", signer=signer)
        (leases / name).write_text(json.dumps(envelope))
    run = _lease_check(repo, base, leases)

    def floor() -> int:
        return int(_run([sys.executable, "-c", VERIFY_LOOP, str(leases), "ci", public]))

    name = f"lease check x{count} (signed)"
    return [Row("signed", name, run, floor, "securesystemslib verify loop")]


# -- guard -----------------------------------------------------------------------------


def _guard_repo(directory: Path, count: int) -> tuple[Path, str]:
    """A base commit, then a commit changing ``count`` paths (a tenth of them tests)."""
    repo = directory / "guard-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    # One fast-import stream: a commit of `count` new files on top of the base.
    stream = [
        b"blob\nmark :1\ndata 5\nbody\n",
        b"commit refs/heads/main\ncommitter bench <bench@flakecore.invalid> 0 +0000\n",
        b"data 5\nhead\nfrom " + base.encode() + b"\n",
    ]
    for i in range(count):
        path = f"tests/test_{i}.py" if i % 10 == 0 else f"src/pkg{i // 100}/mod_{i}.py"
        stream.append(f"M 100644 :1 {path}\n".encode())
    _git(repo, "fast-import", "--quiet", stdin=b"".join(stream))
    _git(repo, "reset", "-q", "--hard", "main")
    return repo, base


def _guard_rows(directory: Path, count: int) -> list[Row]:
    repo, base = _guard_repo(directory, count)
    argv = [*_flakecore(), "guard", "--no-config", "--json", "--base", base, "--repo", str(repo)]

    def run() -> int:
        changed = json.loads(_run(argv, cwd=directory))["changed"]
        assert isinstance(changed, int)
        return changed

    def floor() -> int:
        _run([sys.executable, "-c", "pass"])
        return _count(_run(["git", "-C", str(repo), "diff", "--name-only", f"{base}...HEAD"]))

    return [
        Row("guard", f"guard, {count} changed paths", run, floor, "git diff --name-only + python")
    ]


# -- budget-run and replay -------------------------------------------------------------


def _sample_repo(directory: Path, name: str, files: int) -> tuple[Path, str]:
    """A repository with ``files`` small files, a fixture, a property file and an epoch lock."""
    repo = directory / name
    (repo / "src").mkdir(parents=True)
    (repo / "fixtures").mkdir()
    (repo / "tests").mkdir()
    for i in range(files):
        (repo / "src" / f"mod_{i}.py").write_text(f"VALUE = {i}\n")
    (repo / "fixtures" / "data.json").write_text('{"values": [1, 2, 3]}\n')
    (repo / "fixtures" / "epoch.lock").write_text("epoch 1\n")
    (repo / "tests" / "test_prop.py").write_text("def test_property():\n    pass\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def _budget_rows(directory: Path, seconds: float, seeds: int, jobs: int) -> list[Row]:
    repo, base = _sample_repo(directory, "budget-repo", 10)
    out = directory / "budget.json"
    argv = [
        *_flakecore(), "budget-run", "--no-config", "--json", "--test-id", "tests/test_prop.py",
        "--base", base, "--fixture", "fixtures/data.json",
        "--property-cmd", "test -s {fixture}",
        "--seeds", ",".join(str(11 + s) for s in range(seeds)), "--out", str(out),
    ]  # fmt: skip
    test = ["--", "sh", "-c", f"sleep {seconds}", "sh", "{seed}"]

    def runs(parallel: Sequence[str]) -> int:
        _run([*argv, *parallel, *test], cwd=repo, ok=range(10))
        record = json.loads(out.read_text())
        return len([r for r in record["runs"] if r["result"] == "pass"])

    return [
        Row(
            "budget-run --jobs 2",
            f"budget-run --jobs {jobs}, {seeds} x {seconds} s",
            lambda: runs(["--jobs", str(jobs)]),
            lambda: runs([]),
            "budget-run (sequential)",
        )
    ]


def _replay_rows(directory: Path, files: int, attempts: int) -> list[Row]:
    repo, base = _sample_repo(directory, "replay-repo", files)
    claimed = hashlib.sha256((repo / "fixtures" / "epoch.lock").read_bytes())
    argv = [
        *_flakecore(), "replay", "--no-config", "--json", "--base", base, "--seed", "3",
        "--attempts", str(attempts), "--property-file", "tests/test_prop.py",
        "--epoch-lock", "fixtures/epoch.lock", "--claimed-epoch", claimed.hexdigest(),
        "--patch-misses", "1", "--seed-env", "SEED", "--out", str(directory / "freeze.json"),
        "--", "true",
    ]  # fmt: skip

    def run() -> int:
        return len(json.loads(_run(argv, cwd=repo, ok=range(10)))["replay"]["attempts"])

    def floor() -> int:
        """The git calls a replay needs, and the attempts, by hand.

        The worktree goes where the replay puts its own (a fresh folder in the
        temp dir): a file system may create files much faster in one folder
        than in another, and the row compares flakecore's work, not folders.
        """
        scratch = Path(tempfile.mkdtemp(prefix="flakecore-bench-replay-"))
        tree = str(scratch / "tree")
        for call in (
            ["rev-parse", "--show-toplevel", "HEAD", f"{base}^{{commit}}"],
            ["worktree", "add", "--detach", "--quiet", tree, base],
        ):
            _git(repo, *call)
        _git(Path(tree), "rev-parse", "HEAD")
        _git(Path(tree), "status", "--porcelain", "--untracked-files=all", "--ignored")
        for _ in range(attempts):
            subprocess.run(["true"], cwd=tree, check=True)
        _git(repo, "worktree", "remove", "--force", "--force", tree)
        scratch.rmdir()
        return attempts

    return [Row("replay", f"replay, {attempts} attempts, {files} files", run, floor, "git by hand")]


def _groups(args: argparse.Namespace, directory: Path) -> Mapping[str, Callable[[], list[Row]]]:
    return {
        "start-up": lambda: _startup_rows(directory),
        "batch": lambda: _batch_rows(directory, args.packets),
        "lease": lambda: _lease_rows(directory, args.leases),
        "guard": lambda: _guard_rows(directory, args.paths),
        "budget-run": lambda: _budget_rows(directory, args.seconds, args.seeds, args.jobs),
        "replay": lambda: _replay_rows(directory, args.files, args.attempts),
    }


def main() -> None:
    """Set up every row's input, measure the rows and their floors in turns, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=100_000, help="packets per batch")
    parser.add_argument("--leases", type=int, default=10_000)
    parser.add_argument("--paths", type=int, default=10_000, help="changed paths for guard")
    parser.add_argument("--seconds", type=float, default=0.5, help="budget-run: one test's time")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--files", type=int, default=1000, help="replay: files in the repository")
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="turns of every row (medians)")
    parser.add_argument("--startup-repeat", type=int, default=21, help="turns of start-up rows")
    parser.add_argument("--only", nargs="*", help="groups to run (default: all)")
    parser.add_argument("--small", action="store_true", help="a smoke run: tiny inputs, one turn")
    args = parser.parse_args()
    if args.small:
        args.packets, args.leases, args.paths, args.files = 200, 50, 200, 20
        args.seconds, args.repeat, args.startup_repeat = 0.05, 1, 1
    # As in an activated virtualenv (and a nox session): its python3 comes first on PATH,
    # the interpreter replay's isolation probe runs (not a shim that starts another).
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    load = os.getloadavg()[0]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.2f}, "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%MZ}"
    )
    header = (
        f"{'row':<36} {'seconds':>8} {'floor':<30} {'seconds':>8} {'ratio':>8} {'cpu':>8}  goal"
    )
    print(header)
    print("-" * (len(header) + 30))
    with tempfile.TemporaryDirectory(prefix="flakecore-bench-gate-") as tmp:
        directory = Path(tmp)
        for group, make in _groups(args, directory).items():
            if args.only and group not in args.only:
                continue
            rows = make()
            os.sync()  # the fixtures just written reach the disk before any turn is timed
            turns = args.startup_repeat if group == "start-up" else args.repeat
            for turn in range(turns):
                for row in rows:
                    row.measure(floor_first=turn % 2 == 1)
            for row in rows:
                print(row.line(), flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
