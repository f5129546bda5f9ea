"""The plugin obeys leases: real pytest sessions (pytester, in fresh interpreters), real git.

A lease that counts (base holds it byte for byte, or a trusted key signed
it, and it is valid now) lets its test run and turns that test's assertion
failure into an expected failure naming the lease; anything else about a
lease fails the session before a test runs, with one line.  Each refusal has
its honest twin.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from packets import classify_report

from flakecore.lease import Roles, build_lease
from flakecore.testids import id_digest

pytest_plugins = ["pytester"]

SUITE = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("set-up exploded")


def test_flaky():
    assert False, "the flake"


def test_leased_passes():
    assert True


def test_leased_error(broken):
    pass


def test_unleased():
    assert False


def test_pass():
    pass
"""
LEASED = ("test_suite.py::test_flaky", "test_suite.py::test_leased_passes")
ERRORING = "test_suite.py::test_leased_error"
HOST = "img:local-uncontainerized+nonce:0123456789abcdef"
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def lease(test_id: str, *, at: dt.datetime = NOW, days: int = 7, **roles: str) -> dict[str, object]:
    """A lease opened at ``at``, expiring ``days`` later (valid now unless ``at`` is long ago)."""
    expires = (at + dt.timedelta(days=days)).isoformat().replace("+00:00", "Z")
    report = classify_report(expires_at=expires, pinned_sha256="8e" * 32, canary="nightly")
    who = {"replay_host": HOST, "accepted_by": "reviewer-jane", "patch_author": "coding-agent-7"}
    outcome = build_lease(report, test_id=test_id, roles=Roles(**{**who, **roles}), now=at)
    assert outcome.record is not None, outcome.reasons
    return outcome.record


def git(where: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false",
         *args],
        cwd=where, check=True, capture_output=True,
    )  # fmt: skip


def store(where: Path, record: object, name: str | None = None) -> Path:
    test_id = record["test_id"] if isinstance(record, dict) else "x"
    path = where / "leases" / (name or f"{id_digest(str(test_id))}.json")
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=2) if not isinstance(record, str) else record)
    return path


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    """The suite in a git repository whose base commit (``main``) holds the two valid leases."""
    pytester.makeini("[pytest]\n")  # the rootdir, which node ids are relative to
    pytester.makepyfile(test_suite=SUITE)
    git(pytester.path, "init", "-q", "-b", "main")
    for test_id in (*LEASED, ERRORING):
        store(pytester.path, lease(test_id))
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base: the suite and its reviewed leases")
    return pytester


def run(repo: pytest.Pytester, *args: str) -> pytest.RunResult:
    return repo.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rx", "--flakecore-leases", "leases", *args
    )


def test_a_trusted_lease_turns_its_tests_assertion_failure_into_an_expected_failure(
    repo: pytest.Pytester,
) -> None:
    result = run(repo, "--flakecore-base", "main")
    # The unleased failure still fails, and so does the leased test's set-up error.
    result.assert_outcomes(passed=2, failed=1, errors=1, xfailed=1)
    expires = lease(LEASED[0])["expires_at"]
    result.stdout.fnmatch_lines(
        [
            f"flakecore: test_suite.py::test_flaky: flakecore lease (owner ci-bot, expires "
            f"{expires}): leases/{id_digest(LEASED[0])}.json",
            "flakecore: tolerated test_suite.py::test_flaky: flakecore lease (owner ci-bot*",
            "XFAIL test_suite.py::test_flaky - flakecore lease (owner ci-bot*",
        ]
    )
    alone = run(repo, "--flakecore-base", "main", "-k", "flaky or leased_passes or test_pass")
    assert alone.ret == pytest.ExitCode.OK
    alone.assert_outcomes(passed=2, xfailed=1)


def test_with_xdist_every_worker_obeys_the_controllers_leases(repo: pytest.Pytester) -> None:
    result = run(repo, "--flakecore-base", "main", "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=2, failed=1, errors=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*test_suite.py::test_flaky*flakecore lease (owner ci-bot*"])


def test_no_lease_no_change(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_suite=SUITE)
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "base")
    result = run(pytester, "--flakecore-base", "main")
    result.assert_outcomes(passed=2, failed=2, errors=1)


def _expired(repo: pytest.Pytester) -> None:
    store(repo.path, lease(LEASED[0], at=NOW - dt.timedelta(days=10), days=3))
    git(repo.path, "commit", "-qam", "an expired lease, reviewed")


def _forged(repo: pytest.Pytester) -> None:
    store(repo.path, lease("test_suite.py::test_unleased"))  # the patch wrote it


def _changed(repo: pytest.Pytester) -> None:
    path = repo.path / "leases" / f"{id_digest(LEASED[0])}.json"
    path.write_text(path.read_text().replace('"owner": "ci-bot"', '"owner": "ci-bot2"'))


def _malformed(repo: pytest.Pytester) -> None:
    store(repo.path, '{"format": "flakecore.lease", "format": "twice"}', "a" * 64 + ".json")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "a malformed lease, reviewed")


def _misfiled(repo: pytest.Pytester) -> None:
    store(repo.path, lease(LEASED[0]), f"{id_digest('test_suite.py::test_unleased')}.json")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "a lease under another test's name, reviewed")


def _self_accepted(repo: pytest.Pytester) -> None:
    store(repo.path, {**lease(LEASED[0]), "accepted_by": "coding-agent-7"})
    git(repo.path, "commit", "-qam", "a lease its author accepted, reviewed")


def _linked(repo: pytest.Pytester) -> None:
    """The patch makes the lease directory a link to reviewed leases kept elsewhere in base."""
    (repo.path / "leases").rename(repo.path / "archive")
    (repo.path / "leases").symlink_to("archive")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "leases now live in archive/")


def _stray(repo: pytest.Pytester) -> None:
    (repo.path / "leases" / "notes.txt").write_text("not a lease")


@pytest.mark.parametrize(
    ("break_it", "reason"),
    [
        (_expired, "*INVALID_RECORD*is not after now*"),
        (_forged, "*NOT_IN_BASE*base...HEAD adds it, and it is not signed*"),
        (_changed, "*CHANGED_SINCE_BASE*"),
        (_malformed, "*INVALID_RECORD*not JSON*"),
        (_misfiled, "*stored as*not as its test's file*"),
        (_self_accepted, "*accepted_by is the patch author*"),
        (_stray, "*notes.txt: not a lease file*"),
        (_linked, "*SYMLINK*"),
    ],
    ids=[
        "expired",
        "forged",
        "changed",
        "malformed",
        "misfiled",
        "self-accepted",
        "stray",
        "linked",
    ],
)
def test_a_lease_that_does_not_count_fails_the_session_before_any_test(
    repo: pytest.Pytester, break_it: Callable[[pytest.Pytester], None], reason: str
) -> None:
    break_it(repo)
    result = run(repo, "--flakecore-base", "main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: flakecore: leases/{reason}"])
    assert [line for line in result.stderr.lines if line.strip()] == [result.stderr.lines[0]]
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_leases_need_a_trust_setting(repo: pytest.Pytester) -> None:
    result = run(repo)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: flakecore: --flakecore-leases needs exactly one of*"])


def _keys(where: Path) -> tuple[str, str]:
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem = where / "ci-policy.pem"
    pem.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return str(pem), public.hex()


def test_without_a_base_only_a_signed_lease_counts(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from flakecore.signing import load_signer, sign_record

    outside = tmp_path_factory.mktemp("ci")
    pem, public = _keys(outside)
    config = outside / "flakecore.toml"
    config.write_text(f'[tool.flakecore.trust.keys]\nci-policy = "ed25519:{public}"\n')
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_suite=SUITE)
    git(pytester.path, "init", "-q", "-b", "main")
    record = lease(LEASED[0], accepted_by="policy-job")
    unsigned = store(pytester.path, record)
    refused = run(pytester, "--flakecore-config", str(config))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*NOT_SIGNED*no base revision*not signed*"])
    signer = load_signer(keyid="ci-policy", checkout=pytester.path, key_file=pem)
    unsigned.write_text(json.dumps(sign_record(record, kind="lease", signer=signer)))
    result = run(pytester, "--flakecore-config", str(config))
    result.assert_outcomes(passed=2, failed=1, errors=1, xfailed=1)
