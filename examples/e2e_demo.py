"""The main job, end to end: the four policies, then a red CI run taken to a green merge.

It first runs ``demo.py`` (all four policies on the sample packets), then
``tutorial.py``, which runs docs/tutorial.md for real in a temporary
directory: a throwaway git repository with a real pytest suite using the
flakecore plugin, whose base already has a seeded flake, and a patch that
adds a regression.  The patch's CI run goes red, and one ``flakecore
triage`` decides both red tests: the pre-existing flake is accepted (its
lease proposed), the regression is refused.  A reviewer lands the lease on
base in its own commit, the plugin tolerates the flake on the next run
(naming the lease) while the regression still fails, and once the patch is
fixed the run is green and merges.

It exits 1 if any decision or exit code differs from what the tutorial
says.  Needs git and pytest on the machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """Run the policy demo, then the tutorial; 1 if anything differs."""
    print("== the four policies on the sample packets (examples/demo.py)", flush=True)
    policies = subprocess.run([sys.executable, str(HERE / "demo.py")], check=False)
    print("\n== from a red CI run to a green merge with a lease (docs/tutorial.md)", flush=True)
    tutorial = subprocess.run([sys.executable, str(HERE / "tutorial.py")], check=False)
    wrong = (policies.returncode != 0) + (tutorial.returncode != 0)
    print(f"\n{'all decisions as expected' if not wrong else 'something differs: see above'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
