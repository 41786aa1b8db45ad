"""Trace trees, span views, selectors, and trace files.

``build_trace`` arranges finished spans into :class:`ObservationNode` trees whose spans are read
as :class:`LLMSpan` (model calls) or :class:`ObserveSpan`; selectors such as :func:`root` and
:func:`last_llm_call` turn a tree into the ``Evaluable`` an evaluator scores;
:func:`save_traces` / :func:`load_traces` keep traces in files.

The selectors build pydantic models, so they are imported on first use: reading spans stays
light for the capture path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaltrace.trace.io import load_traces, save_traces, span_to_json
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
    parse_named_values,
    span_view,
)
from evaltrace.trace.tree import (
    ObservationNode,
    SpanPredicate,
    build_trace,
    split_traces,
    trace_to_text,
    walk_trace,
)

if TYPE_CHECKING:
    from evaltrace.trace.selectors import (
        TraceSelector,
        by_kind,
        by_name,
        first_llm_call,
        last_llm_call,
        root,
        select,
    )

__all__ = [
    "LLMMessage",
    "LLMSpan",
    "ObservationNode",
    "ObserveSpan",
    "SpanError",
    "SpanEventRecord",
    "SpanPredicate",
    "SpanRecord",
    "SpanStatus",
    "SpanView",
    "StatusCode",
    "TokenUsage",
    "ToolCall",
    "TraceSelector",
    "build_trace",
    "by_kind",
    "by_name",
    "first_llm_call",
    "last_llm_call",
    "load_traces",
    "parse_named_values",
    "root",
    "save_traces",
    "select",
    "span_to_json",
    "span_view",
    "split_traces",
    "trace_to_text",
    "walk_trace",
]

_SELECTOR_NAMES = frozenset(
    {"TraceSelector", "by_kind", "by_name", "first_llm_call", "last_llm_call", "root", "select"}
)


def __getattr__(name: str) -> Any:
    if name in _SELECTOR_NAMES:
        from evaltrace.trace import selectors

        value = getattr(selectors, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
