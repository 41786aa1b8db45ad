"""Text of user objects that never raises: the one path for turning app values into strings.

Exceptions and values come from code evaltrace does not control; their ``__str__`` or
``__repr__`` may raise, loop, or return something that is not a string. Every place that
shows such an object (span status, errored evaluations, logs, reports) goes through these
functions, so a hostile object degrades to a marker naming its type instead of breaking the
app or losing a result.

Example:
    >>> class Hostile(Exception):
    ...     def __str__(self) -> str:
    ...         raise RuntimeError("no")
    >>> exception_text(Hostile())
    'Hostile: <unprintable Hostile>'
"""

from __future__ import annotations

import re

__all__ = [
    "exception_message",
    "exception_text",
    "printable",
    "safe_repr",
    "safe_str",
    "type_name",
]


def type_name(value: object) -> str:
    """The name of ``value``'s type (never raises)."""
    try:
        name = type(value).__name__
    except Exception:  # a metaclass with a hostile __getattribute__
        return "object"
    return name if isinstance(name, str) else "object"


def _marker(value: object) -> str:
    return f"<unprintable {type_name(value)}>"


def safe_str(value: object) -> str:
    """``str(value)``, or a marker naming the type when that raises or is not a string.

    Example:
        >>> safe_str(3)
        '3'
    """
    if type(value) is str:
        return value
    try:
        text = str(value)
    except Exception:
        return _marker(value)
    return str.__str__(text) if isinstance(text, str) else _marker(value)


def safe_repr(value: object) -> str:
    """``repr(value)``, or a marker naming the type when that raises.

    Example:
        >>> safe_repr("a")
        "'a'"
    """
    try:
        text = repr(value)
    except Exception:
        return _marker(value)
    return str.__str__(text) if isinstance(text, str) else _marker(value)


def exception_message(exc: BaseException) -> str:
    """The message of ``exc``: its text, else its ``repr``, else a marker; never raises.

    Example:
        >>> exception_message(KeyError("answer"))
        "'answer'"
        >>> exception_message(TimeoutError())
        'TimeoutError()'
    """
    text = safe_str(exc)
    return text if text else safe_repr(exc)


def exception_text(exc: BaseException) -> str:
    """``"Type: message"`` for ``exc``; never raises.

    Example:
        >>> exception_text(ValueError("bad score"))
        'ValueError: bad score'
    """
    return f"{type_name(exc)}: {exception_message(exc)}"


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""Terminal control characters, and the Unicode marks that reorder or break the text around
them (bidirectional embeddings, overrides and isolates, line and paragraph separators)."""


def printable(text: str) -> str:
    r"""Return ``text`` with its terminal control characters shown instead of obeyed.

    Span names, values, reasoning and error messages come from the app, its evaluators or a
    file: an escape sequence in them could clear the screen, move the cursor, retitle the
    window or hide what precedes a carriage return; a bidirectional override (U+202E) makes
    text read in another order than it is. Every C0 control character but newline and tab
    (the output's own layout), DEL, every C1 control character, and the bidirectional and
    separator marks become a ``\u001b``-style escape, which also keeps JSON output valid JSON.

    Example:
        >>> printable("red\x1b[31m")
        'red\\u001b[31m'
        >>> printable("invoice\u202efdp.exe")
        'invoice\\u202efdp.exe'
    """
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
