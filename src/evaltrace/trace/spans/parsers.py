"""Reading span attributes: the OpenInference and GenAI conventions, and evaltrace's wrap events.

A model call is described by OpenInference (``llm.*``, ``message.*``, ``tool_call.*``) or by
the OpenTelemetry GenAI conventions (``gen_ai.*`` attributes, in their current JSON form, their
older indexed form, or as span events). Each reader here takes what a span recorded in either
and returns it as :mod:`~evaltrace.trace.spans.messages` values; :func:`parse_named_values`
reads the ``evaltrace.wrap`` events that ``wrap(value, ...)`` adds.

Reading never raises: a value that cannot be understood is skipped, because spans come from
code we do not control.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from evaltrace.capture import conventions as conv
from evaltrace.capture.codec import decode
from evaltrace.capture.values import Purpose, WrapRecord
from evaltrace.trace.spans.messages import LLMMessage, TokenUsage, ToolCall, ToolDefinition
from evaltrace.trace.spans.records import SpanRecord

__all__ = [
    "content_text",
    "decode_json",
    "finish_reasons",
    "first_int",
    "first_str",
    "input_messages",
    "int_or_none",
    "is_llm",
    "json_text",
    "llm_model",
    "llm_provider",
    "message_or_none",
    "openai_tool_call",
    "output_messages",
    "parse_named_values",
    "present",
    "request_parameters",
    "span_kind",
    "str_or_none",
    "token_usage",
    "tool_call_or_none",
    "tool_definition",
    "tool_definitions",
]

_PURPOSES: Mapping[str, Purpose] = {"input": "input", "output": "output", "state": "state"}

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


# --- wrap values ---------------------------------------------------------------------------------


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
                value=decode_json(attributes.get(conv.WRAP_VALUE), conv.MIME_JSON),
                description=description if isinstance(description, str) else None,
                many=attributes.get(conv.WRAP_MANY) is True,
                span_id=record.span_id,
                trace_id=record.trace_id,
                timestamp_ns=event.timestamp_ns,
            )
        )
    return tuple(values)


def decode_json(value: Any, mime_type: Any = None) -> Any:
    """Decode an attribute that holds JSON text; never raises.

    Text that is not JSON, or whose media type is not JSON, stays a string; sequences become
    lists; other values are returned unchanged.
    """
    if isinstance(value, tuple):
        return list(value)
    if not isinstance(value, str):
        return value
    return decode(value, mime_type if isinstance(mime_type, str) else None)


# --- what a span is ------------------------------------------------------------------------------


def span_kind(attributes: Mapping[str, Any]) -> str:
    """The OpenInference kind in lower case, else a GenAI operation's kind, else ``unknown``."""
    raw = attributes.get(conv.SPAN_KIND)
    if isinstance(raw, str) and raw.strip():
        return raw.strip().lower()
    operation = attributes.get(conv.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _OPERATION_KINDS:
        return _OPERATION_KINDS[operation]
    if is_llm(attributes):
        return "llm"
    return "unknown"


def is_llm(attributes: Mapping[str, Any]) -> bool:
    """Whether the attributes describe a model call."""
    # The most specific signal decides: an OpenInference kind, then a GenAI operation name,
    # then the mere presence of a requested model.
    raw = attributes.get(conv.SPAN_KIND)
    if isinstance(raw, str) and raw.strip():
        return raw.strip().upper() == "LLM"
    operation = attributes.get(conv.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation:
        return operation in _LLM_OPERATIONS
    return conv.GEN_AI_REQUEST_MODEL in attributes


# --- model calls ---------------------------------------------------------------------------------


def llm_model(attributes: Mapping[str, Any]) -> str | None:
    """The response model, else the request model, else ``llm.model_name``."""
    return first_str(
        attributes, conv.GEN_AI_RESPONSE_MODEL, conv.GEN_AI_REQUEST_MODEL, conv.LLM_MODEL_NAME
    )


def llm_provider(attributes: Mapping[str, Any]) -> str | None:
    """The provider or system of a model call (``openai``, ``anthropic``, ...), if recorded."""
    return first_str(
        attributes,
        conv.GEN_AI_PROVIDER_NAME,
        conv.GEN_AI_SYSTEM,
        conv.LLM_PROVIDER,
        conv.LLM_SYSTEM,
    )


def token_usage(attributes: Mapping[str, Any]) -> TokenUsage:
    """The token counts recorded, cache reads and writes included.

    The total is the sum of the input and output counts when it was not recorded.
    """
    input_tokens = first_int(
        attributes,
        conv.LLM_TOKEN_COUNT_PROMPT,
        conv.GEN_AI_USAGE_INPUT_TOKENS,
        _GEN_AI_USAGE_PROMPT_TOKENS,
    )
    output_tokens = first_int(
        attributes,
        conv.LLM_TOKEN_COUNT_COMPLETION,
        conv.GEN_AI_USAGE_OUTPUT_TOKENS,
        _GEN_AI_USAGE_COMPLETION_TOKENS,
    )
    total_tokens = first_int(attributes, conv.LLM_TOKEN_COUNT_TOTAL)
    if total_tokens is None and (input_tokens is not None or output_tokens is not None):
        total_tokens = (input_tokens or 0) + (output_tokens or 0)
    return TokenUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total_tokens,
        cache_read_tokens=first_int(
            attributes, conv.LLM_TOKEN_COUNT_CACHE_READ, conv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
        ),
        cache_creation_tokens=first_int(
            attributes,
            conv.LLM_TOKEN_COUNT_CACHE_WRITE,
            conv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
        ),
    )


def tool_definitions(attributes: Mapping[str, Any]) -> tuple[ToolDefinition, ...]:
    """The tools offered to the model: ``llm.tools.*``, else ``gen_ai.tool.definitions``."""
    indexed = _indexed(attributes, conv.LLM_TOOLS)
    if indexed:
        return present(_openinference_tool(fields) for fields in indexed)
    definitions = decode_json(attributes.get(conv.GEN_AI_TOOL_DEFINITIONS))
    if isinstance(definitions, list):
        return present(tool_definition(item) for item in definitions)
    return ()


def tool_definition(data: Any) -> ToolDefinition | None:
    """A tool definition in OpenAI's shape, or ``None`` when ``data`` is not one.

    Nested (``{"type": "function", "function": {...}}``, Chat Completions) or flat
    (``{"type": "function", "name": ...}``, the Responses API and GenAI); a built-in tool
    (``{"type": "web_search"}``) is named by its type.
    """
    if not isinstance(data, dict):
        return None
    function = data.get("function")
    source = function if isinstance(function, dict) else data
    kind = data.get("type")
    kind_text = kind if isinstance(kind, str) and kind else "function"
    name = source.get("name")
    if not isinstance(name, str) or not name:
        if kind_text == "function":
            return None
        name = kind_text
    description = source.get("description")
    return ToolDefinition(
        name=name,
        description=description if isinstance(description, str) else None,
        parameters=source.get("parameters"),
        type=kind_text,
    )


def _openinference_tool(fields: Mapping[str, Any]) -> ToolDefinition | None:
    schema = decode_json(fields.get(conv.TOOL_JSON_SCHEMA), conv.MIME_JSON)
    if isinstance(schema, dict):
        return tool_definition(schema)
    name = fields.get(conv.TOOL_NAME)
    if not isinstance(name, str) or not name:
        return None
    description = fields.get(conv.TOOL_DESCRIPTION)
    return ToolDefinition(
        name=name, description=description if isinstance(description, str) else None
    )


def request_parameters(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """``llm.invocation_parameters``, else the ``gen_ai.request.*`` values but the model."""
    invocation = decode_json(attributes.get(conv.LLM_INVOCATION_PARAMETERS))
    if isinstance(invocation, dict):
        return invocation
    prefix = conv.GEN_AI_REQUEST_PREFIX
    return {
        key[len(prefix) :]: list(value) if isinstance(value, tuple) else value
        for key, value in attributes.items()
        if key.startswith(prefix) and key != conv.GEN_AI_REQUEST_MODEL
    }


def finish_reasons(
    attributes: Mapping[str, Any], from_messages: tuple[str, ...], output: Any
) -> tuple[str, ...]:
    """Why generation stopped, one per choice.

    Read from ``gen_ai.response.finish_reasons``, else ``from_messages`` (the reasons
    :func:`output_messages` found), else the choices of an OpenAI-shaped ``output``.
    """
    recorded = decode_json(attributes.get(conv.GEN_AI_RESPONSE_FINISH_REASONS))
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


def input_messages(record: SpanRecord) -> tuple[LLMMessage, ...]:
    """The messages sent to the model, system instructions first, in any convention."""
    attributes = record.attributes
    flattened = _indexed(attributes, conv.LLM_INPUT_MESSAGES)
    if flattened:
        return present(_openinference_message(fields) for fields in flattened)
    if conv.GEN_AI_INPUT_MESSAGES in attributes or conv.GEN_AI_SYSTEM_INSTRUCTIONS in attributes:
        system = _system_instructions(attributes.get(conv.GEN_AI_SYSTEM_INSTRUCTIONS))
        messages, _ = _gen_ai_messages(attributes.get(conv.GEN_AI_INPUT_MESSAGES))
        return (system, *messages) if system is not None else messages
    legacy = _indexed(attributes, _GEN_AI_PROMPT)
    if legacy:
        return present(_legacy_gen_ai_message(fields) for fields in legacy)
    if not record.events:
        return ()
    return present(
        _event_message(event.attributes, role)
        for event in record.events
        if (role := _GEN_AI_EVENT_ROLES.get(event.name)) is not None
    )


def output_messages(record: SpanRecord) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    """The messages the model returned, and the finish reasons recorded with them."""
    attributes = record.attributes
    flattened = _indexed(attributes, conv.LLM_OUTPUT_MESSAGES)
    if flattened:
        return present(_openinference_message(fields) for fields in flattened), ()
    if conv.GEN_AI_OUTPUT_MESSAGES in attributes:
        return _gen_ai_messages(attributes.get(conv.GEN_AI_OUTPUT_MESSAGES))
    legacy = _indexed(attributes, _GEN_AI_COMPLETION)
    if legacy:
        reasons = tuple(
            reason for fields in legacy if isinstance(reason := fields.get("finish_reason"), str)
        )
        return present(_legacy_gen_ai_message(fields) for fields in legacy), reasons
    if not record.events:
        return (), ()
    messages: list[LLMMessage] = []
    reasons_list: list[str] = []
    for event in record.events:
        if event.name != _GEN_AI_CHOICE_EVENT:
            continue
        body = _event_body(event.attributes)
        reason = body.get("finish_reason")
        if isinstance(reason, str):
            reasons_list.append(reason)
        inner = decode_json(body.get("message"))
        message = _event_message(inner if isinstance(inner, dict) else body, "assistant")
        if message is not None:
            messages.append(message)
    return tuple(messages), tuple(reasons_list)


# --- messages, in each convention ----------------------------------------------------------------


def _openinference_message(fields: Mapping[str, Any]) -> LLMMessage | None:
    content = content_text(fields.get(conv.MESSAGE_CONTENT))
    if content is None:
        texts = [
            text
            for part in _indexed(fields, conv.MESSAGE_CONTENTS)
            if (text := content_text(part.get(conv.MESSAGE_CONTENT_TEXT))) is not None
        ]
        content = "\n".join(texts) if texts else None
    tool_calls = present(
        tool_call_or_none(
            call.get(conv.TOOL_CALL_ID),
            call.get(conv.TOOL_CALL_FUNCTION_NAME),
            call.get(conv.TOOL_CALL_FUNCTION_ARGUMENTS),
        )
        for call in _indexed(fields, conv.MESSAGE_TOOL_CALLS)
    )
    return message_or_none(
        fields.get(conv.MESSAGE_ROLE),
        content,
        tool_calls,
        fields.get(conv.MESSAGE_NAME),
        fields.get(conv.MESSAGE_TOOL_CALL_ID),
    )


def _legacy_gen_ai_message(fields: Mapping[str, Any]) -> LLMMessage | None:
    tool_calls = present(
        tool_call_or_none(call.get("id"), call.get("name"), call.get("arguments"))
        for call in _indexed(fields, "tool_calls")
    )
    return message_or_none(
        fields.get("role"),
        content_text(fields.get("content")),
        tool_calls,
        fields.get("name"),
        fields.get("tool_call_id"),
    )


def _gen_ai_messages(raw: Any) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    data = decode_json(raw)
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
            if (text := content_text(part.get("content"))) is not None:
                texts.append(text)
        elif part_type == "tool_call":
            call = tool_call_or_none(part.get("id"), part.get("name"), part.get("arguments"))
            if call is not None:
                tool_calls.append(call)
        elif part_type == "tool_call_response":
            tool_call_id = part.get("id")
            if (text := content_text(part.get("response"))) is not None:
                texts.append(text)
    return message_or_none(
        item.get("role"),
        "\n".join(texts) if texts else None,
        tuple(tool_calls),
        item.get("name"),
        tool_call_id,
    )


def _system_instructions(raw: Any) -> LLMMessage | None:
    data = decode_json(raw)
    if isinstance(data, str):
        return LLMMessage(role="system", content=data)
    content = content_text(data) if isinstance(data, list) else None
    return LLMMessage(role="system", content=content) if content is not None else None


def _event_body(attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("body", "gen_ai.event.content"):
        if key in attributes:
            body = decode_json(attributes[key])
            if isinstance(body, dict):
                return body
            if isinstance(body, str):
                return {"content": body}
    return attributes


def _event_message(attributes: Mapping[str, Any], default_role: str | None) -> LLMMessage | None:
    body = _event_body(attributes)
    calls = decode_json(body.get("tool_calls"))
    tool_calls: tuple[ToolCall, ...] = ()
    if isinstance(calls, list):
        tool_calls = present(openai_tool_call(call) for call in calls if isinstance(call, dict))
    role = body.get("role")
    return message_or_none(
        role if isinstance(role, str) and role else default_role,
        content_text(body.get("content")),
        tool_calls,
        body.get("name"),
        body.get("tool_call_id", body.get("id")),
    )


def openai_tool_call(call: Mapping[str, Any]) -> ToolCall | None:
    """A tool call in OpenAI's shape (``{"id", "function": {"name", "arguments"}}``, or flat)."""
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    return tool_call_or_none(call.get("id"), source.get("name"), source.get("arguments"))


def tool_call_or_none(call_id: Any, name: Any, arguments: Any) -> ToolCall | None:
    """A tool call, or ``None`` without a name; arguments that are data become JSON text."""
    if not isinstance(name, str) or not name:
        return None
    if arguments is None:
        arguments_text = ""
    elif isinstance(arguments, str):
        arguments_text = arguments
    else:
        arguments_text = json_text(decode_json(arguments))
    return ToolCall(id=str_or_none(call_id), name=name, arguments=arguments_text)


def message_or_none(
    role: Any,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
    name: Any,
    tool_call_id: Any,
) -> LLMMessage | None:
    """A message, or ``None`` when it has no role, content or tool call (``unknown`` role)."""
    role_text = role if isinstance(role, str) and role else None
    if role_text is None and content is None and not tool_calls:
        return None
    return LLMMessage(
        role=role_text or "unknown",
        content=content,
        tool_calls=tool_calls,
        name=str_or_none(name),
        tool_call_id=str_or_none(tool_call_id),
    )


# --- small readers -------------------------------------------------------------------------------


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
    if not groups:
        return []
    return [groups[index] for index in sorted(groups)]


def present(items: Iterable[Any]) -> tuple[Any, ...]:
    """The items that are not ``None``."""
    return tuple(item for item in items if item is not None)


def content_text(value: Any) -> str | None:
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
    return json_text(value)


def json_text(value: Any) -> str:
    """``value`` as compact JSON text (``str(value)`` when it cannot be encoded)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def str_or_none(value: Any) -> str | None:
    """A non-empty string, or a number as text; ``None`` for anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float):
        return str(value)
    return None


def first_str(attributes: Mapping[str, Any], *keys: str) -> str | None:
    """The first non-empty string among the values of ``keys``."""
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def first_int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    """The first count among the values of ``keys`` (see :func:`int_or_none`)."""
    for key in keys:
        value = attributes.get(key)
        if value is not None and (number := int_or_none(value)) is not None:
            return number
    return None


def int_or_none(value: Any) -> int | None:
    """A count: an int, a whole finite float or a string of digits; ``None`` otherwise."""
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
