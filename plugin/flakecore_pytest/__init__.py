"""flakecore's pytest plugin: attempt logs and seed pinning (see ``docs/pytest.md``).

Registered through the ``pytest11`` entry point, so pytest imports this
module in every session once flakecore is installed.  Without
``--flakecore-log`` or ``--flakecore-seed`` it adds its two options and
nothing else: it imports only pytest here (not even flakecore) and no hook of
it runs for a test.  With one of them, :mod:`flakecore_pytest._session`
does the work:

- ``--flakecore-seed SEED`` pins Python's ``random``, NumPy's global RNG
  (when installed), Hypothesis (its public ``hypothesis.seed``) and the
  environment variable ``FLAKECORE_SEED`` before collection and before each
  test's set-up;
- ``--flakecore-log DIR`` appends one attempt line per attempt to the test's
  own log in ``DIR`` (:mod:`flakecore.logdir`), one log per test and per
  pytest-xdist worker; without ``--flakecore-seed`` a seed is drawn for the
  session, pinned and recorded, so the run can be pinned again;
- ``--flakecore-leases DIR`` (with ``--flakecore-base REF`` or
  ``--flakecore-config FILE``) obeys the leases there that count
  (:mod:`flakecore.gate.leasedir`): a leased test still runs, and its
  assertion failure is reported as an expected failure naming the lease; a
  lease that does not count fails the session before any test runs.

This package is outside the core: the core never imports pytest.
"""

from __future__ import annotations

import importlib

import pytest

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's two options; nothing else happens unless one is given."""
    group = parser.getgroup("flakecore", "flakecore: attempt logs, seed pinning, leases")
    group.addoption(
        "--flakecore-log",
        metavar="DIR",
        default=None,
        help="append one attempt line per test run to one log per test and worker in DIR "
        "(created if missing; must hold no file yet)",
    )
    group.addoption(
        "--flakecore-seed",
        metavar="SEED",
        default=None,
        help="pin random, NumPy, Hypothesis and $FLAKECORE_SEED to SEED for each test "
        "(a canonical decimal integer is an integer seed, anything else a string); "
        "with --flakecore-log and without this, a seed is drawn for the session",
    )
    group.addoption(
        "--flakecore-leases",
        metavar="DIR",
        default=None,
        help="obey the leases in DIR: a leased test's assertion failure is an expected failure; "
        "any lease that does not count (expired, forged, untrusted, malformed) fails the session",
    )
    group.addoption(
        "--flakecore-base",
        metavar="REF",
        default=None,
        help="with --flakecore-leases: trust policy, keys and leases from this base revision",
    )
    group.addoption(
        "--flakecore-config",
        metavar="FILE",
        default=None,
        help="with --flakecore-leases and no base: a [tool.flakecore] file outside the checkout "
        "(then a lease in the checkout counts only signed)",
    )


_OPTIONS = (
    "flakecore_log",
    "flakecore_seed",
    "flakecore_leases",
    "flakecore_base",
    "flakecore_config",
)


def pytest_configure(config: pytest.Config) -> None:
    """Register the session's hooks only when an option of the plugin was given."""
    if all(config.getoption(name) is None for name in _OPTIONS):
        return
    importlib.import_module("flakecore_pytest._session").register(config)
