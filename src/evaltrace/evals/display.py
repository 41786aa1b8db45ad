"""Short one-line text of user values, for tables and reasoning; never raises."""

from __future__ import annotations

import json
from typing import Any

from evaltrace._safe_text import safe_repr

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
    text = value if isinstance(value, str) else _json_text(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=safe_repr)
    except (TypeError, ValueError, RecursionError):  # odd keys, cycles, deep nesting
        return safe_repr(value)
