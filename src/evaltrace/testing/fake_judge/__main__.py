"""``python -m evaltrace.testing.fake_judge``: the fake judge as ``evaltrace fake-llm`` runs it.

It prints its base URL on one line of standard output, then serves until SIGINT or SIGTERM
(exit code 0). A rules file that cannot be read, or a port that cannot be listened on, is
reported on standard error with exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evaltrace.errors import ConfigurationError
from evaltrace.testing.fake_judge.foreground import serve_in_foreground
from evaltrace.testing.fake_judge.rules_file import RulesFileError, read_rules
from evaltrace.testing.fake_judge.server import FakeJudgeServer

_USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fake judge until it is stopped; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m evaltrace.testing.fake_judge",
        description="An OpenAI-compatible model server on 127.0.0.1 that answers by rules.",
    )
    parser.add_argument("--rules", metavar="FILE", help="a rules file (YAML, or JSON)")
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="the port to listen on (0: a free one)"
    )
    options = parser.parse_args(argv)
    try:
        judge = FakeJudgeServer(port=options.port)
        if options.rules is not None:
            judge.add_rules(read_rules(options.rules))
        serve_in_foreground(judge, announce=lambda url: print(url, flush=True))
    except (RulesFileError, ConfigurationError) as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return _USAGE_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
