"""The HTTP layer of the fake judge: the stdlib threading server and its request handler.

The handler reads one request, asks the judge for the reply (a :class:`Reply`), writes it and
closes the connection. Which reply a request gets is the judge's business: the server is
given two callables, one that answers a request and one that counts it as in flight.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias

from evaltrace.testing.fake_judge._wire import JSONObject, error_body

__all__ = ["JudgeHTTPServer", "Reply", "Respond", "error_reply", "json_reply"]


@dataclass(kw_only=True, frozen=True)
class Reply:
    """An HTTP reply, ready to write."""

    status: int
    """The HTTP status."""
    body: bytes
    """The body, JSON unless a fault garbles it."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers besides ``Content-Type``, ``Content-Length`` and ``Connection``."""


Respond: TypeAlias = Callable[[str, str, Mapping[str, str], bytes], Reply]
"""Answers one request: ``(method, target, lower-cased headers, raw body) -> Reply``."""


def json_reply(status: int, body: JSONObject, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """A reply whose body is ``body`` as JSON."""
    return Reply(status=status, body=json.dumps(body).encode(), headers=headers)


def error_reply(
    status: int, message: str | None = None, *, code: str | None = None, param: str | None = None
) -> Reply:
    """An error reply in OpenAI's error shape."""
    return json_reply(status, error_body(status, message, code=code, param=param))


class JudgeHTTPServer(ThreadingHTTPServer):
    """The stdlib threading server, joined on close and quiet about clients that hang up."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        *,
        respond: Respond,
        in_flight: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.respond = respond
        """Answers one request."""
        self.in_flight = in_flight
        """Counts a request as in flight while its reply is built."""
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
    server: JudgeHTTPServer

    def _serve(self) -> None:
        # The reply is written after the request stops counting as in flight, so a client
        # that has its answer never sees the server still counting that request.
        with self.server.in_flight():
            reply = self._reply()
        self._write(reply)

    def _reply(self) -> Reply:
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return error_reply(400, "The Content-Length header is not an integer.")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return self.server.respond(self.command, self.path, headers, raw)
        except Exception as error:  # a bug here must reach the client, not kill the thread
            return error_reply(500, f"FakeJudgeServer failed while building a reply: {error!r}")

    def _write(self, reply: Reply) -> None:
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
