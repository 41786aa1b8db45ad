"""The run scope: which capture (and which evaluation inputs) the current code belongs to.

A run scope is carried in a context variable, so it follows ``await``, tasks, and worker
threads started with the context copied (``asyncio.to_thread``, ``anyio.to_thread``,
:func:`propagate`, :class:`ContextThreadPoolExecutor`), and never leaks into unrelated runs.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar

from evaltrace._safe_text import type_name
from evaltrace.errors import MissingEvalInputError

if TYPE_CHECKING:
    from evaltrace.capture.listeners import SpanSink

__all__ = [
    "ContextThreadPoolExecutor",
    "RunScope",
    "ScopeToken",
    "captures_open",
    "close_capture_scope",
    "current_scope",
    "eval_inputs",
    "open_capture_scope",
    "outside_captures",
    "propagate",
]

P = ParamSpec("P")
R = TypeVar("R")


armed = False
"""Whether ``wrap`` values can be seen by anyone: set, for good, when the first run scope is
created or spans start leaving the process (exporters, handlers, the app's own provider).
Until then ``wrap(value, ...)`` returns at once, which keeps idle production code cheap."""


spans_unseen = False
"""Whether a span started now would reach nobody: evaltrace is set up, its spans stay in the
process (no exporter, handler or app-owned provider) and no capture is open, anywhere. A
decorated function then calls the function and does nothing else; reading this one flag is
the whole of that check. Kept by :func:`note_spans_stay` (the runtime: set up, exporters and
handlers added, shut down) and by capture blocks as they open and close."""

_open_captures = 0
_spans_stay = False
_captures_lock = threading.Lock()


def note_spans_stay(stay: bool) -> None:
    """Note whether the spans of the runtime in effect stay in the process (:data:`spans_unseen`).

    ``False`` when there is no runtime (before ``init``, after ``shutdown``), or when spans may
    be seen outside captures (exporters, handlers, the app's own provider).
    """
    global spans_unseen, _spans_stay
    with _captures_lock:
        _spans_stay = stay
        spans_unseen = stay and not _open_captures


def captures_open() -> bool:
    """Whether a capture block is open, in any thread."""
    return _open_captures > 0


def _count_capture(change: int) -> None:
    global spans_unseen, _open_captures
    with _captures_lock:
        _open_captures += change
        spans_unseen = _spans_stay and not _open_captures


IDLE_NAMES: Final[dict[str, set[str]]] = {
    "input": set(),
    "output": set(),
    "state": set(),
    "entry": set(),
}
"""By purpose, the names that ``wrap(value, purpose=..., name=...)`` checked before
:data:`armed`. ``wrap`` finds its name under its purpose and returns at once, with no more
checks to make: a hit says that the arguments are valid and that nobody can see the value.
Emptied for good when armed. Bounded: past :data:`IDLE_NAMES_LIMIT` names under a purpose,
a new name is checked on every call."""

IDLE_NAMES_LIMIT: Final = 4096
"""How many names :data:`IDLE_NAMES` keeps under one purpose."""


def arm() -> None:
    """Note that ``wrap`` values may now be observed (see :data:`armed`)."""
    global armed
    armed = True
    for names in IDLE_NAMES.values():
        names.clear()


def remember_idle(name: str, purpose: str) -> None:
    """Note that ``wrap`` checked ``name`` with ``purpose`` before :data:`armed`."""
    names = IDLE_NAMES[purpose]
    if len(names) < IDLE_NAMES_LIMIT:
        names.add(name)
        if armed:  # another thread armed meanwhile, maybe after this name was checked
            names.clear()


class RunScope:
    """One ``capture_traces()`` block: where its spans and ``wrap`` values go.

    Scopes nest: a span started in an inner scope is delivered to the inner handler and to
    every enclosing one, so an outer capture sees the runs started inside it. A scope that
    has closed lets go of its handler, so code that still runs in its context (a task that
    outlived the block) delivers nothing to it and keeps nothing alive.
    """

    __slots__ = ("_inputs", "_own", "closed", "entry", "handler", "parent", "trace_ids")

    def __init__(
        self,
        handler: SpanSink | None,
        parent: RunScope | None,
        inputs: Mapping[str, Any] | None = None,
        entry: str | None = None,
    ) -> None:
        self.handler = handler
        """The handler receiving this scope's spans; ``None`` for an inputs-only scope and
        once the capture has closed."""
        self.parent = parent
        """The enclosing scope, if any."""
        self._inputs = dict(inputs) if inputs is not None else None
        self.entry = entry
        """A label of the dataset entry being run, used in error messages."""
        self.trace_ids: list[int] = []
        """Traces whose root span started in this scope (while it is open)."""
        self.closed = False
        """Whether this scope's capture block has exited."""
        self._own: tuple[SpanSink, ...] = (handler,) if handler is not None else ()
        if not armed:  # once: the runner opens a scope per entry (bench_runner.py's c=50 figure)
            arm()

    @property
    def chain(self) -> tuple[SpanSink, ...]:
        """The handlers of this scope and of the enclosing scopes still open, innermost first."""
        if self.parent is None:
            return self._own
        return self._own + self.parent.chain

    def open_capture(self) -> RunScope | None:
        """The innermost scope, from this one outwards, whose capture is open."""
        scope: RunScope | None = self
        while scope is not None and scope.handler is None:
            scope = scope.parent
        return scope

    def close(self) -> None:
        """Stop delivering to this scope's handler and let go of it."""
        self.closed = True
        self.handler = None
        self._own = ()

    def injected_inputs(self) -> dict[str, Any] | None:
        """The evaluation inputs that ``wrap(..., purpose="input")`` returns, if any."""
        scope: RunScope | None = self
        while scope is not None:
            if scope._inputs is not None:
                return scope._inputs
            scope = scope.parent
        return None

    def input_value(self, name: str) -> Any:
        """The injected value called ``name``; :class:`MissingEvalInputError` if absent."""
        inputs = self.injected_inputs() or {}
        try:
            return inputs[name]
        except KeyError:
            raise MissingEvalInputError(name, sorted(inputs), self._entry_label()) from None

    def _entry_label(self) -> str | None:
        scope: RunScope | None = self
        while scope is not None:
            if scope.entry is not None:
                return scope.entry
            scope = scope.parent
        return None


_CURRENT: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar(
    "evaltrace_run_scope", default=None
)

current_scope: Final = _CURRENT.get
"""The run scope of the code running now, or ``None`` outside every capture and run."""


class ScopeToken:
    """What :func:`open_capture_scope` returns: the scope it opened and how to undo it."""

    __slots__ = ("scope", "token")

    def __init__(self, scope: RunScope, token: contextvars.Token[RunScope | None]) -> None:
        self.scope = scope
        """The capture's scope."""
        self.token = token
        """Restores the scope that was current before."""


def open_capture_scope(sink: SpanSink) -> ScopeToken:
    """Make a new capture scope delivering to ``sink`` current, inside the current scope."""
    scope = RunScope(sink, _CURRENT.get())
    token = ScopeToken(scope, _CURRENT.set(scope))
    _count_capture(1)
    return token


OUT_OF_ORDER: Final = (
    "a capture_traces() block was exited while a block entered inside it (capture_traces() "
    "or eval_inputs()) is still open; blocks must exit in the reverse order they were "
    "entered, so nest them with `with`. The capture has closed and receives nothing more; "
    "the inner block is unaffected"
)
OTHER_CONTEXT: Final = (
    "a capture_traces() block was exited in another task or thread than the one that "
    "entered it; enter and exit a block in the same task (one `with` or `async with` "
    "statement, not split across tasks, callbacks or fixture set-up and teardown). The "
    "capture has closed and receives nothing more"
)


def close_capture_scope(opened: ScopeToken) -> str | None:
    """Close the capture opened by :func:`open_capture_scope` and restore the enclosing scope.

    The capture closes whatever happens (it receives nothing more and lets go of its sink).

    Returns:
        ``None``, or what was wrong about where it was closed: :data:`OUT_OF_ORDER` (a block
        nested in it is still open here) or :data:`OTHER_CONTEXT` (another task or thread).
    """
    scope = opened.scope
    try:
        return _restore(scope, opened.token)
    finally:
        if not scope.closed:
            _count_capture(-1)
        scope.close()


def _restore(scope: RunScope, token: contextvars.Token[RunScope | None]) -> str | None:
    current = _CURRENT.get()
    if _live(current) is not scope:
        # Either a block nested in this one is still open here, or this is another context.
        outer = current
        while outer is not None and outer is not scope:
            outer = outer.parent
        return OUT_OF_ORDER if outer is scope else OTHER_CONTEXT
    try:
        _CURRENT.reset(token)
    except ValueError:  # the token belongs to another context (a task started in the block)
        return OTHER_CONTEXT
    restored = _CURRENT.get()
    if restored is not None and restored.closed:
        # An enclosing block was exited out of order earlier: skip its closed capture.
        _CURRENT.set(_live(restored))
    return None


def _live(scope: RunScope | None) -> RunScope | None:
    """``scope`` or its innermost enclosing scope whose block has not exited."""
    while scope is not None and scope.closed:
        scope = scope.parent
    return scope


@contextmanager
def enter_scope(scope: RunScope) -> Iterator[RunScope]:
    """Make ``scope`` current for the duration of the block."""
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)


@contextmanager
def outside_captures() -> Iterator[None]:
    """Run the block outside every capture, with no evaluation inputs.

    Spans started inside the block belong to no capture, and ``wrap(..., purpose="input")``
    returns the real value. Judges use it so that their own calls never land in the run they
    judge.

    Example:
        >>> with outside_captures():
        ...     pass
    """
    # An empty scope, not None: a span started with no scope current would be reported as
    # one that escaped a capture.
    with enter_scope(RunScope(None, None)):
        yield


@contextmanager
def eval_inputs(values: Mapping[str, Any], *, entry: str | None = None) -> Iterator[None]:
    """Serve ``wrap(..., purpose="input", name=n)`` from ``values`` inside the block.

    Inside the block, ``wrap(value, purpose="input", name=n)`` returns ``values[n]`` instead of
    ``value``, and ``wrap(fetch, purpose="input", name=n)`` returns a callable that returns
    ``values[n]`` without ever calling ``fetch``. A name not in ``values`` raises
    :class:`~evaltrace.errors.MissingEvalInputError` naming it and the names available.

    Args:
        values: The inputs by name.
        entry: A label of the entry being run, quoted in errors.

    Example:
        >>> from evaltrace import wrap
        >>> with eval_inputs({"question": "What is 2+2?"}):
        ...     wrap("live question", purpose="input", name="question")
        'What is 2+2?'
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"eval_inputs() takes a mapping of name to value, got {type(values)!r}")
    parent = _CURRENT.get()
    with enter_scope(RunScope(None, parent, inputs=values, entry=entry)):
        yield


def propagate(fn: Callable[P, R]) -> Callable[P, R]:
    """Bind ``fn`` to the caller's context, for running it in another thread.

    Spans started by ``fn`` then belong to the caller's capture, wherever ``fn`` runs.
    Each call runs in its own copy of the captured context, so the result may be called
    from several threads at once.

    Raises:
        TypeError: ``fn`` is not callable.

    Example:
        >>> import threading
        >>> def work() -> None: ...
        >>> threading.Thread(target=propagate(work)).start()
    """
    if not callable(fn):
        raise TypeError(
            f"propagate(fn) takes a callable (the function the thread will run), got "
            f"{type_name(fn)}; pass the function itself, e.g. propagate(work), not work()"
        )
    context = contextvars.copy_context()

    @functools.wraps(fn)
    def run_in_context(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.copy().run(fn, *args, **kwargs)

    return run_in_context


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A thread pool whose tasks run in a copy of the submitter's context.

    Use it in place of :class:`~concurrent.futures.ThreadPoolExecutor` so that spans started
    by the tasks belong to the capture that submitted them.
    """

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        """Schedule ``fn(*args, **kwargs)`` in a copy of the current context."""
        context = contextvars.copy_context()
        return super().submit(context.run, fn, *args, **kwargs)
