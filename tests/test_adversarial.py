"""Every adversarial corpus file through the real CLI: never an accept (but the controls).

Each run must end with the manifest's exit code, print at most one line on
stderr and no traceback, and stay under 2 s of CPU and 200 MB of memory.
Regenerate the corpus with ``python tests/adversarial/make_corpus.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "adversarial"
MANIFEST: list[dict[str, object]] = json.loads((CORPUS / "manifest.json").read_text())

#: Runs the CLI in-process and records its own CPU time and peak memory.  The
#: peak is VmHWM, which exec resets; ru_maxrss would carry the forking pytest
#: process's size over into the child.
WRAPPER = """
import resource, sys
from flakecore.cli import main
try:
    code = main(sys.argv[2:])
finally:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak = usage.ru_maxrss
    try:
        with open("/proc/self/status") as status:
            peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        pass
    with open(sys.argv[1], "w") as fh:
        fh.write(f"{usage.ru_utime + usage.ru_stime} {peak}")
sys.exit(code)
"""
MAX_CPU_S = 2.0
MAX_RSS_KB = 200 * 1024


def test_corpus_has_every_surface_and_controls() -> None:
    surfaces = {str(e["file"]).split("/")[0] for e in MANIFEST}
    assert {"json", "logs", "packets", "xml", "tap", "controls"} <= surfaces
    assert sum(1 for e in MANIFEST if e["accept"]) >= 5


@pytest.mark.parametrize("entry", MANIFEST, ids=[str(e["file"]) for e in MANIFEST])
def test_corpus_file(tmp_path: Path, entry: dict[str, object]) -> None:
    path = CORPUS / str(entry["file"])
    args = [str(a).replace("{file}", str(path)) for a in entry["command"]]  # type: ignore[attr-defined]
    usage_file = tmp_path / "usage"
    run = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(usage_file), *args],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == entry["exit"], (run.stdout[:500], run.stderr[:500])
    assert b"Traceback" not in run.stderr
    assert run.stderr.count(b"\n") <= 1
    outputs = [json.loads(line) for line in run.stdout.splitlines()]
    if "records" in entry:
        # A report that parses is judged by exactly what it says (ingest).
        got = [[r["test_id"], r["outcome"], r["flags"]] for r in outputs]
        assert got == entry["records"]
    else:
        accepted = any(d.get("accepted") for d in outputs) or (
            bool(outputs) and outputs[0].get("status") == "COMPLETE"
        )
        assert accepted is bool(entry["accept"])
        if not entry["accept"]:
            assert run.returncode != 0
    cpu, rss = usage_file.read_text().split()
    assert float(cpu) < MAX_CPU_S
    assert int(rss) < MAX_RSS_KB
