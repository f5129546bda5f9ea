"""Adapter throughput and memory against a bare-parser baseline, per format.

Each measurement runs in a fresh interpreter (``sys.executable``), so peak
RSS (``ru_maxrss`` of that child) belongs to one job.  For every format:

* ``baseline``: the bare parser with no work per record (JUnit: pyexpat
  with no-op start/end/text handlers; pytest JSON: ``ijson.items(f,
  "tests.item")`` on the yajl2_c backend; TAP: a compiled ``re`` matched
  against every line);
* ``ingest``: ``flakecore_adapters.iter_jsonl`` to a file, i.e. what
  ``flakecore ingest`` does (records rendered straight to JSON Lines); the
  ratio targets apply to this row;
* ``objects``: ``iter_attempts`` + ``write_jsonl`` (``Attempt`` objects
  first, same bytes), for context;
* ``floor`` (TAP and JUnit): the bare parse plus rendering and writing a
  record per test with no check at all, for context: what the records
  alone cost, a floor for any implementation in Python;
* ``floor + far-repeat`` (TAP and JUnit): that floor with every record's
  test id fed to the adapters' own far-repeat check (``_Seen``), for
  context: the one check whose cost grows with the report, in the bounded
  memory docs/adapters.md promises; what is left between this row and the
  target is all the other checks may cost;
* ``idle``: the interpreter with the adapters imported, for the RSS base.

Every measurement is repeated (``--repeat``, default 3), interleaved, and
the table shows medians; a row's ratio is the median of its per-repeat
ratios to that repeat's baseline.  ``ratio`` compares wall-clock seconds
(the target); ``cpu ratio`` compares the child's user+system CPU seconds,
which a machine shared with other jobs disturbs less.

Usage: ``python bench/run.py`` (1M testcases per format) or
``python bench/run.py --testcases 2000 --repeat 1`` for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import FORMATS, generate  # noqa: E402

if TYPE_CHECKING:
    from flakecore_adapters._flags import _Seen

__all__ = ["child", "main"]

TARGETS = {"junit": 2.5, "pytest-json": 2.0, "tap": 4.0}
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
    """What ``flakecore ingest`` does: records rendered straight to JSON Lines."""
    import flakecore_adapters

    counts: dict[str, int] = {}
    with open(out, "wb") as fh:
        for chunk in flakecore_adapters.iter_jsonl(path, format=fmt, counts=counts):
            fh.write(chunk)
    return sum(v for k, v in counts.items() if k != "flagged")


def _floor(fmt: str, path: str, out: str, *, far: bool = False) -> int:
    """The records' own cost: the bare parse plus rendering and writing a record per test.

    No check at all: no escaping, no plan, directives, YAML or result
    children, no limits, no repeat window.  Whatever the ingest spends above
    this row goes to the checks; no implementation that writes the same
    records from Python can go below it.  TAP: the fast lane's own run
    pattern, ended at the next '#' as the lane ends it, and split (one match
    and one split per run of ``ok N - desc`` lines, one list comprehension
    to render them), every other line matched
    alone by the baseline's pattern.  JUnit: expat whose ``end`` callback
    renders every ``<testcase>`` as a plain pass.  (The TAP floor on decoded
    text with f-strings, as the adapter's lane renders, took about 1.5 times
    as long in CPU at 200 000 testcases as this bytes-only one.)
    """
    from flakecore_adapters._flags import _Seen
    from flakecore_adapters._render import HEAD, file_prefix

    from flakecore.errors import InputError

    def refuse(test_id: str | None, line: int | None) -> InputError:
        return InputError(f"repeated test id {test_id!r}", source=path, line=line)

    seen = _Seen(refuse) if far else None
    native = "ok" if fmt == "tap" else "passed"
    mid = (
        f',"outcome":"pass","native":"{native}","attempt":1,"duration_s":null,"message":null,'
        f'"flags":[],"source":{file_prefix(path, fmt)},"line":'
    )
    if fmt == "tap":
        count = _tap_floor(path, out, HEAD, mid, seen)
    elif fmt == "junit":
        count = _junit_floor(path, out, HEAD, mid, seen)
    else:
        raise SystemExit(f"no floor for {fmt}")
    if seen is not None:
        seen.check()
    return count


def _tap_floor(path: str, out: str, head: str, mid: str, seen: _Seen | None) -> int:
    """Bytes in, bytes out (no decoding, no encoding): the cheapest rendering found."""
    import re

    from flakecore_adapters.tap import _RUN, _RUN_SPLIT

    point = re.compile(rb"(not )?ok\b(?: +([0-9]+))?(.*)")
    run_of = re.compile(_RUN.pattern.encode())
    split = re.compile(_RUN_SPLIT.pattern.encode())
    record = f'{head}"%s"{mid}%d,"number":%s,"description":"%s"}}}}\n'.encode()
    count = 0
    number = 0
    rest = b""
    with open(path, "rb") as fh, open(out, "wb") as sink:
        while chunk := fh.read(CHUNK):
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            rows: list[bytes] = []
            pos = 0
            sharp = -1  # the lane's run never holds a '#': its match ends at the next one
            while pos < cut:
                if sharp < pos:
                    sharp = data.find(b"#", pos, cut)
                    if sharp < 0:
                        sharp = cut
                run = run_of.match(data, pos, sharp)
                if run is None:
                    nl = data.index(b"\n", pos)
                    number += 1
                    found = point.match(data, pos, nl)
                    if found:
                        count += 1
                        desc = found.group(3)[3:].partition(b" #")[0]
                        rows.append(record % (desc, number, b"%d" % count, desc))
                        if seen is not None:
                            seen.add(cast("str", desc), number)
                    pos = nl + 1
                    continue
                parts = split.split(b"\n" + data[pos : run.end() - 1])
                descs = parts[2::2]
                if seen is not None:  # ASCII bytes hash as their text does: no decode
                    seen.add_all(
                        cast("list[str]", descs), range(number + 1, number + len(descs) + 1)
                    )
                rows += [
                    record % (desc, line, num, desc)
                    for line, num, desc in zip(
                        range(number + 1, number + len(descs) + 1), parts[1::2], descs, strict=True
                    )
                ]
                count += len(descs)
                number += len(descs)
                pos = run.end()
            sink.write(b"".join(rows))
    return count


def _junit_floor(path: str, out: str, head: str, mid: str, seen: _Seen | None) -> int:
    import pyexpat

    rows: list[str] = []
    ids: list[str] = []
    attrs: dict[str, str] = {}

    def start(name: str, found: dict[str, str]) -> None:
        nonlocal attrs
        if name == "testcase":
            attrs = found

    def end(name: str) -> None:
        if name == "testcase":
            classname = attrs.get("classname")
            case = attrs.get("name")
            test_id = f"{classname}::{case}"
            if seen is not None:
                ids.append(test_id)
            rows.append(
                f'{head}"{test_id}"{mid}{parser.CurrentLineNumber},'
                f'"classname":"{classname}","name":"{case}"}}}}\n'
            )

    parser = pyexpat.ParserCreate()
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    count = 0
    with open(path, "rb") as fh, open(out, "wb") as sink:
        while chunk := fh.read(CHUNK):
            parser.Parse(chunk, False)
            count += len(rows)
            sink.write("".join(rows).encode())
            rows.clear()
            if seen is not None:
                seen.add_all(ids, [None] * len(ids))
                ids.clear()
        parser.Parse(b"", True)
    return count


def _objects(fmt: str, path: str, out: str) -> int:
    """The library path: ``Attempt`` objects, then ``write_jsonl`` (same bytes)."""
    import flakecore_adapters

    with open(out, "wb") as fh:
        return flakecore_adapters.write_jsonl(
            flakecore_adapters.iter_attempts(path, format=fmt), fh
        )


def child(mode: str, fmt: str, path: str, out: str) -> None:
    """Run one measurement and print it as JSON (called in a fresh interpreter)."""
    import flakecore_adapters  # noqa: F401 - the idle RSS includes the package

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_start = usage.ru_utime + usage.ru_stime
    start = time.perf_counter()
    if mode == "baseline":
        count = _baseline(fmt, path)
    elif mode == "ingest":
        count = _ingest(fmt, path, out)
    elif mode == "objects":
        count = _objects(fmt, path, out)
    elif mode == "floor":
        count = _floor(fmt, path, out)
    elif mode == "floor-far":
        count = _floor(fmt, path, out, far=True)
    else:
        count = 0
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu_start
    print(
        json.dumps(
            {"seconds": seconds, "cpu": cpu, "count": count, "rss_mib": usage.ru_maxrss / 1024}
        )
    )


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
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of every measurement (medians are shown)"
    )
    parser.add_argument(
        "--no-objects", action="store_true", help="skip the iter_attempts + write_jsonl row"
    )
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
            f"idle interpreter RSS {idle['rss_mib']:.1f} MiB, median of {args.repeat} run(s)"
        )
        header = (
            f"{'format':<12} {'run':<25} {'seconds':>8} {'testcases/s':>12} {'MB/s':>7} "
            f"{'peak MiB':>9} {'+idle MiB':>9} {'ratio':>6} {'cpu s':>7} {'cpu ratio':>9}"
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
            if fmt in ("tap", "junit"):
                runs.append(("floor", fmt))
                runs.append(("floor-far", fmt))
            if not args.no_objects:
                runs.append(("objects", fmt))
            # Interleaved: every repeat measures each run once, so a change of
            # machine load hits the baseline and the ingest of one repeat alike.
            seconds: dict[int, list[float]] = {i: [] for i in range(len(runs))}
            cpu: dict[int, list[float]] = {i: [] for i in range(len(runs))}
            rss: dict[int, float] = dict.fromkeys(range(len(runs)), 0.0)
            for _ in range(args.repeat):
                for i, (mode, label) in enumerate(runs):
                    res = _measure(mode, label, path, out)
                    seconds[i].append(res["seconds"])
                    cpu[i].append(res["cpu"])
                    rss[i] = max(rss[i], res["rss_mib"])
            for i, (mode, label) in enumerate(runs):
                took = statistics.median(seconds[i])
                # A ratio is the median of each repeat's ratio to its own baseline.
                ratio = statistics.median(
                    s / b for s, b in zip(seconds[i], seconds[0], strict=True)
                )
                cpu_ratio = statistics.median(
                    s / max(b, 1e-9) for s, b in zip(cpu[i], cpu[0], strict=True)
                )
                name = {
                    "baseline": f"bare {label}",
                    "ingest": "ingest (iter_jsonl)",
                    "objects": "objects (iter_attempts)",
                    "floor": "floor (no checks)",
                    "floor-far": "floor + far-repeat",
                }[mode]
                print(
                    f"{fmt:<12} {name:<25} {took:>8.2f} "
                    f"{args.testcases / took:>12,.0f} {size_mb / took:>7.1f} "
                    f"{rss[i]:>9.1f} {rss[i] - idle['rss_mib']:>9.1f} {ratio:>6.2f}"
                    f" {statistics.median(cpu[i]):>7.2f} {cpu_ratio:>9.2f}"
                )
                if mode == "ingest":
                    over_time = ratio > TARGETS[fmt]
                    over_rss = rss[i] - idle["rss_mib"] > RSS_BUDGET_MIB
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
