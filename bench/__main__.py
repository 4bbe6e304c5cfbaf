"""``python -m bench``: run the whole suite (see :mod:`bench.run`)."""

from bench.run import main

raise SystemExit(main())
