"""The wheel a user installs ships exactly the repository's ``schemas/`` as ``flakecore/schemas``.

Built the way a release is: the sdist first, then a wheel *from that sdist*,
so a schema file the sdist forgot (or a stray ``node_modules`` the checkout
has) cannot hide behind the checkout.  About 10 s: it stays in the default run.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from flakecore import validation

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
#: Not shipped: installed dependencies of the Node.js vector runner (git-ignored).
NOT_SHIPPED = {"node_modules"}


def repository_files() -> dict[str, bytes]:
    files = {}
    for path in sorted(SCHEMAS.rglob("*")):
        relative = path.relative_to(SCHEMAS)
        if path.is_file() and not NOT_SHIPPED & set(relative.parts):
            files[relative.as_posix()] = path.read_bytes()
    return files


def test_the_wheel_from_the_sdist_ships_the_schemas_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    # No --sdist/--wheel flags: build makes the sdist, then the wheel from it.
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    [wheel] = out.glob("flakecore-*.whl")
    prefix = "flakecore/schemas/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name[len(prefix) :]: archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix) and not name.endswith("/")
        }
    expected = repository_files()
    assert sorted(shipped) == sorted(expected)
    for name, data in expected.items():
        assert shipped[name] == data, name
    assert not [name for name in shipped if "node_modules" in name]


def test_the_installed_schemas_are_the_repositorys() -> None:
    """What this test run imports is the same contract the repository states."""
    for kind in validation.schema_names():
        assert validation.schema_bytes(kind) == (SCHEMAS / f"{kind}.v1.json").read_bytes(), kind
