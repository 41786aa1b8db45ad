"""The exporters evaltrace builds from the environment: OTLP (HTTP or gRPC) and a JSONL file.

:mod:`evaltrace.capture.environment` reads the ``OTEL_EXPORTER_OTLP_*`` variables into
:class:`OTLPSettings`; :func:`otlp_exporter` builds the OpenTelemetry SDK's exporter from
them. The SDK's exporter classes read the same variables again when they are made, and some
raise on a value they cannot use (the gRPC exporter on a compression it does not know, or a
timeout that is not a number). So every setting is passed to them explicitly, which makes
them ignore the variable; where they read a variable whatever they are given (the HTTP
exporter adds the headers variable to the headers it is given), evaltrace keeps what it
refused from being sent, and the warnings they log about values evaltrace has already
reported go to evaltrace's debug log instead.

``EVALTRACE_TRACE_FILE`` names a file that each finished span is appended to as one line of
the JSONL trace format, which :func:`evaltrace.load_traces` reads.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from evaltrace._safe_text import exception_text, safe_str
from evaltrace.capture.jsonl import encode_span_document, span_document
from evaltrace.errors import ConfigurationError

if TYPE_CHECKING:
    import requests

__all__ = [
    "EVALTRACE_TRACE_FILE",
    "PROJECT_NAME_ATTRIBUTE",
    "Compression",
    "JsonLinesExporter",
    "OTLPSettings",
    "Protocol",
    "otlp_exporter",
    "settled_variables",
    "span_json_line",
]

_logger = logging.getLogger(__name__)

EVALTRACE_TRACE_FILE: Final = "EVALTRACE_TRACE_FILE"
"""The variable naming the JSONL file every finished span is appended to."""

PROJECT_NAME_ATTRIBUTE: Final = "openinference.project.name"
"""The resource attribute Arize Phoenix groups spans into projects by."""

Protocol: TypeAlias = Literal["http/protobuf", "grpc"]
"""The OTLP transports evaltrace builds exporters for."""

Compression: TypeAlias = Literal["gzip", "deflate", "none"]
"""How OTLP export requests are compressed."""


@dataclass(kw_only=True, frozen=True)
class OTLPSettings:
    """Where and how spans go over OTLP, as read from the ``OTEL_EXPORTER_OTLP_*`` variables."""

    endpoint: str
    """The URL spans are sent to (over HTTP the full traces URL, over gRPC the collector's)."""
    protocol: Protocol = "http/protobuf"
    """``http/protobuf`` or ``grpc``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent with every export request (names lower-cased)."""
    refused_headers: frozenset[str] = frozenset()
    """Names of headers the variable holds with a value that was refused: never sent."""
    timeout_seconds: float = 10.0
    """How long one export may take, retries included."""
    compression: Compression = "none"
    """How export requests are compressed."""
    certificate_file: str | None = None
    """The CA certificates that verify the collector (``None``: the system's)."""
    client_key_file: str | None = None
    """The private key of the client certificate, for mutual TLS."""
    client_certificate_file: str | None = None
    """The client certificate, for mutual TLS."""


def otlp_exporter(settings: OTLPSettings) -> SpanExporter:
    """Build the OpenTelemetry SDK's OTLP span exporter for ``settings``.

    Raises:
        ConfigurationError: ``grpc`` was asked for and the ``[grpc]`` extra is not installed.
    """
    with settled_variables():
        if settings.protocol == "grpc":
            return _grpc_exporter(settings)
        return _http_exporter(settings)


def _grpc_exporter(settings: OTLPSettings) -> SpanExporter:
    try:
        import grpc  # type: ignore[import-untyped]
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GRPCSpanExporter,
        )
    except ImportError as exc:
        raise ConfigurationError(
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the gRPC exporter, which is not "
            f"installed ({exception_text(exc)}). Install it with: "
            "pip install 'evaltrace[grpc]' (or use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
        ) from exc
    compression = {
        "gzip": grpc.Compression.Gzip,
        "deflate": grpc.Compression.Deflate,
        "none": grpc.Compression.NoCompression,
    }[settings.compression]
    return GRPCSpanExporter(
        endpoint=settings.endpoint,
        headers=tuple(settings.headers.items()) or None,
        timeout=settings.timeout_seconds,
        compression=compression,
    )


def _http_exporter(settings: OTLPSettings) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http import Compression as HTTPCompression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=settings.endpoint,
        certificate_file=settings.certificate_file,
        client_key_file=settings.client_key_file,
        client_certificate_file=settings.client_certificate_file,
        headers=dict(settings.headers) or None,
        timeout=settings.timeout_seconds,
        compression=HTTPCompression(settings.compression),
        session=(_session_without(settings.refused_headers) if settings.refused_headers else None),
    )


def _session_without(refused: frozenset[str]) -> requests.Session:
    """A requests session that never sends a header named in ``refused``.

    The SDK's HTTP exporter adds the headers of the variable to those it is given (or reads
    them all when given none), refused ones included; the session drops them before requests
    checks and sends them.
    """
    return _refusing_session_class()(refused)


@functools.cache
def _refusing_session_class() -> Callable[[frozenset[str]], requests.Session]:
    # requests is imported only when a refused header needs it (it loads in ~40 ms).
    import requests

    class RefusingSession(requests.Session):
        def __init__(self, refused: frozenset[str]) -> None:
            super().__init__()
            self.refused = refused

        def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
            request.headers = {
                name: value
                for name, value in (request.headers or {}).items()
                if name.lower() not in self.refused
            }
            for name in self.refused:
                self.headers.pop(name, None)
            return super().prepare_request(request)

    return RefusingSession


_SETTLED_MESSAGES: Final = {
    # logger -> how the warnings it logs about a value evaltrace has reported begin
    "opentelemetry.util.re": "Header format invalid",
    "opentelemetry.sdk.resources": "Invalid key value resource attribute pair",
}


class _Settled(logging.Filter):
    """Drops the SDK's warnings about the values of variables evaltrace has reported.

    Not bound to a thread: the SDK runs resource detectors in a pool of its own, and a
    variable's value is the same on every thread.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a record whose arguments do not fit its format
            message = safe_str(record.msg)
        prefix = _SETTLED_MESSAGES.get(record.name)
        if prefix is None or not message.startswith(prefix):
            return True
        logging.getLogger("evaltrace").debug("evaltrace: the OpenTelemetry SDK says: %s", message)
        return False


@contextmanager
def settled_variables() -> Iterator[None]:
    """Keep the SDK's warnings about variables evaltrace has reported out of the app's log.

    While an SDK class is made that reads the variables evaltrace has read (and reported once
    already), what the SDK says about their values goes to evaltrace's debug log.
    """
    settled = _Settled()
    loggers = [logging.getLogger(name) for name in _SETTLED_MESSAGES]
    for logger in loggers:
        logger.addFilter(settled)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(settled)


class JsonLinesExporter(SpanExporter):
    """Appends each span to a file as one line of the JSONL trace format.

    The file is opened for appending when the exporter is made, so a path that cannot be
    written is reported at once; each batch is written with one unbuffered append, so
    processes that share the file (a forked worker, say) never interleave within a line.
    :func:`evaltrace.load_traces` reads the file.

    Args:
        path: The file; created when missing, appended to when present.

    Raises:
        ConfigurationError: The file cannot be opened for appending.

    Example:
        >>> import evaltrace
        >>> evaltrace.init(exporters=[JsonLinesExporter("spans.jsonl")])  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        """The file spans are appended to."""
        try:
            self._file = open(self.path, "ab", buffering=0)
        except OSError as exc:
            raise ConfigurationError(
                f"the trace file {self.path!r} cannot be opened for appending: "
                f"{exception_text(exc)}"
            ) from None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Append ``spans``, one line each."""
        if self._file.closed:
            return SpanExportResult.FAILURE
        data = "".join(span_json_line(span) + "\n" for span in spans).encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                view = view[written or 0 :]
        except OSError as exc:
            _logger.error("cannot append to the trace file %s: %s", self.path, exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Close the file."""
        self._file.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered: every batch is written when exported."""
        return True


def span_json_line(span: ReadableSpan) -> str:
    """One finished span as a line of the JSONL trace format (no newline).

    The same line as :func:`evaltrace.trace.span_to_json` writes for the span.
    """
    context = span.context
    start = span.start_time or 0
    document = span_document(
        trace_id=context.trace_id if context is not None else 0,
        span_id=context.span_id if context is not None else 0,
        parent_span_id=None if span.parent is None else span.parent.span_id,
        name=span.name,
        kind=span.kind.name,
        start_time_ns=start,
        end_time_ns=span.end_time or start,
        status_code=span.status.status_code.name,
        status_description=span.status.description,
        attributes=span.attributes,
        events=((event.name, event.timestamp, event.attributes) for event in span.events),
        resource=span.resource.attributes,
    )
    return encode_span_document(document)
