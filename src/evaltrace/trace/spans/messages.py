"""What a model call said: its messages and tool calls, the tools it offered, its token counts.

These are the parts of an :class:`~evaltrace.trace.spans.views.LLMSpan`, read from span
attributes by the parsers of :mod:`evaltrace.trace.spans.parsers`, or from the input and
output of a span of kind ``llm`` by :mod:`evaltrace.trace.spans.openai_bodies`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["LLMMessage", "TokenUsage", "ToolCall", "ToolDefinition"]


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
class ToolDefinition:
    """A tool offered to a model: a function it may call, or a provider's built-in tool."""

    name: str
    """The tool name (for a built-in tool without one, its type, such as ``web_search``)."""
    description: str | None = None
    """What the tool does, as the model was told."""
    parameters: Any = None
    """The JSON Schema of the tool's arguments (JSON data), ``None`` when not recorded."""
    type: str = "function"
    """``function``, or the type of a built-in tool."""

    def as_dict(self) -> dict[str, Any]:
        """Return the definition as JSON-compatible data.

        Example:
            >>> ToolDefinition(name="get_weather").as_dict()
            {'type': 'function', 'name': 'get_weather', 'description': None, 'parameters': None}
        """
        return {
            "type": self.type,
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }


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
    cache_read_tokens: int | None = None
    """Of the input tokens, those read from the provider's prompt cache."""
    cache_creation_tokens: int | None = None
    """Of the input tokens, those written to the provider's prompt cache."""
