"""Telling a cancellation of the run from a stray ``CancelledError``.

A ``CancelledError`` that reaches evaltrace from an evaluator or a runnable means one of two
things. Either the run itself is being cancelled (the caller's task was cancelled, or an
enclosing cancel scope was), and then it must propagate at once. Or some library cancelled a
future it awaited and let the exception escape although nobody cancelled the run; then it is
an error of that evaluator or runnable like any other, reported as data. Letting a stray one
propagate would end the task that scores a row, leaving the row without evaluations.

The two are told apart by the state of the task, not by the exception: the run is cancelled
when an enclosing anyio cancel scope has been cancelled, or (on asyncio) when the task has a
cancellation request pending.
"""

from __future__ import annotations

import asyncio
import math

import anyio

from evaltrace.errors import EvaltraceError

__all__ = ["StrayCancellationError", "is_stray_cancellation", "run_is_cancelled"]


class StrayCancellationError(EvaltraceError, RuntimeError):
    """An evaluator or runnable raised ``CancelledError`` although the run was not cancelled.

    The original exception is its ``__cause__``.
    """

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} raised CancelledError although the run was not cancelled (a library it "
            "awaits may have cancelled one of its own futures); it is reported as an error"
        )


def run_is_cancelled() -> bool:
    """Whether the current task is being cancelled, by a cancel scope or ``Task.cancel()``."""
    if anyio.current_effective_deadline() == -math.inf:
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:  # another event loop than asyncio's (trio)
        return False
    return task is not None and task.cancelling() > 0


def is_stray_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is a cancellation exception raised while the run is not cancelled.

    Call it in the task that caught ``exc``, right where it was caught.
    """
    if not isinstance(exc, asyncio.CancelledError | anyio.get_cancelled_exc_class()):
        return False
    return not run_is_cancelled()
