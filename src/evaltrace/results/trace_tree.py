"""Compact trace trees for reports: a stored trace as small JSON-ready nodes.

A scorecard shows each entry's trace as a collapsible tree. The full span records (every
attribute, the resource, stack traces) are much larger than what a reader looks at, so
:func:`compact_trace` keeps per span its name, kind, timing, status, error, input and output,
``wrap`` values and, for model calls, the model, token counts and messages, each text cut at
a limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from evaltrace._safe_text import safe_repr
from evaltrace.trace import LLMMessage, LLMSpan, ObservationNode

__all__ = [
    "TEXT_LIMIT",
    "TraceMessage",
    "TraceSpan",
    "TraceValue",
    "compact_trace",
    "roots_by_trace_id",
]

TEXT_LIMIT: Final = 4_000
"""Characters kept of each text of a compact span (inputs, outputs, values, messages)."""


class TraceValue(BaseModel):
    """A value ``wrap`` recorded on a span."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The value's name."""
    purpose: str
    """``input``, ``output`` or ``state``."""
    value: str
    """The value as text (JSON for data), cut at :data:`TEXT_LIMIT`."""


class TraceMessage(BaseModel):
    """A message sent to or received from a model."""

    model_config = ConfigDict(frozen=True)

    direction: str
    """``"in"`` (sent to the model) or ``"out"`` (its answer)."""
    role: str
    """The message's role (``system``, ``user``, ``assistant``, ``tool``)."""
    content: str | None = None
    """The message text, cut at :data:`TEXT_LIMIT`."""
    tool_calls: list[str] = Field(default_factory=list)
    """The tool calls it asks for, as ``name(arguments)``."""


class TraceSpan(BaseModel):
    """One span of a compact trace and the spans under it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The span's name."""
    kind: str
    """Its kind (``chain``, ``llm``, ``tool``, ...), lower case."""
    status: str
    """``ok``, ``error`` or ``unset``."""
    start_ms: float
    """When it started, in milliseconds after the first span of its entry."""
    duration_ms: float
    """How long it took, in milliseconds."""
    error: str | None = None
    """Why it failed (``"Type: message"``), when its status is ``error``."""
    input: str | None = None
    """Its input as text, cut at :data:`TEXT_LIMIT`."""
    output: str | None = None
    """Its output as text, cut at :data:`TEXT_LIMIT`."""
    values: list[TraceValue] = Field(default_factory=list)
    """The ``wrap`` values recorded on it."""
    model: str | None = None
    """The model, for a model call."""
    input_tokens: int | None = None
    """Prompt tokens, for a model call that recorded them."""
    output_tokens: int | None = None
    """Completion tokens, for a model call that recorded them."""
    messages: list[TraceMessage] = Field(default_factory=list)
    """The messages of a model call: those sent, then those received."""
    children: list[TraceSpan] = Field(default_factory=list)
    """The spans started under it, earliest first."""


def roots_by_trace_id(trace: Iterable[ObservationNode]) -> dict[str, list[ObservationNode]]:
    """The roots of a loaded trace file grouped by trace id (32 lower-case hex digits)."""
    groups: dict[str, list[ObservationNode]] = {}
    for node in trace:
        groups.setdefault(f"{node.span.trace_id:032x}", []).append(node)
    return groups


def compact_trace(
    roots: Sequence[ObservationNode], *, text_limit: int = TEXT_LIMIT
) -> list[TraceSpan]:
    """The compact tree of ``roots``, with times relative to the earliest root's start.

    Example:
        >>> compact_trace(load_traces("traces.jsonl"))[0].duration_ms  # doctest: +SKIP
        12.0
    """
    if not roots:
        return []
    origin = min(node.span.record.start_time_ns for node in roots)
    return [_compact(node, origin, text_limit) for node in roots]


def _compact(node: ObservationNode, origin: int, limit: int) -> TraceSpan:
    # model_construct: these nodes are built from parsed spans, field by field, so the
    # validation a large run would pay per span (tens of thousands) checks nothing new.
    span = node.span
    record = span.record
    error = None
    if span.status == "error" and span.error is not None:
        error = (
            f"{span.error.type}: {span.error.message}" if span.error.type else span.error.message
        )
    # Every field is given: model_construct looks a missing one's default factory up slowly.
    fields: dict[str, Any] = {
        "model": None,
        "input_tokens": None,
        "output_tokens": None,
        "messages": [],
    }
    if isinstance(span, LLMSpan):
        fields = {
            "model": span.model,
            "input_tokens": span.usage.input_tokens,
            "output_tokens": span.usage.output_tokens,
            "messages": [
                *(_message("in", message, limit) for message in span.input_messages),
                *(_message("out", message, limit) for message in span.output_messages),
            ],
        }
    return TraceSpan.model_construct(
        name=span.name,
        kind=span.kind,
        status=span.status,
        start_ms=(record.start_time_ns - origin) / 1_000_000,
        duration_ms=span.duration_ms,
        error=error,
        input=None if span.input is None else _text(span.input, limit),
        output=None if span.output is None else _text(span.output, limit),
        values=[
            TraceValue.model_construct(
                name=value.name, purpose=value.purpose, value=_text(value.value, limit)
            )
            for value in span.named_values
        ],
        children=[_compact(child, origin, limit) for child in node.children],
        **fields,
    )


def _message(direction: str, message: LLMMessage, limit: int) -> TraceMessage:
    return TraceMessage.model_construct(
        direction=direction,
        role=message.role,
        content=None if message.content is None else _cut(message.content, limit),
        tool_calls=[_cut(f"{call.name}({call.arguments})", limit) for call in message.tool_calls],
    )


def _text(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return _cut(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = safe_repr(value)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"
