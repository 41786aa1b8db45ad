"""``python -m evaltrace.cli``."""

import sys

from evaltrace.cli.main import main

sys.exit(main())
