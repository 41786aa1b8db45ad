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
from evaltrace.evals.evaluable import checked_model
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
    # Built from parsed spans, field by field: validating them again checks nothing new, and
    # pydantic's model_construct cost as much as the rest (bench_cli.py's --traces row).
    span = node.span
    error = None
    if span.status == "error" and span.error is not None:
        error = (
            f"{span.error.type}: {span.error.message}" if span.error.type else span.error.message
        )
    given = span.input
    produced = span.output
    fields: dict[str, Any] = {
        "name": span.name,
        "kind": span.kind,
        "status": span.status,
        "start_ms": (span.record.start_time_ns - origin) / 1_000_000,
        "duration_ms": span.duration_ms,
        "error": error,
        "input": None if given is None else _text(given, limit),
        "output": None if produced is None else _text(produced, limit),
        "values": [
            checked_model(
                TraceValue,
                {"name": value.name, "purpose": value.purpose, "value": _text(value.value, limit)},
            )
            for value in span.named_values
        ],
    }
    if isinstance(span, LLMSpan):
        fields["model"] = span.model
        fields["input_tokens"] = span.usage.input_tokens
        fields["output_tokens"] = span.usage.output_tokens
        fields["messages"] = [
            *(_message("in", message, limit) for message in span.input_messages),
            *(_message("out", message, limit) for message in span.output_messages),
        ]
    fields["children"] = [_compact(child, origin, limit) for child in node.children]
    return checked_model(TraceSpan, fields)


def _message(direction: str, message: LLMMessage, limit: int) -> TraceMessage:
    fields: dict[str, Any] = {
        "direction": direction,
        "role": message.role,
        "content": None if message.content is None else _cut(message.content, limit),
    }
    if message.tool_calls:
        fields["tool_calls"] = [
            _cut(f"{call.name}({call.arguments})", limit) for call in message.tool_calls
        ]
    return checked_model(TraceMessage, fields)


_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every value: ``json.dumps`` with options makes a new one per call."""


def _text(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return _cut(value, limit)
    try:
        text = _JSON.encode(value)
    except (TypeError, ValueError, RecursionError):
        text = safe_repr(value)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"
