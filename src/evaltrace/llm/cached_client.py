"""The judge's client: every judge request asks the judge cache first, and is counted.

:func:`~evaltrace.llm.judge_client` hands judges a :class:`CachingJudgeClient` over the
``openai`` client they are configured with. Its ``chat.completions``, ``responses``,
``embeddings`` and ``moderations`` ``create`` methods:

* inside a judge call (:func:`~evaltrace.llm.run_judge_call`) with a cache configured, look
  the request up (:func:`~evaltrace.llm.cache.request_key`: endpoint, API, the request's
  arguments but for transport options such as ``timeout`` and ``extra_headers``, and the
  sample the call is); a hit is answered from the cache, as the same ``openai`` type, and
  nothing is sent;
* otherwise wait for the call's turn at the rate limiter (the first request of a call only:
  a call answered from the cache never waits), send the request, and keep a complete,
  successful response to store when the judge call succeeds: a call that fails (the judge's
  answer did not parse, say) stores nothing, and neither does an error, a refusal, a reply
  cut short (``finish_reason`` ``length`` or ``content_filter``, an incomplete response) or
  a streamed one;
* count the request in the current :class:`~evaltrace.llm.usage.JudgeUsageCollector`:
  tokens in, out and from the provider's prompt cache, per model, or the tokens a hit saved.

Any other attribute is the wrapped client's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

import pydantic

from evaltrace.llm.cache import CachedReply, JudgeCache, request_key
from evaltrace.llm.samples import current_judge_sample
from evaltrace.llm.usage import current_usage_collector

__all__ = ["CachingJudgeClient", "JudgeCallScope", "judge_call_scope"]

_TYPES: Final[Mapping[str, tuple[str, str]]] = {
    "chat.completions": ("openai.types.chat", "ChatCompletion"),
    "responses": ("openai.types.responses", "Response"),
    "embeddings": ("openai.types", "CreateEmbeddingResponse"),
    "moderations": ("openai.types", "ModerationCreateResponse"),
}
"""The ``openai`` type of each API's response: the only types stored and rebuilt."""

_TRANSPORT: Final = frozenset({"timeout", "extra_headers"})
"""Arguments that change how a request travels, not what it asks: not part of its key."""

_FINISHED: Final = frozenset({"stop", "tool_calls", "function_call"})
"""The ``finish_reason`` of a chat completion the model finished."""


class JudgeCallScope:
    """One judge call: the cache it uses, its turn at the rate limiter, what it will store.

    Made by :func:`~evaltrace.llm.run_judge_call` around the call; the client reads it.
    """

    def __init__(
        self, cache: JudgeCache | None, pace: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.cache = cache
        """The judge cache, or ``None`` when none is configured."""
        self.requested = False
        """Whether a request of the call went through a :class:`CachingJudgeClient`."""
        self._pace = pace
        self._pending: list[tuple[str, CachedReply]] = []

    async def wait_turn(self) -> None:
        """Wait for the call's turn at the rate limiter, once per call."""
        pace, self._pace = self._pace, None
        if pace is not None:
            await pace()

    def keep(self, key: str, reply: CachedReply) -> None:
        """Store ``reply`` under ``key`` if the call succeeds."""
        self._pending.append((key, reply))

    def commit(self) -> None:
        """Store what the call kept: it succeeded."""
        if self.cache is not None:
            for key, reply in self._pending:
                self.cache.put(key, reply)
        self._pending.clear()


_SCOPE: ContextVar[JudgeCallScope | None] = ContextVar("evaltrace_judge_call", default=None)


@contextmanager
def judge_call_scope(scope: JudgeCallScope) -> Iterator[JudgeCallScope]:
    """Make ``scope`` the judge call of the block."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


class CachingJudgeClient:
    """An ``openai`` client (sync or async) whose judge requests go through the judge cache.

    Args:
        client: The ``openai.AsyncOpenAI`` or ``openai.OpenAI`` client (or one with the same
            methods) that sends the requests.
        is_async: Whether its methods return awaitables.
    """

    def __init__(self, client: Any, *, is_async: bool) -> None:
        self.wrapped = client
        """The client that sends the requests."""
        self.endpoint = _endpoint(client)
        """Where its requests go: part of every cache key."""
        api = _AsyncApi if is_async else _SyncApi
        self.chat = _Chat(api(self, "chat.completions", ("chat", "completions")))
        """``chat.completions.create``."""
        self.responses = api(self, "responses", ("responses",))
        """``responses.create``."""
        self.embeddings = api(self, "embeddings", ("embeddings",))
        """``embeddings.create``."""
        self.moderations = api(self, "moderations", ("moderations",))
        """``moderations.create``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def __repr__(self) -> str:
        return f"CachingJudgeClient({self.wrapped!r})"


class _Chat:
    def __init__(self, completions: _SyncApi | _AsyncApi) -> None:
        self.completions = completions


class _Api:
    """One API of the wrapped client (``chat.completions``, ``embeddings``, ...)."""

    def __init__(self, owner: CachingJudgeClient, api: str, path: tuple[str, ...]) -> None:
        self._owner = owner
        self._api = api
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)

    def _target(self) -> Any:
        target = self._owner.wrapped
        for part in self._path:
            target = getattr(target, part)
        return target

    def _look_up(self, arguments: Mapping[str, Any]) -> tuple[str | None, str, Any]:
        """The request's cache key (``None``: not cached), its model, and a cached response."""
        model = str(arguments.get("model") or self._api)
        scope = _SCOPE.get()
        if scope is not None:
            scope.requested = True
        if scope is None or scope.cache is None or arguments.get("stream"):
            return None, model, None
        request = {
            name: value
            for name, value in arguments.items()
            if name not in _TRANSPORT and type(value).__name__ not in ("NotGiven", "Omit")
        }
        key = request_key(
            endpoint=self._owner.endpoint,
            api=self._api,
            request=request,
            sample=current_judge_sample(),
        )
        if key is None:
            return None, model, None
        reply = scope.cache.get(key)
        if reply is None or reply.api != self._api:
            return key, model, None
        response = _rebuild(self._api, reply.body)
        if response is None:
            return key, model, None
        collector = current_usage_collector()
        if collector is not None:
            collector.hit(model, input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
        return key, model, response

    def _sent(self, key: str | None, model: str, response: Any) -> Any:
        """Count a response the endpoint gave, and keep it to store when it is complete."""
        input_tokens, output_tokens, cached_tokens = _usage(self._api, response)
        collector = current_usage_collector()
        if collector is not None:
            collector.sent(
                model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cached_tokens=cached_tokens,
                missed=key is not None,
            )
        scope = _SCOPE.get()
        if key is not None and scope is not None and _storable(self._api, response):
            scope.keep(
                key,
                CachedReply(
                    api=self._api,
                    model=model,
                    body=response.model_dump_json(by_alias=True, exclude_unset=True),
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    cached_tokens=cached_tokens,
                ),
            )
        return response


class _AsyncApi(_Api):
    async def create(self, **arguments: Any) -> Any:
        """Answer from the judge cache, or send the request (see the module documentation)."""
        key, model, cached = self._look_up(arguments)
        if cached is not None:
            return cached
        scope = _SCOPE.get()
        if scope is not None:
            await scope.wait_turn()
        return self._sent(key, model, await self._target().create(**arguments))


class _SyncApi(_Api):
    def create(self, **arguments: Any) -> Any:
        """Answer from the judge cache, or send the request (see the module documentation)."""
        key, model, cached = self._look_up(arguments)
        if cached is not None:
            return cached
        return self._sent(key, model, self._target().create(**arguments))


def _endpoint(client: Any) -> str:
    base_url = getattr(client, "base_url", None)
    if base_url:
        return str(base_url)
    kind = type(client)
    return f"{kind.__module__}.{kind.__qualname__}"


def _response_type(api: str) -> Any:
    module, name = _TYPES[api]
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _rebuild(api: str, body: str) -> Any:
    """The stored response as its ``openai`` type, or ``None`` when it no longer fits."""
    kind = _response_type(api)
    if kind is None:
        return None
    try:
        return kind.model_validate_json(body)
    except pydantic.ValidationError:
        return None


def _storable(api: str, response: Any) -> bool:
    """Whether ``response`` is a complete, successful answer of the API's own type."""
    kind = _response_type(api)
    if kind is None or type(response) is not kind:
        return False
    if api == "chat.completions":
        choices = response.choices or []
        return bool(choices) and all(
            choice.finish_reason in _FINISHED and not getattr(choice.message, "refusal", None)
            for choice in choices
        )
    if api == "responses":
        if response.status != "completed" or response.error or response.incomplete_details:
            return False
        return not any(
            getattr(part, "type", None) == "refusal"
            for item in response.output or []
            if getattr(item, "type", None) == "message"
            for part in getattr(item, "content", None) or []
        )
    if api == "embeddings":
        return bool(response.data)
    return bool(response.results)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(api: str, response: Any) -> tuple[int, int, int]:
    """Input, output and prompt-cached tokens of ``response``, as its ``usage`` reports them."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0, 0
    if api == "responses":
        details = getattr(usage, "input_tokens_details", None)
        return (
            _count(getattr(usage, "input_tokens", 0)),
            _count(getattr(usage, "output_tokens", 0)),
            _count(getattr(details, "cached_tokens", 0)),
        )
    details = getattr(usage, "prompt_tokens_details", None)
    return (
        _count(getattr(usage, "prompt_tokens", 0)),
        _count(getattr(usage, "completion_tokens", 0)),
        _count(getattr(details, "cached_tokens", 0)),
    )
