"""``python -m flakecore``: the same CLI as the ``flakecore`` console script."""

from flakecore.cli import console

raise SystemExit(console())
