"""Async helpers every floor may use: worker threads, telling cancellations apart, ``run``.

evaltrace is async first; sync callables are welcome. :func:`run_in_worker_thread` runs a
sync call in a daemon worker thread with the caller's context (and an event loop of the
thread's own, for old sync code that asks for one); :func:`is_stray_cancellation` tells a
cancellation of the run from a ``CancelledError`` a library let escape; :func:`run` drives one
async call from sync code, and :func:`pending` makes a front-door call used unawaited say
how to run it.
"""

from evaltrace.concurrency.callables import is_async_callable
from evaltrace.concurrency.cancellation import (
    StrayCancellationError,
    is_stray_cancellation,
    run_is_cancelled,
)
from evaltrace.concurrency.sync import Pending, RunningLoopError, pending, run
from evaltrace.concurrency.threads import run_in_worker_thread

__all__ = [
    "Pending",
    "RunningLoopError",
    "StrayCancellationError",
    "is_async_callable",
    "is_stray_cancellation",
    "pending",
    "run",
    "run_in_worker_thread",
    "run_is_cancelled",
]
