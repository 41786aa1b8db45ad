"""An in-process OTLP/HTTP receiver on loopback, for testing what an app exports.

:class:`OTLPReceiver` is a real HTTP server on ``127.0.0.1`` that accepts
``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest`` (plain, gzip or deflate),
decodes it, and records every request with its headers. It can be told to answer with an
error status, to accept a request and never answer, or to close the connection without
answering, so that tests can play a collector that is down, failing or stuck.

Example:
    >>> from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    >>> import evaltrace
    >>> with OTLPReceiver() as receiver:  # doctest: +SKIP
    ...     evaltrace.init(exporters=[OTLPSpanExporter(endpoint=receiver.traces_url)])
    ...     ...
    ...     evaltrace.flush()
    ...     [span.name for span in receiver.spans]
"""

from __future__ import annotations

import gzip
import socket
import sys
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from evaltrace.errors import ConfigurationError, EvaltraceError
from evaltrace.testing.lifecycle import Started

__all__ = ["OTLPReceiver", "OTLPReceiverStateError", "ReceivedExport", "ReceivedSpan"]

TRACES_PATH = "/v1/traces"


class OTLPReceiverStateError(EvaltraceError, RuntimeError):
    """An :class:`OTLPReceiver` was used in a state that does not allow it."""


@dataclass(kw_only=True, frozen=True)
class ReceivedSpan:
    """One span of a received export, with its resource, flattened for assertions."""

    name: str
    """The span name."""
    trace_id: str
    """The trace id, 32 hex digits."""
    span_id: str
    """The span id, 16 hex digits."""
    parent_span_id: str | None
    """The parent's span id, or ``None`` for a root span."""
    kind: int
    """The OTLP span kind (1 internal, 2 server, 3 client, 4 producer, 5 consumer)."""
    attributes: Mapping[str, Any]
    """The span's attributes, decoded to Python values (arrays as lists)."""
    events: tuple[tuple[str, Mapping[str, Any]], ...]
    """The span's events as ``(name, attributes)``."""
    resource: Mapping[str, Any]
    """The attributes of the resource the span was exported under."""
    scope: str
    """The name of the instrumentation scope (the tracer's name)."""


@dataclass(kw_only=True, frozen=True)
class ReceivedExport:
    """One export request the receiver answered with success."""

    path: str
    """The request path, such as ``/v1/traces``."""
    headers: Mapping[str, str]
    """The request headers, with lower-case names."""
    content_encoding: str | None
    """``gzip`` or ``deflate`` when the body was compressed."""
    request: ExportTraceServiceRequest
    """The decoded protobuf request."""
    spans: tuple[ReceivedSpan, ...] = field(default=())
    """Its spans, flattened."""


_Fault = Literal["status", "hang", "close"]


@dataclass(kw_only=True)
class _Pending:
    kind: _Fault
    remaining: int
    status: int = 500


class OTLPReceiver(Started):
    """An OTLP/HTTP trace receiver on loopback that records and decodes what it is sent.

    Args:
        port: The port to bind; ``0`` picks a free one. Give the port of a stopped receiver
            to play a collector that restarts.
        host: The loopback address to bind.
    """

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1") -> None:
        self._host = host
        self._requested_port = port
        self._lock = threading.Lock()
        self._exports: list[ReceivedExport] = []
        self._attempts = 0
        self._faults: list[_Pending] = []
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._hanging = 0
        self._httpd: _ReceiverHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> OTLPReceiver:
        """Bind the port and serve from a background thread.

        Raises:
            OTLPReceiverStateError: The receiver is already running.
        """
        if self._httpd is not None:
            raise OTLPReceiverStateError(
                f"OTLPReceiver is already running at {self.endpoint}; stop() it first"
            )
        self._stopping.clear()
        httpd = _ReceiverHTTPServer((self._host, self._requested_port), self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"evaltrace-otlp-receiver:{httpd.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._requested_port = int(httpd.server_address[1])
        self._httpd, self._thread = httpd, thread
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; requests held by :meth:`hang_next` are dropped.

        Stopping a receiver that is not running does nothing. A new receiver (or this one,
        started again) may then bind the same port.
        """
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        httpd.cut_connections()  # kept-alive connections would otherwise still be answered
        thread.join()
        self._httpd = self._thread = None

    @property
    def port(self) -> int:
        """The port the receiver listens on (or listened on, once stopped)."""
        if self._requested_port == 0:
            raise OTLPReceiverStateError("OTLPReceiver has no port until it is started")
        return self._requested_port

    @property
    def endpoint(self) -> str:
        """The base URL, for ``OTEL_EXPORTER_OTLP_ENDPOINT``: ``http://127.0.0.1:PORT``."""
        return f"http://{self._host}:{self.port}"

    @property
    def traces_url(self) -> str:
        """The traces URL, for ``OTLPSpanExporter(endpoint=...)``."""
        return self.endpoint + TRACES_PATH

    # -- faults ----------------------------------------------------------------------------

    def fail_next(self, status: int = 500, *, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` (and record nothing)."""
        if not 400 <= status <= 599:
            raise ConfigurationError(f"fail_next(status={status!r}) must be between 400 and 599")
        self._queue(_Pending(kind="status", remaining=_check_times(times), status=status))

    def hang_next(self, *, times: int = 1) -> None:
        """Read the next ``times`` requests and never answer them (until :meth:`stop`)."""
        self._queue(_Pending(kind="hang", remaining=_check_times(times)))

    def close_next(self, *, times: int = 1) -> None:
        """Read the next ``times`` requests and close the connection without an answer."""
        self._queue(_Pending(kind="close", remaining=_check_times(times)))

    def _queue(self, fault: _Pending) -> None:
        with self._lock:
            self._faults.append(fault)

    # -- what arrived ----------------------------------------------------------------------

    @property
    def exports(self) -> list[ReceivedExport]:
        """Every export request answered with success, oldest first."""
        with self._lock:
            return list(self._exports)

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span of :attr:`exports`, in arrival order."""
        return [span for export in self.exports for span in export.spans]

    @property
    def attempts(self) -> int:
        """How many requests arrived, answered or not."""
        with self._lock:
            return self._attempts

    @property
    def hanging(self) -> int:
        """How many requests are being held unanswered now."""
        with self._lock:
            return self._hanging

    def wait_for_spans(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` spans arrived; whether they did within ``timeout``."""
        return self._wait(lambda: sum(len(e.spans) for e in self._exports) >= count, timeout)

    def wait_for_attempts(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` requests arrived; whether they did within ``timeout``."""
        return self._wait(lambda: self._attempts >= count, timeout)

    def _wait(self, done: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    # -- request handling (on the server's handler threads) --------------------------------

    def _take_fault(self) -> _Pending | None:
        with self._changed:
            self._attempts += 1
            self._changed.notify_all()
            if not self._faults:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.pop(0)
            return fault

    def _hang(self) -> None:
        with self._lock:
            self._hanging += 1
        try:
            self._stopping.wait()
        finally:
            with self._lock:
                self._hanging -= 1

    def _record(self, export: ReceivedExport) -> None:
        with self._changed:
            self._exports.append(export)
            self._changed.notify_all()


def _check_times(times: int) -> int:
    if type(times) is not int or times < 1:
        raise ConfigurationError(f"times={times!r} must be a whole number of 1 or more")
    return times


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def _flatten(request: ExportTraceServiceRequest) -> tuple[ReceivedSpan, ...]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex() or None,
                        kind=span.kind,
                        attributes=_attributes(span.attributes),
                        events=tuple(
                            (event.name, _attributes(event.attributes)) for event in span.events
                        ),
                        resource=resource,
                        scope=scope_spans.scope.name,
                    )
                )
    return tuple(spans)


class _ReceiverHTTPServer(ThreadingHTTPServer):
    """The stdlib threading server, with daemon handler threads and connections it can cut.

    Daemon threads: a held request never keeps the process alive. Cut connections: a stopped
    receiver answers nothing, not even on a connection kept alive from before.
    """

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], receiver: OTLPReceiver) -> None:
        self.receiver = receiver
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Reset every open connection, as a collector that went away would."""
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                continue

    def handle_error(self, request: Any, client_address: Any) -> None:
        # An exporter that times out closes its socket mid-request; that is expected.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "evaltrace-otlp-receiver/1"
    timeout = 10.0
    server: _ReceiverHTTPServer

    def do_POST(self) -> None:
        receiver = self.server.receiver
        headers = {name.lower(): value for name, value in self.headers.items()}
        length = int(headers.get("content-length", "0") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        fault = receiver._take_fault()
        if fault is not None and fault.kind == "hang":
            receiver._hang()
            self.close_connection = True
            return
        if fault is not None and fault.kind == "close":
            self.close_connection = True
            return
        if fault is not None:
            self._answer(fault.status, b"")
            return
        if self.path.split("?")[0] != TRACES_PATH:
            self._answer(404, b"")
            return
        encoding = headers.get("content-encoding")
        try:
            body = _decompress(raw, encoding)
            request = ExportTraceServiceRequest.FromString(body)
        except (OSError, zlib.error, DecodeError, ValueError):
            self._answer(400, b"")
            return
        receiver._record(
            ReceivedExport(
                path=self.path,
                headers=headers,
                content_encoding=encoding,
                request=request,
                spans=_flatten(request),
            )
        )
        self._answer(200, ExportTraceServiceResponse().SerializeToString())

    def _answer(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            return

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean: no access log on stderr."""


def _decompress(raw: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    return raw
