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
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Final, TypeAlias, TypeVar

import anyio
import anyio.lowlevel
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
        try:
            while True:
                try:
                    job = self._jobs.get(timeout=_IDLE_SECONDS)
                except queue.Empty:
                    if self._idle.acquire(blocking=False):
                        return  # idle and unclaimed: retire
                    continue  # a submitter claimed this worker: its job is on the way
                job()
                self._idle.release()
        finally:
            loop: asyncio.AbstractEventLoop | None = getattr(_thread, "loop", None)
            if loop is not None and not loop.is_closed():
                loop.close()


_workers = _DaemonWorkers()
_thread = threading.local()
"""Each worker thread's own event loop (``loop``), made for its first call."""


def _set_thread_loop() -> None:
    """Set the worker thread's own event loop as its current one (made when first needed).

    Set again for each call: ``asyncio.run()`` in a call unsets it when it ends.
    """
    loop: asyncio.AbstractEventLoop | None = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread.loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)


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


_Call: TypeAlias = tuple[contextvars.Context, Callable[[], Any], "asyncio.Future[Any]"]
_Done: TypeAlias = tuple["asyncio.Future[Any]", Any, BaseException | None]


class _Hop:
    """One event loop's calls to worker threads, handed over and given back in batches.

    The calls an event loop makes in one pass wait in :attr:`pending`; at the end of the pass
    one thread is asked to take them, and it takes one call after another, as long as calls
    wait. The results go back the same way: a thread hands what finished to the loop once for
    all the results it finds waiting. So a stream of quick calls costs one wake of a thread and
    one wake of the loop per batch, not per call; bench/README.md (``bench_stored.py``) needs
    it. Calls that block (a sync judge waiting on the network) must still run side by side:
    when calls wait while every thread taking them is stuck in one for
    :data:`_SPREAD_SECONDS`, each waiting call gets a thread of its own.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Not the loop itself: the hop is kept by a weak mapping whose key is the loop.
        self._loop = weakref.ref(loop)
        self.pending: deque[_Call] = deque()
        """Calls no thread has taken yet."""
        self.lock = threading.Lock()
        self.done: list[_Done] = []
        """Results the loop has not been given yet."""
        self.settling = False  # a hand-back of ``done`` is scheduled on the loop
        self.handing = False  # a hand-over of ``pending`` is scheduled on the loop
        self.takers = 0  # threads taking calls from ``pending``
        self.calling = 0  # of those, the ones inside a call now
        self.finished = 0  # calls finished so far
        self.watched: int | None = None  # ``finished`` at the last look, while watching

    def add(self, call: _Call, loop: asyncio.AbstractEventLoop) -> None:
        """Queue ``call`` (from ``loop``); it is handed over at the end of the loop's pass."""
        with self.lock:
            self.pending.append(call)
        if not self.handing:
            self.handing = True
            loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        self.handing = False
        with self.lock:
            if not self.pending:
                return
            start = self.takers == 0
            if start:
                self.takers = 1
        if start:
            _workers.submit(self._take)
        if self.watched is None:
            self.watched = self.finished
            asyncio.get_running_loop().call_later(_SPREAD_SECONDS, self._watch)

    def _watch(self) -> None:
        """Give each waiting call a thread when every taker is stuck in a call.

        Stuck: inside a call, and no call finished since the last look. A thread that has not
        started yet (on a busy machine) is not stuck: more threads would wait as it does.
        """
        with self.lock:
            if not self.pending:
                self.watched = None
                return
            stuck = self.calling == self.takers and self.finished == self.watched
            more = len(self.pending) if stuck else 0
            self.takers += more
            self.watched = self.finished
        for _ in range(more):
            _workers.submit(self._take)
        asyncio.get_running_loop().call_later(_SPREAD_SECONDS, self._watch)

    def _take(self) -> None:
        """In a worker thread: run waiting calls until there are none."""
        while True:
            with self.lock:
                if not self.pending:
                    self.takers -= 1
                    return
                context, func, future = self.pending.popleft()
                self.calling += 1
            _set_thread_loop()
            result: Any = None
            error: BaseException | None = None
            try:
                result = context.run(_call, func)
            except BaseException as exc:  # handed to the awaiting task, raised there
                error = exc
            with self.lock:
                self.calling -= 1
                self.finished += 1
                self.done.append((future, result, error))
                wake = not self.settling
                self.settling = True
            loop = self._loop()
            if wake and loop is not None:
                try:
                    loop.call_soon_threadsafe(self._settle)
                except RuntimeError:  # the loop has closed: nobody waits for these results
                    pass

    def _settle(self) -> None:
        with self.lock:
            done, self.done = self.done, []
            self.settling = False
        for future, result, error in done:
            if future.done():  # the caller stopped waiting (timeout or cancellation)
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)


_SPREAD_SECONDS: Final = 0.01
"""How long calls wait behind threads that are all stuck in a call before each gets its own."""

_hops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hop] = weakref.WeakKeyDictionary()


def _hop(loop: asyncio.AbstractEventLoop) -> _Hop:
    hop = _hops.get(loop)
    if hop is None:
        hop = _hops[loop] = _Hop(loop)
    return hop


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
    await anyio.lowlevel.checkpoint_if_cancelled()
    limiter = anyio.to_thread.current_default_thread_limiter()
    try:
        limiter.acquire_nowait()  # no trip through the event loop when a token is free
    except anyio.WouldBlock:
        await limiter.acquire()
    try:
        future: asyncio.Future[T] = loop.create_future()
        _hop(loop).add((context, func, future), loop)
        return await future
    finally:
        limiter.release()
