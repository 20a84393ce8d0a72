"""``python -m corral``: the same program as the ``corral`` command."""

import sys

from corral.cli import main

sys.exit(main())
