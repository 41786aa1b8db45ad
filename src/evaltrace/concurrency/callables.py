"""Telling async callables from sync ones: functions, partials and callable objects."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["is_async_callable"]


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (functions, partials and callable objects).

    Example:
        >>> async def answer() -> str:
        ...     return "4"
        >>> is_async_callable(functools.partial(answer)), is_async_callable(len)
        (True, False)
    """
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn):
        return inspect.iscoroutinefunction(fn)
    if not callable(fn):  # calling it fails later, where the failure is reported
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)
