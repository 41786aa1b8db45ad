"""Reading what was captured: span records and views, trace trees, captures, handlers, files.

``build_trace`` arranges finished spans into :class:`ObservationNode` trees whose spans are read
as :class:`LLMSpan` (model calls) or :class:`ObserveSpan`; :func:`capture_traces` yields a
:class:`MemoryTraceHandler` holding the runs started in its block; handlers added with
:func:`add_handler` receive every span as a view; :func:`save_traces` / :func:`load_traces`
keep traces in files, and :func:`read_traces` reads a file trace by trace, reporting the lines it
cannot read; :func:`recorded_values` and :func:`span_documents` read what a run recorded; a
:class:`SpanQuery` tests a span and the spans around it, declaratively.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evaltrace.trace.handlers import (
    InstrumentationHandler,
    add_handler,
    handler_stats,
    remove_handler,
)
from evaltrace.trace.memory import MemoryTraceHandler, capture_traces
from evaltrace.trace.spans import (
    LLMMessage,
    LLMSpan,
    ObserveSpan,
    SpanError,
    SpanEventRecord,
    SpanRecord,
    SpanStatus,
    SpanView,
    StatusCode,
    TokenUsage,
    ToolCall,
    ToolDefinition,
    parse_named_values,
    span_view,
)
from evaltrace.trace.tree import (
    NodePredicate,
    ObservationNode,
    ParentCycle,
    SpanPredicate,
    build_trace,
    build_trace_and_cycles,
    split_traces,
    trace_to_text,
    walk_trace,
)

if TYPE_CHECKING:
    from evaltrace.trace.io import load_traces, otlp_spans, save_traces, span_to_json
    from evaltrace.trace.query import SpanQuery
    from evaltrace.trace.trace_file import StoredTrace, TraceFile, TraceFileProblem, read_traces
    from evaltrace.trace.values import recorded_value, recorded_values, span_documents

__all__ = [
    "InstrumentationHandler",
    "MemoryTraceHandler",
    "add_handler",
    "capture_traces",
    "handler_stats",
    "remove_handler",
    "LLMMessage",
    "LLMSpan",
    "NodePredicate",
    "ObservationNode",
    "ObserveSpan",
    "ParentCycle",
    "SpanError",
    "SpanEventRecord",
    "SpanPredicate",
    "SpanQuery",
    "SpanRecord",
    "SpanStatus",
    "SpanView",
    "StatusCode",
    "StoredTrace",
    "TokenUsage",
    "ToolCall",
    "ToolDefinition",
    "TraceFile",
    "TraceFileProblem",
    "build_trace",
    "build_trace_and_cycles",
    "load_traces",
    "otlp_spans",
    "parse_named_values",
    "read_traces",
    "recorded_value",
    "recorded_values",
    "save_traces",
    "span_documents",
    "span_to_json",
    "span_view",
    "split_traces",
    "trace_to_text",
    "walk_trace",
]

_ON_FIRST_USE = {
    **dict.fromkeys(
        ["load_traces", "otlp_spans", "save_traces", "span_to_json"], "evaltrace.trace.io"
    ),
    **dict.fromkeys(
        ["StoredTrace", "TraceFile", "TraceFileProblem", "read_traces"],
        "evaltrace.trace.trace_file",
    ),
    **dict.fromkeys(
        ["recorded_value", "recorded_values", "span_documents"], "evaltrace.trace.values"
    ),
    "SpanQuery": "evaltrace.trace.query",
}
"""Names whose module loads on first use: trace files (JSONL, OTLP-JSON, Phoenix) and reading
recorded values, and span queries (pydantic), which capturing never needs, so ``import evaltrace``
does not load them."""


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'evaltrace.trace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
