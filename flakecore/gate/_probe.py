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
use: the interpreter that runs this is the command's, not flakecore's.  It
imports neither ``typing`` nor, where the C encoder is there, ``json`` (and
with it ``re``): both cost more than the rest of the probe.
"""

from __future__ import annotations

import site
import sys

TYPE_CHECKING = False  # typing is an import this process does not pay for
if TYPE_CHECKING:
    from typing import Any
try:  # the C encoder json.dumps uses, without importing json
    from _json import encode_basestring_ascii
except ImportError:  # an interpreter without it: json's own  # pragma: no cover
    from json.encoder import encode_basestring_ascii


def dumps(value: Any) -> str:
    """``json.dumps(value)`` for what the probe writes (text, ints, bools, None, lists, dicts)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return str(encode_basestring_ascii(value))
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(dumps, value)) + "]"
    pairs = (f"{encode_basestring_ascii(k)}: {dumps(v)}" for k, v in value.items())
    return "{" + ", ".join(pairs) + "}"


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
        fh.write(dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
