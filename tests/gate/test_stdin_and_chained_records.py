"""Records a verb wrote are read as they are, and ``-`` is stdin wherever a record is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flakecore.exits import EXIT_INVALID_RECORDS, EXIT_USAGE
from flakecore.gate.ledger import record_file_name
from gate.support import (
    HOST,
    NOW_TEXT,
    OTHER_HOST,
    PATCH,
    TEST_ID,
    base_checkout,
    cli,
    dump,
    lease_record,
    on_base,
    row_record,
    run_record,
    store,
)

REPO = Path(__file__).resolve().parents[2]
#: What ``budget-run --out`` wrote for a real run (schemas/examples), byte for byte.
BUDGET_JSON = REPO / "schemas" / "examples" / "valid" / "budget-run-flake-candidate.json"
BUDGET_TEST = "tests.test_prop::test_property"


def piped(*args: str, stdin: bytes, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "flakecore", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        check=False,
        env=environ,
        cwd=cwd,
    )


def tampered(tmp_path: Path) -> str:
    """budget.json with one more pass claimed than its runs show (a hand edit)."""
    record = json.loads(BUDGET_JSON.read_text())
    record["packet"]["passes"] = 6
    return dump(tmp_path / "tampered.json", record)


def test_budget_reads_budget_json_as_budget_run_wrote_it(tmp_path: Path) -> None:
    done = cli("budget", str(BUDGET_JSON), "--json", "--no-config")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert (decision["code"], decision["input"]) == ("FLAKE_CANDIDATE", str(BUDGET_JSON))
    refused = cli("budget", tampered(tmp_path), "--json", "--no-config")
    assert refused.returncode == 1
    reasons = json.loads(refused.stdout)["reasons"]
    assert "the record disagrees with its own runs: passes is 6 but the record gives 5" in reasons


@pytest.mark.parametrize("verb", [("budget",), ("ledger", "apply")])
def test_an_indented_record_on_stdin_is_one_record(tmp_path: Path, verb: tuple[str, ...]) -> None:
    extra = (
        ("--dir", str(tmp_path / "ledger"), "--today", "2026-11-30") if verb[0] == "ledger" else ()
    )
    done = piped(*verb, "-", *extra, "--json", "--no-config", stdin=BUDGET_JSON.read_bytes())
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["input"] == "-"


def test_ledger_apply_writes_the_row_of_budget_json_and_refuses_a_tampered_one(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    args = ("--dir", str(ledger), "--today", "2026-11-30", "--no-config", "--json")
    bad = cli("ledger", "apply", tampered(tmp_path), *args)
    assert bad.returncode == 1 and json.loads(bad.stdout)["action"] == "refused"
    assert not ledger.exists()
    # The example lives in this repository: run where it is outside the scored checkout.
    done = on_base("ledger", "apply", str(BUDGET_JSON), *args)
    assert done.returncode == 0, done.stderr
    row = json.loads((ledger / record_file_name(BUDGET_TEST)).read_text())
    assert (row["passes"], row["budget"], row["expires_on"]) == (5, 8, "2026-12-14")


def test_ledger_apply_reads_json_lines_on_stdin(tmp_path: Path) -> None:
    packet = json.loads(BUDGET_JSON.read_text())["packet"]
    lines = (json.dumps(packet) + "\n" + json.dumps({**packet, "passes": 8}) + "\n").encode()
    done = piped("ledger", "apply", "-", "--dir", str(tmp_path), "--today", "2026-11-30",
                 "--no-config", "--json", stdin=lines)  # fmt: skip
    assert done.returncode == 6  # the first non-zero exit: the second packet is STABLE_PASS
    actions = [(json.loads(x)["input"], json.loads(x)["action"]) for x in done.stdout.splitlines()]
    assert actions == [("-:1", "wrote"), ("-:2", "deleted")]


def packet_args(local: str, clean: str) -> tuple[str, ...]:
    return ("packet", "--test-id", TEST_ID, "--patch-hash", PATCH, "--oracle-version", "o-3",
            "--local", local, "--clean", clean, "--decide", "--no-config")  # fmt: skip


def test_packet_reads_one_run_record_from_stdin(tmp_path: Path) -> None:
    clean = dump(tmp_path / "clean.json", run_record(OTHER_HOST))
    stdin = json.dumps(run_record(HOST), indent=2).encode()
    done = piped(*packet_args("-", clean), stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert f'"local_runner_id": "{HOST}"' in done.stdout
    twice = piped(*packet_args("-", "-"), stdin=stdin)
    assert twice.returncode == EXIT_USAGE and "can be read only once" in twice.stderr
    two_lines = (json.dumps(run_record(HOST)) + "\n").encode() * 2
    several = piped(*packet_args("-", clean), stdin=two_lines)
    assert several.returncode == 65 and "one record expected" in several.stderr


def test_lease_show_reads_stdin(tmp_path: Path) -> None:
    stdin = store(tmp_path, lease_record()).read_bytes()
    root, base = base_checkout()
    show = ("lease", "show", "-", "--base", base)
    done = piped(*show, "--now", NOW_TEXT, stdin=stdin, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("class=flake property=pass pin=match")
    later = piped(*show, "--now", "2027-01-01T00:00:00Z", stdin=stdin, cwd=root)
    assert later.returncode == EXIT_INVALID_RECORDS


def test_lease_show_on_a_ledger_row_says_what_the_file_is_in_one_line(tmp_path: Path) -> None:
    path = store(tmp_path, row_record())
    done = on_base("lease", "show", str(path), "--now", NOW_TEXT)
    assert done.returncode == 65 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert f"{path}: a ledger-row record ('flakecore.ledger-row'), not a lease" in done.stderr
