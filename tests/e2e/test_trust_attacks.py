"""Issue 12's attacks on the trust boundary, run as a patch author would: real git, real CLI.

Each test makes the patch (the ``feature`` branch) do what issue 12
reproduced -- set its own policy in ``pyproject.toml``, write a lease or a
ledger row by hand, move the lease directory -- and asserts that the verb
refuses, with the reason.  Each also runs the honest twin and asserts that
it is accepted: a lease that landed in its own reviewed commit, one signed
by a trusted key, the policy the base revision holds (docs/trust.md).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from gate.support import (
    HOST,
    NOW_TEXT,
    OTHER_HOST,
    PATCH,
    TEST_ID,
    budget_packet,
    dump,
    lease_record,
    lease_report,
    row_record,
    run_record,
)
from trust.support import LEASE_PATH, Checkout, make_checkout, make_signer

from e2e.support import (
    SampleRepo,
    budget_args,
    decision,
    make_repo,
)
from flakecore.cli._signing import KEY_ID_ENV
from flakecore.exits import EXIT_GUARD_TRIPPED, EXIT_INVALID_RECORDS
from flakecore.gate.ledger import record_file_name, stored_bytes
from flakecore.signing import SIGNING_KEY_ENV, RecordSigner, verify_signed

pytestmark = pytest.mark.e2e

ROW_PATH = f".flakecore/ledger/{record_file_name(TEST_ID)}"
_UNSET = ("GITHUB_STEP_SUMMARY", "FLAKECORE_IMAGE_DIGEST", SIGNING_KEY_ENV, KEY_ID_ENV)


def flakecore(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed CLI, run in ``cwd`` as a CI step would."""
    environ = {k: v for k, v in os.environ.items() if k not in _UNSET}
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    environ.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        cwd=cwd,
        env=environ,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def json_lines(run: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines()]


def another(tmp_path: Path, name: str, files: Mapping[str, bytes | str]) -> Checkout:
    """A second repository for the honest twin, beside the first."""
    (tmp_path / name).mkdir()
    return make_checkout(tmp_path / name, files)


def land(checkout: Checkout, files: Mapping[str, bytes | str]) -> None:
    """``files`` in their own reviewed commit on the base branch, merged into the patch."""
    checkout.git("checkout", "-q", "main")
    for path, data in files.items():
        checkout.write(path, data)
    checkout.commit("reviewed")
    checkout.git("checkout", "-q", "feature")
    checkout.git("merge", "-q", "--no-edit", "main")


def patch(checkout: Checkout, files: Mapping[str, bytes | str]) -> None:
    """What the patch under judgement commits."""
    for path, data in files.items():
        checkout.write(path, data)
    checkout.commit("the patch")


def keys_table(*signers: RecordSigner, extra: str = "") -> str:
    """A ``pyproject.toml`` whose ``[tool.flakecore]`` trusts ``signers`` (and holds ``extra``)."""
    keys = "".join(f'{s.key.keyid} = "{s.key}"\n' for s in signers)
    return f"[tool.flakecore]\n{extra}\n[tool.flakecore.trust.keys]\n{keys}"


def signed(record: Mapping[str, object], kind: str, signer: RecordSigner, **kw: str) -> bytes:
    return stored_bytes(record, kind=kind, signer=signer, **kw)


def lease_bytes(**changes: object) -> bytes:
    return (json.dumps(lease_record(**changes), indent=2) + "\n").encode()


def check(checkout: Checkout, *extra: str) -> subprocess.CompletedProcess[str]:
    return flakecore(checkout.top, "lease", "check", "--base", "main", "--now", NOW_TEXT, *extra)


# --------------------------------------------------------------------------- policy from base

#: One base miss every 40th attempt: 25 of 1000 (what issue 12 farmed), none in the first 5.
_COUNTER = (
    "import os, sys\n"
    "path = os.environ['FLAKE_COUNTER']\n"
    "n = int(open(path).read()) + 1 if os.path.exists(path) else 1\n"
    "open(path, 'w').write(str(n))\n"
    "sys.exit(1 if n % 40 == 0 else 0)\n"
)


def _replay(repo: SampleRepo, tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    args = repo.replay_args(
        seed="1", out=tmp_path / f"{name}.json", command=[sys.executable, "-c", _COUNTER, "{seed}"]
    )
    del args[args.index("--attempts") : args.index("--attempts") + 2]  # the policy's cap
    return repo.flakecore(*args, env={"FLAKE_COUNTER": str(tmp_path / f"{name}.count")})


def test_the_patchs_attempt_cap_cannot_farm_a_base_miss(tmp_path: Path) -> None:
    """attempt_cap = 1000 in the patch: base's cap (5) runs, no miss, the patch introduced it."""
    (tmp_path / "attack").mkdir()
    repo = make_repo(tmp_path / "attack", regression=False)
    (repo.path / "pyproject.toml").write_text("[tool.flakecore]\nattempt_cap = 1000\n")
    subprocess.run(["git", "-C", str(repo.path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo.path), "commit", "-qm", "cap"], check=True)
    run = _replay(repo, tmp_path, "attack")
    d = decision(run)
    assert (d["code"], run.returncode) == ("REJECT_PATCH_INTRODUCED", 4), run.stderr
    assert d["policy_values"]["attempt_cap"] == 5
    assert len(d["replay"]["attempts"]) == 5
    source = d["policy_source"]
    assert source["revision"] == repo.base and source["scored_tree_differs"] is True
    assert "differs from base" in run.stderr
    assert not (tmp_path / "attack.json").exists()

    # The honest twin: the same cap, reviewed into the base, is the repository's policy.
    (tmp_path / "honest").mkdir()
    cap = {"pyproject.toml": "[tool.flakecore]\nattempt_cap = 40\n"}
    honest = make_repo(tmp_path / "honest", regression=False, base_files=cap)
    run = _replay(honest, tmp_path, "honest")
    d = decision(run)
    assert (d["code"], run.returncode) == ("ACCEPT_PREEXISTING", 0), run.stderr
    assert d["policy_values"]["attempt_cap"] == 40 and d["policy_source"]["revision"] == honest.base
    assert d["policy_source"]["scored_tree_differs"] is False
    assert (tmp_path / "honest.json").is_file()


def test_the_patchs_max_lease_days_cannot_make_a_lease_permanent(tmp_path: Path) -> None:
    """max_lease_days = 100000 in the patch: base's 14 days refuse a (signed) lease to 2199."""
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    signer = make_signer(tmp_path / "keys", "ci-local", checkout.top)
    land(checkout, {"pyproject.toml": keys_table(signer)})
    forever = lease_record(expires_at="2199-01-01T00:00:00Z")
    patch(
        checkout,
        {
            "pyproject.toml": keys_table(signer, extra="max_lease_days = 100000"),
            LEASE_PATH: signed(forever, "lease", signer),
        },
    )
    run = check(checkout)
    assert run.returncode == EXIT_INVALID_RECORDS, run.stdout + run.stderr
    assert "more than 14 days" in run.stdout
    assert "differs from base" in run.stderr

    # The honest twin: the same signed lease, for a week.
    patch(checkout, {LEASE_PATH: signed(lease_record(), "lease", signer)})
    run = check(checkout, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    (record,) = json_lines(run)
    assert record["valid"] and record["trust"]["reason"] == "SIGNED"


def test_the_patchs_fixture_globs_cannot_disarm_the_guard(tmp_path: Path) -> None:
    """fixture_globs = ["nothing"] in the patch: base's globs still see the test it edits."""
    checkout = make_checkout(tmp_path, {"tests/test_x.py": "def test_x():\n    assert 1\n"})
    patch(
        checkout,
        {
            "pyproject.toml": '[tool.flakecore]\nfixture_globs = ["nothing"]\n',
            "tests/test_x.py": "def test_x():\n    assert True  # loosened\n",
            LEASE_PATH: lease_bytes(),
        },
    )
    run = flakecore(checkout.top, "guard", "--base", "main", "--json")
    assert run.returncode == EXIT_GUARD_TRIPPED, run.stdout + run.stderr
    (result,) = json_lines(run)
    assert "tests/test_x.py" in result["fixture_paths"]
    assert result["policy_source"]["revision"] == checkout.base

    # The honest twin: the lease alone, in a diff that touches no test.
    honest = another(tmp_path, "honest", {"tests/test_x.py": "def test_x():\n    pass\n"})
    patch(honest, {LEASE_PATH: lease_bytes()})
    assert flakecore(honest.top, "guard", "--base", "main").returncode == 0


def test_the_patchs_lease_dir_cannot_hide_a_lease(tmp_path: Path) -> None:
    """lease_dir moved in the patch: lease check and the guard look where base says."""
    checkout = make_checkout(tmp_path, {"tests/test_x.py": "def test_x():\n    pass\n"})
    patch(
        checkout,
        {
            "pyproject.toml": '[tool.flakecore]\nlease_dir = "elsewhere"\n',
            "elsewhere/.gitkeep": "",
            LEASE_PATH: lease_bytes(),
            "tests/test_x.py": "def test_x():\n    assert True\n",
        },
    )
    run = check(checkout)
    assert run.returncode == EXIT_INVALID_RECORDS, run.stdout + run.stderr
    assert f"{LEASE_PATH}: invalid lease: NOT_IN_BASE" in run.stdout
    guard = flakecore(checkout.top, "guard", "--base", "main", "--json")
    assert guard.returncode == EXIT_GUARD_TRIPPED
    assert LEASE_PATH in json_lines(guard)[0]["ledger_paths"]

    # The honest twin: base itself moved the directory, and the lease landed there, reviewed.
    honest = another(tmp_path, "honest", {"src/lib.py": "X = 1\n"})
    moved = f"state/leases/{record_file_name(TEST_ID)}"
    land(honest, {"pyproject.toml": '[tool.flakecore]\nlease_dir = "state/leases"\n'})
    land(honest, {moved: lease_bytes()})
    run = check(honest, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    (record,) = json_lines(run)
    assert record["file"].endswith(moved) and record["trust"]["reason"] == "BASE_IDENTICAL"


# --------------------------------------------------------------------------- forged records


def test_a_hand_written_lease_or_row_is_refused_and_a_reviewed_one_counts(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    patch(checkout, {LEASE_PATH: lease_bytes(), ROW_PATH: json.dumps(row_record(), indent=2)})
    run = check(checkout, "--json")
    assert run.returncode == EXIT_INVALID_RECORDS
    reasons = {r["kind"]: r["trust"]["reason"] for r in json_lines(run)}
    assert reasons == {"lease": "NOT_IN_BASE", "ledger-row": "NOT_IN_BASE"}
    assert "and it is not signed" in check(checkout).stdout

    # The honest twin: the same bytes in their own reviewed commit on base.
    honest = another(tmp_path, "honest", {"src/lib.py": "X = 1\n"})
    land(honest, {LEASE_PATH: lease_bytes(), ROW_PATH: json.dumps(row_record(), indent=2)})
    run = check(honest, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert {r["trust"]["reason"] for r in json_lines(run)} == {"BASE_IDENTICAL"}

    # The patch edits the reviewed lease (another owner): that is a lease it wrote.
    patch(honest, {LEASE_PATH: lease_bytes(owner="someone-else")})
    run = check(honest)
    assert run.returncode == EXIT_INVALID_RECORDS and "CHANGED_SINCE_BASE" in run.stdout


def test_a_lease_directory_committed_as_a_link_is_refused(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    land(checkout, {f"reviewed/{record_file_name(TEST_ID)}": lease_bytes()})
    (checkout.top / ".flakecore").mkdir()
    os.symlink("../reviewed", checkout.top / ".flakecore" / "leases", target_is_directory=True)
    checkout.commit("leases are the reviewed folder")
    run = check(checkout, "--json")
    assert run.returncode == EXIT_INVALID_RECORDS, run.stdout + run.stderr
    assert json_lines(run)[0]["trust"]["reason"] == "SYMLINK"


# --------------------------------------------------------------------------- signing


def test_signing_round_trip_through_the_cli(tmp_path: Path) -> None:
    """lease open --signing-key writes an envelope lease check accepts; tampered or foreign: no."""
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    signer = make_signer(tmp_path / "keys", "ci-local", checkout.top)
    rogue = make_signer(tmp_path / "keys", "ci-rogue", checkout.top)
    land(checkout, {"pyproject.toml": keys_table(signer)})
    report = dump(tmp_path / "report.json", lease_report())
    opened = flakecore(
        checkout.top, "lease", "open", "--base", "main", "--report", report,
        "--test-id", TEST_ID, "--replay-host", HOST, "--accepted-by", "reviewer@example.test",
        "--patch-author", "coding-agent-7", "--now", NOW_TEXT,
        "--signing-key", str(tmp_path / "keys" / "ci-local.pem"), "--key-id", "ci-local",
    )  # fmt: skip
    assert opened.returncode == 0, opened.stdout + opened.stderr
    stored = (checkout.top / LEASE_PATH).read_bytes()
    assert json.loads(stored)["payloadType"] == "application/vnd.in-toto+json"
    run = check(checkout, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json_lines(run)[0]["trust"] == {
        "trusted": True,
        "reason": "SIGNED",
        "detail": "signed by ci-local",
        "signers": ["ci-local"],
    }

    envelope = json.loads(stored)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["expires_at"] = "2026-12-13T12:00:00Z"
    tampered = {**envelope, "payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    (checkout.top / LEASE_PATH).write_text(json.dumps(tampered))
    run = check(checkout)
    assert run.returncode == EXIT_INVALID_RECORDS and "BAD_SIGNATURE" in run.stdout

    (checkout.top / LEASE_PATH).write_bytes(signed(statement["predicate"], "lease", rogue))
    run = check(checkout)
    assert run.returncode == EXIT_INVALID_RECORDS and "UNTRUSTED_KEY" in run.stdout

    # The key from the environment CI sets (a secret), as the GitHub example does.
    key = (tmp_path / "keys" / "ci-local.pem").read_text()
    (checkout.top / LEASE_PATH).unlink()
    again = flakecore(
        checkout.top, "lease", "open", "--base", "main", "--report", report,
        "--test-id", TEST_ID, "--replay-host", HOST, "--accepted-by", "reviewer@example.test",
        "--patch-author", "coding-agent-7", "--now", NOW_TEXT,
        env={SIGNING_KEY_ENV: key, KEY_ID_ENV: "ci-local"},
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert check(checkout).returncode == 0


def test_replay_signs_its_freeze_record_and_no_attempt_sees_the_key(tmp_path: Path) -> None:
    """The key variable is withheld from every attempt: one that sees it errors the replay."""
    repo = make_repo(tmp_path)
    signer = make_signer(tmp_path / "keys", "ci-local", repo.path)
    probe = (
        "import os, sys\n"
        f"sys.exit(2 if {SIGNING_KEY_ENV!r} in os.environ else int(sys.argv[1]) % 3 == 0)\n"
    )
    out = tmp_path / "freeze.json"
    args = repo.replay_args(
        seed="3", out=out, command=[sys.executable, "-c", probe, "{seed}"],
        extra=["--test-id", "tests/test_prop.py::test_property"],
    )  # fmt: skip
    key = {
        SIGNING_KEY_ENV: (tmp_path / "keys" / "ci-local.pem").read_text(),
        KEY_ID_ENV: "ci-local",
    }
    run = repo.flakecore(*args, env=key)
    d = decision(run)
    assert (d["code"], run.returncode) == ("ACCEPT_PREEXISTING", 0), run.stderr
    assert [a["result"] for a in d["replay"]["attempts"]] == ["miss", "miss"]
    verdict = verify_signed(
        out.read_bytes(), keys=[signer.key], kind="freeze-record", check=lambda _: ()
    )
    assert verdict.trusted and verdict.record is not None
    assert verdict.record["base_sha"] == repo.base


# --------------------------------------------------------------------------- ledger apply


def test_ledger_apply_takes_only_evidence(tmp_path: Path) -> None:
    """A packet the patch committed is refused; the job's own, outside the checkout, is read."""
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    packet = budget_packet(test_id=TEST_ID)
    patch(checkout, {"evidence/budget.json": json.dumps(packet)})
    ledger = checkout.top / ".flakecore" / "ledger"
    run = flakecore(checkout.top, "ledger", "apply", "evidence/budget.json", "--base", "main")
    assert run.returncode == 1 and "NOT_IN_BASE" in run.stderr
    assert not ledger.exists(), "ledger untouched"

    # The honest twin without keys: the job's own packet, outside the checkout.
    outside = dump(tmp_path / "budget.json", packet)
    run = flakecore(checkout.top, "ledger", "apply", outside, "--base", "main", "--json")
    assert run.returncode == 0, run.stderr
    assert json_lines(run)[0]["action"] == "wrote"

    # With keys, ledger apply (a step that runs no patch code) signs the row it writes:
    # committed by the patch, that row counts, where a hand-written one does not.
    keyed = another(tmp_path, "keyed", {"src/lib.py": "X = 1\n"})
    signer = make_signer(tmp_path / "keys", "ci-local", keyed.top)
    rogue = make_signer(tmp_path / "keys", "ci-rogue", keyed.top)
    land(keyed, {"pyproject.toml": keys_table(signer)})
    key = ["--signing-key", str(tmp_path / "keys" / "ci-local.pem"), "--key-id", "ci-local"]
    run = flakecore(keyed.top, "ledger", "apply", outside, "--base", "main", "--now", NOW_TEXT,
                    *key)  # fmt: skip
    assert run.returncode == 0, run.stderr
    keyed.commit("the row ledger apply signed")
    run = check(keyed, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json_lines(run)[0]["trust"]["reason"] == "SIGNED"
    # A packet signed by a key base does not trust is refused, not read as unsigned.
    form = {"format": "flakecore.budget-packet", "format_version": "1.0", **packet}
    (tmp_path / "rogue.json").write_bytes(signed(form, "budget-packet", rogue))
    run = flakecore(keyed.top, "ledger", "apply", str(tmp_path / "rogue.json"), "--base", "main")
    assert run.returncode == 1 and "UNTRUSTED_KEY" in run.stderr


def test_budget_run_signs_its_observation_for_ledger_apply(tmp_path: Path) -> None:
    """The keyed flow end to end: budget-run --signing-key, then ledger apply with keys in base."""
    (tmp_path / "r").mkdir()
    keys_dir = tmp_path / "keys"
    signer = make_signer(keys_dir, "ci-local", tmp_path / "r")
    repo = make_repo(tmp_path / "r", base_files={"pyproject.toml": keys_table(signer)})
    out = tmp_path / "budget.json"
    seeds = [sys.executable, "-c", "import sys; sys.exit(int(sys.argv[1]) % 3 == 0)", "{seed}"]
    args = budget_args(repo, out, seeds="1,2,3,4,5,6,7,8", command=seeds)
    key = ["--signing-key", str(keys_dir / "ci-local.pem"), "--key-id", "ci-local"]
    run = repo.flakecore(*args[: args.index("--")], *key, *args[args.index("--") :])
    assert (decision(run)["code"], run.returncode) == ("FLAKE_CANDIDATE", 0), run.stderr
    assert json.loads(out.read_text())["payloadType"] == "application/vnd.in-toto+json"
    apply = repo.flakecore("ledger", "apply", str(out), "--base", repo.base, "--json")
    assert apply.returncode == 0, apply.stderr
    assert json.loads(apply.stdout)["action"] == "wrote"

    # The same observation rewritten after budget-run signed it: the signature fails.
    envelope = json.loads(out.read_text())
    body = json.loads(base64.b64decode(envelope["payload"]))
    body["predicate"]["packet"]["passes"] = 7
    envelope["payload"] = base64.b64encode(json.dumps(body).encode()).decode()
    out.write_text(json.dumps(envelope))
    apply = repo.flakecore("ledger", "apply", str(out), "--base", repo.base)
    assert apply.returncode == 1 and "BAD_SIGNATURE" in apply.stderr


# --------------------------------------------------------------------------- packet


def test_a_clean_runner_is_a_different_key(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    local_key = make_signer(tmp_path / "keys", "ci-local", checkout.top)
    clean_key = make_signer(tmp_path / "keys", "ci-clean", checkout.top)
    land(checkout, {"pyproject.toml": keys_table(local_key, clean_key)})

    def packet(local: bytes, clean: bytes) -> subprocess.CompletedProcess[str]:
        (tmp_path / "local.json").write_bytes(local)
        (tmp_path / "clean.json").write_bytes(clean)
        return flakecore(
            checkout.top, "packet", "--base", "main", "--test-id", TEST_ID,
            "--patch-hash", PATCH, "--oracle-version", "o-3", "--decide",
            "--local", str(tmp_path / "local.json"), "--clean", str(tmp_path / "clean.json"),
        )  # fmt: skip

    local = signed(run_record(HOST), "run-record", local_key, test_id=TEST_ID)
    # Two runner ids, one key: one runner.
    same = packet(local, signed(run_record(OTHER_HOST), "run-record", local_key, test_id=TEST_ID))
    assert same.returncode == 65 and "SAME_SIGNER" in same.stderr
    unsigned = packet(local, json.dumps(run_record(OTHER_HOST)).encode())
    assert unsigned.returncode == 65 and "NOT_SIGNED" in unsigned.stderr
    # The honest twin: the clean runner signs with its own key.
    clean = signed(run_record(OTHER_HOST), "run-record", clean_key, test_id=TEST_ID)
    honest = packet(local, clean)
    assert honest.returncode == 0, honest.stderr
    assert "decide=ELIGIBLE" in honest.stdout


# --------------------------------------------------------------------------- policy verbs


def test_a_packet_the_patch_committed_is_not_evidence(tmp_path: Path) -> None:
    """admit --base on a packet in the checkout: refused; the same bytes on stdin are judged."""
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    farmed = json.dumps({
        "base_misses": 25, "base_attempts": 5, "patch_misses": 1,
        "property_sha256": "a" * 64, "base_property_sha256": "a" * 64,
        "fixture_epoch": "b" * 64, "base_fixture_epoch": "b" * 64, "claimed_epoch": "b" * 64,
    })  # fmt: skip
    patch(checkout, {"evidence/admit.json": farmed})
    run = flakecore(checkout.top, "admit", "evidence/admit.json", "--base", "main", "--json")
    assert run.returncode == 1, run.stderr
    (d,) = json_lines(run)
    assert d["code"] == "REJECT_INCOMPLETE" and "NOT_IN_BASE" in d["reasons"][0]
    # Standard input is the caller's own pipeline: input to a pure function.
    piped = flakecore(checkout.top, "admit", "-", "--base", "main", "--json", stdin=farmed.encode())
    assert json_lines(piped)[0]["code"] == "REJECT_INCOMPLETE", "25 misses in 5 is impossible"
    assert "NOT_IN_BASE" not in piped.stdout
    # The honest twin: a packet that landed in base is judged as what it says.
    land(checkout, {"evidence/ok.json": farmed.replace('"base_misses": 25', '"base_misses": 1')})
    run = flakecore(checkout.top, "admit", "evidence/ok.json", "--base", "main", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json_lines(run)[0]["policy_source"]["revision"] == checkout.base


def test_lease_check_without_a_base_or_keys_refuses_to_run(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path, {"src/lib.py": "X = 1\n"})
    land(checkout, {LEASE_PATH: lease_bytes()})
    run = flakecore(checkout.top, "lease", "check", "--now", NOW_TEXT, "--no-config")
    assert run.returncode == 64 and "cannot tell a reviewed record" in run.stderr
    run = flakecore(checkout.top, "lease", "check", "--now", NOW_TEXT)
    assert run.returncode == 64 and "--base REF" in run.stderr
    assert check(checkout).returncode == 0, "the honest twin: the reviewed base"
