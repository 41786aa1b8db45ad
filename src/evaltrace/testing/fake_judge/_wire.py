"""The OpenAI wire shapes the fake judge speaks: what it reads from requests, what it replies.

Each served endpoint is a :class:`Route`: it checks a request and reads the text that rules
are matched against, and it builds the reply body for an :class:`Answer` the way the real API
shapes it: chat completions (a forced tool call, structured output or text), the Responses
API (``function_call`` or ``message`` output items), embeddings (unit vectors hashed from words
and character trigrams, ``float`` or ``base64``) and moderations (flagged words). A request the
real API would reject raises :class:`RequestError`, which becomes an error body in OpenAI's
shape (:func:`error_body`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal, TypeAlias

from evaltrace.errors import ConfigurationError
from evaltrace.testing.fake_judge._schema_instances import schema_instance

__all__ = [
    "DEFAULT_FLAGGED_WORDS",
    "ENDPOINTS",
    "MODERATION_CATEGORIES",
    "ROUTES",
    "Answer",
    "Endpoint",
    "JSONObject",
    "ReplySettings",
    "RequestError",
    "RequestText",
    "Route",
    "decode_body",
    "error_body",
    "flagged_word_patterns",
]


JSONObject: TypeAlias = dict[str, Any]
"""A decoded JSON object: a request or reply body."""

Endpoint: TypeAlias = Literal["chat/completions", "responses", "embeddings", "moderations"]
"""The endpoints the server answers, named by their path under ``/v1``."""


MODERATION_CATEGORIES: Final[tuple[str, ...]] = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/instructions",
    "self-harm/intent",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)
"""The category names of a moderation result, in the order the real API lists them."""


DEFAULT_FLAGGED_WORDS: Final[Mapping[str, str]] = {"kill": "violence", "hate": "hate"}
"""Words the moderation endpoint flags by default, each with the category it raises."""


_DEFAULT_REASONS: Final = "Scripted by FakeJudgeServer."
_FLAGGED_SCORE: Final = 0.93
_CLEAN_SCORE: Final = 0.0004


@dataclass(kw_only=True, frozen=True)
class Answer:
    """The answer one call gets, resolved from a rule (and its sequence position)."""

    choice: str | None = None
    """The choice of a forced tool call or of a schema's enum property."""
    content: str | None = None
    """The text of a plain reply."""
    json: Mapping[str, Any] | None = None
    """A JSON object given as is: tool-call arguments or a structured reply."""
    reasons: str | None = None
    """The ``reasons`` text of a tool call."""
    tool_call: str | None = None
    """A tool the model calls of its own accord (the request offers it, forcing nothing)."""


@dataclass(kw_only=True, frozen=True)
class ReplySettings:
    """What replies depend on besides the request and its answer: the server's settings."""

    default_content: str
    """The text reply when no rule supplies one."""
    embedding_dimensions: int
    """The length of embedding vectors when a request gives no ``dimensions``."""
    flagged: tuple[tuple[re.Pattern[str], str], ...]
    """The moderation patterns, each with the category it raises."""


class RequestError(Exception):
    """A request the real API would reject; becomes a 4xx reply in OpenAI's error shape."""

    def __init__(self, message: str, *, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        """What is wrong with the request."""
        self.param = param
        """The request parameter at fault, if one is."""
        self.status = status
        """The HTTP status of the reply."""


@dataclass(kw_only=True, frozen=True)
class RequestText:
    """What rules look at in a request.

    Its whole text, its last user message, its system prompt and its model.
    """

    whole: str
    """Every chat message's text, or the Responses ``instructions`` and ``input``, or the
    embedding or moderation ``input``, joined by newlines."""
    user: str = ""
    """The text of the last user message (a Responses ``input`` string is one); the whole
    ``input`` of an embedding or moderation request."""
    system: str = ""
    """The text of the system and developer messages (and Responses ``instructions``), joined
    by newlines; empty when there is none."""
    model: str = ""
    """The model the request names; empty when it names none."""


@dataclass(kw_only=True, frozen=True)
class Route:
    """How one endpoint reads a request's text and builds its reply body."""

    endpoint: Endpoint
    """The endpoint, named by its path under ``/v1``."""
    text: Callable[[JSONObject], RequestText]
    """Checks a request and reads what rules are matched against."""
    build: Callable[[ReplySettings, JSONObject, Answer | None, int], JSONObject]
    """Builds the reply body from the settings, the request, its answer and its serial."""


# -- errors and request bodies --------------------------------------------------------------------

_ERROR_KINDS: Final[Mapping[int, tuple[str, str | None, str]]] = {
    400: ("invalid_request_error", None, "The request is invalid."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Access denied."),
    404: ("invalid_request_error", "unknown_url", "Unknown request URL."),
    408: ("timeout", None, "The request timed out."),
    409: ("invalid_request_error", "conflict", "The request conflicts with another request."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", "bad_gateway", "Bad gateway."),
    503: ("server_error", "service_unavailable", "The engine is currently overloaded."),
}


def error_body(
    status: int, message: str | None = None, *, code: str | None = None, param: str | None = None
) -> JSONObject:
    """An error body in OpenAI's shape: ``{"error": {message, type, param, code}}``."""
    kind, default_code, default_message = _ERROR_KINDS.get(
        status,
        ("server_error" if status >= 500 else "invalid_request_error", None, "Request failed."),
    )
    return {
        "error": {
            "message": message or default_message,
            "type": kind,
            "param": param,
            "code": code if code is not None else default_code,
        }
    }


def decode_body(raw: bytes) -> tuple[JSONObject, str | None]:
    """A request body as a JSON object (``{}`` when empty), and why it is not one, if not."""
    if not raw.strip():
        return {}, None
    try:
        decoded = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return {}, str(error)
    if not isinstance(decoded, dict):
        return {}, f"expected an object, found {type(decoded).__name__}"
    return decoded, None


# -- request text ---------------------------------------------------------------------------------

_TEXT_KEYS: Final = ("content", "text", "output", "refusal")


def _collect_text(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value:
            out.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_text(item, out)
    elif isinstance(value, dict):
        for key in _TEXT_KEYS:
            if key in value:
                _collect_text(value[key], out)


def _joined_text(*values: Any) -> str:
    parts: list[str] = []
    for value in values:
        _collect_text(value, parts)
    return "\n".join(parts)


def _require(body: JSONObject, name: str, endpoint: str) -> Any:
    if name not in body:
        raise RequestError(
            f"Missing required parameter: {name!r} (every {endpoint} request needs one).",
            param=name,
        )
    return body[name]


_SYSTEM_ROLES: Final = ("system", "developer")


def _chat_messages(body: JSONObject) -> list[Any]:
    _model(body, "chat/completions")
    _reject_streaming(body)
    messages = _require(body, "messages", "chat/completions")
    if not isinstance(messages, list):
        raise RequestError("messages must be a list of message objects.", param="messages")
    return messages


def _chat_text(body: JSONObject) -> str:
    return _joined_text(_chat_messages(body))


def _of_role(items: Any, roles: tuple[str, ...]) -> list[Any]:
    """The messages (or Responses input items) of ``items`` whose role is one of ``roles``."""
    listed = items if isinstance(items, list) else []
    return [item for item in listed if isinstance(item, dict) and item.get("role") in roles]


def _chat_request(body: JSONObject) -> RequestText:
    messages = _chat_messages(body)
    users = _of_role(messages, ("user",))
    return RequestText(
        whole=_joined_text(messages),
        user=_joined_text(users[-1:]),
        system=_joined_text(_of_role(messages, _SYSTEM_ROLES)),
        model=str(body["model"]),
    )


def _responses_text(body: JSONObject) -> str:
    _model(body, "responses")
    _reject_streaming(body)
    if "input" not in body and "instructions" not in body:
        raise RequestError("A responses request needs input or instructions.", param="input")
    return _joined_text(body.get("instructions"), body.get("input"))


def _responses_request(body: JSONObject) -> RequestText:
    whole = _responses_text(body)
    given = body.get("input")
    users = [given] if isinstance(given, str) else _of_role(given, ("user",))
    return RequestText(
        whole=whole,
        user=_joined_text(users[-1:]),
        system=_joined_text(body.get("instructions"), _of_role(given, _SYSTEM_ROLES)),
        model=str(body["model"]),
    )


def _input_request(inputs: list[str], body: JSONObject) -> RequestText:
    """An embedding or moderation request: its input is the user's text."""
    whole = "\n".join(inputs)
    model = body.get("model")
    return RequestText(whole=whole, user=whole, model=model if isinstance(model, str) else "")


def _embedding_inputs(body: JSONObject) -> list[str]:
    _model(body, "embeddings")
    given = _require(body, "input", "embeddings")
    if isinstance(given, str):
        return [given]
    if isinstance(given, list) and given:
        if all(isinstance(token, int) for token in given):
            return [" ".join(str(token) for token in given)]
        inputs: list[str] = []
        for item in given:
            if isinstance(item, str):
                inputs.append(item)
            elif isinstance(item, list) and all(isinstance(token, int) for token in item):
                inputs.append(" ".join(str(token) for token in item))
            else:
                raise RequestError(
                    f"input items must be strings or token lists, found {item!r}.", param="input"
                )
        return inputs
    raise RequestError(
        "input must be a non-empty string, list of strings or list of token lists.", param="input"
    )


def _moderation_inputs(body: JSONObject) -> list[str]:
    given = _require(body, "input", "moderations")
    if isinstance(given, str):
        return [given]
    if isinstance(given, list) and given and all(isinstance(item, str) for item in given):
        return list(given)
    if isinstance(given, list) and given and all(isinstance(item, dict) for item in given):
        return [_joined_text(given)]
    raise RequestError(
        "input must be a string, a list of strings or a list of content parts.", param="input"
    )


# -- answers: tool-call arguments, structured output, text ----------------------------------------


def _schema_answer(schema: Mapping[str, Any], *, choice: str | None, reasons: str | None) -> Any:
    value = schema_instance(schema)
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    if choice is not None:
        key = (
            "choice"
            if "choice" in properties
            else next(
                (
                    name
                    for name, sub in properties.items()
                    if isinstance(sub, Mapping) and "enum" in sub
                ),
                None,
            )
        )
        if key is not None:
            value[key] = choice
    if reasons is not None and isinstance(value.get("reasons"), str):
        value["reasons"] = reasons
    return value


def _tool_arguments(parameters: Mapping[str, Any], answer: Answer | None) -> str:
    if answer is not None and answer.json is not None:
        return json.dumps(dict(answer.json))
    given = answer if answer is not None else Answer()
    reasons = given.reasons if given.reasons is not None else _DEFAULT_REASONS
    return json.dumps(_schema_answer(parameters, choice=given.choice, reasons=reasons))


def _text_answer(
    settings: ReplySettings,
    answer: Answer | None,
    *,
    schema: Mapping[str, Any] | None,
    json_mode: bool,
) -> str:
    given = answer if answer is not None else Answer()
    if schema is not None:
        if given.json is not None:
            return json.dumps(dict(given.json))
        if given.choice is None and given.content is not None:
            return given.content
        return json.dumps(_schema_answer(schema, choice=given.choice, reasons=given.reasons))
    if json_mode:
        if given.json is not None:
            return json.dumps(dict(given.json))
        return given.content if given.content is not None else "{}"
    if given.content is not None:
        return given.content
    if given.json is not None:
        return json.dumps(dict(given.json))
    return given.choice if given.choice is not None else settings.default_content


def _tool_named(
    tools: Any, name: str, *, nested: bool, asked_by: str = "tool_choice names"
) -> Mapping[str, Any]:
    """Find the function tool called ``name``; ``nested`` for chat's ``{"function": {...}}``."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            continue
        spec = tool.get("function") if nested else tool
        if isinstance(spec, Mapping):
            names.append(str(spec.get("name")))
            if spec.get("name") == name:
                return spec
    raise RequestError(
        f"{asked_by} the function {name!r}, but tools only defines "
        f"{', '.join(repr(found) for found in names) or 'no functions'}.",
        param="tools" if asked_by != "tool_choice names" else "tool_choice",
    )


def _called_tool(
    body: JSONObject, answer: Answer | None, *, nested: bool
) -> Mapping[str, Any] | None:
    """The tool the reply calls: the one the request forces, else the one the rule scripts."""
    forced = _forced_tool(body, nested=nested)
    if forced is not None or answer is None or answer.tool_call is None:
        return forced
    if body.get("tool_choice") == "none":
        return None
    return _tool_named(
        body.get("tools"), answer.tool_call, nested=nested, asked_by="the matching rule calls"
    )


def _forced_tool(body: JSONObject, *, nested: bool) -> Mapping[str, Any] | None:
    """The function a request forces the model to call, or ``None`` when it forces none."""
    choice = body.get("tool_choice")
    tools = body.get("tools")
    name: Any = None
    if isinstance(choice, Mapping):
        if choice.get("type") == "function":
            spec = choice.get("function") if nested else choice
            name = spec.get("name") if isinstance(spec, Mapping) else None
        elif choice.get("type") == "allowed_tools":
            allowed = choice.get("allowed_tools") if nested else choice
            if isinstance(allowed, Mapping) and allowed.get("mode") == "required":
                listed = allowed.get("tools")
                return _first_function(listed, nested=nested, all_tools=tools)
    elif choice == "required":
        return _first_function(tools, nested=nested, all_tools=tools)
    if name is None:
        return None
    return _tool_named(tools, str(name), nested=nested)


def _first_function(listed: Any, *, nested: bool, all_tools: Any) -> Mapping[str, Any] | None:
    for tool in listed if isinstance(listed, list) else ():
        if isinstance(tool, Mapping) and tool.get("type") == "function":
            spec = tool.get("function") if nested else tool
            if isinstance(spec, Mapping) and "name" in spec:
                return _tool_named(all_tools, str(spec["name"]), nested=nested)
    return None


def _parameters(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    parameters = tool.get("parameters")
    return parameters if isinstance(parameters, Mapping) else {}


def _chat_format(body: JSONObject) -> tuple[Mapping[str, Any] | None, bool]:
    """The JSON schema a chat request asks its reply to follow, and whether it asks for JSON."""
    response_format = body.get("response_format")
    if not isinstance(response_format, Mapping):
        return None, False
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        return (schema if isinstance(schema, Mapping) else {}), True
    return None, response_format.get("type") == "json_object"


def _responses_format(body: JSONObject) -> tuple[Mapping[str, Any] | None, bool]:
    text = body.get("text")
    text_format = text.get("format") if isinstance(text, Mapping) else None
    if not isinstance(text_format, Mapping):
        return None, False
    if text_format.get("type") == "json_schema":
        schema = text_format.get("schema")
        return (schema if isinstance(schema, Mapping) else {}), True
    return None, text_format.get("type") == "json_object"


def _count_tokens(text: str) -> int:
    return len(text.split())


def _model(body: JSONObject, endpoint: str) -> str:
    model = _require(body, "model", endpoint)
    if not isinstance(model, str) or not model:
        raise RequestError(f"model must be a non-empty string, found {model!r}.", param="model")
    return model


def _reject_streaming(body: JSONObject) -> None:
    if body.get("stream"):
        raise RequestError(
            "FakeJudgeServer does not stream; call the client without stream=True.",
            param="stream",
        )


# -- chat completions and the Responses API -------------------------------------------------------


def _build_chat(
    settings: ReplySettings, body: JSONObject, answer: Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "chat/completions")
    _reject_streaming(body)
    tool = _called_tool(body, answer, nested=True)
    message: JSONObject = {"role": "assistant", "content": None, "refusal": None}
    if tool is not None:
        arguments = _tool_arguments(_parameters(tool), answer)
        message["tool_calls"] = [
            {
                "id": f"call_fake{serial:06d}",
                "type": "function",
                "function": {"name": tool.get("name"), "arguments": arguments},
            }
        ]
        finish_reason, produced = "tool_calls", arguments
    else:
        schema, json_mode = _chat_format(body)
        produced = _text_answer(settings, answer, schema=schema, json_mode=json_mode)
        message["content"] = produced
        finish_reason = "stop"
    prompt_tokens = _count_tokens(_chat_text(body))
    completion_tokens = _count_tokens(produced)
    return {
        "id": f"chatcmpl-fake{serial:06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "fp_evaltrace_fake",
    }


def _build_response(
    settings: ReplySettings, body: JSONObject, answer: Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "responses")
    _reject_streaming(body)
    tool = _called_tool(body, answer, nested=False)
    item: JSONObject
    if tool is not None:
        produced = _tool_arguments(_parameters(tool), answer)
        item = {
            "type": "function_call",
            "id": f"fc_fake{serial:06d}",
            "call_id": f"call_fake{serial:06d}",
            "name": tool.get("name"),
            "arguments": produced,
            "status": "completed",
        }
    else:
        schema, json_mode = _responses_format(body)
        produced = _text_answer(settings, answer, schema=schema, json_mode=json_mode)
        item = {
            "type": "message",
            "id": f"msg_fake{serial:06d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": produced, "annotations": []}],
        }
    input_tokens = _count_tokens(_responses_text(body))
    output_tokens = _count_tokens(produced)
    now = int(time.time())
    return {
        "id": f"resp_fake{serial:06d}",
        "object": "response",
        "created_at": now,
        "completed_at": now,
        "status": "completed",
        "model": model,
        "output": [item],
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "text": body.get("text") or {"format": {"type": "text"}},
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


# -- embeddings -----------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _feature_slot(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    index = int.from_bytes(digest[:4], "little") % dimensions
    return index, (1.0 if digest[4] & 1 else -1.0)


def _embed(text: str, dimensions: int) -> list[float]:
    """Hash words (weight 1) and their character trigrams (weight 0.5) into a unit vector."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        index, sign = _feature_slot(f"w:{word}", dimensions)
        vector[index] += sign
        padded = f"#{word}#"
        for start in range(len(padded) - 2):
            index, sign = _feature_slot(f"t:{padded[start : start + 3]}", dimensions)
            vector[index] += 0.5 * sign
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return [value / norm for value in vector]


def _embedding_dimensions(settings: ReplySettings, body: JSONObject) -> int:
    requested = body.get("dimensions", settings.embedding_dimensions)
    if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
        raise RequestError(
            f"dimensions must be a positive integer, got {requested!r}.", param="dimensions"
        )
    return requested


def _build_embeddings(
    settings: ReplySettings, body: JSONObject, answer: Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "embeddings")
    inputs = _embedding_inputs(body)
    dimensions = _embedding_dimensions(settings, body)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise RequestError(
            f"encoding_format must be 'float' or 'base64', found {encoding!r}.",
            param="encoding_format",
        )
    data: list[JSONObject] = []
    for index, text in enumerate(inputs):
        vector = _embed(text, dimensions)
        encoded: Any = vector
        if encoding == "base64":
            encoded = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    tokens = sum(_count_tokens(text) for text in inputs)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# -- moderations ----------------------------------------------------------------------------------


def flagged_word_patterns(
    flagged_words: Mapping[str, str] | Iterable[str],
) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The moderation patterns for ``FakeJudgeServer(flagged_words=...)``, with categories.

    Raises:
        ConfigurationError: ``flagged_words`` is one string, has an empty word, or names a
            category that is not a moderation category.
    """
    if isinstance(flagged_words, str):
        raise ConfigurationError(
            f"FakeJudgeServer(flagged_words={flagged_words!r}) got one string; pass a list of "
            "words, such as ['kill', 'hate'], or a mapping of word to category."
        )
    pairs = (
        list(flagged_words.items())
        if isinstance(flagged_words, Mapping)
        else [(word, "harassment") for word in flagged_words]
    )
    patterns: list[tuple[re.Pattern[str], str]] = []
    for word, category in pairs:
        if category not in MODERATION_CATEGORIES:
            raise ConfigurationError(
                f"FakeJudgeServer(flagged_words=...) maps {word!r} to {category!r}, which is not "
                f"a moderation category; use one of {', '.join(MODERATION_CATEGORIES)}."
            )
        if not word.strip():
            raise ConfigurationError("FakeJudgeServer(flagged_words=...) contains an empty word.")
        # A word boundary before the word flags "killing" but not "skill".
        patterns.append((re.compile(rf"\b{re.escape(word.lower())}", re.IGNORECASE), category))
    return tuple(patterns)


def _moderate(settings: ReplySettings, text: str) -> dict[str, bool]:
    raised = {category: False for category in MODERATION_CATEGORIES}
    for pattern, category in settings.flagged:
        if pattern.search(text):
            raised[category] = True
    return raised


def _build_moderation(
    settings: ReplySettings, body: JSONObject, answer: Answer | None, serial: int
) -> JSONObject:
    inputs = _moderation_inputs(body)
    results: list[JSONObject] = []
    for text in inputs:
        categories = _moderate(settings, text)
        results.append(
            {
                "flagged": any(categories.values()),
                "categories": categories,
                "category_scores": {
                    name: _FLAGGED_SCORE if raised else _CLEAN_SCORE
                    for name, raised in categories.items()
                },
                "category_applied_input_types": {name: ["text"] for name in categories},
            }
        )
    model = body.get("model")
    return {
        "id": f"modr-fake{serial:06d}",
        "model": model if isinstance(model, str) and model else "omni-moderation-latest",
        "results": results,
    }


# -- routes ---------------------------------------------------------------------------------------

ROUTES: Final[Mapping[str, Route]] = {
    "/v1/chat/completions": Route(
        endpoint="chat/completions", text=_chat_request, build=_build_chat
    ),
    "/v1/responses": Route(endpoint="responses", text=_responses_request, build=_build_response),
    "/v1/embeddings": Route(
        endpoint="embeddings",
        text=lambda body: _input_request(_embedding_inputs(body), body),
        build=_build_embeddings,
    ),
    "/v1/moderations": Route(
        endpoint="moderations",
        text=lambda body: _input_request(_moderation_inputs(body), body),
        build=_build_moderation,
    ),
}
"""The served routes, by request path."""

ENDPOINTS: Final[tuple[Endpoint, ...]] = tuple(route.endpoint for route in ROUTES.values())
"""The served endpoints, in route order."""
