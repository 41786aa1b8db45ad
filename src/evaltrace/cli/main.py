"""``evaltrace``: the command line entry point and its group of commands.

Each command lives in its own module: ``test``, ``dataset`` (``create``, ``list``,
``validate``, ``schema``, ``save``), ``trace``, ``report``, ``diff``, ``history``, ``merge``,
``outcomes``, ``config``, ``cache`` (``path``, ``stats``, ``clear``), ``serve``, ``fake_llm``
(``fake-llm``), ``demo``.
A command returns its exit code: 0 success, 1 something failed (an entry, a trace), 2 bad
usage or an invalid dataset (the problems, never a traceback), 130 interrupted by Ctrl-C, 141
when the reader of the output went away.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click

from evaltrace.cli._terminal import (
    CLOSED_PIPE,
    INTERRUPTED,
    USAGE_ERROR,
    printable,
    silence_stdout,
)
from evaltrace.cli.cache import cache
from evaltrace.cli.config import config
from evaltrace.cli.dataset import dataset
from evaltrace.cli.demo import demo
from evaltrace.cli.diff import diff
from evaltrace.cli.fake_llm import fake_llm
from evaltrace.cli.history import history
from evaltrace.cli.merge import merge
from evaltrace.cli.outcomes import outcomes
from evaltrace.cli.report import report
from evaltrace.cli.serve import serve
from evaltrace.cli.test import test
from evaltrace.cli.trace import trace
from evaltrace.errors import EvaltraceError
from evaltrace.version import version

__all__ = ["evaltrace", "main"]


class _ClosedPipe(Exception):
    """The reader of standard output went away while a command wrote to it."""


class _Commands(click.Group):
    """The group of commands; a closed pipe ends a command with :data:`CLOSED_PIPE`."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # Raised past click as another exception: click would exit 1 on a closed pipe.
            raise _ClosedPipe from None


@click.group(
    name="evaltrace",
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(version(), "--version", prog_name="evaltrace", message="%(prog)s %(version)s")
def evaltrace() -> None:
    """Trace capture and evaluation for LLM applications."""


for _command in (
    test,
    dataset,
    trace,
    report,
    diff,
    history,
    merge,
    outcomes,
    config,
    cache,
    serve,
    fake_llm,
    demo,
):
    evaltrace.add_command(_command)


def _current_folder_on_path() -> None:
    """Put the current folder first on ``sys.path``, as ``python -m`` does.

    ``package.module:name`` references in datasets then find the project's packages, which a
    console script (whose ``sys.path`` starts with its own folder) would not.
    """
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``evaltrace`` command; returns the exit code.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
    """
    _current_folder_on_path()
    try:
        try:
            code = evaltrace.main(
                args=list(argv) if argv is not None else None,
                prog_name="evaltrace",
                standalone_mode=False,
            )
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
        except click.Abort:
            code = INTERRUPTED
        except EvaltraceError as exc:  # a failure evaltrace explains: its message, no traceback
            print(printable(f"evaltrace: {exc}"), file=sys.stderr)
            code = 1
        sys.stdout.flush()
    except (BrokenPipeError, _ClosedPipe):
        silence_stdout()
        return CLOSED_PIPE
    if isinstance(code, bool) or not isinstance(code, int):
        return 0
    return code if code >= 0 else USAGE_ERROR
