"""The base replay (docs/gate.md), run for real: worktree, attempts, digests, ``admit``.

``admit`` judges a replay record; this module *produces* one, so a CI job
never scripts the procedure by hand (and never gets it subtly wrong):

1. hash the claim on the scored tree (property file, epoch lock, ``HEAD``);
2. add a detached worktree at the base commit outside the checkout and refuse
   it unless ``HEAD`` is the base and ``git status`` is empty; run the
   request's ``setup`` there once, then refuse a command whose Python would
   import the scored checkout (:mod:`flakecore.gate.isolation`);
3. run the command once per attempt, in a fresh contained process
   (:func:`~flakecore.gate.runtime.run_command`), with the pinned seed;
   append one attempt line per start;
4. after every attempt's process exits, re-hash the property file and the
   epoch lock on *both* trees (a loader that rewrites them is drift);
5. reduce the log, build the ``admit`` packet, decide; persist the freeze
   record only for ``ACCEPT_PREEXISTING``; remove the worktree on every path.

How an attempt's result is told is injected (:class:`Judge`): from the exit
status (:class:`ExitStatusJudge`) or from the report the command wrote
(:class:`ReportJudge`, given a reader -- the CLI passes the adapters' one, so
this module never imports them).  Anything that makes the evidence
unprovable -- a git failure, a dirty base, a missing report, a truncated
log -- is ``REJECT_INCOMPLETE`` with a one-line reason, never a traceback.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import attrs

from flakecore.admit import AdmitDecision, admit, admit_verdict, freeze_record
from flakecore.codes import AdmitCode, AttemptResult, Outcome
from flakecore.digest import file_sha256, is_digest
from flakecore.errors import FlakecoreError, InputError, MissingInputError, UsageError
from flakecore.files import write_atomic
from flakecore.gate.runtime import (
    WEAK_CONTAINMENT,
    CommandRun,
    Reapers,
    child_env,
    remove_file,
    signals_deferred,
    substitute,
)
from flakecore.gate.worktree import DetachedWorktree, GitError, head_commit, repo_toplevel
from flakecore.gate.worktree import resolve_commit as _resolve_commit
from flakecore.policy import DEFAULT_POLICY, Policy
from flakecore.seeds import seed_from_text

if TYPE_CHECKING:
    from flakecore.attempts import AttemptWriter, LogSummary
    from flakecore.evidence import Attempt
    from flakecore.records import Seed

__all__ = [
    "DEFAULT_MISS_EXIT_CODES",
    "AttemptRun",
    "ExitStatusJudge",
    "IncompleteAttempt",
    "Judge",
    "ProgressCallback",
    "ReplayOutcome",
    "ReplayRequest",
    "ReportJudge",
    "ReportReader",
    "run_replay",
]

#: Exit statuses that mean "the assertion failed" without a report: pytest's 1.
DEFAULT_MISS_EXIT_CODES: frozenset[int] = frozenset({1})

#: ``progress(attempt, total, misses)``, called after each attempt.
ProgressCallback = Callable[[int, int, int], None]
#: Reads a report file into attempt records (the CLI passes the adapters' reader).
ReportReader = Callable[[Path], Iterable["Attempt"]]
#: What a replay needs only once the worktree is there: imported beside ``git worktree add``
#: (by the thread of the isolation probe), else where first used.
_AFTER_CHECKOUT = ("flakecore.attempts", "flakecore.evidence", "flakecore.records")


class IncompleteAttempt(FlakecoreError):
    """An attempt whose result cannot be told; the whole request is then incomplete."""


class Judge(Protocol):
    """Tells one attempt's result; raises :class:`IncompleteAttempt` when it cannot."""

    def prepare(self, worktree: Path) -> None:
        """Called before each attempt starts (delete a stale report here)."""

    def judge(self, run: CommandRun, worktree: Path) -> AttemptResult:
        """The attempt-log result of one finished command run."""


def _not_started(run: CommandRun) -> None:
    if run.start_error is not None:
        raise IncompleteAttempt(f"the command {run.describe()}")


@attrs.frozen
class ExitStatusJudge:
    """Result from the exit status alone (no report).

    0 is a pass, a timeout is a timeout, a status in ``miss_exit_codes`` is a
    miss, anything else (a usage error, an internal error, no tests
    collected, a signal) is an error: a started attempt, never a miss.  The
    default ``{1}`` is pytest's "tests failed"; pytest also exits 1 for a
    fixture error, which only a report can tell apart.
    """

    miss_exit_codes: frozenset[int] = DEFAULT_MISS_EXIT_CODES

    def prepare(self, worktree: Path) -> None:
        """Nothing to prepare: the exit status is fresh by construction."""

    def judge(self, run: CommandRun, worktree: Path) -> AttemptResult:
        """0 pass, a miss code miss, a timeout timeout, anything else error."""
        _not_started(run)
        if run.timed_out:
            return AttemptResult.TIMEOUT
        if run.returncode == 0:
            return AttemptResult.PASS
        if run.returncode in self.miss_exit_codes:
            return AttemptResult.MISS
        return AttemptResult.ERROR


@attrs.frozen
class ReportJudge:
    """Result from the report the command wrote, for exactly one test id.

    The report is deleted before every attempt, so a stale one is never read.
    A missing or unreadable report, no record or several records for the test
    id, or a record with a blocking flag makes the request incomplete; so does
    a report that says ``fail``/``error`` while the command exited 0.
    ``report`` is relative to the worktree unless absolute.
    """

    report: str
    test_id: str
    read: ReportReader
    ids: Callable[[Path], Iterable[str]] | None = None
    """Every test id of the report, to name the closest ones when ``test_id`` has no record."""

    def _path(self, worktree: Path) -> Path:
        path = Path(self.report)
        return path if path.is_absolute() else worktree / path

    def prepare(self, worktree: Path) -> None:
        """Delete the report a previous attempt (or the commit itself) left behind."""
        path = self._path(worktree)
        if path.is_dir() and not path.is_symlink():
            raise IncompleteAttempt(f"report path {self.report} is a directory")
        remove_file(path)

    def _closest(self, path: Path) -> str:
        if self.ids is None:
            return ""
        from flakecore.testids import closest_ids  # noqa: PLC0415 - a refusal's only

        try:
            near = closest_ids(self.test_id, self.ids(path))
        except (InputError, OSError, ValueError):
            return ""  # the report read once already; the refusal is about the missing record
        return "; closest: " + ", ".join(repr(i) for i in near) if near else ""

    def judge(self, run: CommandRun, worktree: Path) -> AttemptResult:
        """The one record for ``test_id`` in the fresh report, as an attempt result."""
        _not_started(run)
        if run.timed_out:
            return AttemptResult.TIMEOUT
        path = self._path(worktree)
        if not path.is_file():
            raise IncompleteAttempt(
                f"no report at {self.report} after the attempt ({run.describe()})"
            )
        try:
            records = [a for a in self.read(path) if a.test_id == self.test_id]
        except (InputError, OSError, ValueError) as exc:
            raise IncompleteAttempt(f"report {self.report} is unusable: {exc}") from None
        if not records:
            raise IncompleteAttempt(
                f"report {self.report} has no record for {self.test_id!r}" + self._closest(path)
            )
        if len(records) > 1:
            raise IncompleteAttempt(
                f"report {self.report} has {len(records)} records for {self.test_id!r} "
                "(reruns inside one attempt hide the first result)"
            )
        (record,) = records
        from flakecore.evidence import blocking_flags  # noqa: PLC0415 - see _AFTER_CHECKOUT

        if flags := blocking_flags(records):
            names = ", ".join(sorted(f.value for f in flags))
            raise IncompleteAttempt(f"report record for {self.test_id!r} is flagged: {names}")
        if run.returncode == 0 and record.outcome in (Outcome.FAIL, Outcome.ERROR):
            raise IncompleteAttempt(
                f"report says {record.outcome.value} for {self.test_id!r} but the command exited 0"
            )
        return AttemptResult.from_outcome(record.outcome)


@attrs.frozen(kw_only=True)
class ReplayRequest:
    """What to replay.  Relative paths are relative to ``checkout``.

    ``seed`` is the command-line text; the seed recorded (and compared with
    the patch logs' seed, by value and type) is :attr:`pinned`.  Give exactly
    one of ``patch_misses``, ``patch_logs`` (the patch run's attempt logs)
    and ``patch_reports`` (the patch run's test reports, read by the
    ``patch_reader`` given to :func:`run_replay`).
    """

    checkout: Path
    """A directory inside the scored checkout (the tree the claim is made on)."""
    base: str
    """The base commit: a full SHA or any revision git resolves to a commit."""
    seed: str
    """The seed pinned from the patch failure, as text (``{seed}`` gets it as it is)."""
    command: tuple[str, ...]
    """The command; ``{seed}`` in any argument is replaced by the seed."""
    property_file: Path
    """The property's source file, in the scored checkout."""
    epoch_lock: Path
    """The fixture epoch lock file, in the scored checkout."""
    claimed_epoch: str
    """The sha256 of the epoch lock the claim names."""
    attempts: int | None = None
    """Base attempts to run; None means the policy's attempt cap."""
    patch_misses: int | None = None
    """Misses of the patch run, when given as a number."""
    patch_logs: tuple[Path, ...] = ()
    """Attempt logs of the patch run, reduced for ``patch_misses``."""
    patch_reports: tuple[Path, ...] = ()
    """Test reports of the patch run: ``property_id``'s failed attempts are its misses."""
    property_id: str | None = None
    """The test id, recorded as the packet's ``property_id``."""
    timeout_s: float | None = None
    """Per-attempt timeout; the process group is killed and the attempt is a ``timeout``."""
    seed_env: str | None = None
    """Also pass the seed in this environment variable."""
    log: Path | None = None
    """Where to append the attempt log (must not exist); None: a temporary file."""
    setup: tuple[str, ...] = ()
    """Run once in the base worktree before the first attempt (e.g. build a venv there)."""

    @property
    def pinned(self) -> Seed:
        """The seed as recorded: :attr:`seed` read by :func:`~flakecore.seeds.seed_from_text`."""
        return seed_from_text(self.seed)


@attrs.frozen(kw_only=True)
class AttemptRun:
    """One started base attempt."""

    n: int
    result: AttemptResult
    exit_code: int | None
    timed_out: bool
    duration_s: float

    def to_json(self) -> dict[str, object]:
        """As printed under ``replay.attempts`` by ``flakecore replay --json``."""
        return {
            "n": self.n,
            "result": self.result.value,
            "exit": self.exit_code,
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 3),
        }


@attrs.frozen(kw_only=True)
class ReplayOutcome:
    """The decision, the packet it was made on, and what the replay observed.

    ``packet`` is None when the replay stopped before it could assemble one
    (the decision is then ``REJECT_INCOMPLETE``); ``freeze`` is the record
    written for an ``ACCEPT_PREEXISTING``, else None; ``log`` is the reduced
    ``request.log``, None without one (a temporary log is gone with the worktree).
    """

    decision: AdmitDecision
    packet: dict[str, object] | None
    freeze: dict[str, object] | None
    head_sha: str | None
    base_sha: str | None
    attempts: tuple[AttemptRun, ...]
    log: LogSummary | None
    digests: dict[str, list[str]]

    def to_json(self) -> dict[str, object]:
        """``packet`` and ``replay`` details, added to the decision by ``--json``."""
        return {
            "packet": self.packet,
            "replay": {
                "head_sha": self.head_sha,
                "base_sha": self.base_sha,
                "attempts": [a.to_json() for a in self.attempts],
                "log": self.log.to_json() if self.log is not None else None,
                "digests": {k: list(v) for k, v in self.digests.items()},
                "freeze_record_written": self.freeze is not None,
            },
        }


class _Refuse(Exception):
    """The replay cannot produce provable evidence: REJECT_INCOMPLETE."""


class _LeaksAhead:
    """:func:`~flakecore.gate.isolation.find_leaks_ahead` in a thread of its own.

    Started while git adds the worktree; its answer (or its exception) is
    taken where the replay checks the isolation, so the order of the
    refusals is the one without it.  It uses the reapers alone until then:
    the replay runs nothing else on them before :meth:`answer`.  The thread
    lasts until :meth:`end`: a reaper it started (past those started ahead)
    gets its ``PR_SET_PDEATHSIG`` when the thread that started it ends.
    """

    def __init__(self, ask: Callable[[], list[str] | None], reapers: Reapers) -> None:
        self._ask, self._reapers = ask, reapers
        self._answer: list[str] | None = None
        self._error: BaseException | None = None
        self._done, self._ended = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="isolation", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._answer = self._ask()
        except BaseException as exc:  # handed to the replay's thread by answer()
            self._error = exc
        finally:
            self._done.set()
        self._ended.wait()

    def answer(self) -> list[str] | None:
        """The leaks found, or None: the probe needs the worktree after all."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._answer

    def end(self) -> None:
        """Stop the probe if it still runs (the replay ends without its answer), and wait."""
        if not self._done.is_set():
            self._reapers.stop()
        self._done.wait()
        self._ended.set()
        self._thread.join()


def _decision(policy: Policy, code: AdmitCode, *reasons: str) -> AdmitDecision:
    return admit_verdict(code, *reasons, policy=policy)


def _validate(request: ReplayRequest, policy: Policy) -> int:
    """Usage errors, found before anything runs; returns the number of attempts."""
    if not request.command:
        raise UsageError("replay: give the COMMAND to run after --")
    if request.seed_env is None and not any("{seed}" in arg for arg in request.command):
        raise UsageError(
            "replay: the COMMAND must take the pinned seed: put {seed} in it, or use --seed-env"
        )
    if not request.seed.strip():
        raise UsageError("replay: --seed is blank")
    given = (request.patch_misses is not None, request.patch_logs, request.patch_reports)
    if sum(map(bool, given)) != 1:
        raise UsageError(
            "replay: give --patch-misses N, --patch-log FILE or --patch-report FILE (exactly one)"
        )
    if request.patch_reports and request.property_id is None:
        raise UsageError("replay: --patch-report needs --test-id (the test whose misses count)")
    if request.patch_misses is not None and request.patch_misses < 0:
        raise UsageError("replay: --patch-misses must be 0 or more")
    if request.timeout_s is not None and not request.timeout_s > 0:
        raise UsageError("replay: --timeout must be a positive number of seconds")
    cap = policy.attempt_cap
    attempts = cap if request.attempts is None else request.attempts
    if not 1 <= attempts <= cap:
        raise UsageError(f"replay: --attempts must be in 1..{cap} (the policy's attempt cap)")
    return attempts


def _repo_path(top: Path, checkout: Path, path: Path, flag: str) -> str:
    """``path`` relative to the repository top, symlinked directories resolved."""
    absolute = path if path.is_absolute() else checkout / path
    resolved = Path(os.path.realpath(absolute.parent)) / absolute.name
    try:
        return resolved.relative_to(top).as_posix()
    except ValueError:
        raise UsageError(f"replay: {flag} {path} is outside the repository {top}") from None


def _observe(path: Path, what: str) -> str:
    try:
        return file_sha256(path)
    except MissingInputError:
        raise _Refuse(f"{what} is missing") from None
    except InputError as exc:
        raise _Refuse(f"{what} cannot be read: {exc.message}") from None


def _reported(head: Sequence[str], base: Sequence[str]) -> tuple[str, str]:
    """The (head, base) digests to report from every observation of one file.

    Stable on both trees: the two values.  Otherwise two observed values that
    differ, so any change during the run shows up as a mismatch.
    """
    if len(set(head)) == 1 and len(set(base)) == 1:
        return head[-1], base[-1]
    if len(set(base)) > 1:
        h = head[-1]
        return h, next(b for b in base if b != h)
    b = base[-1]
    return next(h for h in head if h != b), b


def _changes(name: str, observed: Sequence[str], steps: Sequence[str]) -> list[str]:
    """``steps[i]`` names what ran between observations ``i`` and ``i + 1``."""
    notes: list[str] = []
    for i in range(1, len(observed)):
        if observed[i] != observed[i - 1]:
            notes.append(f"{name} changed during {steps[i - 1]}")
    return notes


class _Replay:
    """One replay's mutable state; :meth:`run` freezes it into an outcome."""

    def __init__(
        self,
        request: ReplayRequest,
        judge: Judge,
        policy: Policy,
        progress: ProgressCallback | None,
        output: int,
        *,
        patch_reader: ReportReader | None = None,
    ) -> None:
        self.request = request
        self.judge = judge
        self.patch_reader = patch_reader
        self.policy = policy
        self.progress = progress
        self.output = output
        self.head_sha: str | None = None
        self.base_sha: str | None = None
        self.runs: list[AttemptRun] = []
        self.log: LogSummary | None = None
        self.digests: dict[str, list[str]] = {}
        self.steps: list[str] = []
        self.weak = False
        self.ahead: _LeaksAhead | None = None
        extra = {request.seed_env: request.seed} if request.seed_env else {}
        self.env = child_env(extra)

    def outcome(
        self,
        decision: AdmitDecision,
        packet: dict[str, object] | None = None,
        freeze: dict[str, object] | None = None,
    ) -> ReplayOutcome:
        return ReplayOutcome(
            decision=decision,
            packet=packet,
            freeze=freeze,
            head_sha=self.head_sha,
            base_sha=self.base_sha,
            attempts=tuple(self.runs),
            log=self.log,
            digests=self.digests,
        )

    def patch_misses(self) -> int:
        request = self.request
        if request.patch_misses is not None:
            return request.patch_misses
        if request.patch_reports:
            return self.reported_misses()
        from flakecore.attempts import reduce_logs  # noqa: PLC0415 - see _AFTER_CHECKOUT

        summary = reduce_logs(request.patch_logs, policy=self.policy)
        if not summary.complete:
            raise _Refuse("patch log is incomplete: " + "; ".join(summary.reasons))
        pinned = request.pinned
        if type(summary.seed) is not type(pinned) or summary.seed != pinned:
            raise _Refuse(
                f"patch log seed {summary.seed!r} is not the pinned seed {pinned!r} "
                "(seeds compare by value and type)"
            )
        return summary.misses

    def reported_misses(self) -> int:
        """The test's failed attempts in the patch run's reports; flagged evidence is refused."""
        request, read = self.request, self.patch_reader
        if read is None:
            raise UsageError("replay: patch reports need a report reader (patch_reader)")
        test_id = request.property_id
        attempts = [a for path in request.patch_reports for a in read(path) if a.test_id == test_id]
        if not attempts:
            raise _Refuse(f"the patch reports have no attempt of {test_id!r}")
        from flakecore.evidence import blocking_flags  # noqa: PLC0415 - see _AFTER_CHECKOUT

        if flags := blocking_flags(attempts):
            names = ", ".join(sorted(f.value for f in flags))
            raise _Refuse(f"the patch reports' attempts of {test_id!r} are flagged: {names}")
        return sum(a.is_miss for a in attempts)

    def run(
        self,
        attempts: int,
        out: Path | None,
        resolved: tuple[Path, str] | None,
        head: str | None,
    ) -> ReplayOutcome:
        from flakecore.attempts import AttemptWriter  # noqa: PLC0415 - see _AFTER_CHECKOUT

        request, policy = self.request, self.policy
        checkout = Path(os.path.abspath(request.checkout))
        try:
            top = repo_toplevel(checkout) if resolved is None else resolved[0]
        except GitError as exc:
            return self.outcome(_decision(policy, AdmitCode.REJECT_INCOMPLETE, str(exc)))
        prop_rel = _repo_path(top, checkout, request.property_file, "--property-file")
        lock_rel = _repo_path(top, checkout, request.epoch_lock, "--epoch-lock")
        # 1. The claim, hashed on the scored tree before anything runs or is written;
        # a file that cannot be read here is the caller's input error (InputError).
        head_files = {"property": top / prop_rel, "epoch_lock": top / lock_rel}
        sources = {"property": request.property_file, "epoch_lock": request.epoch_lock}
        self.digests = {
            f"head_{k}": [file_sha256(p, source=str(sources[k]))] for k, p in head_files.items()
        }
        writer = AttemptWriter(request.log, request.pinned) if request.log is not None else None
        tree: DetachedWorktree | None = None
        reapers: Reapers | None = None
        try:
            self.head_sha = head_commit(top) if head is None or resolved is None else head
            if not is_digest(request.claimed_epoch):
                raise _Refuse("claimed epoch is not a sha256 digest (64 lowercase hex)")
            patch_misses = self.patch_misses()
            self.base_sha = _resolve_commit(top, request.base) if resolved is None else resolved[1]
            # The reapers of the set-up, the isolation probe and the attempts start while git
            # checks the base out; each waits for its job (docs/gate.md, "Containment").
            reapers = Reapers(attempts + 1 + bool(request.setup), env=self.env, output=self.output)
            # 2. The unmodified base, detached, outside the checkout; refused unless exact.
            tree = DetachedWorktree(top, self.base_sha)
            # Without a set-up, the probe runs beside git when the worktree cannot change it.
            start = None if request.setup else functools.partial(self.isolate_ahead, reapers, top)
            worktree = tree.create(meanwhile=start)
            if problems := tree.problems():
                raise _Refuse("; ".join(problems))
            assert tree.scratch is not None
            base_files = {"property": worktree / prop_rel, "epoch_lock": worktree / lock_rel}
            for key, path in base_files.items():
                self.digests[f"base_{key}"] = [_observe(path, f"{key} file at the base commit")]
            if writer is None:
                # Reduced and deleted by this replay: no line of it needs to reach the disk.
                log = tree.scratch / "attempts.jsonl"
                writer = AttemptWriter(log, request.pinned, durable=False)
            files = {"head": head_files, "base": base_files}
            # The base's own environment, then proof that the command cannot reach the checkout.
            if request.setup:
                self.setup(reapers, worktree, files)
            self.isolate(reapers, worktree, top, tree.scratch)
            # 3-4. One fresh process per attempt; re-hash both trees after each exits.
            self.attempt_loop(reapers, attempts, worktree, writer, files)
            # Nothing reads the worktree any more (the log is beside it): git removes it
            # while the log is reduced and HEAD is asked again.
            tree.start_removal()
            writer.close()
            return self.decide(top, writer.path, patch_misses, out)
        except (_Refuse, GitError, IncompleteAttempt) as exc:
            return self.outcome(_decision(policy, AdmitCode.REJECT_INCOMPLETE, str(exc)))
        finally:
            # A second signal waits until all of it is done (a probe ahead may take a moment).
            with signals_deferred():
                if self.ahead is not None:
                    self.ahead.end()  # before its reapers go
                if reapers is not None:
                    reapers.close()
                if writer is not None:
                    writer.close()
                if tree is not None:
                    tree.remove()

    def observe(self, files: dict[str, dict[str, Path]], step: str) -> None:
        """Hash the property file and the epoch lock on both trees after ``step`` ran."""
        self.steps.append(step)
        for tree, named in files.items():
            for key, path in named.items():
                what = f"{key} file on the {tree} tree after {step}"
                self.digests[f"{tree}_{key}"].append(_observe(path, what))

    def setup(self, reapers: Reapers, worktree: Path, files: dict[str, dict[str, Path]]) -> None:
        """Run ``--setup`` once in the base worktree (contained); it must exit 0."""
        command = self.request.setup
        run = reapers.run(command, cwd=worktree, timeout_s=None)
        if failure := run.containment_failure:
            raise _Refuse(f"--setup: {failure}")
        if run.start_error is not None or run.returncode != 0:
            raise _Refuse(f"--setup failed ({run.describe()}): {shlex.join(command)}")
        self.observe(files, "--setup")

    def isolate_ahead(self, reapers: Reapers, top: Path, scratch: Path) -> None:
        """Start the isolation check in a thread, before the worktree exists (:meth:`isolate`)."""
        argv = substitute(self.request.command, seed=self.request.seed)

        def ask() -> list[str] | None:
            # Imported here, beside git: no start-up cost before the replay's first git call.
            from flakecore.gate.isolation import find_leaks_ahead  # noqa: PLC0415

            for name in _AFTER_CHECKOUT:
                importlib.import_module(name)

            return find_leaks_ahead(
                argv,
                env=self.env,
                checkout=top,
                scratch=scratch,
                output=self.output,
                reapers=reapers,
            )

        self.ahead = _LeaksAhead(ask, reapers)

    def isolate(self, reapers: Reapers, worktree: Path, top: Path, scratch: Path) -> None:
        """Refuse a command whose interpreter would import the scored checkout (docs/trust.md).

        The answer found ahead, while git added the worktree, when there is one.
        """
        from flakecore.gate import isolation  # noqa: PLC0415 - see isolate_ahead

        argv = substitute(self.request.command, seed=self.request.seed)
        try:
            leaks = None if self.ahead is None else self.ahead.answer()
            if leaks is None:
                leaks = isolation.find_leaks(
                    argv,
                    env=self.env,
                    cwd=worktree,
                    checkout=top,
                    scratch=scratch,
                    output=self.output,
                    reapers=reapers,
                )
        except isolation.IsolationError as exc:
            raise _Refuse(f"the base replay's isolation cannot be shown: {exc}") from None
        if leaks:
            raise _Refuse(isolation.describe(leaks))

    def attempt_loop(
        self,
        reapers: Reapers,
        attempts: int,
        worktree: Path,
        writer: AttemptWriter,
        files: dict[str, dict[str, Path]],
    ) -> None:
        request = self.request
        argv = substitute(request.command, seed=request.seed)
        misses = 0
        for n in range(1, attempts + 1):
            self.judge.prepare(worktree)
            # Only now, with the previous attempt ended and both trees re-hashed, may this
            # attempt's reaper (started ahead) start the command.
            run = reapers.run(argv, cwd=worktree, timeout_s=request.timeout_s)
            # Nothing of the attempt is running any more; only now is anything read.
            if failure := run.containment_failure:
                raise _Refuse(f"attempt {n}: {failure}")
            self.weak = self.weak or run.weakly_contained
            self.observe(files, f"attempt {n}")
            result = self.judge.judge(run, worktree)
            writer.append(result)
            misses += result is AttemptResult.MISS
            self.runs.append(
                AttemptRun(
                    n=n,
                    result=result,
                    exit_code=run.returncode,
                    timed_out=run.timed_out,
                    duration_s=run.duration_s,
                )
            )
            if self.progress is not None:
                self.progress(n, attempts, misses)

    def decide(self, top: Path, log: Path, patch_misses: int, out: Path | None) -> ReplayOutcome:
        from flakecore.attempts import reduce_logs  # noqa: PLC0415 - see _AFTER_CHECKOUT
        from flakecore.records import AdmitEvidence  # noqa: PLC0415

        request, policy = self.request, self.policy
        # 5. The log as written is the evidence; it must reduce cleanly and agree with us.
        summary = reduce_logs([log], policy=policy)
        # A temporary log goes with the worktree: the outcome names only files that stay.
        self.log = summary if request.log is not None else None
        if not summary.complete:
            raise _Refuse("attempt log is incomplete: " + "; ".join(summary.reasons))
        misses = sum(r.result is AttemptResult.MISS for r in self.runs)
        if (summary.attempts, summary.misses) != (len(self.runs), misses):
            raise _Refuse("attempt log does not match the attempts run (was it edited?)")
        assert self.head_sha is not None and self.base_sha is not None
        if head_commit(top) != self.head_sha:
            raise _Refuse("HEAD of the scored checkout moved during the replay")
        d = self.digests
        prop, base_prop = _reported(d["head_property"], d["base_property"])
        epoch, base_epoch = _reported(d["head_epoch_lock"], d["base_epoch_lock"])
        evidence = AdmitEvidence(
            base_misses=summary.misses,
            base_attempts=summary.attempts,
            patch_misses=patch_misses,
            property_sha256=prop,
            base_property_sha256=base_prop,
            fixture_epoch=epoch,
            base_fixture_epoch=base_epoch,
            claimed_epoch=request.claimed_epoch,
            property_id=request.property_id,
            seed=request.pinned,
            base_sha=self.base_sha,
        )
        packet = evidence.to_json()
        decision = admit(packet, policy=policy)
        notes = [note for name, seen in d.items() for note in _changes(name, seen, self.steps)]
        notes += [WEAK_CONTAINMENT] if self.weak else []
        if notes:
            decision = attrs.evolve(decision, reasons=(*decision.reasons, *notes))
        record = freeze_record(packet, policy=policy)
        if record is not None and out is not None:
            body = json.dumps(record, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
            write_atomic(out, body.encode("ascii"))
        return self.outcome(decision, packet, record)


def run_replay(
    request: ReplayRequest,
    *,
    judge: Judge,
    policy: Policy = DEFAULT_POLICY,
    out: Path | None = None,
    progress: ProgressCallback | None = None,
    output: int = subprocess.DEVNULL,
    patch_reader: ReportReader | None = None,
    resolved: tuple[Path, str] | None = None,
    head: str | None = None,
) -> ReplayOutcome:
    """Run the base replay (docs/gate.md) and decide with :func:`flakecore.admit`.

    ``out`` is deleted first and written (atomically) only for
    ``ACCEPT_PREEXISTING``: a stale freeze record is never inherited.  The
    worktree is removed on every path; an exception (including
    ``KeyboardInterrupt``) propagates only after the cleanup.  Raises
    :class:`~flakecore.errors.UsageError` for a request that makes no sense
    and :class:`~flakecore.errors.InputError` for a file that cannot be read
    (a missing property file, an unreadable patch log); every other problem
    is a ``REJECT_INCOMPLETE`` outcome.  ``output`` receives the command's
    stdout and stderr (a file descriptor; discarded by default).
    ``patch_reader`` reads ``request.patch_reports`` (the CLI passes the
    adapters' reader); an unusable patch report raises its
    :class:`~flakecore.errors.InputError`.  ``resolved`` is the checkout's
    top and the full commit id ``request.base`` names there, when the
    caller has just asked git (the CLI's configuration did): they are not
    asked again; nor is ``head``, the full id of the checkout's ``HEAD``
    that same call read (taken only with ``resolved``).
    """
    if out is not None:
        remove_file(out)
    attempts = _validate(request, policy)
    replay = _Replay(request, judge, policy, progress, output, patch_reader=patch_reader)
    return replay.run(attempts, out, resolved, head)
