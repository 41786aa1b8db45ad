"""Reading a model call from OpenAI-shaped input and output, as ``@wrap(kind="llm")`` records it.

A function decorated with ``@wrap(kind="llm")`` around a client call records its arguments as
``input.value`` and its return value as ``output.value``, with no ``llm.*`` or ``gen_ai.*``
attribute. When those are an OpenAI request and response, :func:`openai_call` reads the same
fields an instrumentor records:

- the request: a Chat Completions request (``model``, ``messages``, ``tools``, parameters) or a
  Responses API one (``instructions``, ``input``), as the bound arguments of a function that
  takes them, or as the one argument of a function that takes the request whole;
- the response: a ``ChatCompletion`` (``choices``), a Responses API ``Response`` (``output``),
  one returned message (``{"role", "content", "tool_calls"}``), each as a dict or as the
  ``openai`` object the capture codec encoded; or the reply's text, when the input was a
  request.

Reading never raises: what does not fit these shapes is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from evaltrace.trace.spans.messages import LLMMessage, TokenUsage, ToolCall, ToolDefinition
from evaltrace.trace.spans.parsers import (
    content_text,
    first_int,
    first_str,
    message_or_none,
    openai_tool_call,
    present,
    tool_call_or_none,
    tool_definition,
)

__all__ = ["OpenAICall", "openai_call"]

# The keys that make a mapping of arguments a request, and those that are not parameters.
_REQUEST_KEYS: Final = frozenset({"messages", "input", "instructions"})
_NOT_PARAMETERS: Final = frozenset({"model", "messages", "input", "instructions", "tools"})


@dataclass(kw_only=True, frozen=True, slots=True)
class OpenAICall:
    """What an OpenAI-shaped request and response say about a model call."""

    model: str | None = None
    """The response's model, else the request's."""
    input_messages: tuple[LLMMessage, ...] = ()
    """The messages sent, instructions first."""
    output_messages: tuple[LLMMessage, ...] = ()
    """The messages returned."""
    tools: tuple[ToolDefinition, ...] = ()
    """The tools the request offered."""
    usage: TokenUsage = field(default_factory=TokenUsage)
    """The response's token counts."""
    finish_reasons: tuple[str, ...] = ()
    """Why generation stopped, one per choice (for a Response, why it is incomplete)."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """The request's other arguments that were given (``temperature``, ``reasoning``, ...)."""


def openai_call(input_value: Any, output_value: Any) -> OpenAICall | None:
    """Read a model call from a span's decoded input and output.

    Args:
        input_value: The span's input (``input.value`` decoded).
        output_value: The span's output (``output.value`` decoded).

    Returns:
        The call, or ``None`` when neither the input is a request nor the output a response.

    Example:
        >>> call = openai_call(
        ...     {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        ...     "Hello!",
        ... )
        >>> call.model, [m.content for m in call.output_messages]
        ('gpt-4o-mini', ['Hello!'])
    """
    request = _request(input_value)
    response = output_value if isinstance(output_value, dict) else None
    outputs: tuple[LLMMessage, ...] = ()
    reasons: tuple[str, ...] = ()
    if response is not None:
        if isinstance(response.get("choices"), list):
            outputs, reasons = _choices(response["choices"])
        elif isinstance(response.get("output"), list):
            outputs, reasons = _response_output(response)
        elif isinstance(response.get("role"), str):
            outputs = present([_chat_message(response, "assistant")])
        else:
            response = None
    if request is None and response is None:
        return None
    if response is None and isinstance(output_value, str):
        outputs = (LLMMessage(role="assistant", content=output_value),)
    request = request or {}
    response = response or {}
    usage = response.get("usage")
    return OpenAICall(
        model=first_str(response, "model") or first_str(request, "model"),
        input_messages=_request_messages(request),
        output_messages=outputs,
        tools=_tools(request.get("tools")),
        usage=_usage(usage) if isinstance(usage, dict) else TokenUsage(),
        finish_reasons=reasons,
        parameters={
            key: value
            for key, value in request.items()
            if key not in _NOT_PARAMETERS and value is not None
        },
    )


def _request(value: Any) -> dict[str, Any] | None:
    """The request in a span's input: the arguments themselves, or their one value."""
    if not isinstance(value, dict):
        return None
    if not _REQUEST_KEYS.isdisjoint(value):
        return value
    if len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, dict) and not _REQUEST_KEYS.isdisjoint(inner):
            return inner
    return None


# --- requests ------------------------------------------------------------------------------------


def _request_messages(request: Mapping[str, Any]) -> tuple[LLMMessage, ...]:
    messages: list[LLMMessage] = []
    instructions = request.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append(LLMMessage(role="system", content=instructions))
    elif isinstance(instructions, list):
        messages.extend(_input_items(instructions))
    chat = request.get("messages")
    if isinstance(chat, list):
        messages.extend(
            message
            for item in chat
            if isinstance(item, dict) and (message := _chat_message(item, None)) is not None
        )
    items = request.get("input")
    if isinstance(items, str):
        messages.append(LLMMessage(role="user", content=items))
    elif isinstance(items, list):
        messages.extend(_input_items(items))
    return tuple(messages)


def _chat_message(item: Mapping[str, Any], default_role: str | None) -> LLMMessage | None:
    """A Chat Completions message: ``role``, ``content``, ``tool_calls``, ``tool_call_id``."""
    calls = item.get("tool_calls")
    tool_calls: tuple[ToolCall, ...] = ()
    if isinstance(calls, list):
        tool_calls = present(openai_tool_call(call) for call in calls if isinstance(call, dict))
    role = item.get("role")
    return message_or_none(
        role if isinstance(role, str) and role else default_role,
        content_text(item.get("content")),
        tool_calls,
        item.get("name"),
        item.get("tool_call_id"),
    )


def _input_items(items: list[Any]) -> list[LLMMessage]:
    """Responses API input items: messages, function calls and their outputs.

    Consecutive function calls become one assistant message, as a chat model returns them.
    """
    messages: list[LLMMessage] = []
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            call = _function_call(item)
            if call is not None:
                calls.append(call)
            continue
        if calls:
            messages.append(LLMMessage(role="assistant", tool_calls=tuple(calls)))
            calls = []
        message: LLMMessage | None = None
        if item.get("type") == "function_call_output":
            message = message_or_none(
                "tool", content_text(item.get("output")), (), None, item.get("call_id")
            )
        elif isinstance(item.get("role"), str):
            message = _chat_message(item, None)
        if message is not None:
            messages.append(message)
    if calls:
        messages.append(LLMMessage(role="assistant", tool_calls=tuple(calls)))
    return messages


def _function_call(item: Mapping[str, Any]) -> ToolCall | None:
    return tool_call_or_none(item.get("call_id"), item.get("name"), item.get("arguments"))


def _tools(tools: Any) -> tuple[ToolDefinition, ...]:
    if not isinstance(tools, list):
        return ()
    return present(tool_definition(tool) for tool in tools)


# --- responses -----------------------------------------------------------------------------------


def _choices(choices: list[Any]) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    messages: list[LLMMessage] = []
    reasons: list[str] = []
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        if isinstance(reason := choice.get("finish_reason"), str):
            reasons.append(reason)
        body = choice.get("message")
        if isinstance(body, dict):
            message = _chat_message(body, "assistant")
        else:  # a legacy completion's choice holds its text
            message = message_or_none("assistant", content_text(choice.get("text")), (), None, None)
        if message is not None:
            messages.append(message)
    return tuple(messages), tuple(reasons)


def _response_output(response: Mapping[str, Any]) -> tuple[tuple[LLMMessage, ...], tuple[str, ...]]:
    """The output items of a Responses API ``Response``; reasoning and built-in calls skipped."""
    messages: list[LLMMessage] = []
    calls: list[ToolCall] = []
    for item in response["output"]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            call = _function_call(item)
            if call is not None:
                calls.append(call)
        elif item.get("type") == "message":
            message = _chat_message(item, "assistant")
            if message is not None:
                messages.append(message)
    if calls:
        messages.append(LLMMessage(role="assistant", tool_calls=tuple(calls)))
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return tuple(messages), (reason,) if isinstance(reason, str) and reason else ()


def _usage(usage: Mapping[str, Any]) -> TokenUsage:
    """Chat Completions (``prompt_tokens``...) or Responses API (``input_tokens``...) counts."""
    input_tokens = first_int(usage, "prompt_tokens", "input_tokens")
    output_tokens = first_int(usage, "completion_tokens", "output_tokens")
    total_tokens = first_int(usage, "total_tokens")
    if total_tokens is None and (input_tokens is not None or output_tokens is not None):
        total_tokens = (input_tokens or 0) + (output_tokens or 0)
    details = usage.get("prompt_tokens_details", usage.get("input_tokens_details"))
    cache_read = cache_creation = None
    if isinstance(details, dict):
        cache_read = first_int(details, "cached_tokens")
        cache_creation = first_int(details, "cache_write_tokens")
    return TokenUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total_tokens,
        cache_read_tokens=cache_read,
        cache_creation_tokens=cache_creation,
    )
