"""Finished spans as neutral records, and the typed views that evaluators read.

A :class:`SpanRecord` is a plain copy of one finished OpenTelemetry span, whatever produced it
(the SDK, a JSONL file, an OTLP-JSON export). :func:`span_view` turns a record into an
:class:`ObserveSpan` or, when the attributes describe a model call in the OpenInference
(``llm.*``) or OpenTelemetry GenAI (``gen_ai.*``) conventions, an :class:`LLMSpan`.

Reading attributes never raises: a value that cannot be understood is skipped, because spans come
from code we do not control.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from evaltrace.capture import conventions as conv
from evaltrace.capture.serialize import decode
from evaltrace.capture.values import Purpose, WrapRecord

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
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
    "parse_named_values",
    "span_view",
]

StatusCode: TypeAlias = Literal["UNSET", "OK", "ERROR"]
SpanStatus: TypeAlias = Literal["ok", "error", "unset"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PURPOSES: Mapping[str, Purpose] = {"input": "input", "output": "output", "state": "state"}
_STATUSES: Mapping[str, SpanStatus] = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}
_STATUS_CODES: Mapping[str, StatusCode] = {"OK": "OK", "ERROR": "ERROR", "UNSET": "UNSET"}

# GenAI operation names that are model calls, and the OpenInference-style kind of the others.
_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_OPERATION_KINDS: Mapping[str, str] = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "embedding",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
}

# Older GenAI names, still emitted by some instrumentors.
_GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
_GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
_GEN_AI_PROMPT = "gen_ai.prompt"
_GEN_AI_COMPLETION = "gen_ai.completion"
_GEN_AI_EVENT_ROLES: Mapping[str, str] = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_GEN_AI_CHOICE_EVENT = "gen_ai.choice"
_EXCEPTION_EVENT = "exception"
_EXCEPTION_TYPE = "exception.type"
_EXCEPTION_MESSAGE = "exception.message"


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanEventRecord:
    """One event of a finished span."""

    name: str
    """The event name (``exception``, ``evaltrace.wrap``, ``gen_ai.choice``, ...)."""
    timestamp_ns: int
    """When the event happened, in nanoseconds since the Unix epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """The event attributes as recorded."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanRecord:
    """A neutral copy of one finished span, independent of the OpenTelemetry SDK classes.

    Example:
        >>> record = SpanRecord(trace_id=1, span_id=2, name="answer",
        ...                     start_time_ns=0, end_time_ns=1_000_000)
        >>> record.status_code
        'UNSET'
    """

    trace_id: int
    """The 128-bit trace id."""
    span_id: int
    """The 64-bit span id."""
    parent_span_id: int | None = None
    """The parent's span id, or ``None`` for a span started without a parent."""
    name: str
    """The span name."""
    start_time_ns: int
    """Start, in nanoseconds since the Unix epoch."""
    end_time_ns: int
    """End, in nanoseconds since the Unix epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)
    """The span attributes as recorded (sequences are tuples)."""
    events: tuple[SpanEventRecord, ...] = ()
    """The span events, in the order they were added."""
    status_code: StatusCode = "UNSET"
    """``"UNSET"``, ``"OK"`` or ``"ERROR"``."""
    status_description: str | None = None
    """The status description (set with ``"ERROR"``), if any."""
    kind: str = "INTERNAL"
    """The OpenTelemetry span kind name: ``INTERNAL``, ``SERVER``, ``CLIENT``, ..."""
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    """The attributes of the resource that produced the span (``service.name``, ...); shared
    with the resource, which is immutable, not copied per span."""

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> SpanRecord:
        """Copy a finished SDK span.

        Args:
            span: A span handed to a span processor or exporter.

        Returns:
            The record.
        """
        context = span.context
        parent = span.parent
        start = span.start_time or 0
        return cls(
            trace_id=context.trace_id if context is not None else 0,
            span_id=context.span_id if context is not None else 0,
            parent_span_id=parent.span_id if parent is not None else None,
            name=span.name,
            start_time_ns=start,
            end_time_ns=span.end_time or start,
            attributes=dict(span.attributes or {}),
            events=tuple(
                SpanEventRecord(
                    name=event.name,
                    timestamp_ns=event.timestamp,
                    attributes=dict(event.attributes or {}),
                )
                for event in span.events
            ),
            status_code=_STATUS_CODES.get(span.status.status_code.name, "UNSET"),
            status_description=span.status.description,
            kind=span.kind.name,
            resource_attributes=span.resource.attributes,
        )


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanError:
    """Why a span ended in error."""

    type: str | None
    """The exception type name (``exception.type``), when an exception was recorded."""
    message: str
    """The exception message, else the status description; may be empty."""


@dataclass(kw_only=True, frozen=True, slots=True)
class ToolCall:
    """A tool (function) call requested by a model."""

    id: str | None
    """The call id that the tool's answer refers to, if the provider gave one."""
    name: str
    """The tool name."""
    arguments: str
    """The arguments as the model wrote them (usually JSON text)."""

    def as_dict(self) -> dict[str, Any]:
        """Return the call as JSON-compatible data."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(kw_only=True, frozen=True, slots=True)
class LLMMessage:
    """One chat message sent to or returned by a model."""

    role: str
    """``system``, ``user``, ``assistant``, ``tool``, ... (``unknown`` when not recorded)."""
    content: str | None = None
    """The text content; several text parts are joined with newlines; ``None`` when absent."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tool calls the message carries (assistant messages)."""
    name: str | None = None
    """The participant or tool name, if recorded."""
    tool_call_id: str | None = None
    """For a tool message, the id of the call it answers."""

    def as_dict(self) -> dict[str, Any]:
        """Return the message as JSON-compatible data.

        ``role``, ``content`` and ``tool_calls`` are always present; ``name`` and
        ``tool_call_id`` only when set.

        Example:
            >>> LLMMessage(role="user", content="hi").as_dict()
            {'role': 'user', 'content': 'hi', 'tool_calls': []}
        """
        data: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "tool_calls": [call.as_dict() for call in self.tool_calls],
        }
        if self.name is not None:
            data["name"] = self.name
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data


@dataclass(kw_only=True, frozen=True, slots=True)
class TokenUsage:
    """Token counts of a model call; a count is ``None`` when the span did not record it."""

    input_tokens: int | None = None
    """Prompt (input) tokens."""
    output_tokens: int | None = None
    """Completion (output) tokens."""
    total_tokens: int | None = None
    """Total tokens: as recorded, else the sum of the counts that were recorded."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanView:
    """What every span view offers: identity, timing, status, input, output, named values."""

    record: SpanRecord = field(repr=False, compare=False)
    """The record the view was read from (events, resource, exact times)."""
    span_id: int
    """The 64-bit span id."""
    trace_id: int
    """The 128-bit trace id."""
    parent_span_id: int | None
    """The parent's span id, or ``None``."""
    name: str
    """The span name (for ``@wrap`` spans, the function name)."""
    kind: str
    """The OpenInference kind in lower case (``chain``, ``llm``, ``tool``, ...), or ``unknown``."""
    started_at: datetime
    """Start, as an aware UTC datetime."""
    ended_at: datetime
    """End, as an aware UTC datetime."""
    status: SpanStatus
    """``"ok"``, ``"error"`` or ``"unset"``."""
    error: SpanError | None
    """Why the span failed, when its status is ``"error"``."""
    attributes: Mapping[str, Any] = field(repr=False)
    """The raw span attributes (read-only)."""
    input: Any
    """``input.value`` decoded (JSON text becomes data); ``None`` when absent."""
    output: Any
    """``output.value`` decoded; ``None`` when absent."""
    named_values: tuple[WrapRecord, ...] = ()
    """The ``wrap(value, purpose=..., name=...)`` values recorded while this span was current."""

    @property
    def duration_ms(self) -> float:
        """The span duration in milliseconds."""
        return (self.record.end_time_ns - self.record.start_time_ns) / 1_000_000


@dataclass(kw_only=True, frozen=True, slots=True)
class ObserveSpan(SpanView):
    """A span that is not a model call: a ``@wrap`` function, a tool, a retriever, ..."""


@dataclass(kw_only=True, frozen=True, slots=True)
class LLMSpan(SpanView):
    """A model call, read from OpenInference or OpenTelemetry GenAI attributes.

    Example:
        >>> span.model, span.output_text  # doctest: +SKIP
        ('gpt-4o-mini-2024-07-18', 'It is 18 °C in Paris.')
    """

    model: str | None = None
    """The response model, else the request model, else ``llm.model_name``."""
    provider: str | None = None
    """The provider or system (``openai``, ``anthropic``, ...), if recorded."""
    input_messages: tuple[LLMMessage, ...] = ()
    """The messages sent to the model, system instructions first."""
    output_messages: tuple[LLMMessage, ...] = ()
    """The messages the model returned (one per choice)."""
    usage: TokenUsage = field(default_factory=TokenUsage)
    """Token counts."""
    finish_reasons: tuple[str, ...] = ()
    """Why generation stopped, one per choice (``stop``, ``tool_calls``, ``length``, ...)."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """Request parameters: ``llm.invocation_parameters``, or the ``gen_ai.request.*`` values."""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the output messages."""
        return tuple(call for message in self.output_messages for call in message.tool_calls)

    @property
    def output_text(self) -> str | None:
        """The text the model returned.

        The text content of the output messages joined with newlines (empty when they carry
        only tool calls); without output messages, ``output.value`` as text; ``None`` when the
        span recorded no output at all.
        """
        if self.output_messages:
            return "\n".join(m.content for m in self.output_messages if m.content is not None)
        if self.output is None:
            return None
        if isinstance(self.output, str):
            return self.output
        return _json_text(self.output)


def span_view(record: SpanRecord, named_values: Iterable[WrapRecord] = ()) -> ObserveSpan | LLMSpan:
    """Read a record as an :class:`LLMSpan` (a model call) or an :class:`ObserveSpan`.

    Args:
        record: The finished span.
        named_values: The values ``wrap`` recorded on this span. When given they are used as they
            are (they hold the untruncated values); when empty they are read from the span's
            ``evaltrace.wrap`` events.

    Returns:
        The view.

    Example:
        >>> view = span_view(SpanRecord(trace_id=1, span_id=2, name="answer",
        ...                             start_time_ns=0, end_time_ns=2_000_000))
        >>> view.kind, view.duration_ms
        ('unknown', 2.0)
    """
    values = tuple(named_values) or parse_named_values(record)
    return _view(record, values)


def _view(record: SpanRecord, named_values: tuple[WrapRecord, ...]) -> ObserveSpan | LLMSpan:
    attributes = record.attributes
    status = _STATUSES.get(record.status_code, "unset")
    common: dict[str, Any] = {
        "record": record,
        "span_id": record.span_id,
        "trace_id": record.trace_id,
        "parent_span_id": record.parent_span_id,
        "name": record.name,
        "kind": _kind(attributes),
        "started_at": _datetime(record.start_time_ns),
        "ended_at": _datetime(record.end_time_ns),
        "status": status,
        "error": _error(record) if status == "error" else None,
        "attributes": MappingProxyType(attributes),
        "input": _decode_json(
            attributes.get(conv.INPUT_VALUE), attributes.get(conv.INPUT_MIME_TYPE)
        ),
        "output": _decode_json(
            attributes.get(conv.OUTPUT_VALUE), attributes.get(conv.OUTPUT_MIME_TYPE)
        ),
        "named_values": named_values,
    }
    if not _is_llm(attributes):
        return ObserveSpan(**common)
    output_messages, output_finish_reasons = _output_messages(record)
    return LLMSpan(
        **common,
        model=_model(attributes),
        provider=_first_str(
            attributes,
            conv.GEN_AI_PROVIDER_NAME,
            conv.GEN_AI_SYSTEM,
            conv.LLM_PROVIDER,
            conv.LLM_SYSTEM,
        ),
        input_messages=_input_messages(record),
        output_messages=output_messages,
        usage=_usage(attributes),
        finish_reasons=_finish_reasons(attributes, output_finish_reasons, common["output"]),
        parameters=_parameters(attributes),
    )


def parse_named_values(record: SpanRecord) -> tuple[WrapRecord, ...]:
    """Read the ``wrap`` values recorded on a span from its ``evaltrace.wrap`` events.

    An event without a name or with an unknown purpose is skipped. A value missing from the event
    (content capture off) reads as ``None``; a truncated value keeps its truncation marker.

    Args:
        record: The finished span.

    Returns:
        The values in event order.
    """
    values: list[WrapRecord] = []
    for event in record.events:
        if event.name != conv.WRAP_EVENT:
            continue
        attributes = event.attributes
        name = attributes.get(conv.WRAP_NAME)
        purpose = _PURPOSES.get(str(attributes.get(conv.WRAP_PURPOSE)))
        if not isinstance(name, str) or not name or purpose is None:
            continue
        description = attributes.get(conv.WRAP_DESCRIPTION)
        values.append(
            WrapRecord(
                name=name,
                purpose=purpose,
                value=_decode_json(attributes.get(conv.WRAP_VALUE), conv.MIME_JSON),
                description=description if isinstance(description, str) else None,
                many=attributes.get(conv.WRAP_MANY) is True,
                span_id=record.span_id,
                trace_id=record.trace_id,
                timestamp_ns=event.timestamp_ns,
            )
        )
    return tuple(values)


def _decode_json(value: Any, mime_type: Any = None) -> Any:
    """Decode an attribute that holds JSON text; never raises.

    Text that is not JSON, or whose media type is not JSON, stays a string; sequences become
    lists; other values are returned unchanged.
    """
    if isinstance(value, tuple):
        return list(value)
    if not isinstance(value, str):
        return value
    return decode(value, mime_type if isinstance(mime_type, str) else None)


# --- span-level fields -------------------------------------------------------------------------


def _datetime(ns: int) -> datetime:
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except (OverflowError, TypeError):
        return _EPOCH


def _kind(attributes: Mapping[str, Any]) -> str:
    raw = attributes.get(conv.SPAN_KIND)
    if isinstance(raw, str) and raw.strip():
        return raw.strip().lower()
    operation = attributes.get(conv.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _OPERATION_KINDS:
        return _OPERATION_KINDS[operation]
    if _is_llm(attributes):
        return "llm"
    return "unknown"


def _is_llm(attributes: Mapping[str, Any]) -> bool:
    # The most specific signal decides: an OpenInference kind, then a GenAI operation name,
    # then the mere presence of a requested model.
    raw = attributes.get(conv.SPAN_KIND)
    if isinstance(raw, str) and raw.strip():
        return raw.strip().upper() == "LLM"
    operation = attributes.get(conv.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation:
        return operation in _LLM_OPERATIONS
    return conv.GEN_AI_REQUEST_MODEL in attributes


def _error(record: SpanRecord) -> SpanError:
    exception = next(
        (event for event in reversed(record.events) if event.name == _EXCEPTION_EVENT), None
    )
    type_name = message = None
    if exception is not None:
        type_name = _str_or_none(exception.attributes.get(_EXCEPTION_TYPE))
        message = _str_or_none(exception.attributes.get(_EXCEPTION_MESSAGE))
    return SpanError(type=type_name, message=message or record.status_description or "")


# --- LLM fields ---------------------------------------------------------------------------------


def _model(attributes: Mapping[str, Any]) -> str | None:
    return _first_str(
        attributes, conv.GEN_AI_RESPONSE_MODEL, conv.GEN_AI_REQUEST_MODEL, conv.LLM_MODEL_NAME
    )


def _usage(attributes: Mapping[str, Any]) -> TokenUsage:
    input_tokens = _first_int(
        attributes,
        conv.LLM_TOKEN_COUNT_PROMPT,
        conv.GEN_AI_USAGE_INPUT_TOKENS,
        _GEN_AI_USAGE_PROMPT_TOKENS,
    )
    output_tokens = _first_int(
        attributes,
        conv.LLM_TOKEN_COUNT_COMPLETION,
        conv.GEN_AI_USAGE_OUTPUT_TOKENS,
        _GEN_AI_USAGE_COMPLETION_TOKENS,
    )
    total_tokens = _first_int(attributes, conv.LLM_TOKEN_COUNT_TOTAL)
    if total_tokens is None and (input_tokens is not None or output_tokens is not None):
        total_tokens = (input_tokens or 0) + (output_tokens or 0)
    return TokenUsage(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total_tokens
    )


def _parameters(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    invocation = _decode_json(attributes.get(conv.LLM_INVOCATION_PARAMETERS))
    if isinstance(invocation, dict):
        return invocation
    prefix = conv.GEN_AI_REQUEST_PREFIX
    return {
        key[len(prefix) :]: list(value) if isinstance(value, tuple) else value
        for key, value in attributes.items()
        if key.startswith(prefix) and key != conv.GEN_AI_REQUEST_MODEL
    }


def _finish_reasons(
    attributes: Mapping[str, Any], from_messages: tuple[str, ...], output: Any
) -> tuple[str, ...]:
    recorded = _decode_json(attributes.get(conv.GEN_AI_RESPONSE_FINISH_REASONS))
    if isinstance(recorded, str):
        return (recorded,)
    if isinstance(recorded, list):
        return tuple(reason for reason in recorded if isinstance(reason, str))
    if from_messages:
        return from_messages
    # OpenInference keeps no finish reason attribute; an OpenAI-shaped response body has one.
    choices = output.get("choices") if isinstance(output, dict) else None
    if isinstance(choices, list):
        return tuple(
            choice["finish_reason"]
            for choice in choices
            if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
        )
    return ()


def _input_messages(record: SpanRecord) -> tuple[LLMMessage, ...]:
    attributes = record.attributes
    flattened = _indexed(attributes, conv.LLM_INPUT_MESSAGES)
    if flattened:
        return _present(_openinference_message(fields) for fields in flattened)
    if conv.GEN_AI_INPUT_MESSAGES in attributes or conv.GEN_AI_SYSTEM_INSTRUCTIONS in attributes:
        system = _system_instructions(attributes.get(conv.GEN_AI_SYSTEM_INSTRUCTIONS))
        messages, _ = _gen_ai_messages(attributes.get(conv.GEN_AI_INPUT_MESSAGES))
        return (system, *messages) if system is not None else messages
    legacy = _indexed(attributes, _GEN_AI_PROMPT)
    if legacy:
        return _present(_legacy_gen_ai_message(fields) for fields in legacy)
    return _present(
        _event_message(event.attributes, role)
        for event in record.events
        if (role := _GEN_AI_EVENT_ROLES.get(event.name)) is not None
    )


def _output_messages(record: SpanRecord) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    attributes = record.attributes
    flattened = _indexed(attributes, conv.LLM_OUTPUT_MESSAGES)
    if flattened:
        return _present(_openinference_message(fields) for fields in flattened), ()
    if conv.GEN_AI_OUTPUT_MESSAGES in attributes:
        return _gen_ai_messages(attributes.get(conv.GEN_AI_OUTPUT_MESSAGES))
    legacy = _indexed(attributes, _GEN_AI_COMPLETION)
    if legacy:
        reasons = tuple(
            reason for fields in legacy if isinstance(reason := fields.get("finish_reason"), str)
        )
        return _present(_legacy_gen_ai_message(fields) for fields in legacy), reasons
    messages: list[LLMMessage] = []
    reasons_list: list[str] = []
    for event in record.events:
        if event.name != _GEN_AI_CHOICE_EVENT:
            continue
        body = _event_body(event.attributes)
        reason = body.get("finish_reason")
        if isinstance(reason, str):
            reasons_list.append(reason)
        inner = _decode_json(body.get("message"))
        message = _event_message(inner if isinstance(inner, dict) else body, "assistant")
        if message is not None:
            messages.append(message)
    return tuple(messages), tuple(reasons_list)


def _openinference_message(fields: Mapping[str, Any]) -> LLMMessage | None:
    content = _text(fields.get(conv.MESSAGE_CONTENT))
    if content is None:
        texts = [
            text
            for part in _indexed(fields, conv.MESSAGE_CONTENTS)
            if (text := _text(part.get(conv.MESSAGE_CONTENT_TEXT))) is not None
        ]
        content = "\n".join(texts) if texts else None
    tool_calls = _present(
        _tool_call(
            call.get(conv.TOOL_CALL_ID),
            call.get(conv.TOOL_CALL_FUNCTION_NAME),
            call.get(conv.TOOL_CALL_FUNCTION_ARGUMENTS),
        )
        for call in _indexed(fields, conv.MESSAGE_TOOL_CALLS)
    )
    return _message(
        fields.get(conv.MESSAGE_ROLE),
        content,
        tool_calls,
        fields.get(conv.MESSAGE_NAME),
        fields.get(conv.MESSAGE_TOOL_CALL_ID),
    )


def _legacy_gen_ai_message(fields: Mapping[str, Any]) -> LLMMessage | None:
    tool_calls = _present(
        _tool_call(call.get("id"), call.get("name"), call.get("arguments"))
        for call in _indexed(fields, "tool_calls")
    )
    return _message(
        fields.get("role"),
        _text(fields.get("content")),
        tool_calls,
        fields.get("name"),
        fields.get("tool_call_id"),
    )


def _gen_ai_messages(raw: Any) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    data = _decode_json(raw)
    if not isinstance(data, list):
        return (), ()
    messages: list[LLMMessage] = []
    reasons: list[str] = []
    for item in data:
        if not isinstance(item, dict):
            continue
        if isinstance(reason := item.get("finish_reason"), str):
            reasons.append(reason)
        message = _gen_ai_message(item)
        if message is not None:
            messages.append(message)
    return tuple(messages), tuple(reasons)


def _gen_ai_message(item: Mapping[str, Any]) -> LLMMessage | None:
    parts = item.get("parts")
    if not isinstance(parts, list):
        return _event_message(item, None)
    texts: list[str] = []
    tool_calls: list[ToolCall] = []
    tool_call_id = None
    for part in parts:
        if not isinstance(part, dict):
            continue
        part_type = part.get("type")
        if part_type == "text":
            if (text := _text(part.get("content"))) is not None:
                texts.append(text)
        elif part_type == "tool_call":
            call = _tool_call(part.get("id"), part.get("name"), part.get("arguments"))
            if call is not None:
                tool_calls.append(call)
        elif part_type == "tool_call_response":
            tool_call_id = part.get("id")
            if (text := _text(part.get("response"))) is not None:
                texts.append(text)
    return _message(
        item.get("role"),
        "\n".join(texts) if texts else None,
        tuple(tool_calls),
        item.get("name"),
        tool_call_id,
    )


def _system_instructions(raw: Any) -> LLMMessage | None:
    data = _decode_json(raw)
    if isinstance(data, str):
        return LLMMessage(role="system", content=data)
    content = _text(data) if isinstance(data, list) else None
    return LLMMessage(role="system", content=content) if content is not None else None


def _event_body(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("body", "gen_ai.event.content"):
        if key in attributes:
            body = _decode_json(attributes[key])
            if isinstance(body, dict):
                return body
            if isinstance(body, str):
                return {"content": body}
    return attributes


def _event_message(attributes: Mapping[str, Any], default_role: str | None) -> LLMMessage | None:
    body = _event_body(attributes)
    calls = _decode_json(body.get("tool_calls"))
    tool_calls: tuple[ToolCall, ...] = ()
    if isinstance(calls, list):
        tool_calls = _present(_openai_tool_call(call) for call in calls if isinstance(call, dict))
    role = body.get("role")
    return _message(
        role if isinstance(role, str) and role else default_role,
        _text(body.get("content")),
        tool_calls,
        body.get("name"),
        body.get("tool_call_id", body.get("id")),
    )


def _openai_tool_call(call: Mapping[str, Any]) -> ToolCall | None:
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    return _tool_call(call.get("id"), source.get("name"), source.get("arguments"))


def _tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall | None:
    if not isinstance(name, str) or not name:
        return None
    if arguments is None:
        arguments_text = ""
    elif isinstance(arguments, str):
        arguments_text = arguments
    else:
        arguments_text = _json_text(_decode_json(arguments))
    return ToolCall(id=_str_or_none(call_id), name=name, arguments=arguments_text)


def _message(
    role: Any,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
    name: Any,
    tool_call_id: Any,
) -> LLMMessage | None:
    role_text = role if isinstance(role, str) and role else None
    if role_text is None and content is None and not tool_calls:
        return None
    return LLMMessage(
        role=role_text or "unknown",
        content=content,
        tool_calls=tool_calls,
        name=_str_or_none(name),
        tool_call_id=_str_or_none(tool_call_id),
    )


# --- small readers ------------------------------------------------------------------------------


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Group flattened ``{prefix}.{i}.{rest}`` attributes by ``i``, in index order."""
    start = prefix + "."
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        index, dot, rest = key[len(start) :].partition(".")
        if dot and rest and index.isascii() and index.isdigit():
            groups.setdefault(int(index), {})[rest] = value
    return [groups[index] for index in sorted(groups)]


def _present(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(item for item in items if item is not None)


def _text(value: Any) -> str | None:
    """Text of a content value: a string, or the text parts of a list of parts."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        texts: list[str] = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts) if texts else None
    return _json_text(value)


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _str_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float):
        return str(value)
    return None


def _first_str(attributes: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _first_int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = _int_or_none(attributes.get(key))
        if value is not None:
            return value
    return None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        try:
            return int(value.strip())
        except ValueError:  # more digits than Python converts: not a count
            return None
    return None
