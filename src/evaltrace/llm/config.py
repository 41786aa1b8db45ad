"""Where LLM judges send their requests: endpoint, key, models and clients.

Every model-backed evaluator (the autoevals classifiers, embeddings, moderation,
:func:`~evaltrace.judges.create_llm_evaluator`) resolves its judge through
:func:`judge_config` when it runs. Values given to :func:`configure_judge` win; then the
``EVALTRACE_JUDGE_*`` environment variables; then ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.
There is no default endpoint: with no client, no base URL and no API key anywhere, a judge
evaluation is errored with a message saying how to configure one.

Judge requests go through ``openai.AsyncOpenAI`` clients that are built on first use (the
``openai`` package is imported then, not before), reused per event loop, retry twice on
429 and 5xx replies, and give each request :data:`DEFAULT_JUDGE_TIMEOUT` seconds (60) unless
``configure_judge(timeout=...)`` or ``EVALTRACE_JUDGE_TIMEOUT`` says otherwise. Judge calls
run detached from the app's trace, so the capture of the run being judged never contains the
judge's own spans (see :mod:`evaltrace.llm.isolation`).

With a judge cache (``configure_judge(cache=...)`` or ``EVALTRACE_JUDGE_CACHE``; ``evaltrace
test`` uses one by default), complete, successful judge responses are kept and a request asked
again is answered from it (see :mod:`evaltrace.llm.cache`).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import sys
import threading
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeAlias, TypeVar

from evaltrace.checks import check_timeout
from evaltrace.constants import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_JUDGE_TIMEOUT,
    DEFAULT_MAX_RETRIES,
)
from evaltrace.errors import ConfigurationError, MissingExtraError
from evaltrace.llm.cache import JudgeCache, shared_judge_cache
from evaltrace.llm.cached_client import CachingJudgeClient
from evaltrace.llm.rate_limit import RateLimiting

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "JudgeCacheSetting",
    "JudgeClient",
    "JudgeConfig",
    "JudgeConfigToken",
    "JudgeNotConfiguredError",
    "configure_judge",
    "environment_judge_cache",
    "judge_client",
    "judge_config",
    "reset_judge_config",
    "uses_responses_api",
]

T = TypeVar("T")

JudgeCacheSetting: TypeAlias = "bool | str | os.PathLike[str] | JudgeCache"
"""What ``configure_judge(cache=...)`` takes: ``True`` (the default file), ``False`` (no
cache), a file, or a :class:`~evaltrace.llm.cache.JudgeCache` with its own limits."""


_ENV_BASE_URL: Final = "EVALTRACE_JUDGE_BASE_URL"
_ENV_API_KEY: Final = "EVALTRACE_JUDGE_API_KEY"
_ENV_MODEL: Final = "EVALTRACE_JUDGE_MODEL"
_ENV_EMBEDDING_MODEL: Final = "EVALTRACE_JUDGE_EMBEDDING_MODEL"
_ENV_TIMEOUT: Final = "EVALTRACE_JUDGE_TIMEOUT"
_ENV_CACHE: Final = "EVALTRACE_JUDGE_CACHE"
_CACHE_OFF: Final = frozenset({"0", "false", "off", "no", "none"})
_CACHE_ON: Final = frozenset({"1", "true", "on", "yes"})
_ENV_OPENAI_BASE_URL: Final = "OPENAI_BASE_URL"
_ENV_OPENAI_API_KEY: Final = "OPENAI_API_KEY"

# A keyless endpoint (a local model server) still needs some key: the openai client refuses
# to start without one.
_NO_API_KEY: Final = "evaltrace-no-api-key"

HOW_TO_CONFIGURE: Final = (
    "evaltrace never sends judge requests to a default endpoint. Configure the judge in code "
    "with evaltrace.judges.configure_judge(base_url=..., api_key=..., model=...) or "
    "configure_judge(client=openai.AsyncOpenAI(...)), or in the environment with "
    f"{_ENV_BASE_URL} and {_ENV_API_KEY} (optionally {_ENV_MODEL} and {_ENV_EMBEDDING_MODEL}), "
    f"or with {_ENV_OPENAI_API_KEY} (and {_ENV_OPENAI_BASE_URL}) for an OpenAI-compatible API."
)


class JudgeNotConfiguredError(ConfigurationError):
    """A model-backed evaluator ran, but no judge endpoint or client is configured."""

    def __init__(self, evaluator: str | None = None) -> None:
        who = f"{evaluator!r} needs an LLM judge" if evaluator else "An LLM judge is needed"
        super().__init__(f"{who}, and none is configured. {HOW_TO_CONFIGURE}")


@dataclass(kw_only=True, frozen=True)
class JudgeConfig:
    """The resolved judge configuration: what a judge evaluation uses when it runs.

    Built by :func:`judge_config` from :func:`configure_judge` values and the environment.

    Example:
        >>> JudgeConfig(base_url="http://127.0.0.1:8000/v1").is_configured
        True
    """

    base_url: str | None = None
    """The OpenAI-compatible endpoint; ``None`` with an API key means OpenAI's own API."""
    api_key: str | None = field(default=None, repr=False)
    """The API key sent to the endpoint."""
    model: str = DEFAULT_JUDGE_MODEL
    """The completion model judges call (``gpt-5*`` models go through the Responses API)."""
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    """The embedding model of embedding-based scorers."""
    client: Any = None
    """A client given by the user (``openai.OpenAI`` or ``openai.AsyncOpenAI``), used as is."""
    async_client: Any = None
    """An ``openai.AsyncOpenAI`` given by the user; preferred over ``client``."""
    trace_judge_calls: bool = False
    """Whether judge calls may create spans in the trace of the code that runs them."""
    timeout: float | None = DEFAULT_JUDGE_TIMEOUT
    """Seconds a judge request may take in the clients evaltrace builds (openai's default
    when ``None``); a client given by the user keeps its own."""
    max_retries: int = DEFAULT_MAX_RETRIES
    """Retries of a failed request in the clients evaltrace builds."""
    rate_limiter: RateLimiting | None = None
    """Paces judge calls (requests and estimated prompt tokens); ``None`` for no limit."""
    cache: JudgeCache | None = None
    """Keeps judge responses and answers repeated requests from them; ``None``: no cache."""

    @property
    def is_configured(self) -> bool:
        """Whether a judge can be reached: a client, a base URL or an API key is set."""
        return any(
            value is not None
            for value in (self.client, self.async_client, self.base_url, self.api_key)
        )


@dataclass(kw_only=True, frozen=True)
class _Settings:
    """What :func:`configure_judge` was told; ``None`` means "not given"."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    embedding_model: str | None = None
    client: Any = None
    async_client: Any = None
    trace_judge_calls: bool | None = None
    timeout: float | None = None
    max_retries: int | None = None
    rate_limiter: RateLimiting | None = None
    cache: JudgeCache | bool | None = None  # False: configured off


_settings = _Settings()
_settings_lock = threading.Lock()


class JudgeConfigToken:
    """Returned by :func:`configure_judge`: restores the configuration that was replaced.

    Use it as a context manager to configure a judge for one block (tests do this), or
    ignore it to configure the judge for the whole process.

    Example:
        >>> with configure_judge(base_url="http://127.0.0.1:8000/v1", model="m"):
        ...     judge_config().model
        'm'
    """

    def __init__(self, previous: _Settings) -> None:
        self._previous = previous

    def restore(self) -> None:
        """Put back the configuration that was in force before the call."""
        global _settings
        with _settings_lock:
            _settings = self._previous

    def __enter__(self) -> JudgeConfigToken:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()


def configure_judge(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    client: Any = None,
    embedding_model: str | None = None,
    async_client: Any = None,
    trace_judge_calls: bool | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    rate_limiter: RateLimiting | None = None,
    cache: JudgeCacheSetting | None = None,
) -> JudgeConfigToken:
    """Configure the LLM judge that model-backed evaluators call.

    Values given here replace those given before and take precedence over the environment
    (``EVALTRACE_JUDGE_BASE_URL``, ``EVALTRACE_JUDGE_API_KEY``, ``EVALTRACE_JUDGE_MODEL``,
    ``EVALTRACE_JUDGE_EMBEDDING_MODEL``, ``EVALTRACE_JUDGE_TIMEOUT``,
    ``EVALTRACE_JUDGE_CACHE``, then ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``);
    arguments left at ``None`` keep their earlier value. :func:`reset_judge_config` forgets
    everything configured here.

    Args:
        base_url: An OpenAI-compatible endpoint such as ``"http://127.0.0.1:8000/v1"``.
            An API key without a base URL means OpenAI's own API.
        api_key: The key sent to the endpoint.
        model: The completion model; ``"gpt-4o-mini"`` when never given. A ``gpt-5*`` model
            is called through the Responses API.
        client: An ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client to use instead of one
            built from ``base_url``/``api_key``. A sync client is called from worker threads.
        embedding_model: The embedding model; ``"text-embedding-3-small"`` when never given.
        async_client: An ``openai.AsyncOpenAI`` client; preferred over ``client``.
        trace_judge_calls: Let judge calls create spans in the trace of the code that runs
            them (off by default, so judging never changes the captured run).
        timeout: Seconds each request may take, in the clients evaltrace builds (60 when
            never given; a client passed in keeps its own timeout). A request that times out
            is retried like a 5xx reply, up to ``max_retries`` times.
        max_retries: Retries of a 429, 5xx or timed-out request, in the clients evaltrace
            builds (2 when never given).
        rate_limiter: A :class:`~evaltrace.llm.RateLimiter` every judge call waits for: each
            call counts as one request and as its estimated prompt tokens (characters / 4).
            A call the judge cache answers does not wait.
        cache: The judge cache: ``True`` for the default file (in the user's cache
            directory), a path for another file, a :class:`~evaltrace.llm.JudgeCache` for
            other limits, ``False`` for none. In code there is none unless configured here or
            by ``EVALTRACE_JUDGE_CACHE``; ``evaltrace test`` uses the default file unless
            told otherwise.

    Returns:
        A token whose ``restore()`` (or ``with`` block exit) puts the previous configuration
        back.

    Raises:
        ConfigurationError: A value is malformed (a base URL without ``http(s)://``, an empty
            model name, a negative retry count, ...).

    Example:
        >>> token = configure_judge(base_url="http://127.0.0.1:8000/v1", model="gpt-4o-mini")
        >>> judge_config().base_url
        'http://127.0.0.1:8000/v1'
        >>> token.restore()
    """
    global _settings
    given: dict[str, Any] = {}
    if base_url is not None:
        given["base_url"] = _check_base_url(base_url, "configure_judge(base_url=...)")
    if api_key is not None:
        given["api_key"] = _check_text(api_key, "configure_judge(api_key=...)")
    if model is not None:
        given["model"] = _check_text(model, "configure_judge(model=...)")
    if embedding_model is not None:
        given["embedding_model"] = _check_text(
            embedding_model, "configure_judge(embedding_model=...)"
        )
    if client is not None:
        given["client"] = _check_client(client, "client")
    if async_client is not None:
        given["async_client"] = _check_client(async_client, "async_client")
    if trace_judge_calls is not None:
        given["trace_judge_calls"] = bool(trace_judge_calls)
    if timeout is not None:
        given["timeout"] = _check_timeout(timeout)
    if max_retries is not None:
        given["max_retries"] = _check_retries(max_retries)
    if rate_limiter is not None:
        if not isinstance(rate_limiter, RateLimiting):
            raise ConfigurationError(
                "configure_judge(rate_limiter=...) takes an evaltrace.llm.RateLimiter (or an "
                f"object with async acquire(tokens)), got {type(rate_limiter).__name__}"
            )
        given["rate_limiter"] = rate_limiter
    if cache is not None:
        given["cache"] = _check_cache(cache)
    with _settings_lock:
        previous = _settings
        _settings = replace(previous, **given)
    return JudgeConfigToken(previous)


def reset_judge_config() -> None:
    """Forget everything given to :func:`configure_judge`; the environment still applies.

    Example:
        >>> reset_judge_config()
    """
    global _settings
    with _settings_lock:
        _settings = _Settings()
    with _clients_lock:
        _clients.clear()


def judge_config() -> JudgeConfig:
    """Resolve the judge configuration now, from :func:`configure_judge` and the environment.

    Returns:
        The configuration a judge evaluation started now would use.

    Raises:
        ConfigurationError: An environment variable holds a malformed value.

    Example:
        >>> with configure_judge(api_key="sk-test", model="gpt-5-mini"):
        ...     judge_config().model
        'gpt-5-mini'
    """
    settings = _settings
    base_url = settings.base_url
    if base_url is None:
        name, value = _first_env(_ENV_BASE_URL, _ENV_OPENAI_BASE_URL)
        base_url = _check_base_url(value, name) if value is not None else None
    api_key = settings.api_key
    if api_key is None:
        api_key = _first_env(_ENV_API_KEY, _ENV_OPENAI_API_KEY)[1]
    return JudgeConfig(
        base_url=base_url,
        api_key=api_key,
        model=settings.model or _first_env(_ENV_MODEL)[1] or DEFAULT_JUDGE_MODEL,
        embedding_model=(
            settings.embedding_model
            or _first_env(_ENV_EMBEDDING_MODEL)[1]
            or DEFAULT_EMBEDDING_MODEL
        ),
        client=settings.client,
        async_client=settings.async_client,
        trace_judge_calls=bool(settings.trace_judge_calls),
        timeout=settings.timeout if settings.timeout is not None else _env_timeout(),
        max_retries=(
            settings.max_retries if settings.max_retries is not None else DEFAULT_MAX_RETRIES
        ),
        rate_limiter=settings.rate_limiter,
        cache=_env_cache() if settings.cache is None else _given_cache(settings.cache),
    )


def uses_responses_api(model: str) -> bool:
    """Whether ``model`` is called through the Responses API instead of chat completions.

    Example:
        >>> uses_responses_api("gpt-5-mini"), uses_responses_api("gpt-4o-mini")
        (True, False)
    """
    return model.startswith("gpt-5")


@dataclass(kw_only=True, frozen=True)
class JudgeClient:
    """The OpenAI client one judge call goes through."""

    openai: Any
    """An ``openai.AsyncOpenAI`` (or ``openai.OpenAI``) client, or a compatible object."""
    is_async: bool
    """Whether its methods return awaitables; a sync client is called from worker threads."""

    @property
    def caching(self) -> CachingJudgeClient:
        """The client to send judge requests with: the judge cache first, usage counted."""
        return CachingJudgeClient(self.openai, is_async=self.is_async)


def judge_client(
    config: JudgeConfig, *, client: Any = None, evaluator: str | None = None
) -> JudgeClient:
    """The client a judge call uses: ``client`` if given, else the configured one.

    Args:
        config: The resolved configuration.
        client: A client given to one evaluator, overriding the configuration.
        evaluator: The evaluator's name, quoted when no judge is configured.

    Returns:
        The client, with whether it is async.

    Raises:
        JudgeNotConfiguredError: No client, base URL or API key is configured.
        MissingExtraError: The ``openai`` package is not installed.
    """
    if client is not None:
        return JudgeClient(openai=client, is_async=_is_async_client(client))
    if config.async_client is not None:
        return JudgeClient(openai=config.async_client, is_async=True)
    if config.client is not None:
        return JudgeClient(openai=config.client, is_async=_is_async_client(config.client))
    if not config.is_configured:
        raise JudgeNotConfiguredError(evaluator)
    return JudgeClient(openai=_shared_async_client(config), is_async=True)


# Clients built from a base URL and key, per event loop: an async HTTP connection pool
# belongs to the loop that opened its connections, and each test (or anyio.run) has its own.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)
_clients_lock = threading.Lock()


def _shared_async_client(config: JudgeConfig) -> Any:
    key = (config.base_url, config.api_key, config.timeout, config.max_retries)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not on an asyncio loop: nothing to share the client with
        return _new_async_client(config)
    with _clients_lock:
        per_loop = _clients.setdefault(loop, {})
        shared = per_loop.get(key)
        if shared is None:
            shared = per_loop[key] = _new_async_client(config)
    return shared


def _new_async_client(config: JudgeConfig) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise MissingExtraError("LLM judges", "openai", "llm") from exc
    options: dict[str, Any] = {
        "base_url": config.base_url,
        "api_key": config.api_key or _NO_API_KEY,
        "max_retries": config.max_retries,
    }
    if config.timeout is not None:
        options["timeout"] = config.timeout
    return openai.AsyncOpenAI(**options)


def _is_async_client(client: Any) -> bool:
    openai = sys.modules.get("openai")  # a client of openai's means openai is imported
    if openai is not None and isinstance(client, openai.AsyncOpenAI):
        return True
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    # openai wraps its async methods in decorators that hide the coroutine function.
    return callable(create) and inspect.iscoroutinefunction(inspect.unwrap(create))


# -- validation ------------------------------------------------------------------------------


def _first_env(*names: str) -> tuple[str, str | None]:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return names[0], None


def _env_timeout() -> float:
    value = _first_env(_ENV_TIMEOUT)[1]
    if value is None:
        return DEFAULT_JUDGE_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigurationError(
            f"{_ENV_TIMEOUT}={value!r} must be a positive number of seconds, such as 60"
        )
    return seconds


def _given_cache(cache: JudgeCache | bool) -> JudgeCache | None:
    return cache if isinstance(cache, JudgeCache) else None


def _env_cache() -> JudgeCache | None:
    setting = environment_judge_cache()
    return setting if isinstance(setting, JudgeCache) else None


def environment_judge_cache() -> JudgeCache | bool | None:
    """What ``EVALTRACE_JUDGE_CACHE`` says about the judge cache.

    A file path names that file; ``1``/``true``/``on``/``yes`` the default file;
    ``0``/``false``/``off``/``no``/``none`` no cache.

    Returns:
        The cache it names, ``False`` for off, ``None`` when it is not set.
    """
    value = _first_env(_ENV_CACHE)[1]
    if value is None:
        return None
    if value.lower() in _CACHE_OFF:
        return False
    if value.lower() in _CACHE_ON:
        return shared_judge_cache()
    return shared_judge_cache(value)


def _check_cache(cache: object) -> JudgeCache | bool:
    if isinstance(cache, JudgeCache):
        return cache
    if cache is False:
        return False
    if cache is True:
        return shared_judge_cache()
    if isinstance(cache, str | os.PathLike) and str(cache).strip():
        return shared_judge_cache(Path(cache))
    raise ConfigurationError(
        "configure_judge(cache=...) takes True (the default file), False (no cache), the path "
        f"of a file or an evaltrace.llm.JudgeCache, got {type(cache).__name__} {cache!r}"
    )


def _check_text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{where} must be a non-empty string, got {value!r}.")
    return value.strip()


def _check_base_url(value: object, where: str) -> str:
    text = _check_text(value, where)
    if not text.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"{where} must be an http:// or https:// URL such as 'http://127.0.0.1:8000/v1', "
            f"got {text!r}."
        )
    return text


def _check_client(client: object, argument: str) -> object:
    if not hasattr(client, "chat"):
        raise ConfigurationError(
            f"configure_judge({argument}=...) must be an openai.OpenAI or openai.AsyncOpenAI "
            f"client (or an object with the same methods), got {type(client).__name__}."
        )
    if argument == "async_client" and not _is_async_client(client):
        raise ConfigurationError(
            "configure_judge(async_client=...) got a client whose chat.completions.create is "
            "not async; pass an openai.AsyncOpenAI, or give a sync client as client=..."
        )
    return client


def _check_timeout(timeout: object) -> float:
    try:
        checked = check_timeout(timeout, "configure_judge(timeout=...)")
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    assert checked is not None  # only called with a value
    return checked


def _check_retries(max_retries: object) -> int:
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigurationError(
            f"configure_judge(max_retries=...) must be a whole number >= 0, got {max_retries!r}."
        )
    return max_retries
