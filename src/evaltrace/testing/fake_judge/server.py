"""The fake judge server: its lifecycle, its script (rules and faults) and what it records.

A :class:`FakeJudgeServer` owns the script every request is answered from: the rules (the
first whose text matches answers; a ``sequence`` answers successive calls in turn), the
pending faults (errors, rate limits, malformed bodies, hangs, for the next requests) and
the recorded requests. Its HTTP server (``_httpd``) hands each request to it; the reply
bodies are built in the OpenAI wire shapes of ``_wire``.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from evaltrace.errors import ConfigurationError, EvaltraceError
from evaltrace.testing.fake_judge._httpd import JudgeHTTPServer, Reply, error_reply, json_reply
from evaltrace.testing.fake_judge._wire import (
    DEFAULT_FLAGGED_WORDS,
    ENDPOINTS,
    ROUTES,
    Answer,
    Endpoint,
    JSONObject,
    ReplySettings,
    RequestError,
    RequestText,
    decode_body,
    error_body,
    flagged_word_patterns,
)
from evaltrace.testing.lifecycle import Started

__all__ = [
    "FakeJudgeServer",
    "FakeJudgeStateError",
    "RecordedRequest",
    "Rule",
    "ScriptedAnswer",
    "serve_fake_judge",
]

ScriptedAnswer: TypeAlias = str | Mapping[str, Any]
"""One item of a rule's ``sequence``: a string (a choice or a text reply) or a JSON object."""

_PROMPTS_KEPT: Final = 10_000
"""How many system prompts the server remembers for its prompt-cache figures."""
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


TextMatch: TypeAlias = str | re.Pattern[str]
"""A substring, or a compiled pattern searched for, in some text of a request."""


@dataclass(kw_only=True, frozen=True)
class Rule:
    """A scripted reply for the requests that match all its conditions.

    Build rules with :meth:`FakeJudgeServer.add_rule` or read them from a rules file
    (:func:`~evaltrace.testing.fake_judge.read_rules`); the fields mirror ``add_rule``'s
    arguments. A rule checks its fields when it is built.

    Raises:
        ConfigurationError: The fields contradict each other or are out of range.
    """

    match: TextMatch
    """A substring, or a compiled pattern searched for, in the request's whole text."""
    user: TextMatch | None = None
    """A substring or pattern the request's last user message must hold, if given."""
    system: TextMatch | None = None
    """A substring or pattern the request's system (or developer) prompt must hold, if given."""
    model: str | None = None
    """The model the request must name, exactly, if given."""
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
    tool_call: str | None = None
    """A tool the reply calls although the request forces none (``json`` holds its arguments):
    scripts the model of an app that uses tools."""

    def __post_init__(self) -> None:
        for name in ("match", "user", "system"):
            _check_text_match(name, getattr(self, name))
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise ConfigurationError(
                f"model={self.model!r} must be the name of a model, such as 'gpt-4o-mini'."
            )
        if self.tool_call is not None and (
            not isinstance(self.tool_call, str) or not self.tool_call
        ):
            raise ConfigurationError(
                f"tool_call={self.tool_call!r} must be the name of a tool the request offers, "
                "such as 'lookup_order'."
            )
        if self.sequence and self.tool_call is not None:
            raise ConfigurationError(
                "sequence= together with tool_call=: script the tool call and the answers that "
                "follow it as separate rules matching each request's text."
            )
        if self.sequence and (
            self.choice is not None or self.content is not None or self.json is not None
        ):
            raise ConfigurationError(
                "sequence= together with choice=, content= or json=: a sequence already holds "
                "every answer, so give one or the other."
            )
        if self.status is not None and (
            not isinstance(self.status, int)
            or isinstance(self.status, bool)
            or not 400 <= self.status <= 599
        ):
            raise ConfigurationError(
                f"status={self.status!r} must be an HTTP error status between 400 and 599."
            )
        if self.endpoint is not None and self.endpoint not in ENDPOINTS:
            raise ConfigurationError(
                f"endpoint={self.endpoint!r} is not served; use one of "
                f"{', '.join(repr(name) for name in ENDPOINTS)}."
            )
        if self.latency is not None:
            _check_seconds("latency", self.latency)

    def matches(self, request: str | RequestText) -> bool:
        """Return whether every condition of the rule holds for ``request``.

        Args:
            request: What the server read of a request; a string is its whole text and its
                last user message.

        Example:
            >>> Rule(match=re.compile("cats?")).matches("one cat")
            True
        """
        if isinstance(request, str):
            request = RequestText(whole=request, user=request)
        return (
            _found(self.match, request.whole)
            and (self.user is None or _found(self.user, request.user))
            and (self.system is None or _found(self.system, request.system))
            and (self.model is None or self.model == request.model)
        )


def _found(wanted: TextMatch, text: str) -> bool:
    if isinstance(wanted, str):
        return wanted in text
    return wanted.search(text) is not None


def _check_text_match(name: str, wanted: object) -> None:
    if wanted is None and name != "match":
        return
    if isinstance(wanted, re.Pattern):
        if isinstance(wanted.pattern, str):
            return
        raise ConfigurationError(
            f"{name}={wanted!r}: the pattern must be compiled from a str, because request "
            "text is decoded before matching."
        )
    if not isinstance(wanted, str):
        raise ConfigurationError(
            f"{name}={wanted!r} must be a substring or a compiled re.Pattern of a str."
        )


@dataclass(kw_only=True)
class _ScriptedRule:
    """A rule and how many requests it has answered (its position in ``sequence``)."""

    rule: Rule
    hits: int = 0

    def next_answer(self) -> Answer:
        rule = self.rule
        self.hits += 1
        if not rule.sequence:
            return Answer(
                choice=rule.choice,
                content=rule.content,
                json=rule.json,
                reasons=rule.reasons,
                tool_call=rule.tool_call,
            )
        item = rule.sequence[min(self.hits, len(rule.sequence)) - 1]
        if isinstance(item, str):
            return Answer(choice=item, content=item, reasons=rule.reasons)
        return Answer(json=item, reasons=rule.reasons)


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


class FakeJudgeServer(Started):
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

    Replies report token usage (words, for tokens). As providers' prompt caching does, a
    request whose system prompt the server saw before reports that prompt's tokens as cached
    (``prompt_tokens_details.cached_tokens``, ``input_tokens_details.cached_tokens``).

    Any other path gets a 404 in OpenAI's error shape, and a body that is not JSON a 400.

    Args:
        latency: Seconds to wait before every reply (a rule's ``latency`` overrides it).
        flagged_words: Words the moderation endpoint flags. A mapping names the category
            each word raises; a plain list of words raises ``harassment``.
        embedding_dimensions: Length of embedding vectors when a request gives no
            ``dimensions``.
        default_content: The text reply when no rule supplies one.
        host: The loopback address to bind.
        port: The TCP port to listen on; 0 (the default) picks a free one.

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
        port: int = 0,
    ) -> None:
        self._default_latency = _check_seconds("latency", latency)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ConfigurationError(
                f"FakeJudgeServer(port={port!r}) must be a TCP port between 0 and 65535; 0 "
                "picks a free one."
            )
        self._latency = self._default_latency
        flagged = flagged_word_patterns(flagged_words)
        if embedding_dimensions < 1:
            raise ConfigurationError(
                f"FakeJudgeServer(embedding_dimensions={embedding_dimensions!r}) must be a "
                "positive integer, such as 256."
            )
        self._settings = ReplySettings(
            default_content=default_content,
            embedding_dimensions=embedding_dimensions,
            flagged=flagged,
        )
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._rules: list[_ScriptedRule] = []
        self._faults: list[_Fault] = []
        self._requests: list[RecordedRequest] = []
        self._prompts: set[str] = set()
        self._in_flight = 0
        self._max_concurrency = 0
        self._serial = 0
        self._stopping = threading.Event()
        self._httpd: JudgeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeJudgeServer:
        """Bind the port (a free one by default) and serve from a background thread.

        Returns:
            The server itself, so ``server = FakeJudgeServer().start()`` reads naturally.

        Raises:
            FakeJudgeStateError: The server is already running.
            ConfigurationError: The port given to the constructor cannot be listened on.
        """
        if self._httpd is not None:
            raise FakeJudgeStateError(
                f"FakeJudgeServer is already running at {self.base_url}; call stop() before "
                "starting it again, or use a second FakeJudgeServer."
            )
        self._stopping.clear()
        try:
            httpd = JudgeHTTPServer(
                (self._host, self._port), respond=self._handle, in_flight=self._tracked
            )
        except OSError as error:
            raise ConfigurationError(
                f"FakeJudgeServer cannot listen on {self._host}:{self._port}: "
                f"{error.strerror or error}; give another port, or 0 for a free one."
            ) from None
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
        match: TextMatch,
        *,
        user: TextMatch | None = None,
        system: TextMatch | None = None,
        model: str | None = None,
        choice: str | None = None,
        content: str | None = None,
        json: Mapping[str, Any] | None = None,
        sequence: Sequence[ScriptedAnswer] | None = None,
        reasons: str | None = None,
        endpoint: Endpoint | None = None,
        latency: float | None = None,
        status: int | None = None,
        tool_call: str | None = None,
    ) -> Rule:
        """Script the answer to requests that match; the first matching rule wins.

        The request's text is the text of its chat messages, or its Responses ``input`` and
        ``instructions``, or its embedding or moderation ``input``, joined by newlines.
        ``user``, ``system`` and ``model`` narrow the rule further: every condition given
        must hold.

        Which argument applies depends on what the request asks for:

        * a forced tool call: ``json`` is the arguments object as given; otherwise ``choice``
          fills the ``choice`` property (or the first ``enum`` property) and ``reasons`` the
          ``reasons`` property. A choice outside the enum is sent as is, to test how callers
          cope with a judge that misbehaves.
        * a ``json_schema`` response format: ``json`` as given, else an object built from the
          schema with ``choice`` in its enum property, else ``content`` verbatim.
        * plain text: ``content``, else ``json`` serialised, else ``choice``.
        * ``tool_call``: the model calls that tool (one the request offers) although the request
          forces none, with ``json`` as the arguments (or arguments built from the tool's
          schema): the model of an app that uses tools. A request that forces a tool, or sets
          ``tool_choice="none"``, is answered as above instead.

        ``sequence`` answers successive matching calls in turn (then repeats its last item):
        a string item acts as both ``choice`` and ``content``, a mapping as ``json``.

        Args:
            match: A substring, or a compiled pattern searched for, in the request's text.
                An empty string matches every request.
            user: A substring or pattern the last user message must hold (chat messages of
                role ``user``; a Responses ``input`` string; an embedding or moderation input).
            system: A substring or pattern the system prompt must hold (messages of role
                ``system`` or ``developer``; Responses ``instructions``).
            model: The model the request must name, exactly.
            choice: The choice to answer with.
            content: The text to answer with.
            json: The JSON object to answer with.
            sequence: Answers for successive calls, instead of ``choice``/``content``/``json``.
            reasons: The ``reasons`` text of tool calls.
            endpoint: Apply the rule to this endpoint only.
            latency: Seconds to wait before answering, instead of the server's latency.
            status: Answer with this HTTP error status (400-599) instead of a reply.
            tool_call: The name of a tool the reply calls of its own accord.

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
        items = tuple(sequence) if sequence is not None else ()
        if sequence is not None and not items:
            raise ConfigurationError(
                "add_rule(sequence=[]) has no answers; give at least one choice, text or object."
            )
        rule = Rule(
            match=match,
            user=user,
            system=system,
            model=model,
            choice=choice,
            content=content,
            json=json,
            sequence=items,
            reasons=reasons,
            endpoint=endpoint,
            latency=None if latency is None else _check_seconds("latency", latency),
            status=status,
            tool_call=tool_call,
        )
        self.add_rules([rule])
        return rule

    def add_rules(self, rules: Iterable[Rule]) -> None:
        """Add rules built beforehand, such as those of a rules file, after the others.

        Example:
            >>> judge = FakeJudgeServer()
            >>> judge.add_rules([Rule(match="Paris", choice="C"), Rule(match="", content="?")])
            >>> len(judge.rules)
            2
        """
        scripted = [_ScriptedRule(rule=rule) for rule in rules]
        with self._lock:
            self._rules.extend(scripted)

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
        """Forget every rule, pending fault and system prompt seen, restore the latency.

        Recorded requests and :attr:`max_concurrency` are kept; see :meth:`reset_stats`.
        """
        with self._lock:
            self._rules.clear()
            self._faults.clear()
            self._prompts.clear()
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

    def _handle(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> Reply:
        path = urlsplit(target).path
        body, decode_error = decode_body(raw)
        with self._lock:
            self._requests.append(
                RecordedRequest(
                    method=method, path=path, body=body, headers=headers, received_at=time.time()
                )
            )
        route = ROUTES.get(path) if method == "POST" else None
        if route is None:
            return error_reply(
                404,
                f"FakeJudgeServer has no route {method} {path}. It serves POST "
                f"{', '.join(ROUTES)} (check that the client's base_url is {self.base_url!r}).",
                code="unknown_url",
            )
        if decode_error is not None:
            return error_reply(400, f"The request body is not a JSON object: {decode_error}.")

        try:
            text = route.text(body)
        except RequestError as error:
            return error_reply(error.status, error.message, param=error.param)
        fault = self._take_fault()
        if fault is not None and fault.kind == "hang":
            self._wait(fault.seconds)
            fault = None
        rule, answer, serial = self._answer(text, route.endpoint, consume=fault is None)
        self._wait(rule.latency if rule is not None and rule.latency is not None else self._latency)

        if fault is not None:
            return _fault_reply(fault)
        if rule is not None and rule.status is not None:
            return error_reply(
                rule.status,
                f"Scripted failure from the FakeJudgeServer rule matching {rule.match!r}.",
            )
        try:
            reply = route.build(self._settings, body, answer, serial)
        except RequestError as error:
            return error_reply(error.status, error.message, param=error.param)
        return json_reply(200, self._prompt_cached(reply, text.system))

    def _prompt_cached(self, reply: JSONObject, system: str) -> JSONObject:
        """Report the system prompt's tokens as cached when it was sent before.

        Providers bill a prompt whose start they saw recently as cached tokens; the judge's
        system message is that start, so a repeated one is counted the same way here.
        """
        usage = reply.get("usage")
        if not system or not isinstance(usage, dict):
            return reply
        with self._lock:
            seen = system in self._prompts
            if len(self._prompts) >= _PROMPTS_KEPT:
                self._prompts.clear()
            self._prompts.add(system)
        cached = len(system.split()) if seen else 0
        if "input_tokens_details" in usage:
            details = usage["input_tokens_details"]
            usage["input_tokens_details"] = {**details, "cached_tokens": cached}
        elif "completion_tokens" in usage:
            usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
        return reply

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
        self, text: RequestText, endpoint: Endpoint, *, consume: bool
    ) -> tuple[Rule | None, Answer | None, int]:
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


# -- faults and argument checks -------------------------------------------------------------------


def _fault_reply(fault: _Fault) -> Reply:
    if fault.kind == "malformed":
        return Reply(status=200, body=fault.body)
    headers: tuple[tuple[str, str], ...] = ()
    if fault.retry_after is not None:
        headers = (
            ("retry-after", f"{fault.retry_after:g}"),
            ("retry-after-ms", f"{fault.retry_after * 1000:g}"),
        )
    return json_reply(fault.status, error_body(fault.status, fault.message), headers)


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
