"""``run``: call evaltrace's async API from sync code, such as a plain pytest test.

evaltrace is async first. Sync code that has no event loop running can drive one call to
completion with :func:`run`; it starts an event loop with :func:`anyio.run` and stops it when
the call returns. Code already inside an event loop (an async test, a Jupyter notebook, an
async web handler) must ``await`` the call: :func:`run` refuses there with
:class:`RunningLoopError` rather than nest a loop or block the running one.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, overload

import anyio

from evaltrace.errors import EvaltraceError

__all__ = ["Pending", "RunningLoopError", "pending", "run"]

T = TypeVar("T")
P = ParamSpec("P")


class RunningLoopError(EvaltraceError, RuntimeError):
    """:func:`evaltrace.run` was called while an event loop is running in this thread."""

    def __init__(self, what: str, library: str) -> None:
        self.what = what
        """A description of the call that was refused."""
        self.library = library
        """The async library whose event loop is running (``"asyncio"`` or ``"trio"``)."""
        super().__init__(
            f"evaltrace.run({what}) was called while an event loop ({library}) is running in "
            "this thread, where it cannot start another loop and must not block the running one. "
            f"Await the call instead: `await {what}` (for example in an async test or a "
            "notebook cell)."
        )


@overload
def run(coro_or_fn: Coroutine[Any, Any, T], /) -> T: ...


@overload
def run(coro_or_fn: Callable[..., Awaitable[T]], /, *args: Any) -> T: ...


def run(coro_or_fn: Coroutine[Any, Any, T] | Callable[..., Awaitable[T]], /, *args: Any) -> T:
    """Run one async evaltrace call to completion from sync code, and return its result.

    Pass either a coroutine (``run(assert_pass(...))``) or an async function and its
    positional arguments (``run(assert_pass, app, inputs, evaluators)``). The call runs in a new
    event loop started with :func:`anyio.run` on the asyncio backend, in a copy of the caller's
    context, so an enclosing ``capture_traces()`` block still captures its spans.

    Args:
        coro_or_fn: A coroutine object, or an async function to call with ``args``.
        *args: Positional arguments for ``coro_or_fn`` when it is a function.

    Returns:
        What the coroutine returned.

    Raises:
        RunningLoopError: An event loop is already running in this thread; ``await`` the call
            instead. A coroutine passed in is closed, so it does not warn that it was never
            awaited.
        TypeError: ``args`` were given with a coroutine object.

    Example:
        >>> async def answer() -> str:
        ...     return "4"
        >>> run(answer())
        '4'
    """
    library = _running_loop_library()
    if isinstance(coro_or_fn, Coroutine):
        coro: Coroutine[Any, Any, T] = coro_or_fn
        if args:
            coro.close()
            raise TypeError(
                "evaltrace.run() takes a coroutine object alone, or an async function and its "
                f"arguments; got a coroutine and {len(args)} more argument(s)"
            )
        if library is not None:
            coro.close()
            raise RunningLoopError(f"{_name_of(coro)}(...)", library)
        return anyio.run(_boxed, coro).value
    fn = coro_or_fn
    if library is not None:
        raise RunningLoopError(f"{_name_of(fn)}(...)", library)
    return anyio.run(_call_boxed, fn, *args).value


class _Box(Generic[T]):
    """The result of the main task, out of sight of ``repr``.

    On Python 3.11, asyncio's runner, restoring its SIGINT handler at the end, formats the
    handler (which holds the main task, and so the task's result) into a message it then
    drops: a result as large as a run of 10,000 entries took seconds to ``repr``.
    """

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(awaitable: Awaitable[T]) -> _Box[T]:
    return _Box(await awaitable)


async def _call_boxed(fn: Callable[..., Awaitable[T]], *args: Any) -> _Box[T]:
    return _Box(await fn(*args))


def _running_loop_library() -> str | None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return "asyncio"
    trio: Any = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_root_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    return None


def _name_of(obj: object) -> str:
    name = getattr(obj, "__qualname__", None)
    return name if isinstance(name, str) else type(obj).__name__


class Pending(Coroutine[Any, Any, T]):
    """The coroutine of a front-door call, which says how to run it when it is used unawaited.

    ``evaltrace.run_and_evaluate(...)`` called from sync code without ``await`` used to hand
    back a bare coroutine, and the next line failed with ``'coroutine' object has no
    attribute 'score'``. A :class:`Pending` is that same coroutine (``await`` it, give it to
    ``asyncio.create_task``, ``gather``, ``evaltrace.run``) and, asked for any other
    attribute, raises an :class:`AttributeError` naming both ways to run the call. Garbage
    collected without having run, it warns the same way.
    """

    __slots__ = ("_coro", "_name", "_started")

    def __init__(self, coro: Coroutine[Any, Any, T], name: str) -> None:
        self._coro = coro
        self._name = name
        self._started = False

    def __await__(self) -> Generator[Any, None, T]:
        self._started = True
        return self._coro.__await__()

    def send(self, value: Any, /) -> Any:
        """Run the call to its next suspension, as a coroutine's ``send`` does."""
        self._started = True
        return self._coro.send(value)

    def throw(
        self,
        typ: Any,
        val: Any = None,
        tb: TracebackType | None = None,
        /,
    ) -> Any:
        """Raise into the call, as a coroutine's ``throw`` does."""
        self._started = True
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        """Close the call without running it on, as a coroutine's ``close`` does."""
        self._started = True
        self._coro.close()

    def __getattr__(self, attribute: str) -> Any:
        raise AttributeError(
            f"{self._name}(...) has not run yet, so its result (and its {attribute!r}) is not "
            f"here: it is async. In async code: `await {self._name}(...)`; in sync code, such as "
            f"a plain pytest test: `evaltrace.run({self._name}(...))`."
        )

    def __repr__(self) -> str:
        return f"<pending {self._name}(...): await it, or evaltrace.run() it from sync code>"

    def __del__(self) -> None:
        if self._started:
            return
        self._coro.close()
        warnings.warn(
            f"{self._name}(...) was never awaited, so it did not run: `await {self._name}(...)` "
            f"in async code, or `evaltrace.run({self._name}(...))` in sync code",
            RuntimeWarning,
            stacklevel=1,
            source=self,
        )


def pending(name: str) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Pending[T]]]:
    """Make an ``async def`` of the front door return a :class:`Pending` named ``name``."""

    def decorate(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Pending[T]]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> Pending[T]:
            return Pending(fn(*args, **kwargs), name)

        return call

    return decorate
