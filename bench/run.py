"""Adapter throughput and memory against a bare-parser baseline, per format.

Each measurement runs in a fresh interpreter (``sys.executable``), so peak
RSS (``ru_maxrss`` of that child) belongs to one job.  For every format:

* ``baseline``: the bare parser with no work per record (JUnit: pyexpat
  with no-op start/end/text handlers; pytest JSON: ``ijson.items(f,
  "tests.item")`` on the yajl2_c backend; TAP: a compiled ``re`` matched
  against every line);
* ``ingest``: ``flakecore_adapters.iter_attempts`` + ``write_jsonl`` to a
  file, i.e. what ``flakecore ingest`` does;
* ``idle``: the interpreter with the adapters imported, for the RSS base.

Usage: ``python bench/run.py`` (1M testcases per format) or
``python bench/run.py --testcases 2000`` for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import FORMATS, generate  # noqa: E402

__all__ = ["child", "main"]

TARGETS = {"junit": 2.5, "pytest-json": 2.0, "tap": 2.5}
RSS_BUDGET_MIB = 64
CHUNK = 256 * 1024


def _baseline(fmt: str, path: str) -> int:
    if fmt == "junit":
        import pyexpat

        def noop(*_: object) -> None:
            return None

        parser = pyexpat.ParserCreate()
        parser.buffer_text = True
        parser.StartElementHandler = noop
        parser.EndElementHandler = noop
        parser.CharacterDataHandler = noop
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                parser.Parse(chunk, False)
        parser.Parse(b"", True)
        return 0
    if fmt == "pytest-json":
        import ijson  # type: ignore[import-untyped, import-not-found, unused-ignore]

        backend = ijson.get_backend("yajl2_c")
        with open(path, "rb") as fh:
            return sum(1 for _ in backend.items(fh, "tests.item"))
    if fmt == "pytest-json-stdlib":
        decoder = json.JSONDecoder()
        text = Path(path).read_text(encoding="utf-8")
        at = text.index('"tests": [') + len('"tests": [')
        count = 0
        while True:
            _, at = decoder.raw_decode(text, at)
            count += 1
            if text[at] == "]":
                return count
            at += 2
    if fmt == "tap":
        import re

        point = re.compile(rb"(not )?ok\b(?: +([0-9]+))?(.*)")
        count = 0
        with open(path, "rb") as fh:
            for line in fh:
                if point.match(line):
                    count += 1
        return count
    raise SystemExit(f"unknown format {fmt}")


def _ingest(fmt: str, path: str, out: str) -> int:
    import flakecore_adapters

    with open(out, "wb") as fh:
        return flakecore_adapters.write_jsonl(
            flakecore_adapters.iter_attempts(path, format=fmt), fh
        )


def child(mode: str, fmt: str, path: str, out: str) -> None:
    """Run one measurement and print it as JSON (called in a fresh interpreter)."""
    import flakecore_adapters  # noqa: F401 - the idle RSS includes the package

    start = time.perf_counter()
    if mode == "baseline":
        count = _baseline(fmt, path)
    elif mode == "ingest":
        count = _ingest(fmt, path, out)
    else:
        count = 0
    seconds = time.perf_counter() - start
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "count": count, "rss_mib": rss_kib / 1024}))


def _measure(mode: str, fmt: str, path: Path, out: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", mode, fmt, str(path), str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Generate the reports, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--testcases", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None, help="where reports are kept")
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--child", nargs=4, metavar=("MODE", "FORMAT", "PATH", "OUT"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="flakecore-bench-") as tmp:
        directory = args.dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        idle = _measure("idle", "tap", Path(os.devnull), Path(os.devnull))
        print(
            f"python {sys.version.split()[0]}, {args.testcases} testcases per format, "
            f"idle interpreter RSS {idle['rss_mib']:.1f} MiB"
        )
        header = (
            f"{'format':<12} {'run':<18} {'seconds':>8} {'testcases/s':>12} {'MB/s':>7} "
            f"{'peak MiB':>9} {'+idle MiB':>9} {'ratio':>6}"
        )
        print(header)
        print("-" * len(header))
        failed = False
        for fmt in args.formats:
            path = generate(fmt, args.testcases, directory)
            size_mb = path.stat().st_size / 1e6
            out = directory / f"{fmt}.jsonl"
            runs = [("baseline", fmt)]
            if fmt == "pytest-json":
                runs.append(("baseline", "pytest-json-stdlib"))
            runs.append(("ingest", fmt))
            base = None
            for mode, label in runs:
                res = _measure(mode, label, path, out)
                if base is None:
                    base = res["seconds"]
                ratio = res["seconds"] / base
                name = "ingest" if mode == "ingest" else f"bare {label}"
                print(
                    f"{fmt:<12} {name:<18} {res['seconds']:>8.2f} "
                    f"{args.testcases / res['seconds']:>12,.0f} {size_mb / res['seconds']:>7.1f} "
                    f"{res['rss_mib']:>9.1f} {res['rss_mib'] - idle['rss_mib']:>9.1f} {ratio:>6.2f}"
                )
                if mode == "ingest":
                    over_time = ratio > TARGETS[fmt]
                    over_rss = res["rss_mib"] - idle["rss_mib"] > RSS_BUDGET_MIB
                    failed = failed or over_time or over_rss
                    verdict = "MISSED" if over_time or over_rss else "met"
                    print(
                        f"{'':<12} target: <= {TARGETS[fmt]}x and <= {RSS_BUDGET_MIB} MiB"
                        f" above idle: {verdict}"
                    )
            out.unlink(missing_ok=True)
        if failed:
            print("some targets were missed (see above)")


if __name__ == "__main__":
    main()
