"""Argument checks shared by every floor: timeouts, counts and thresholds.

Each check returns the value it accepted and raises ``ValueError`` naming the argument and
the value it got, so callers validate in one line.

Example:
    >>> check_timeout(2)
    2.0
    >>> check_count(8, "concurrency")
    8
"""

from __future__ import annotations

import math

from evaltrace._safe_text import safe_repr

__all__ = ["check_count", "check_threshold", "check_timeout"]


def check_timeout(timeout: object, what: str = "timeout") -> float | None:
    """Validate an optional timeout in seconds: ``None`` or a positive finite number.

    Raises:
        ValueError: Naming ``what`` and the value given.
    """
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"{what} must be a positive number of seconds, got {safe_repr(timeout)}")
    return float(timeout)


def check_count(value: object, what: str) -> int:
    """Validate a whole number ``>= 1`` (a concurrency, a number of runs, ...).

    Raises:
        ValueError: Naming ``what`` and the value given.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {safe_repr(value)}")
    return value


def check_threshold(value: object, what: str = "threshold") -> float:
    """Validate a score threshold: a number in [0, 1].

    Raises:
        ValueError: Naming ``what`` and the value given.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise ValueError(f"{what} must be a number in [0, 1], got {safe_repr(value)}")
    return float(value)
