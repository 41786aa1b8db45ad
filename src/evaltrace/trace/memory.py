"""In-memory captures: :func:`capture_traces` and the :class:`MemoryTraceHandler` it yields.

A capture receives only the runs started inside its block (the capture floor routes each
span by its run scope); the handler keeps the raw spans and ``wrap`` records, and builds
span views and the trace tree when first asked for them.
"""

from __future__ import annotations

import dataclasses
import threading
from types import TracebackType
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan

from evaltrace.capture.config import runtime
from evaltrace.capture.context import ScopeToken, close_capture_scope, open_capture_scope
from evaltrace.capture.processor import ScopeSpanProcessor
from evaltrace.capture.values import WrapRecord
from evaltrace.errors import CaptureBlockError
from evaltrace.trace.handlers import InstrumentationHandler
from evaltrace.trace.spans import LLMSpan, ObserveSpan, SpanRecord, span_view
from evaltrace.trace.tree import ObservationNode, build_trace, walk_trace

__all__ = ["MemoryTraceHandler", "capture_traces"]


class MemoryTraceHandler(InstrumentationHandler):
    """Keeps the spans and ``wrap`` values of one capture in memory.

    :func:`capture_traces` yields one that receives only the runs started inside its block.
    The views (:attr:`spans`, :attr:`trace`) are built when first asked for, so capturing stays
    cheap.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Appends happen on the hot path without the lock (list.append is atomic); the cached
        # views remember how many spans and values they were built from instead of being
        # invalidated on every append.
        self._raw: list[ReadableSpan | SpanRecord] = []
        # No list until a first value: most runs record none, and every object a capture
        # keeps costs each collection of the garbage collector (bench_runner.py's c=50 figure).
        self._values: list[WrapRecord] | tuple[()] = ()
        self._views: tuple[int, int, list[ObserveSpan | LLMSpan]] | None = None
        # The tree and the counts it was built from, kept apart: a tuple of two ints is one
        # the collector stops tracking (bench_runner.py's c=50 figure).
        self._tree: list[ObservationNode] = []
        self._tree_sizes: tuple[int, int] | None = None
        # Inputs and outputs of decorated calls kept off the spans (content capture off).
        self._content: dict[int, dict[str, Any]] = {}

    def collect_span(self, span: ReadableSpan | SpanRecord) -> None:
        """Keep a finished span (called by the span processor, on the app's thread)."""
        self._raw.append(span)

    def collect_value(self, record: WrapRecord) -> None:
        """Keep a ``wrap`` value (called by ``wrap``, on the app's thread)."""
        self._value_list().append(record)

    def _value_list(self) -> list[WrapRecord]:
        values = self._values
        if type(values) is list:
            return values
        with self._lock:  # the first value: one list, whichever thread makes it
            if type(self._values) is not list:
                self._values = []
            return self._values

    def collect_content(self, span_id: int, key: str, value: Any) -> None:
        """Keep a decorated call's input or output that content capture keeps off the span."""
        self._content.setdefault(span_id, {})[key] = value

    def _with_content(self, view: ObserveSpan | LLMSpan) -> ObserveSpan | LLMSpan:
        private = self._content.get(view.span_id)
        return dataclasses.replace(view, **private) if private else view

    def on_span(self, span: ObserveSpan | LLMSpan) -> None:
        """Keep ``span`` (when this handler is registered with :func:`add_handler`)."""
        self.collect_span(span.record)

    def on_value(self, record: WrapRecord) -> None:
        """Keep ``record``."""
        self._value_list().append(record)

    @property
    def raw_spans(self) -> list[ReadableSpan | SpanRecord]:
        """The finished spans as delivered, in the order they ended."""
        with self._lock:
            return list(self._raw)

    @property
    def spans(self) -> list[ObserveSpan | LLMSpan]:
        """The finished spans as views, in the order they ended."""
        with self._lock:
            raws, values = list(self._raw), list(self._values)
            if self._views is None or self._views[:2] != (len(raws), len(values)):
                by_span: dict[int, list[WrapRecord]] = {}
                for value in values:
                    if value.span_id is not None:
                        by_span.setdefault(value.span_id, []).append(value)
                records = [
                    raw if isinstance(raw, SpanRecord) else SpanRecord.from_readable(raw)
                    for raw in raws
                ]
                views = [
                    self._with_content(span_view(r, tuple(by_span.get(r.span_id, ()))))
                    for r in records
                ]
                self._views = (len(raws), len(values), views)
            return list(self._views[2])

    @property
    def named_values(self) -> list[WrapRecord]:
        """The ``wrap(value, purpose=..., name=...)`` records, in the order they were made."""
        with self._lock:
            return list(self._values)

    @property
    def trace(self) -> list[ObservationNode]:
        """The captured spans as a tree: root nodes, children ordered by start time."""
        with self._lock:
            raws, values = list(self._raw), list(self._values)
            sizes = (len(raws), len(values))
            if self._tree_sizes != sizes:
                self._tree = self._build(raws, values)
                self._tree_sizes = sizes
            return self._tree

    @property
    def trace_ids(self) -> list[int]:
        """The distinct trace ids captured, in the order their first span ended."""
        seen: dict[int, None] = {}
        with self._lock:
            for raw in self._raw:
                seen.setdefault(_trace_id(raw), None)
        return list(seen)

    def get_trace(self, trace_id: int | str) -> list[ObservationNode]:
        """The tree of one trace (id as an int or as 32 hex digits)."""
        wanted = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        with self._lock:
            raws = [raw for raw in self._raw if _trace_id(raw) == wanted]
            values = [v for v in self._values if v.trace_id == wanted]
        return self._build(raws, values)

    def _build(
        self, raws: list[ReadableSpan | SpanRecord], values: list[WrapRecord]
    ) -> list[ObservationNode]:
        if len(raws) == 1 and not values:
            # The tree of one span with no values: its node, without the ordering and the
            # linking of spans (a run of an undecorated app, bench_runner.py's c=50 figure).
            (raw,) = raws
            record = raw if isinstance(raw, SpanRecord) else SpanRecord.from_readable(raw)
            trace = [ObservationNode(span=span_view(record))]
        else:
            trace = build_trace(raws, values)
        if self._content:
            for node in walk_trace(trace):
                node.span = self._with_content(node.span)
        return trace

    def clear(self) -> None:
        """Forget everything captured so far."""
        with self._lock:
            self._raw = []
            self._values = ()
            self._content = {}
            self._views = None
            self._tree = []
            self._tree_sizes = None

    def __len__(self) -> int:
        return len(self._raw)


def _trace_id(raw: ReadableSpan | SpanRecord) -> int:
    if isinstance(raw, ReadableSpan):
        context = raw.get_span_context()
        return context.trace_id if context is not None else 0
    return raw.trace_id


class _CaptureBlock:
    """The context manager returned by :func:`capture_traces`."""

    def __init__(self) -> None:
        self.handler = MemoryTraceHandler()
        self._opened: ScopeToken | None = None
        self._processor: ScopeSpanProcessor | None = None

    def __enter__(self) -> MemoryTraceHandler:
        if self._opened is not None:
            raise CaptureBlockError(
                "this capture_traces() block is already open; open a new block with "
                "capture_traces() for a nested capture"
            )
        self._processor = runtime().processor
        self._opened = open_capture_scope(self.handler)
        return self.handler

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        opened, processor = self._opened, self._processor
        self._opened = self._processor = None
        if opened is None:
            problem: str | None = _NEVER_ENTERED
        else:
            problem = close_capture_scope(opened)
            if processor is not None:
                processor.release_scope(opened.scope)
        if problem is None:
            return
        if exc is not None:  # the app's own exception goes on; it carries the explanation
            exc.add_note(f"evaltrace: {problem}")
            return
        raise CaptureBlockError(problem)

    async def __aenter__(self) -> MemoryTraceHandler:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


_NEVER_ENTERED: Final = (
    "this capture_traces() block was exited but never entered (or exited twice); use it as "
    "`with capture_traces() as handler:`"
)


def capture_traces() -> _CaptureBlock:
    """Capture the spans and ``wrap`` values of the runs started inside the block.

    Usable with ``with`` and ``async with``; yields a :class:`MemoryTraceHandler`. Only spans
    started inside the block (in its task, or in threads that carried its context) are
    captured, so concurrent captures never see each other's runs. Blocks nest: an outer
    capture also receives what inner ones capture.

    When the block exits, the capture closes: it receives nothing more and holds nothing.
    A task started inside the block that is still running afterwards files its later spans
    and values only into the enclosing captures that are still open (or nowhere), and
    dropping the handler frees everything it captured.

    A block is entered and exited once per ``with`` statement, in the task or thread that
    entered it. Misuse raises :class:`~evaltrace.errors.CaptureBlockError` and never
    leaves the capture open: entering a block that is open; exiting one that was never
    entered (or exiting it twice); exiting a block while a block nested in it is still open
    (the outer capture closes, the inner one carries on); exiting it in another task or
    thread (the capture closes; the task that entered it keeps running with a closed
    capture, which records nothing). When the block is already ending with the app's own
    exception, that exception propagates with the explanation added as a note instead.
    Entering a block again after it exited is allowed: the same handler collects again.

    Example:
        >>> from evaltrace import wrap
        >>> @wrap
        ... def answer(question: str) -> str:
        ...     return "4"
        >>> with capture_traces() as handler:
        ...     _ = answer("What is 2+2?")
        >>> [span.name for span in handler.spans]
        ['answer']
    """
    return _CaptureBlock()
