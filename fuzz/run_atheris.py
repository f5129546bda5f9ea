"""Run one harness under atheris: ``python fuzz/run_atheris.py NAME [libFuzzer flags] [CORPUS...]``.

``nox -s fuzz`` runs every harness for a fixed time budget; a finding is a
crash file written by libFuzzer and a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

# Only the tests folder (where the harnesses live) joins the path: flakecore
# itself must come from the installed wheel, never the source tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

with atheris.instrument_imports():
    from fuzz_harnesses import HARNESSES

    import flakecore  # noqa: F401 - instrumented for coverage feedback


def main() -> None:
    """Pick the harness named by the first argument and hand the rest to libFuzzer."""
    if len(sys.argv) < 2 or sys.argv[1] not in HARNESSES:
        sys.exit(f"usage: run_atheris.py {{{','.join(HARNESSES)}}} [libFuzzer flags]")
    name = sys.argv.pop(1)
    atheris.Setup(sys.argv, HARNESSES[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
