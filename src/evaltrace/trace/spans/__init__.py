"""Finished spans: neutral records, the typed views evaluators read, and the parsers between.

- :mod:`~evaltrace.trace.spans.records`: :class:`SpanRecord` and :class:`SpanEventRecord`, a
  plain copy of a finished span whatever produced it;
- :mod:`~evaltrace.trace.spans.views`: :class:`ObserveSpan` and :class:`LLMSpan`, read from a
  record by :func:`span_view`;
- :mod:`~evaltrace.trace.spans.messages`: the messages, tool calls, tool definitions and token
  counts of a model call;
- :mod:`~evaltrace.trace.spans.parsers`: the readers of the OpenInference and GenAI
  conventions, and of the values ``wrap`` records (:func:`parse_named_values`);
- :mod:`~evaltrace.trace.spans.openai_bodies`: the reader of a model call from the OpenAI
  request and response a ``@wrap(kind="llm")`` span records as its input and output.
"""

from __future__ import annotations

from evaltrace.trace.spans.messages import LLMMessage, TokenUsage, ToolCall, ToolDefinition
from evaltrace.trace.spans.parsers import parse_named_values
from evaltrace.trace.spans.records import SpanEventRecord, SpanRecord, StatusCode
from evaltrace.trace.spans.views import (
    LLMCallSource,
    LLMSpan,
    ObserveSpan,
    SpanError,
    SpanStatus,
    SpanView,
    span_view,
)

__all__ = [
    "LLMCallSource",
    "LLMMessage",
    "LLMSpan",
    "ObserveSpan",
    "SpanError",
    "SpanEventRecord",
    "SpanRecord",
    "SpanStatus",
    "SpanView",
    "StatusCode",
    "TokenUsage",
    "ToolCall",
    "ToolDefinition",
    "parse_named_values",
    "span_view",
]
