"""From a red CI run to one verdict per red test: the procedure behind ``flakecore triage``.

The patch's CI run went red.  For each red test this module says "pre-existing,
may be frozen" or why not, from the evidence the run left and the repository
policy *of the base revision* (:class:`~flakecore.gate.triage_config.TriageConfig`):

1. the evidence -- the pytest plugin's attempt-log directories
   (:func:`flakecore.logdir.read_log_dir`) and the run's reports (attempt
   records the CLI reads through the adapters) -- names the red tests: any
   miss, error or timeout, or a log that does not reduce;
2. more red tests than ``Policy.max_red_tests`` is a regression: every one is
   refused as ``REJECT_TOO_MANY_RED`` and nothing is replayed;
3. a test that errored or timed out is never a flake candidate; one whose
   evidence is incomplete, or that has no seed pinned by the plugin (a fresh
   draw would be another experiment), is ``REJECT_INCOMPLETE``;
4. every other red test is replayed on base (:func:`~flakecore.gate.replay.run_replay`,
   its isolation probe and ``setup`` included) with the seed of its own log,
   and, when configured, gets the seed budget on head
   (:func:`~flakecore.gate.seedrun.run_budget`); it is accepted only when
   every configured policy accepts;
5. the records go to an output directory outside the checkout: the base
   attempt log and the command's output per test, the freeze record on
   accept, the budget observation, and a *lease proposal* (a classify report,
   what ``flakecore lease open --report`` reads), each signed beside when a
   key is given.  Triage never writes a lease: the replay host does not
   accept its own freeze (docs/leases.md); the acceptor runs ``lease open``.

Replays of different tests are independent (each has its own worktree, its
own attempt log, its own reapers), so ``jobs`` of them run side by side.  The
seed-budget runs run the *patch's* code, so they start only once every
replay has ended (a running patch could write into a base worktree) and run
one at a time, in test-id order.  The verdicts and records do not depend on
``jobs``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Final

import attrs

from flakecore._fields import Seed
from flakecore._wording import plural
from flakecore.attempts import LogSummary, reduce_logs
from flakecore.budget import BudgetDecision
from flakecore.codes import AdmitCode, AttemptResult, BudgetCode, TriageVerdict
from flakecore.decision import Decision
from flakecore.digest import sha256_bytes
from flakecore.errors import FlakecoreError, InputError, UsageError
from flakecore.evidence import Attempt, blocking_flags
from flakecore.exits import TRIAGE_EXIT
from flakecore.files import MAX_FILE_BYTES, open_append, read_bytes, write_atomic
from flakecore.gate.config import GateConfig
from flakecore.gate.replay import Judge, ReplayOutcome, ReplayRequest, run_replay
from flakecore.gate.runtime import Terminated, stop_all, substitute
from flakecore.gate.seedrun import BudgetRunOutcome, BudgetRunRequest, run_budget
from flakecore.gate.triage_config import TriageConfig
from flakecore.gate.worktree import GitError, read_blob, repo_toplevel
from flakecore.jsonio import compact_line
from flakecore.policy import Policy
from flakecore.seeds import seed_from_text
from flakecore.signing import RecordSigner, sign_record
from flakecore.testids import id_digest, junit_form
from flakecore.trust import inside

__all__ = [
    "LeaseTerms",
    "RedTest",
    "TestVerdict",
    "TriageProgress",
    "TriageRequest",
    "find_red_tests",
    "lease_proposal",
    "run_triage",
]

#: ``progress(test_id, status)``, called from the thread working on that test.
TriageProgress = Callable[[str, str], None]
#: The results that make a test red; a ``miss`` is the only one a flake can be.
_RED: Final = (AttemptResult.MISS, AttemptResult.ERROR, AttemptResult.TIMEOUT)
_NOT_A_FLAKE: Final = (AttemptResult.ERROR, AttemptResult.TIMEOUT)


@attrs.frozen(kw_only=True)
class RedTest:
    """One red test and the evidence that names it.

    ``logs`` are the plugin's attempt logs of the test (one per worker and
    session), ``summary`` their reduction; ``results`` counts every attempt
    result seen, in the logs and in the reports; ``problems`` says why the
    evidence cannot decide.
    """

    test_id: str
    logs: tuple[Path, ...]
    summary: LogSummary | None
    results: Mapping[str, int]
    reports: tuple[str, ...]
    problems: tuple[str, ...] = ()

    @property
    def seed(self) -> Seed | None:
        """The seed every log of the test ran with (None without a complete log)."""
        if self.summary is None or not self.summary.complete:
            return None
        return self.summary.seed

    @property
    def evidence(self) -> tuple[str, ...]:
        """The files that name this test red."""
        return (*self.reports, *(str(p) for p in self.logs))


def _report_results(
    reports: Sequence[tuple[str, Iterable[Attempt]]], node_ids: Iterable[str]
) -> dict[str, list[Attempt]]:
    """The reports' attempts by test id; a JUnit id of a logged node id under the node id.

    pytest's default JUnit family (xunit2) names a test ``tests.test_x::test_y``
    where the plugin's log names it ``tests/test_x.py::test_y``: the two are
    one test when exactly one logged node id mangles to that JUnit id
    (:func:`flakecore.testids.junit_form`).
    """
    forms: dict[str, list[str]] = {}
    for node_id in node_ids:
        if (form := junit_form(node_id)) is not None and form != node_id:
            forms.setdefault(form, []).append(node_id)
    found: dict[str, list[Attempt]] = {}
    for _name, attempts in reports:
        for attempt in attempts:
            match = forms.get(attempt.test_id, [])
            test_id = match[0] if len(match) == 1 else attempt.test_id
            found.setdefault(test_id, []).append(attempt)
    return found


def find_red_tests(
    logs: Mapping[str, Sequence[Path]],
    reports: Sequence[tuple[str, Iterable[Attempt]]],
    *,
    policy: Policy,
) -> list[RedTest]:
    """Every red test of the run, sorted by test id.

    ``logs`` maps test ids to their attempt logs (what :func:`read_log_dir`
    gives, merged over directories); ``reports`` are ``(file, attempts)``.
    A test is red when any attempt in any source missed, errored or timed
    out, or when its logs do not reduce (then nobody can tell).  A report and
    a log that disagree on whether the test is red make its evidence incomplete.
    """
    by_report = _report_results(reports, logs)
    red: list[RedTest] = []
    for test_id in sorted({*logs, *by_report}):
        files = tuple(logs.get(test_id, ()))
        summary = reduce_logs(files, policy=policy) if files else None
        attempts = by_report.get(test_id, [])
        from_reports = Counter(AttemptResult.from_outcome(a.outcome).value for a in attempts)
        from_logs = Counter(summary.results) if summary is not None else Counter()
        log_red = summary is not None and (
            not summary.complete or any(from_logs[r.value] for r in _RED)
        )
        report_red = any(from_reports[r.value] for r in _RED)
        if not (log_red or report_red):
            continue
        problems: list[str] = []
        if summary is not None and not summary.complete:
            problems.append("its attempt log is incomplete: " + "; ".join(summary.reasons))
        elif summary is not None and attempts and log_red != report_red:
            problems.append("its report and its attempt log disagree on whether it failed")
        if flags := blocking_flags(attempts):
            names = ", ".join(sorted(f.value for f in flags))
            problems.append(f"a report's record for it is flagged: {names}")
        red.append(
            RedTest(
                test_id=test_id,
                logs=files,
                summary=summary,
                results=dict(from_logs + from_reports),
                reports=tuple(sorted({a.source.file for a in attempts})),
                problems=tuple(problems),
            )
        )
    return red


@attrs.frozen(kw_only=True)
class LeaseTerms:
    """What a lease proposal says beyond the evidence: who owns the freeze, until when."""

    owner: str | None = None
    expires_at: str | None = None
    canary: str | None = None


@attrs.frozen(kw_only=True)
class TriageRequest:
    """One triage run.  ``config`` must come from the trusted revision (its ``triage`` set)."""

    checkout: Path
    """A directory inside the scored checkout."""
    base_sha: str
    """The base commit, already resolved to its full id (the one the config was read from)."""
    config: GateConfig
    red: tuple[RedTest, ...]
    out_dir: Path
    """Where every record goes; outside the checkout, and empty."""
    jobs: int = 1
    terms: LeaseTerms = LeaseTerms()
    signer: RecordSigner | None = None

    @property
    def triage(self) -> TriageConfig:
        """The ``[tool.flakecore.triage]`` table (checked by :func:`run_triage`)."""
        assert self.config.triage is not None
        return self.config.triage


@attrs.frozen(kw_only=True)
class TestVerdict:
    """The verdict on one red test, the policy code that decided, and the files behind it."""

    test_id: str
    verdict: TriageVerdict
    code: str
    reasons: tuple[str, ...]
    evidence: tuple[str, ...]
    """Files that named the test red (reports, the plugin's logs)."""
    records: Mapping[str, str] = attrs.field(factory=dict)
    """Files triage wrote for it, by kind (``attempts``, ``output``, ``freeze``, ...)."""
    seed: Seed | None = None
    decisions: tuple[Decision[AdmitCode] | BudgetDecision, ...] = ()

    @property
    def accepted(self) -> bool:
        """True only for ``ACCEPT_PREEXISTING``."""
        return self.verdict is TriageVerdict.ACCEPT_PREEXISTING

    def to_json(self) -> dict[str, object]:
        """One line of ``flakecore triage --json`` (schemas/triage-result.v1.json)."""
        return {
            "format": "flakecore.triage-result",
            "format_version": "1.0",
            "test_id": self.test_id,
            "verdict": self.verdict.value,
            "code": self.code,
            "accepted": self.accepted,
            "exit": TRIAGE_EXIT[self.verdict],
            "reasons": list(self.reasons),
            "seed": self.seed,
            "evidence": list(self.evidence),
            "records": dict(self.records),
            "decisions": [d.to_json() for d in self.decisions],
        }


@attrs.frozen(kw_only=True)
class _Replayed:
    """A test base already missed, waiting for its seed budget."""

    decision: Decision[AdmitCode]
    records: Mapping[str, str]


def _refused(test: RedTest, verdict: TriageVerdict, *reasons: str) -> TestVerdict:
    return TestVerdict(
        test_id=test.test_id,
        verdict=verdict,
        code=verdict.value,
        reasons=reasons,
        evidence=test.evidence,
        seed=test.seed,
    )


def _source_file(test_id: str) -> str | None:
    """The test's file from its pytest node id (relative to the repository top), or None."""
    path, sep, _ = test_id.partition("::")
    norm = posixpath.normpath(path) if path else ""
    if (
        not sep
        or norm != path
        or not path.isprintable()
        or path.startswith(("-", "/"))
        or ".." in path.split("/")
    ):
        return None
    return path


def _precheck(test: RedTest) -> TestVerdict | None:
    """The verdict a test gets before anything runs, if the evidence alone decides it."""
    errors = [r.value for r in _NOT_A_FLAKE if test.results.get(r.value)]
    if errors:
        counts = ", ".join(plural(test.results[r], r) for r in errors)
        return _refused(
            test,
            TriageVerdict.REJECT_ERROR,
            f"{counts}: an error or a timeout (set-up, collection, a crash) is never a flake "
            "candidate; only an assertion failure is",
        )
    if test.problems:
        return _refused(test, TriageVerdict.REJECT_INCOMPLETE, *test.problems)
    if test.summary is None:
        return _refused(
            test,
            TriageVerdict.REJECT_INCOMPLETE,
            "no pinned seed: no attempt log of the flakecore pytest plugin names this test "
            "(run the suite with --flakecore-log; a fresh draw would be another experiment)",
        )
    seed = test.summary.seed
    if seed is None or type(seed_from_text(str(seed))) is not type(seed):
        return _refused(
            test,
            TriageVerdict.REJECT_INCOMPLETE,
            f"the seed {seed!r} cannot be pinned again through {{seed}} (its text reads back "
            "as another seed)",
        )
    if _source_file(test.test_id) is None or "{seed}" in test.test_id:
        return _refused(
            test,
            TriageVerdict.REJECT_INCOMPLETE,
            "not a pytest node id whose file is a plain path inside the repository "
            "(tests/test_x.py::test_y): its source cannot be hashed, nor the id put in a command",
        )
    return None


def lease_proposal(budget: BudgetRunOutcome, terms: LeaseTerms) -> dict[str, object] | None:
    """The classify report a lease would rest on, from a seed-budget run; None without one.

    The origin is the patch's red run; the replays are the budget's runs,
    one per committed seed; the pin is the parent fixture's digest, matched
    when head's equals it; the property verdict is the property's result on
    the parent fixture.  ``flakecore lease open --report`` reads it as it is.
    """
    record = budget.record
    packet = budget.packet
    if record is None or packet is None or packet.get("passes") is None:
        return None
    runs = record.get("runs")
    parent = record.get("parent")
    if not isinstance(runs, list) or not isinstance(parent, Mapping):
        return None
    replays = [
        {
            "attempt_id": f"seed:{json.dumps(run['seed'])}",
            "passed": run["result"] == AttemptResult.PASS.value,
            "exit_code": run["exit"],
            "duration_s": run["duration_s"],
        }
        for run in runs
    ]
    report: dict[str, object] = {
        "format": "flakecore.classify-report",
        "format_version": "1.0",
        "property_verdict": "pass" if packet["property_holds"] is True else "fail",
        "pin_status": "match" if packet["parent_digest"] == packet["head_digest"] else "mismatch",
        "pinned_sha256": parent["digest"],
        "origin_passed": False,
        "replays": replays,
        "budget": len(replays),
    }
    for name in ("owner", "expires_at", "canary"):
        value = getattr(terms, name)
        if value is not None:
            report[name] = value
    return report


def _json_bytes(record: Mapping[str, object]) -> bytes:
    return (json.dumps(record, indent=2, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


class _Run:
    """One triage run's shared state: the request, the judge factory, the locks."""

    def __init__(
        self,
        request: TriageRequest,
        judge_for: Callable[[str], Judge],
        progress: TriageProgress | None,
    ) -> None:
        self.request = request
        self.judge_for = judge_for
        self.progress = progress
        self.top = repo_toplevel(Path(os.path.abspath(request.checkout)))
        self.cancelled = threading.Event()
        self.lock = threading.Lock()
        #: ``(path in the output directory, bytes or a scratch file)``, written at the end.
        self.pending: list[tuple[Path, bytes | Path]] = []
        self.scratch = Path(tempfile.mkdtemp(prefix="flakecore-triage-"))
        self.claimed_epoch: str | None = None  # without a lock in base every replay says why
        with contextlib.suppress(GitError):
            lock = read_blob(self.top, request.base_sha, request.triage.epoch_lock)
            self.claimed_epoch = sha256_bytes(lock)

    def show(self, test_id: str, status: str) -> None:
        if self.cancelled.is_set():
            raise Terminated(15)
        if self.progress is not None:
            self.progress(test_id, status)

    def path(self, test_id: str, kind: str) -> Path:
        """Where a record of ``test_id`` goes in the output directory (written at the end)."""
        return self.request.out_dir / f"{id_digest(test_id)}.{kind}"

    def work(self, test_id: str, kind: str) -> Path:
        """Where a run writes as it goes: the private scratch directory, never the output."""
        return self.scratch / f"{id_digest(test_id)}.{kind}"

    def publish(self, path: Path, data: bytes | Path) -> None:
        """Write ``data`` (bytes from memory, or a scratch file's) to ``path`` at the end."""
        with self.lock:
            self.pending.append((path, data))

    def keep(self, test_id: str, kind: str, record: dict[str, object], sign: str,
             records: dict[str, str]) -> None:  # fmt: skip
        """Publish a record at ``<digest>.<kind>.json`` from memory; signed beside, given a key."""
        path = self.path(test_id, f"{kind}.json")
        self.publish(path, _json_bytes(record))
        records[kind] = str(path)
        if self.request.signer is not None:
            envelope = sign_record(record, kind=sign, signer=self.request.signer, test_id=test_id)
            signed = self.path(test_id, f"{kind}.signed.json")
            self.publish(signed, _json_bytes(envelope))
            records[f"{kind}-signed"] = str(signed)

    def replay(self, test: RedTest, output: int) -> ReplayOutcome:
        triage, config = self.request.triage, self.request.config
        assert test.summary is not None and test.summary.seed is not None
        path = _source_file(test.test_id)
        assert path is not None
        request = ReplayRequest(
            checkout=self.top,
            base=self.request.base_sha,
            seed=str(test.summary.seed),
            command=substitute(triage.command, test_id=test.test_id),
            property_file=Path(path),
            epoch_lock=Path(triage.epoch_lock),
            claimed_epoch=self.claimed_epoch or "the epoch lock is not in the base commit",
            patch_logs=test.logs,
            property_id=test.test_id,
            timeout_s=triage.timeout_s,
            log=self.work(test.test_id, "replay-attempts.jsonl"),
            setup=triage.setup,
        )

        def attempt(n: int, total: int, misses: int) -> None:
            self.show(test.test_id, f"replay {n}/{total} misses={misses}")

        self.show(test.test_id, "replay: base worktree")
        return run_replay(
            request,
            judge=self.judge_for(test.test_id),
            policy=config.policy,
            out=None,
            progress=attempt,
            output=output,
        )

    def budget(self, test: RedTest, output: int) -> BudgetRunOutcome:
        triage, config = self.request.triage, self.request.config
        request = BudgetRunRequest(
            checkout=self.top,
            test_id=test.test_id,
            base=self.request.base_sha,
            fixture=Path(triage.budget_fixture),
            property_command=triage.property_command,
            command=substitute(triage.command, test_id=test.test_id),
            timeout_s=triage.timeout_s,
        )
        self.show(test.test_id, "seed budget")
        return run_budget(
            request, out=self.work(test.test_id, "budget.json"), policy=config.policy, output=output
        )

    def replay_phase(self, test: RedTest) -> TestVerdict | _Replayed:
        """Replay one candidate on base: its verdict when that decides, else what the budget needs.

        Runs in a worker thread, side by side with other tests' replays.
        """
        if self.claimed_epoch is None:
            lock = self.request.triage.epoch_lock
            return _refused(
                test,
                TriageVerdict.REJECT_INCOMPLETE,
                f"the epoch lock {lock} is not in the base commit: no fixture epoch to pin",
            )
        source = _source_file(test.test_id)
        if source is None or not (self.top / source).is_file():
            return _refused(
                test,
                TriageVerdict.REJECT_INCOMPLETE,
                f"not a pytest node id of a file in this repository: {source!r} is not a file "
                "of the scored checkout (node ids are relative to the repository top)",
            )
        output = self.work(test.test_id, "output.txt")
        self.publish(self.path(test.test_id, "output.txt"), output)
        records = {"output": str(self.path(test.test_id, "output.txt"))}
        fd = open_append(output, new=True)
        try:
            replayed = self.replay(test, fd)
        except (InputError, UsageError, FlakecoreError, OSError) as exc:
            refused = _refused(test, TriageVerdict.REJECT_INCOMPLETE, f"the replay: {exc}")
            return attrs.evolve(refused, records=records)
        finally:
            os.close(fd)
        if replayed.attempts:  # the log as the replay checked it, from memory
            assert test.summary is not None
            lines = b"".join(
                compact_line({"seed": test.summary.seed, "n": a.n, "result": a.result.value})
                for a in replayed.attempts
            )
            log = self.path(test.test_id, "replay-attempts.jsonl")
            self.publish(log, lines)
            records["attempts"] = str(log)
        if replayed.freeze is not None:
            self.keep(test.test_id, "freeze", replayed.freeze, "freeze-record", records)
        if replayed.decision.accepted and "budget" in self.request.triage.policies:
            return _Replayed(decision=replayed.decision, records=records)
        return self.verdict(test, [replayed.decision], None, records)

    def budget_phase(self, test: RedTest, replayed: _Replayed) -> TestVerdict:
        """The seed budget of a test base already missed, then its verdict.

        Runs only after every replay has ended: the budget runs the patch's
        code, which must never run while a base worktree exists that it could
        write into.
        """
        records = dict(replayed.records)
        decisions: list[Decision[AdmitCode] | BudgetDecision] = [replayed.decision]
        fd = open_append(self.work(test.test_id, "output.txt"), new=False)
        try:
            budgeted = self.budget(test, fd)
        except (InputError, UsageError, FlakecoreError, OSError) as exc:
            refused = _refused(test, TriageVerdict.REJECT_INCOMPLETE, f"the seed budget: {exc}")
            return attrs.evolve(refused, records=records, decisions=tuple(decisions))
        finally:
            os.close(fd)
        decisions.append(budgeted.decision)
        if budgeted.record is not None:
            self.keep(test.test_id, "budget", budgeted.record, "budget-run", records)
        return self.verdict(test, decisions, budgeted, records)

    def verdict(
        self,
        test: RedTest,
        decisions: list[Decision[AdmitCode] | BudgetDecision],
        budgeted: BudgetRunOutcome | None,
        records: dict[str, str],
    ) -> TestVerdict:
        admitted = decisions[0]
        reasons = [f"{d.policy.value} {d.code.value}: {'; '.join(d.reasons)}" for d in decisions]
        refusal = next((d for d in decisions if not d.accepted), None)
        if refusal is None:
            verdict, code = TriageVerdict.ACCEPT_PREEXISTING, admitted.code.value
            if budgeted is not None and (proposal := lease_proposal(budgeted, self.request.terms)):
                self.keep(test.test_id, "lease-proposal", proposal, "classify-report", records)
            else:
                reasons.append(
                    "no lease proposal: a lease rests on the seed budget's runs (add budget to "
                    "[tool.flakecore.triage] policies)"
                )
        elif refusal.code in (AdmitCode.REJECT_INCOMPLETE, BudgetCode.INSUFFICIENT_BUDGET):
            verdict, code = TriageVerdict.REJECT_INCOMPLETE, refusal.code.value
        elif refusal.code is AdmitCode.REJECT_PATCH_INTRODUCED:
            verdict, code = TriageVerdict.REJECT_PATCH_INTRODUCED, refusal.code.value
        else:
            verdict, code = TriageVerdict.REJECT_POLICY, refusal.code.value
        source = self.request.config.source
        return TestVerdict(
            test_id=test.test_id,
            verdict=verdict,
            code=code,
            reasons=tuple(reasons),
            evidence=test.evidence,
            records=records,
            seed=test.seed,
            decisions=tuple(d.with_policy_source(source) for d in decisions),
        )


def _write_out(out_dir: Path, pending: Sequence[tuple[Path, bytes | Path]]) -> None:
    """Create the output directory and write every record into it, atomically each.

    A directory that something filled while the runs went on (the patch's
    code runs in the seed budget, as flakecore's own user) is refused: its
    files could pass for records triage wrote.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if any(out_dir.iterdir()):
        raise FileExistsError(
            errno.EEXIST,
            "something wrote into it while triage ran: no record written",
            str(out_dir),
        )
    for path, data in sorted(pending, key=lambda p: p[0]):
        write_atomic(path, data if isinstance(data, bytes) else read_bytes(data, MAX_FILE_BYTES))


def _check(request: TriageRequest) -> None:
    if request.jobs < 1:
        raise UsageError("triage: --jobs must be 1 or more")
    if inside(request.out_dir, request.checkout):
        raise UsageError(
            f"triage: --out-dir {request.out_dir} is inside the scored checkout: records go "
            "where the patch cannot have written them"
        )
    if request.out_dir.exists() and any(request.out_dir.iterdir()):
        raise UsageError(
            f"triage: --out-dir {request.out_dir} is not empty: each run writes its own records"
        )


def run_triage(
    request: TriageRequest,
    *,
    judge_for: Callable[[str], Judge],
    progress: TriageProgress | None = None,
) -> Generator[TestVerdict, None, None]:
    """Decide every red test of ``request``; yields the verdicts in test-id order.

    Verdicts come as soon as every test before them is decided, whatever
    ``jobs`` is.  ``judge_for(test_id)`` tells one replay attempt's result
    (:class:`~flakecore.gate.replay.ExitStatusJudge` or a report judge).
    Raises :class:`UsageError` for a run that makes no sense (an output
    directory inside the checkout or not empty; a red test to replay and no
    triage table: the evidence alone can refuse, never accept).  Stopping the
    generator early (a signal in the caller) ends every running attempt and
    removes every worktree before it returns.
    """
    _check(request)
    red = request.red
    limit = request.config.policy.max_red_tests
    if len(red) > limit:
        why = (
            f"{plural(len(red), 'red test')}, more than max_red_tests={limit}: a run this red is a "
            "regression, refused as a whole instead of triaged one by one"
        )
        for test in red:
            yield _refused(test, TriageVerdict.REJECT_TOO_MANY_RED, why)
        return
    decided = {t.test_id: v for t in red if (v := _precheck(t)) is not None}
    todo = [t for t in red if t.test_id not in decided]
    if todo and request.config.triage is None:
        raise UsageError(
            "triage: the base revision's [tool.flakecore] has no triage table, so no red test "
            "can be replayed: name the test command ({test_id}, {seed}) and the epoch lock "
            "there (docs/triage.md)"
        )
    run = _Run(request, judge_for, progress) if todo else None
    pool = ThreadPoolExecutor(max_workers=request.jobs, thread_name_prefix="flakecore-triage")
    futures: dict[str, Future[TestVerdict | _Replayed]] = {
        t.test_id: pool.submit(run.replay_phase, t) for t in todo if run is not None
    }
    try:
        for test in red:
            verdict = decided.get(test.test_id) or futures[test.test_id].result()
            if isinstance(verdict, _Replayed):
                assert run is not None
                wait(futures.values())  # no patch code while any base worktree exists
                verdict = run.budget_phase(test, verdict)
            if progress is not None:
                progress(test.test_id, "done")
            yield verdict
        # Every run of the patch's code has ended: only now do the records appear.
        _write_out(request.out_dir, run.pending if run is not None else [])
    except BaseException:
        if run is not None:
            run.cancelled.set()
        stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if run is not None:
            shutil.rmtree(run.scratch, ignore_errors=True)
