"""Every corpus report a base command could write, through a real base replay.

For each manifest entry with a ``replay`` target, the base commit's command
writes that report into its worktree and exits 1, as a test run that missed
does; ``flakecore replay --report`` must never reach ``ACCEPT_PREEXISTING``
from a report with a stream-level defect or one the adapters refuse, while
the honest twins (the same failing target in a sound report) must.  One
attempt each, on one shared repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e.support import SampleRepo, decision, make_repo
from flakecore.exits import EXIT_DATAERR

pytestmark = pytest.mark.e2e

CORPUS = Path(__file__).resolve().parent.parent / "adversarial"
MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())
REPLAYED = [entry for entry in MANIFEST if "replay" in entry]
IDS = [str(entry["file"]) for entry in REPLAYED]
#: Copies the report named by argv[1] into the worktree (argv[2] is the pinned seed), then
#: fails as a test run that missed does.
_WRITER = "import shutil, sys; shutil.copyfile(sys.argv[1], 'report.xml'); sys.exit(1)"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> SampleRepo:
    return make_repo(tmp_path_factory.mktemp("defective"))


def test_the_corpus_names_defective_reports_and_honest_twins() -> None:
    refused = [e for e in REPLAYED if not e["replay"]["accept"]]
    assert len(refused) >= 15
    assert len(REPLAYED) - len(refused) >= 3
    assert {e["replay"]["format"] for e in refused} >= {"tap", "junit"}


@pytest.mark.parametrize("entry", REPLAYED, ids=IDS)
def test_base_replay_never_accepts_from_a_defective_report(
    repo: SampleRepo, tmp_path: Path, entry: dict[str, Any]
) -> None:
    target = entry["replay"]
    out = tmp_path / "freeze.json"
    command = [sys.executable, "-c", _WRITER, str(CORPUS / entry["file"]), "{seed}"]
    args = repo.replay_args(seed="3", out=out, command=command, attempts=1)
    cut = args.index("--")
    report = ["--report", "report.xml", "--report-format", target["format"]]
    run = repo.flakecore(*args[:cut], *report, "--test-id", target["test_id"], *args[cut:])
    d = decision(run)
    if target["accept"]:
        assert (run.returncode, d["code"]) == (0, "ACCEPT_PREEXISTING"), d["reasons"]
    else:
        assert d["code"] != "ACCEPT_PREEXISTING"
        assert (run.returncode, d["code"]) == (1, "REJECT_INCOMPLETE")
        (reason,) = d["reasons"]
        assert "report report.xml is unusable" in reason
        if target["format"] == "tap":
            assert "a defect of the whole report" in reason
        assert not out.exists()
    repo.assert_clean()


@pytest.mark.parametrize("entry", REPLAYED, ids=IDS)
def test_ingest_of_the_target_alone_fails_on_a_defective_report(entry: dict[str, Any]) -> None:
    target = entry["replay"]
    run = subprocess.run(
        [
            sys.executable, "-m", "flakecore", "ingest", str(CORPUS / entry["file"]),
            "--report-format", target["format"], "--test-id", target["test_id"],
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )  # fmt: skip
    if target["accept"]:
        assert run.returncode == 0, run.stderr
        assert [json.loads(line)["test_id"] for line in run.stdout.splitlines()] == [
            target["test_id"]
        ]
    else:
        assert run.returncode == EXIT_DATAERR, run.stderr
        assert run.stdout == ""
