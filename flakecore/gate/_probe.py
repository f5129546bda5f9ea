"""Where a Python interpreter would look for code, found without running any of it.

flakecore runs this file as ``INTERPRETER -I -S _probe.py OUT`` before a base
replay: isolated (no ``PYTHON*`` variables, no user site, no script
directory) and without ``site``, so no ``.pth`` line, ``sitecustomize`` or
path from the checkout can run here.  It then lets ``site.main()`` compute
the site directories exactly as that interpreter would at start-up, with the
three steps that would execute code (``.pth`` files, ``sitecustomize``,
``usercustomize``) replaced by no-ops, and writes what it found to ``OUT``
as JSON.  flakecore reads the ``.pth`` files and finders itself (see
:mod:`flakecore.gate.isolation`).

Standard library only, and plain enough for any Python 3 the replay might
use: the interpreter that runs this is the command's, not flakecore's.
"""

from __future__ import annotations

import json
import site
import sys
from typing import Any


def main(out: str) -> int:
    """Write the interpreter's site directories (and what decides the user site) to ``out``."""
    dirs: list[str] = []
    state = {"venv_allows_user_site": True}
    add_site_dir = site.addsitedir
    venv = site.venv

    def record_site_dir(sitedir: str, known_paths: Any = None) -> Any:
        if sitedir not in dirs:
            dirs.append(sitedir)
        return add_site_dir(sitedir, known_paths)

    def record_venv(known_paths: Any) -> Any:
        result = venv(known_paths)
        state["venv_allows_user_site"] = site.ENABLE_USER_SITE is not False
        return result

    site.addsitedir = record_site_dir
    site.addpackage = lambda sitedir, name, known_paths: known_paths
    site.execsitecustomize = lambda: None
    site.execusercustomize = lambda: None
    site.venv = record_venv
    site.main()
    found = {
        "executable": sys.executable,
        "version": list(sys.version_info[:3]),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "site_dirs": dirs,
        "venv_allows_user_site": state["venv_allows_user_site"],
        "user_site": site.getusersitepackages(),
        "path": [p for p in sys.path if isinstance(p, str)],
    }
    with open(out, "w") as fh:
        json.dump(found, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
