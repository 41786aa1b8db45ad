"""``python -m evaltrace``: the ``evaltrace`` command, for when its script is not on PATH."""

import sys

from evaltrace.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
