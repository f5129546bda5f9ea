"""Deterministic N-testcase reports in each adapter format, shaped like real ones.

Why shaped like real ones: a benchmark of empty ``<testcase/>`` lines would
measure only per-record overhead; real reports carry failures with
tracebacks, skips, captured output.  The mix here: 2% failures with a
~400-byte traceback, 1% skips, 0.2% with captured output, the rest passes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FORMATS", "generate"]

FORMATS = ("junit", "pytest-json", "tap")

_TRACE = (
    "tests/pkg/test_mod.py:{line}: in test_case\n"
    "    assert compute({i}) == expected\n"
    "E   AssertionError: assert {i} == {j}\n"
    "E    +  where {i} = compute({i})\n"
) * 3


def _kind(i: int) -> str:
    if i % 50 == 7:
        return "fail"
    if i % 100 == 3:
        return "skip"
    if i % 500 == 11:
        return "out"
    return "pass"


def _names(i: int) -> tuple[str, str]:
    return f"tests.pkg.test_mod{i % 200}.TestClass{i % 7}", f"test_case_{i}[param-{i % 13}]"


def _junit(n: int) -> Iterator[str]:
    yield '<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="bench">\n'
    per_suite = 1000
    for start in range(0, n, per_suite):
        yield f'<testsuite name="suite{start // per_suite}" tests="{per_suite}" failures="0">\n'
        for i in range(start, min(n, start + per_suite)):
            cls, name = _names(i)
            head = f'  <testcase classname="{cls}" name="{name}" time="0.{i % 1000:03d}"'
            kind = _kind(i)
            if kind == "pass":
                yield head + "/>\n"
            elif kind == "fail":
                trace = _TRACE.format(line=i % 300, i=i, j=i + 1).replace("<", "&lt;")
                yield (
                    f'{head}>\n    <failure message="AssertionError: assert {i} == {i + 1}">'
                    f"{trace}</failure>\n  </testcase>\n"
                )
            elif kind == "skip":
                skipped = '<skipped type="pytest.skip" message="not here"/>'
                yield f"{head}>\n    {skipped}\n  </testcase>\n"
            else:
                out = "captured output line " * 10
                yield f"{head}>\n    <system-out>{out}</system-out>\n  </testcase>\n"
        yield "</testsuite>\n"
    yield "</testsuites>\n"


def _pytest_json(n: int) -> Iterator[str]:
    yield json.dumps({"created": 1.0, "duration": 2.0, "exitcode": 1, "root": "/r"})[:-1]
    yield f', "environment": {{}}, "summary": {{"total": {n}}}, "collectors": [], "tests": ['

    for i in range(n):
        cls, name = _names(i)
        nodeid = f"{cls.replace('.', '/')}.py::{name}"
        test: dict[str, object] = {
            "nodeid": nodeid,
            "lineno": i % 400,
            "outcome": "passed",
            "keywords": [name, cls.rsplit(".", 1)[-1], "tests", ""],
            "setup": {"duration": 0.0001, "outcome": "passed"},
            "call": {"duration": 0.001 * (i % 100), "outcome": "passed"},
            "teardown": {"duration": 0.0001, "outcome": "passed"},
        }
        kind = _kind(i)
        if kind == "fail":
            test["outcome"] = "failed"
            test["call"] = {
                "duration": 0.01,
                "outcome": "failed",
                "crash": {"path": "/r/x.py", "lineno": 3, "message": f"assert {i} == {i + 1}"},
                "longrepr": _TRACE.format(line=i % 300, i=i, j=i + 1),
            }
        elif kind == "skip":
            test["outcome"] = "skipped"
            test["setup"] = {"duration": 0.0001, "outcome": "skipped", "longrepr": "skip: not here"}
            del test["call"]
        elif kind == "out":
            test["call"] = {"duration": 0.01, "outcome": "passed", "stdout": "captured " * 20}
        yield (", " if i else "") + json.dumps(test)
    yield "]}\n"


def _tap(n: int) -> Iterator[str]:
    yield f"TAP version 14\n1..{n}\n"
    for i in range(n):
        number = i + 1
        cls, name = _names(i)
        desc = f"{cls} {name}"
        kind = _kind(i)
        if kind == "fail":
            trace = _TRACE.format(line=i % 300, i=i, j=i + 1).replace("\n", "\n    ")
            yield (
                f"not ok {number} - {desc}\n  ---\n  duration_ms: 1.5\n  message: |\n"
                f"    {trace}\n  ...\n"
            )
        elif kind == "skip":
            yield f"ok {number} - {desc} # SKIP not here\n"
        elif kind == "out":
            yield f"ok {number} - {desc}\n# captured output line\n# captured output line\n"
        else:
            yield f"ok {number} - {desc}\n"


_MAKERS = {"junit": _junit, "pytest-json": _pytest_json, "tap": _tap}
_SUFFIX = {"junit": "xml", "pytest-json": "json", "tap": "tap"}


def generate(fmt: str, n: int, directory: Path) -> Path:
    """Write (or reuse) the ``fmt`` report with ``n`` testcases under ``directory``."""
    path = directory / f"bench-{n}.{_SUFFIX[fmt]}"
    if path.exists():
        return path
    partial = path.with_suffix(".part")
    with partial.open("w", encoding="utf-8") as out:
        batch: list[str] = []
        for piece in _MAKERS[fmt](n):
            batch.append(piece)
            if len(batch) >= 4096:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))
    partial.replace(path)
    return path


def main() -> None:
    """``python bench/generate.py --testcases N --out DIR [FORMAT...]``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--testcases", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("formats", nargs="*", default=list(FORMATS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for fmt in args.formats:
        print(generate(fmt, args.testcases, args.out))


if __name__ == "__main__":
    main()
