"""What the plugin does once one of its options was given (see ``docs/pytest.md``).

Imported only then (by :func:`flakecore_pytest.pytest_configure`), so an
idle plugin imports neither this nor flakecore.  :class:`Session` is
registered for the session; each of its methods is one hook.  Three parts,
each only when asked for: seed pinning (``--flakecore-seed``, or
``--flakecore-log`` alone), attempt logs (``--flakecore-log``) and lease
enforcement (``--flakecore-leases``).
"""

from __future__ import annotations

import builtins
import datetime as dt
import hashlib
import importlib
import json
import os
import random
import shlex
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from flakecore.codes import AttemptResult
from flakecore.errors import FlakecoreError, UsageError
from flakecore.gate.basetrust import RecordTrust
from flakecore.gate.config import GateConfig
from flakecore.gate.leasedir import trusted_leases
from flakecore.gate.policy_source import load_outside_config, load_trusted_config
from flakecore.gate.worktree import repo_toplevel, resolve_commit
from flakecore.logdir import MAIN_WORKER, LogDirectory
from flakecore.records import Seed
from flakecore.seeds import fresh_seed, seed_from_text

__all__ = ["SEED_ENV", "Session", "attempt_result", "numpy_seed", "register"]

#: The environment variable that carries the pinned seed's text to the test.
SEED_ENV = "FLAKECORE_SEED"
#: Key of the session's seed text in pytest-xdist's ``workerinput``.
_WORKER_SEED = "flakecore_seed"
#: Key of the leases that count (``{test id: description}``) in ``workerinput``.
_WORKER_LEASES = "flakecore_leases"
_NAME = "flakecore-session"


def register(config: pytest.Config) -> None:
    """Register the session's hooks; a bad option or a lease that does not count is refused.

    Either is pytest's usage error (exit 4) with one line, before any test runs.
    """
    try:
        session = Session(config)
    except (FlakecoreError, OSError) as exc:
        raise pytest.UsageError(f"flakecore: {exc}") from None
    config.pluginmanager.register(session, _NAME)


def _trusted_config(config: pytest.Config, directory: Path) -> tuple[GateConfig, RecordTrust]:
    """The configuration leases are judged by (base's table, or a file outside the checkout).

    And what a lease must be to count: byte-identical in base or signed by
    a trusted key when in the checkout; outside it, signed or CI's own.
    """
    base = config.getoption("flakecore_base")
    outside = config.getoption("flakecore_config")
    if (base is None) == (outside is None):
        raise UsageError(
            "--flakecore-leases needs exactly one of --flakecore-base REF (a lease in the "
            "checkout counts when base holds it or a trusted key signed it) and "
            "--flakecore-config FILE (outside the checkout; then a lease in the checkout "
            "counts only signed)"
        )
    top = repo_toplevel(directory if directory.is_dir() else config.invocation_params.dir)
    if base is None:
        trusted = load_outside_config(outside, checkout=top)
        return trusted, RecordTrust(checkout=top, keys=trusted.trusted_keys)
    sha = resolve_commit(top, base)
    trusted = load_trusted_config(top, sha)
    return trusted, RecordTrust(checkout=top, base=sha, keys=trusted.trusted_keys)


def _leases(config: pytest.Config, workerinput: dict[str, Any] | None) -> dict[str, str]:
    """``{test id: the lease's description}`` for every lease that counts (the controller's)."""
    if workerinput is not None:
        return dict(workerinput.get(_WORKER_LEASES, {}))
    option = config.getoption("flakecore_leases")
    if option is None:
        if config.getoption("flakecore_base") or config.getoption("flakecore_config"):
            raise UsageError("--flakecore-base and --flakecore-config go with --flakecore-leases")
        return {}
    directory = Path(os.path.relpath(config.invocation_params.dir / option))
    trusted, trust = _trusted_config(config, directory)
    now = dt.datetime.now(dt.timezone.utc)
    leases = trusted_leases(directory, config=trusted, trust=trust, now=now)
    return {test_id: lease.describe(option) for test_id, lease in leases.items()}


def _is_assertion(exc: BaseException) -> bool:
    """An ``AssertionError``, or an exception group of nothing else (Hypothesis, trio)."""
    group = getattr(builtins, "BaseExceptionGroup", None) or getattr(
        sys.modules.get("exceptiongroup"), "BaseExceptionGroup", None
    )
    if group is not None and isinstance(exc, group):
        return all(_is_assertion(inner) for inner in exc.exceptions)
    return isinstance(exc, AssertionError)


def attempt_result(report: pytest.TestReport, call: pytest.CallInfo[None]) -> AttemptResult:
    """The result of a test's call phase.

    ``pass`` when it passed (a non-strict XPASS too), ``skip`` when skipped
    (``pytest.skip``, and an expected failure: an xfail is not a miss),
    ``miss`` only when the body raised ``AssertionError``; any other
    exception, ``pytest.fail`` (pytest-timeout fails a test with it) and a
    strict XPASS are ``error``.  Set-up and teardown failures are ``error``
    too, but they are told by the caller.
    """
    if report.passed:
        return AttemptResult.PASS
    if report.skipped:
        return AttemptResult.SKIP
    if call.excinfo is not None and _is_assertion(call.excinfo.value):
        return AttemptResult.MISS
    return AttemptResult.ERROR


def numpy_seed(seed: Seed) -> int:
    """What NumPy's global RNG is seeded with: the seed itself when it fits 0..2**32-1.

    Otherwise (a string, a negative or larger integer) the first four bytes,
    big-endian, of the sha256 of the seed's JSON text (``5`` and ``"5"``
    differ), because ``numpy.random.seed`` takes only that range.
    """
    if isinstance(seed, int) and 0 <= seed < 2**32:
        return seed
    digest = hashlib.sha256(json.dumps(seed).encode("ascii")).digest()
    return int.from_bytes(digest[:4], "big")


class Session:
    """The plugin's hooks for one session that asked for logs, a seed or leases."""

    def __init__(self, config: pytest.Config) -> None:
        log: str | None = config.getoption("flakecore_log")
        text: str | None = config.getoption("flakecore_seed")
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.worker = MAIN_WORKER if workerinput is None else str(workerinput["workerid"])
        if text is None and workerinput is not None and _WORKER_SEED in workerinput:
            text = str(workerinput[_WORKER_SEED])  # the controller drew it
        self.seeding = log is not None or text is not None
        self.drawn = text is None
        self.seed: Seed = fresh_seed() if text is None else seed_from_text(text)
        self.leases = _leases(config, workerinput)
        self.tolerated: list[str] = []
        self.directory: Path | None = None
        if log is not None:
            self.directory = config.invocation_params.dir / log
            if workerinput is None:
                _check_empty(self.directory)
        self.logs: LogDirectory | None = None
        self.results: dict[str, AttemptResult | None] = {}
        self.saved_env = os.environ.get(SEED_ENV)
        try:
            self.numpy: Any = importlib.import_module("numpy")
        except ImportError:
            self.numpy = None
        self.pin()

    def pin(self) -> None:
        """Seed every global random source with the session's seed (when pinning at all)."""
        if not self.seeding:
            return
        random.seed(self.seed)
        os.environ[SEED_ENV] = str(self.seed)
        if self.numpy is not None:
            self.numpy.random.seed(numpy_seed(self.seed))

    def pytest_report_header(self) -> list[str]:
        """The pinned seed (and whether it was drawn), where the logs go, each lease obeyed."""
        lines = []
        if self.seeding:
            how = "drawn for this session" if self.drawn else "pinned"
            again = shlex.quote(str(self.seed))
            seed = json.dumps(self.seed)
            line = f"flakecore: seed {seed} ({how}; again: --flakecore-seed {again})"
            if self.directory is not None:
                line += f", attempt logs in {self.directory}"
            lines.append(line)
        lines += [f"flakecore: {test}: {lease}" for test, lease in sorted(self.leases.items())]
        return lines

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: every worker pins the controller's seed and obeys its leases."""
        if self.seeding:
            node.workerinput[_WORKER_SEED] = str(self.seed)
        node.workerinput[_WORKER_LEASES] = dict(self.leases)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Pin again before each attempt's fixtures run; a Hypothesis test gets the seed too."""
        if not self.seeding:
            return
        self.pin()
        hypothesis: Any = sys.modules.get("hypothesis")
        function = getattr(item, "function", None)
        detect = getattr(hypothesis, "is_hypothesis_test", None)
        if detect is not None and function is not None and detect(function):
            hypothesis.seed(self.seed)(function)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Tell each phase's result; after teardown, append the attempt's line.

        Outermost wrapper, so the report is read after xfail handling.  Set-up
        or teardown failing makes the attempt an ``error`` whatever the call
        did; a skip in set-up is a ``skip``.
        """
        report = yield
        if self.directory is not None:
            self.phase(item.nodeid, report, call)
        lease = self.leases.get(item.nodeid)
        if (
            lease is not None
            and report.when == "call"
            and report.failed
            and attempt_result(report, call) is AttemptResult.MISS
        ):
            # The lease's test failed its assertion: an expected failure, named as such.
            report.outcome = "skipped"
            report.wasxfail = lease
        return report

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Name every failure a lease tolerated, whatever ``-r`` asked for."""
        for report in terminalreporter.stats.get("xfailed", []):
            reason = getattr(report, "wasxfail", "")
            if report.nodeid in self.leases and reason == self.leases[report.nodeid]:
                terminalreporter.write_line(f"flakecore: tolerated {report.nodeid}: {reason}")

    def phase(self, nodeid: str, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """Fold one phase report into the attempt; write the line at teardown."""
        if report.when == "setup":
            self.results[nodeid] = (
                None
                if report.passed
                else AttemptResult.SKIP
                if report.skipped
                else AttemptResult.ERROR
            )
        elif report.when == "call":
            if self.results.get(nodeid) is None:
                self.results[nodeid] = attempt_result(report, call)
        else:
            result = self.results.pop(nodeid, None)
            if report.failed:
                result = AttemptResult.ERROR
            if result is not None:  # None: set-up passed and nothing ran (--setup-only)
                self.log().append(nodeid, result)

    def log(self) -> LogDirectory:
        """This process's writer, created at its first attempt (an xdist controller runs none)."""
        if self.logs is None:
            assert self.directory is not None
            self.logs = LogDirectory(self.directory, self.worker, self.seed)
        return self.logs

    def pytest_unconfigure(self) -> None:
        """Close the logs; give ``FLAKECORE_SEED`` its old value back."""
        if self.logs is not None:
            self.logs.close()
        if self.saved_env is None:
            os.environ.pop(SEED_ENV, None)
        else:
            os.environ[SEED_ENV] = self.saved_env


def _check_empty(directory: Path) -> None:
    """Create the log directory, or refuse one that already holds files."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        entries = os.listdir(directory)
    except OSError as exc:
        raise UsageError(f"--flakecore-log {directory}: {exc.strerror}") from None
    if entries:
        raise UsageError(
            f"--flakecore-log {directory} is not empty: each session needs its own directory "
            "(logs are never appended across sessions)"
        )
