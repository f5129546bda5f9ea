"""The pytest plugin's log of a real patch run is, as written, the patch log of a real replay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from e2e.support import PROPERTY_FILE, decision, make_repo
from flakecore.logdir import read_log_dir

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("seed", "exit_code", "code"),
    [("3", 0, "ACCEPT_PREEXISTING"), ("7", 4, "REJECT_PATCH_INTRODUCED")],
    ids=["preexisting", "patch-introduced"],
)
def test_plugin_log_feeds_replay(tmp_path: Path, seed: str, exit_code: int, code: str) -> None:
    repo = make_repo(tmp_path)
    logs = tmp_path / "patch-logs"
    # The patch's CI run: the property with the seed pinned, one rerun, the plugin recording
    # (named with -p: the sample repository's environment turns plugin autoloading off).
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "flakecore_pytest", "-p", "pytest_rerunfailures",
         PROPERTY_FILE, f"--prop-seed={seed}", "--reruns=1",
         f"--flakecore-seed={seed}", f"--flakecore-log={logs}"],
        cwd=repo.path, env=repo.env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stdout
    ((test_id, (log,)),) = read_log_dir(logs).items()
    assert test_id == "tests/test_prop.py::test_property"
    assert (
        log.read_bytes()
        == f'{{"seed":{seed},"n":1,"result":"miss"}}\n{{"seed":{seed},"n":2,"result":"miss"}}\n'.encode()
    )
    # The replay pins the same text and takes the plugin's log as it is.
    args = repo.replay_args(
        seed=seed, out=tmp_path / "freeze.json", patch=("--patch-log", str(log))
    )
    run = repo.flakecore(*args)
    d = decision(run)
    assert (run.returncode, d["code"]) == (exit_code, code), d
    packet = d["packet"]
    assert isinstance(packet, dict)
    assert (packet["patch_misses"], packet["seed"]) == (2, int(seed))
    repo.assert_clean()
