"""Worker threads for sync evaluators and runnables that never keep the process alive.

A sync evaluator or runnable that outlives its timeout cannot be stopped: it is abandoned and
its thread runs on. anyio's worker threads are not daemon threads, so one abandoned in a
``time.sleep(3600)`` would hold up interpreter exit for an hour. On asyncio the call runs in
one of evaltrace's own daemon worker threads instead; they are reused while busy and retire
after some idle seconds. Threads in use count against anyio's default thread limiter, as
anyio's own workers do, and an abandoned call stops counting. On other event loops (trio, whose
worker threads are daemon threads already) the call goes to ``anyio.to_thread.run_sync``.

Each of evaltrace's worker threads has an event loop of its own set as the thread's current
loop (not running), so sync code that calls ``asyncio.get_event_loop()`` and
``run_until_complete`` works there as it does in a main thread; ``asyncio.run`` works too.
A ``StopIteration`` the call raises is raised as :class:`~evaltrace.errors.StopIterationError`
(asyncio cannot hand a ``StopIteration`` to the awaiting task).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from evaltrace._safe_text import exception_message
from evaltrace.errors import StopIterationError

__all__ = ["run_in_worker_thread"]

T = TypeVar("T")

_IDLE_SECONDS: Final = 10.0
"""How long an idle worker waits for another call before it retires."""


class _DaemonWorkers:
    """A pool of daemon threads that run submitted jobs, growing when all are busy."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        # One permit per idle worker that no submitted job has claimed yet.
        self._idle = threading.Semaphore(0)

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)
        if not self._idle.acquire(blocking=False):
            threading.Thread(target=self._work, name="evaltrace-worker", daemon=True).start()

    def _work(self) -> None:
        loop: asyncio.AbstractEventLoop | None = None
        try:
            while True:
                try:
                    job = self._jobs.get(timeout=_IDLE_SECONDS)
                except queue.Empty:
                    if self._idle.acquire(blocking=False):
                        return  # idle and unclaimed: retire
                    continue  # a submitter claimed this worker: its job is on the way
                if loop is None or loop.is_closed():
                    loop = asyncio.new_event_loop()
                # Set again for each job: asyncio.run() in a job unsets it when it ends.
                asyncio.set_event_loop(loop)
                job()
                self._idle.release()
        finally:
            if loop is not None and not loop.is_closed():
                loop.close()


_workers = _DaemonWorkers()


def _call(func: Callable[[], T]) -> T:
    """``func()``, with a ``StopIteration`` it raises turned into a :class:`StopIterationError`."""
    try:
        return func()
    except StopIteration as exc:
        value = f" ({exception_message(exc)})" if exc.args else ""
        raise StopIterationError(
            f"the call raised StopIteration{value}, as next() does on an empty iterator; "
            "catch it, or give next() a default"
        ) from exc


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller stopped waiting (timeout or cancellation)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def run_in_worker_thread(func: Callable[[], T]) -> T:
    """Run ``func()`` in a worker thread, in a copy of the caller's context, and await it.

    Cancelling the wait (a timeout, a cancelled run) abandons the call: the thread runs on,
    and its result is dropped. The thread is a daemon thread, so an abandoned call never
    delays interpreter exit.

    Args:
        func: The blocking call.

    Returns:
        What ``func`` returned; what it raised is raised here.
    """
    context = contextvars.copy_context()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # trio: its worker threads are daemon threads already
        return await anyio.to_thread.run_sync(context.run, _call, func, abandon_on_cancel=True)
    async with anyio.to_thread.current_default_thread_limiter():
        future: asyncio.Future[T] = loop.create_future()

        def job() -> None:
            result: Any = None
            error: BaseException | None = None
            try:
                result = context.run(_call, func)
            except BaseException as exc:  # handed to the awaiting task, raised there
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the loop has closed: nobody waits for this result
                return

        _workers.submit(job)
        return await future
