"""``python -m rackops`` is the same as the ``rackops`` console script."""

import sys

from rackops.cli import main

sys.exit(main())
