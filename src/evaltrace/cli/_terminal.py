"""Writing trace content, which nobody vetted, to a terminal."""

from __future__ import annotations

import os
import re
import sys

__all__ = ["CLOSED_PIPE", "printable", "silence_stdout"]

CLOSED_PIPE = 141
"""The exit code after the reader of our output went away: 128 + SIGPIPE, as the shell reports
for a command that a closed pipe ended (``cat big | head -1``)."""

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""Return ``text`` with its terminal control characters shown instead of obeyed.

    Span names, values and error messages come from the app or from a file: an escape sequence
    in them could clear the screen, move the cursor, retitle the window or hide what precedes a
    carriage return. Every C0 control character but newline and tab (the output's own layout),
    DEL and every C1 control character become a ``\u001b``-style escape, which also keeps JSON
    output valid JSON.

    Example:
        >>> printable("red\x1b[31m")
        'red\\u001b[31m'
    """
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


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
