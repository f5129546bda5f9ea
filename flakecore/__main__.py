"""``python -m flakecore``: the same CLI as the ``flakecore`` console script."""

from flakecore.cli import main

raise SystemExit(main())
