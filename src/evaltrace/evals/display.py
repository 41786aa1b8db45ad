"""Short one-line text of user values, for tables and reasoning; never raises."""

from __future__ import annotations

from typing import Any

from evaltrace.capture.codec import json_text

__all__ = ["short_text"]


def short_text(value: Any, width: int) -> str:
    """``value`` as one line of at most ``width`` characters.

    Strings are shown as they are, other values as JSON (``repr`` for what JSON cannot
    show); whitespace runs become one space, and a cut is marked with ``…``. A value whose
    ``repr`` raises shows as ``<unprintable TYPE>``.

    Example:
        >>> short_text({"answer": "Paris is the capital of France"}, 20)
        '{"answer": "Paris i…'
    """
    text = value if isinstance(value, str) else json_text(value, spaced=True)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
