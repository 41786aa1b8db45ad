"""Writing to the terminal: user content escaped, errors with their exit code, closed pipes.

Span names, values, reasoning, error messages and file contents come from the app or from a
file nobody vetted; everything printed goes through :func:`printable`, so that an escape
sequence in them is shown rather than obeyed.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Final

import click

from evaltrace._safe_text import printable

__all__ = [
    "CLOSED_PIPE",
    "INTERRUPTED",
    "USAGE_ERROR",
    "CommandError",
    "err",
    "out",
    "printable",
    "silence_stdout",
]

USAGE_ERROR: Final = 2
"""The exit code of bad usage or an invalid dataset (nothing ran)."""
INTERRUPTED: Final = 130
"""The exit code after Ctrl-C: 128 + SIGINT, as the shell reports it."""
CLOSED_PIPE: Final = 141
"""The exit code after the reader of our output went away: 128 + SIGPIPE, as the shell reports
for a command that a closed pipe ended (``cat big | head -1``)."""


class CommandError(click.ClickException):
    """A command cannot do what it was asked (bad usage, an invalid dataset); exit code 2.

    Args:
        message: What is wrong and how to fix it; printed to standard error.
    """

    exit_code = USAGE_ERROR

    def show(self, file: IO[str] | None = None) -> None:
        """Print ``evaltrace COMMAND: message`` to standard error."""
        context = click.get_current_context(silent=True)
        name = context.command_path if context is not None else "evaltrace"
        print(printable(f"{name}: {self.format_message()}"), file=file or sys.stderr)


def out(text: str) -> None:
    """Print ``text`` to standard output, its control characters escaped."""
    print(printable(text))


def err(text: str) -> None:
    """Print ``text`` to standard error, its control characters escaped."""
    print(printable(text), file=sys.stderr)


def silence_stdout() -> None:
    """Point standard output at the null device, so that flushing it at exit cannot fail.

    Called once the reader of a pipe has gone away; Python would otherwise report the
    ``BrokenPipeError`` of its final flush as "Exception ignored".
    """
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a stream without a descriptor
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)
