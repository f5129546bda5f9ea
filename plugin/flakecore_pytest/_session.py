"""What the plugin does once one of its options was given (see ``docs/pytest.md``).

Imported only then (by :func:`flakecore_pytest.pytest_configure`), so an
idle plugin imports neither this nor flakecore.  :class:`Session` is
registered for the session; each of its methods is one hook, so lease
enforcement can be added as one more.
"""

from __future__ import annotations

import builtins
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
from flakecore.errors import UsageError
from flakecore.logdir import MAIN_WORKER, LogDirectory
from flakecore.records import Seed
from flakecore.seeds import fresh_seed, seed_from_text

__all__ = ["SEED_ENV", "Session", "attempt_result", "numpy_seed", "register"]

#: The environment variable that carries the pinned seed's text to the test.
SEED_ENV = "FLAKECORE_SEED"
#: Key of the session's seed text in pytest-xdist's ``workerinput``.
_WORKER_SEED = "flakecore_seed"
_NAME = "flakecore-session"


def register(config: pytest.Config, log: str | None, text: str | None) -> None:
    """Register the session's hooks; a bad option is pytest's usage error (exit 4)."""
    try:
        session = Session(config, log, text)
    except UsageError as exc:
        raise pytest.UsageError(f"flakecore: {exc}") from None
    config.pluginmanager.register(session, _NAME)


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
    """The plugin's hooks for one session that asked for logs or a seed."""

    def __init__(self, config: pytest.Config, log: str | None, text: str | None) -> None:
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.worker = MAIN_WORKER if workerinput is None else str(workerinput["workerid"])
        if text is None and workerinput is not None and _WORKER_SEED in workerinput:
            text = str(workerinput[_WORKER_SEED])  # the controller drew it
        self.drawn = text is None
        self.seed: Seed = fresh_seed() if text is None else seed_from_text(text)
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
        """Seed every global random source with the session's seed."""
        random.seed(self.seed)
        os.environ[SEED_ENV] = str(self.seed)
        if self.numpy is not None:
            self.numpy.random.seed(numpy_seed(self.seed))

    def pytest_report_header(self) -> str:
        """Say which seed is pinned (and that it was drawn), and where the logs go."""
        how = "drawn for this session" if self.drawn else "pinned"
        again = shlex.quote(str(self.seed))
        line = f"flakecore: seed {json.dumps(self.seed)} ({how}; again: --flakecore-seed {again})"
        if self.directory is not None:
            line += f", attempt logs in {self.directory}"
        return line

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: every worker pins the controller's seed (a drawn one too)."""
        node.workerinput[_WORKER_SEED] = str(self.seed)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Pin again before each attempt's fixtures run; a Hypothesis test gets the seed too."""
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
        return report

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
