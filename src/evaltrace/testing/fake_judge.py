"""An OpenAI-compatible judge that runs on loopback, so evaluators can be tested offline.

:class:`FakeJudgeServer` is a real HTTP server on ``127.0.0.1``. Point the real ``openai``
client (or anything that speaks the OpenAI wire format, such as autoevals) at its
:attr:`~FakeJudgeServer.base_url` and it answers chat completions, the Responses API,
embeddings and moderations with deterministic, scriptable replies. It can also delay, fail,
rate-limit, hang or garble replies on request, and it records every request it receives.

Example:
    >>> import openai
    >>> with FakeJudgeServer() as judge:
    ...     _ = judge.add_rule("capital of France", content="Paris")
    ...     client = openai.OpenAI(base_url=judge.base_url, api_key="test")
    ...     reply = client.chat.completions.create(
    ...         model="gpt-4o-mini",
    ...         messages=[{"role": "user", "content": "What is the capital of France?"}],
    ...     )
    >>> reply.choices[0].message.content
    'Paris'
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from evaltrace.errors import ConfigurationError, EvaltraceError

__all__ = [
    "DEFAULT_FLAGGED_WORDS",
    "MODERATION_CATEGORIES",
    "Endpoint",
    "FakeJudgeServer",
    "FakeJudgeStateError",
    "RecordedRequest",
    "Rule",
    "ScriptedAnswer",
    "serve_fake_judge",
]

JSONObject: TypeAlias = dict[str, Any]

Endpoint: TypeAlias = Literal["chat/completions", "responses", "embeddings", "moderations"]
"""The endpoints the server answers, named by their path under ``/v1``."""

ScriptedAnswer: TypeAlias = str | Mapping[str, Any]
"""One item of a rule's ``sequence``: a string (a choice or a text reply) or a JSON object."""

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
_MALFORMED_BODY: Final = b'{"id": "chatcmpl-malformed", "object": "chat.completion", "choices": ['


class FakeJudgeStateError(EvaltraceError, RuntimeError):
    """A :class:`FakeJudgeServer` was used in a state that does not allow it."""


@dataclass(kw_only=True, frozen=True)
class RecordedRequest:
    """One HTTP request the server received, kept in arrival order."""

    method: str
    """The HTTP method, such as ``"POST"``."""
    path: str
    """The request path without the query string, such as ``"/v1/chat/completions"``."""
    body: JSONObject
    """The decoded JSON body; ``{}`` when the body was empty or not a JSON object."""
    headers: Mapping[str, str]
    """The request headers, with lower-case names."""
    received_at: float
    """When the request arrived, in seconds since the epoch (``time.time()``)."""


@dataclass(kw_only=True, frozen=True)
class Rule:
    """A scripted reply for requests whose text matches.

    Build rules with :meth:`FakeJudgeServer.add_rule`; the fields mirror its arguments.
    """

    match: str | re.Pattern[str]
    """A substring, or a compiled pattern searched for, in the request's text."""
    choice: str | None = None
    """The choice a forced tool call (or a JSON-schema reply's enum property) answers with."""
    content: str | None = None
    """The text of a reply that is neither a forced tool call nor structured output."""
    json: Mapping[str, Any] | None = None
    """A JSON object: the tool-call arguments or the structured-output reply, given as is."""
    sequence: tuple[ScriptedAnswer, ...] = ()
    """Answers given in turn on successive matching calls; the last one then repeats."""
    reasons: str | None = None
    """The ``reasons`` text of a tool call whose parameters have a ``reasons`` property."""
    endpoint: Endpoint | None = None
    """Restricts the rule to one endpoint; ``None`` applies it to every endpoint."""
    latency: float | None = None
    """Seconds to wait before answering a matching request, instead of the server's latency."""
    status: int | None = None
    """An HTTP error status to answer every matching request with, instead of a reply."""

    def matches(self, text: str) -> bool:
        """Return whether ``text`` contains the substring or matches the pattern.

        Example:
            >>> Rule(match=re.compile("cats?")).matches("one cat")
            True
        """
        if isinstance(self.match, str):
            return self.match in text
        return self.match.search(text) is not None


@dataclass(kw_only=True, frozen=True)
class _Answer:
    """The answer one call gets, resolved from a rule (and its sequence position)."""

    choice: str | None = None
    content: str | None = None
    json: Mapping[str, Any] | None = None
    reasons: str | None = None


@dataclass(kw_only=True)
class _ScriptedRule:
    """A rule and how many requests it has answered (its position in ``sequence``)."""

    rule: Rule
    hits: int = 0

    def next_answer(self) -> _Answer:
        rule = self.rule
        self.hits += 1
        if not rule.sequence:
            return _Answer(
                choice=rule.choice, content=rule.content, json=rule.json, reasons=rule.reasons
            )
        item = rule.sequence[min(self.hits, len(rule.sequence)) - 1]
        if isinstance(item, str):
            return _Answer(choice=item, content=item, reasons=rule.reasons)
        return _Answer(json=item, reasons=rule.reasons)


@dataclass(kw_only=True)
class _Fault:
    """A pending failure that the next ``remaining`` requests receive."""

    kind: Literal["status", "malformed", "hang"]
    remaining: int
    status: int = 500
    message: str | None = None
    retry_after: float | None = None
    seconds: float = 0.0
    body: bytes = b""


@dataclass(kw_only=True, frozen=True)
class _Reply:
    """An HTTP reply, ready to write."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class _RequestError(Exception):
    """A request the real API would reject; becomes a 4xx reply in OpenAI's error shape."""

    def __init__(self, message: str, *, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status


@dataclass(kw_only=True, frozen=True)
class _Route:
    """How one endpoint reads a request's text and builds its reply body."""

    endpoint: Endpoint
    text: Callable[[JSONObject], str]
    build: Callable[[FakeJudgeServer, JSONObject, _Answer | None, int], JSONObject]


class FakeJudgeServer:
    """An OpenAI-compatible HTTP server on loopback with scripted, deterministic answers.

    Replies by endpoint (all under ``/v1``):

    * ``chat/completions``: a forced tool call (``tool_choice`` naming a function, or
      ``"required"``) gets one ``tool_calls`` entry whose arguments fill the function's
      parameter schema; an ``enum`` property (autoevals' ``choice``) gets its first value
      unless a rule names a choice. A ``json_schema`` response format gets JSON content
      matching the schema. Anything else gets plain text (``"ok"`` by default).
    * ``responses``: the same answers as Responses API output items (``function_call`` or
      ``message`` with ``output_text``).
    * ``embeddings``: unit vectors hashed from words and character trigrams, so texts that
      share words are close; ``float`` and ``base64`` encodings.
    * ``moderations``: flagged when the text contains a flagged word.

    Any other path gets a 404 in OpenAI's error shape, and a body that is not JSON a 400.

    Args:
        latency: Seconds to wait before every reply (a rule's ``latency`` overrides it).
        flagged_words: Words the moderation endpoint flags. A mapping names the category
            each word raises; a plain list of words raises ``harassment``.
        embedding_dimensions: Length of embedding vectors when a request gives no
            ``dimensions``.
        default_content: The text reply when no rule supplies one.
        host: The loopback address to bind.

    Example:
        >>> import openai
        >>> with FakeJudgeServer() as judge:
        ...     client = openai.OpenAI(base_url=judge.base_url, api_key="test")
        ...     vector = client.embeddings.create(model="m", input="hello").data[0].embedding
        >>> len(vector)
        256
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        flagged_words: Mapping[str, str] | Iterable[str] = DEFAULT_FLAGGED_WORDS,
        embedding_dimensions: int = 256,
        default_content: str = "ok",
        host: str = "127.0.0.1",
    ) -> None:
        self._default_latency = _check_seconds("latency", latency)
        self._latency = self._default_latency
        self._flagged = _flagged_word_patterns(flagged_words)
        if embedding_dimensions < 1:
            raise ConfigurationError(
                f"FakeJudgeServer(embedding_dimensions={embedding_dimensions!r}) must be a "
                "positive integer, such as 256."
            )
        self._dimensions = embedding_dimensions
        self._default_content = default_content
        self._host = host
        self._lock = threading.Lock()
        self._rules: list[_ScriptedRule] = []
        self._faults: list[_Fault] = []
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_concurrency = 0
        self._serial = 0
        self._stopping = threading.Event()
        self._httpd: _JudgeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeJudgeServer:
        """Bind a free port and serve from a background thread.

        Returns:
            The server itself, so ``server = FakeJudgeServer().start()`` reads naturally.

        Raises:
            FakeJudgeStateError: The server is already running.
        """
        if self._httpd is not None:
            raise FakeJudgeStateError(
                f"FakeJudgeServer is already running at {self.base_url}; call stop() before "
                "starting it again, or use a second FakeJudgeServer."
            )
        self._stopping.clear()
        httpd = _JudgeHTTPServer((self._host, 0), self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"evaltrace-fake-judge:{httpd.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._httpd, self._thread = httpd, thread
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join every thread the server started.

        Requests that are waiting (latency or :meth:`hang_next`) are woken and answered at
        once. Stopping a server that is not running does nothing.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port the server listens on.

        Raises:
            FakeJudgeStateError: The server is not running.
        """
        if self._httpd is None:
            raise FakeJudgeStateError(
                "FakeJudgeServer is not running, so it has no port yet; use it as a context "
                "manager (`with FakeJudgeServer() as judge:`) or call start() first."
            )
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, such as ``"http://127.0.0.1:PORT/v1"``."""
        return f"http://{self._host}:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------------

    def add_rule(
        self,
        match: str | re.Pattern[str],
        *,
        choice: str | None = None,
        content: str | None = None,
        json: Mapping[str, Any] | None = None,
        sequence: Sequence[ScriptedAnswer] | None = None,
        reasons: str | None = None,
        endpoint: Endpoint | None = None,
        latency: float | None = None,
        status: int | None = None,
    ) -> Rule:
        """Script the answer to requests whose text matches; the first matching rule wins.

        The request's text is the text of its chat messages, or its Responses ``input`` and
        ``instructions``, or its embedding or moderation ``input``, joined by newlines.

        Which argument applies depends on what the request asks for:

        * a forced tool call: ``json`` is the arguments object as given; otherwise ``choice``
          fills the ``choice`` property (or the first ``enum`` property) and ``reasons`` the
          ``reasons`` property. A choice outside the enum is sent as is, to test how callers
          cope with a judge that misbehaves.
        * a ``json_schema`` response format: ``json`` as given, else an object built from the
          schema with ``choice`` in its enum property, else ``content`` verbatim.
        * plain text: ``content``, else ``json`` serialised, else ``choice``.

        ``sequence`` answers successive matching calls in turn (then repeats its last item):
        a string item acts as both ``choice`` and ``content``, a mapping as ``json``.

        Args:
            match: A substring, or a compiled pattern searched for, in the request's text.
                An empty string matches every request.
            choice: The choice to answer with.
            content: The text to answer with.
            json: The JSON object to answer with.
            sequence: Answers for successive calls, instead of ``choice``/``content``/``json``.
            reasons: The ``reasons`` text of tool calls.
            endpoint: Apply the rule to this endpoint only.
            latency: Seconds to wait before answering, instead of the server's latency.
            status: Answer with this HTTP error status (400-599) instead of a reply.

        Returns:
            The rule as stored.

        Raises:
            ConfigurationError: The arguments contradict each other or are out of range.

        Example:
            >>> judge = FakeJudgeServer()
            >>> rule = judge.add_rule("Paris", choice="C")
            >>> rule.choice
            'C'
        """
        if isinstance(match, re.Pattern) and not isinstance(match.pattern, str):
            raise ConfigurationError(
                f"add_rule(match={match!r}): the pattern must be compiled from a str, "
                "because request text is decoded before matching."
            )
        items = tuple(sequence) if sequence is not None else ()
        if sequence is not None and not items:
            raise ConfigurationError(
                "add_rule(sequence=[]) has no answers; give at least one choice, text or object."
            )
        if items and (choice is not None or content is not None or json is not None):
            raise ConfigurationError(
                "add_rule() got sequence= together with choice=, content= or json=; a sequence "
                "already holds every answer, so pass one or the other."
            )
        if status is not None and not 400 <= status <= 599:
            raise ConfigurationError(
                f"add_rule(status={status!r}) must be an HTTP error status between 400 and 599."
            )
        if endpoint is not None and endpoint not in _ENDPOINTS:
            raise ConfigurationError(
                f"add_rule(endpoint={endpoint!r}) is not served; use one of "
                f"{', '.join(repr(name) for name in _ENDPOINTS)}."
            )
        rule = Rule(
            match=match,
            choice=choice,
            content=content,
            json=json,
            sequence=items,
            reasons=reasons,
            endpoint=endpoint,
            latency=None if latency is None else _check_seconds("add_rule(latency=...)", latency),
            status=status,
        )
        with self._lock:
            self._rules.append(_ScriptedRule(rule=rule))
        return rule

    @property
    def rules(self) -> list[Rule]:
        """The rules in the order they are tried."""
        with self._lock:
            return [scripted.rule for scripted in self._rules]

    @property
    def latency(self) -> float:
        """Seconds the server waits before every reply; may be reassigned while running."""
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._latency = _check_seconds("latency", seconds)

    def reset(self) -> None:
        """Forget every rule and pending fault, and restore the constructor's latency.

        Recorded requests and :attr:`max_concurrency` are kept; see :meth:`reset_stats`.
        """
        with self._lock:
            self._rules.clear()
            self._faults.clear()
            self._latency = self._default_latency

    # -- faults ----------------------------------------------------------------------------

    def fail_next(self, status: int = 500, *, times: int = 1, message: str | None = None) -> None:
        """Answer the next ``times`` requests with an HTTP error in OpenAI's error shape.

        Faults queue in the order they are scripted and apply to the next requests for a
        served endpoint, whichever endpoint that is. The ``openai`` client retries 5xx and
        429 replies on its own; give it ``max_retries=0`` to see the error at once.

        Args:
            status: The HTTP status, between 400 and 599.
            times: How many successive requests fail.
            message: The error message; a realistic one by default.

        Raises:
            ConfigurationError: ``status`` or ``times`` is out of range.
        """
        if not 400 <= status <= 599:
            raise ConfigurationError(
                f"fail_next(status={status!r}) must be an HTTP error status between 400 and 599."
            )
        self._queue(
            _Fault(kind="status", remaining=_check_times(times), status=status, message=message)
        )

    def rate_limit_once(self, *, retry_after: float = 0.01) -> None:
        """Answer the next request with a 429 carrying ``retry-after``, then answer normally.

        Args:
            retry_after: The delay the reply asks for, in seconds. It is sent as both
                ``retry-after`` (seconds) and ``retry-after-ms``, which the ``openai`` client
                prefers, so its own retry waits only this long.
        """
        self._queue(
            _Fault(
                kind="status",
                remaining=1,
                status=429,
                retry_after=_check_seconds("retry_after", retry_after),
            )
        )

    def malformed_next(self, *, times: int = 1, body: str | bytes | None = None) -> None:
        """Answer the next ``times`` requests with a 200 whose body is not a valid reply.

        Args:
            times: How many successive requests get the malformed body.
            body: The body to send; by default truncated JSON, which clients fail to decode.
        """
        raw = _MALFORMED_BODY if body is None else body
        self._queue(
            _Fault(
                kind="malformed",
                remaining=_check_times(times),
                body=raw.encode() if isinstance(raw, str) else raw,
            )
        )

    def hang_next(self, seconds: float, *, times: int = 1) -> None:
        """Wait ``seconds`` before answering the next ``times`` requests.

        Use a wait longer than the client's timeout to test timeout handling; stopping the
        server cuts the wait short.
        """
        self._queue(
            _Fault(
                kind="hang",
                remaining=_check_times(times),
                seconds=_check_seconds("hang_next(seconds=...)", seconds),
            )
        )

    def _queue(self, fault: _Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    # -- what happened ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received since start or :meth:`reset_stats`, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def max_concurrency(self) -> int:
        """The most requests the server was handling at one time."""
        with self._lock:
            return self._max_concurrency

    def reset_stats(self) -> None:
        """Forget recorded requests and reset :attr:`max_concurrency` to the current load."""
        with self._lock:
            self._requests.clear()
            self._max_concurrency = self._in_flight

    # -- request handling (called from the server's handler threads) -----------------------

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
            self._max_concurrency = max(self._max_concurrency, self._in_flight)
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def _handle(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> _Reply:
        path = urlsplit(target).path
        body, decode_error = _decode_body(raw)
        with self._lock:
            self._requests.append(
                RecordedRequest(
                    method=method, path=path, body=body, headers=headers, received_at=time.time()
                )
            )
        route = _ROUTES.get(path) if method == "POST" else None
        if route is None:
            return _error_reply(
                404,
                f"FakeJudgeServer has no route {method} {path}. It serves POST "
                f"{', '.join(_ROUTES)} (check that the client's base_url is {self.base_url!r}).",
                code="unknown_url",
            )
        if decode_error is not None:
            return _error_reply(400, f"The request body is not a JSON object: {decode_error}.")

        try:
            text = route.text(body)
        except _RequestError as error:
            return _error_reply(error.status, error.message, param=error.param)
        fault = self._take_fault()
        if fault is not None and fault.kind == "hang":
            self._wait(fault.seconds)
            fault = None
        rule, answer, serial = self._answer(text, route.endpoint, consume=fault is None)
        self._wait(rule.latency if rule is not None and rule.latency is not None else self._latency)

        if fault is not None:
            return _fault_reply(fault)
        if rule is not None and rule.status is not None:
            return _error_reply(
                rule.status,
                f"Scripted failure from the FakeJudgeServer rule matching {rule.match!r}.",
            )
        try:
            return _json_reply(200, route.build(self, body, answer, serial))
        except _RequestError as error:
            return _error_reply(error.status, error.message, param=error.param)

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            if not self._faults:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.pop(0)
            return fault

    def _answer(
        self, text: str, endpoint: Endpoint, *, consume: bool
    ) -> tuple[Rule | None, _Answer | None, int]:
        """Find the first matching rule and, when ``consume``, take its next answer."""
        with self._lock:
            self._serial += 1
            for scripted in self._rules:
                rule = scripted.rule
                if (rule.endpoint is None or rule.endpoint == endpoint) and rule.matches(text):
                    answer = scripted.next_answer() if consume and rule.status is None else None
                    return rule, answer, self._serial
            return None, None, self._serial

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _moderate(self, text: str) -> dict[str, bool]:
        raised = {category: False for category in MODERATION_CATEGORIES}
        for pattern, category in self._flagged:
            if pattern.search(text):
                raised[category] = True
        return raised

    def _embedding_dimensions(self, body: JSONObject) -> int:
        requested = body.get("dimensions", self._dimensions)
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise _RequestError(
                f"dimensions must be a positive integer, got {requested!r}.", param="dimensions"
            )
        return requested


def serve_fake_judge(server: FakeJudgeServer | None = None) -> Iterator[FakeJudgeServer]:
    """Start a judge server, yield it, and stop it: the body of a pytest fixture.

    Args:
        server: A configured server that is not running; a default one when omitted.

    Example:
        >>> import pytest
        >>> @pytest.fixture
        ... def judge():
        ...     yield from serve_fake_judge(FakeJudgeServer(latency=0.01))
    """
    judge = server if server is not None else FakeJudgeServer()
    with judge:
        yield judge


class _JudgeHTTPServer(ThreadingHTTPServer):
    """The stdlib threading server, joined on close and quiet about clients that hang up."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], judge: FakeJudgeServer) -> None:
        self.judge = judge
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that times out closes its socket mid-reply; that is expected, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, asks the judge for the reply, writes it, closes the connection."""

    protocol_version = "HTTP/1.1"
    server_version = "evaltrace-fake-judge/1"
    # Bounds how long a handler thread waits on a client that connects and sends nothing,
    # so closing the server never blocks on an idle socket.
    timeout = 10.0
    server: _JudgeHTTPServer

    def _serve(self) -> None:
        judge = self.server.judge
        # The reply is written after the request stops counting as in flight, so a client
        # that has its answer never sees the server still counting that request.
        with judge._tracked():
            reply = self._reply(judge)
        self._write(reply)

    def _reply(self, judge: FakeJudgeServer) -> _Reply:
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return _error_reply(400, "The Content-Length header is not an integer.")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return judge._handle(self.command, self.path, headers, raw)
        except Exception as error:  # a bug here must reach the client, not kill the thread
            return _error_reply(500, f"FakeJudgeServer failed while building a reply: {error!r}")

    def _write(self, reply: _Reply) -> None:
        self.close_connection = True
        try:
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up waiting, typically after its own timeout

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean: no access log on stderr."""


# -- replies ---------------------------------------------------------------------------------

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


def _error_body(
    status: int, message: str | None = None, *, code: str | None = None, param: str | None = None
) -> JSONObject:
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


def _error_reply(
    status: int, message: str | None = None, *, code: str | None = None, param: str | None = None
) -> _Reply:
    return _json_reply(status, _error_body(status, message, code=code, param=param))


def _json_reply(status: int, body: JSONObject, headers: tuple[tuple[str, str], ...] = ()) -> _Reply:
    return _Reply(status=status, body=json.dumps(body).encode(), headers=headers)


def _fault_reply(fault: _Fault) -> _Reply:
    if fault.kind == "malformed":
        return _Reply(status=200, body=fault.body)
    headers: tuple[tuple[str, str], ...] = ()
    if fault.retry_after is not None:
        headers = (
            ("retry-after", f"{fault.retry_after:g}"),
            ("retry-after-ms", f"{fault.retry_after * 1000:g}"),
        )
    return _json_reply(fault.status, _error_body(fault.status, fault.message), headers)


def _decode_body(raw: bytes) -> tuple[JSONObject, str | None]:
    if not raw.strip():
        return {}, None
    try:
        decoded = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return {}, str(error)
    if not isinstance(decoded, dict):
        return {}, f"expected an object, found {type(decoded).__name__}"
    return decoded, None


# -- request text ----------------------------------------------------------------------------

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
        raise _RequestError(
            f"Missing required parameter: {name!r} (every {endpoint} request needs one).",
            param=name,
        )
    return body[name]


def _chat_text(body: JSONObject) -> str:
    _model(body, "chat/completions")
    _reject_streaming(body)
    messages = _require(body, "messages", "chat/completions")
    if not isinstance(messages, list):
        raise _RequestError("messages must be a list of message objects.", param="messages")
    return _joined_text(messages)


def _responses_text(body: JSONObject) -> str:
    _model(body, "responses")
    _reject_streaming(body)
    if "input" not in body and "instructions" not in body:
        raise _RequestError("A responses request needs input or instructions.", param="input")
    return _joined_text(body.get("instructions"), body.get("input"))


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
                raise _RequestError(
                    f"input items must be strings or token lists, found {item!r}.", param="input"
                )
        return inputs
    raise _RequestError(
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
    raise _RequestError(
        "input must be a string, a list of strings or a list of content parts.", param="input"
    )


# -- structured answers ----------------------------------------------------------------------


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/") if ref.startswith("#/") else ():
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _instance(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Any:
    """Build the smallest value that satisfies the common parts of a JSON schema."""
    if depth > 32:
        return None
    if "$ref" in schema:
        return _instance(_resolve_ref(str(schema["$ref"]), root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for combinator in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list) and branches and isinstance(branches[0], Mapping):
            return _instance(branches[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        wanted = set(required) if isinstance(required, list) else set(properties)
        return {
            name: _instance(sub if isinstance(sub, Mapping) else {}, root, depth + 1)
            for name, sub in properties.items()
            if name in wanted
        }
    if kind == "array":
        # One item rather than none: judges that average over a list (ragas statements,
        # verdicts) divide by its length.
        items = schema.get("items")
        count = max(1, int(schema.get("minItems", 1)))
        if isinstance(schema.get("maxItems"), int):
            count = min(count, schema["maxItems"])
        item_schema = items if isinstance(items, Mapping) else {}
        return [_instance(item_schema, root, depth + 1) for _ in range(count)]
    return _SCALARS.get(str(kind), "")


_SCALARS: Final[Mapping[str, Any]] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "null": None,
}


def _schema_answer(schema: Mapping[str, Any], *, choice: str | None, reasons: str | None) -> Any:
    value = _instance(schema, schema)
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


def _tool_arguments(parameters: Mapping[str, Any], answer: _Answer | None) -> str:
    if answer is not None and answer.json is not None:
        return json.dumps(dict(answer.json))
    given = answer if answer is not None else _Answer()
    reasons = given.reasons if given.reasons is not None else _DEFAULT_REASONS
    return json.dumps(_schema_answer(parameters, choice=given.choice, reasons=reasons))


def _text_answer(
    server: FakeJudgeServer,
    answer: _Answer | None,
    *,
    schema: Mapping[str, Any] | None,
    json_mode: bool,
) -> str:
    given = answer if answer is not None else _Answer()
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
    return given.choice if given.choice is not None else server._default_content


def _tool_named(tools: Any, name: str, *, nested: bool) -> Mapping[str, Any]:
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
    raise _RequestError(
        f"tool_choice names the function {name!r}, but tools only defines "
        f"{', '.join(repr(found) for found in names) or 'no functions'}.",
        param="tool_choice",
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
        raise _RequestError(f"model must be a non-empty string, found {model!r}.", param="model")
    return model


def _reject_streaming(body: JSONObject) -> None:
    if body.get("stream"):
        raise _RequestError(
            "FakeJudgeServer does not stream; call the client without stream=True.",
            param="stream",
        )


def _build_chat(
    server: FakeJudgeServer, body: JSONObject, answer: _Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "chat/completions")
    _reject_streaming(body)
    tool = _forced_tool(body, nested=True)
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
        produced = _text_answer(server, answer, schema=schema, json_mode=json_mode)
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
    server: FakeJudgeServer, body: JSONObject, answer: _Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "responses")
    _reject_streaming(body)
    tool = _forced_tool(body, nested=False)
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
        produced = _text_answer(server, answer, schema=schema, json_mode=json_mode)
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


def _build_embeddings(
    server: FakeJudgeServer, body: JSONObject, answer: _Answer | None, serial: int
) -> JSONObject:
    model = _model(body, "embeddings")
    inputs = _embedding_inputs(body)
    dimensions = server._embedding_dimensions(body)
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise _RequestError(
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


def _build_moderation(
    server: FakeJudgeServer, body: JSONObject, answer: _Answer | None, serial: int
) -> JSONObject:
    inputs = _moderation_inputs(body)
    results: list[JSONObject] = []
    for text in inputs:
        categories = server._moderate(text)
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


_ROUTES: Final[Mapping[str, _Route]] = {
    "/v1/chat/completions": _Route(endpoint="chat/completions", text=_chat_text, build=_build_chat),
    "/v1/responses": _Route(endpoint="responses", text=_responses_text, build=_build_response),
    "/v1/embeddings": _Route(
        endpoint="embeddings",
        text=lambda body: "\n".join(_embedding_inputs(body)),
        build=_build_embeddings,
    ),
    "/v1/moderations": _Route(
        endpoint="moderations",
        text=lambda body: "\n".join(_moderation_inputs(body)),
        build=_build_moderation,
    ),
}

_ENDPOINTS: Final[tuple[Endpoint, ...]] = tuple(route.endpoint for route in _ROUTES.values())


# -- argument checks -------------------------------------------------------------------------


def _check_seconds(name: str, seconds: float) -> float:
    if (
        not isinstance(seconds, int | float)
        or isinstance(seconds, bool)
        or not (math.isfinite(seconds) and seconds >= 0)
    ):
        raise ConfigurationError(
            f"{name}={seconds!r} must be a finite number of seconds, zero or more (such as 0.05)."
        )
    return float(seconds)


def _check_times(times: int) -> int:
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise ConfigurationError(f"times={times!r} must be a positive integer, such as 1.")
    return times


def _flagged_word_patterns(
    flagged_words: Mapping[str, str] | Iterable[str],
) -> tuple[tuple[re.Pattern[str], str], ...]:
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
