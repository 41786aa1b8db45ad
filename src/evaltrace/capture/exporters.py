"""The exporters evaltrace builds from the environment: OTLP (HTTP or gRPC) and a JSONL file.

The ``OTEL_*`` variables are read as the OpenTelemetry Python SDK documents them:

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
    The full URL spans are sent to, used as given.
``OTEL_EXPORTER_OTLP_ENDPOINT``
    The collector's base URL; over HTTP, ``/v1/traces`` is appended. Over gRPC both are used
    as given (``http://host:4317``; ``http`` means an insecure channel).
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``
    ``http/protobuf`` (the default) or ``grpc`` (needs ``pip install 'evaltrace[grpc]'``).
``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS``
    ``key=value`` pairs separated by commas, values URL-encoded (``authorization=Bearer%20x``).
``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` / ``OTEL_EXPORTER_OTLP_TIMEOUT``
    Seconds one export may take, retries included (10 by default).
``OTEL_RESOURCE_ATTRIBUTES``
    ``key=value`` pairs separated by commas, values URL-encoded, put on the resource of a
    tracer provider evaltrace creates.

The traces-specific variable wins over the generic one. Compression, certificates and the
other ``OTEL_EXPORTER_OTLP_*`` variables are read by the SDK's exporter classes themselves.
Spans are exported over OTLP only when one of the two endpoint variables is set.

``EVALTRACE_TRACE_FILE`` names a file that each finished span is appended to as one line of
the JSONL trace format, which :func:`evaltrace.load_traces` reads.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TIMEOUT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_RESOURCE_ATTRIBUTES,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.re import parse_env_headers

from evaltrace._safe_text import exception_text
from evaltrace.errors import ConfigurationError

__all__ = [
    "EVALTRACE_TRACE_FILE",
    "PROJECT_NAME_ATTRIBUTE",
    "JsonLinesExporter",
    "OTLPSettings",
    "Protocol",
    "otlp_exporter",
    "otlp_settings_from_env",
    "resource_attributes_from_env",
    "span_json_line",
]

_logger = logging.getLogger(__name__)

EVALTRACE_TRACE_FILE: Final = "EVALTRACE_TRACE_FILE"
"""The variable naming the JSONL file every finished span is appended to."""

PROJECT_NAME_ATTRIBUTE: Final = "openinference.project.name"
"""The resource attribute Arize Phoenix groups spans into projects by."""

Protocol: TypeAlias = Literal["http/protobuf", "grpc"]
"""The OTLP transports evaltrace builds exporters for."""

_PROTOCOLS: Final[Mapping[str, Protocol]] = {"http/protobuf": "http/protobuf", "grpc": "grpc"}
_TRACES_PATH: Final = "/v1/traces"


@dataclass(kw_only=True, frozen=True)
class OTLPSettings:
    """Where and how spans go over OTLP, as read from the ``OTEL_EXPORTER_OTLP_*`` variables."""

    endpoint: str
    """The URL spans are sent to (over HTTP the full traces URL, over gRPC the collector's)."""
    protocol: Protocol = "http/protobuf"
    """``http/protobuf`` or ``grpc``."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent with every export request (names lower-cased)."""
    timeout_seconds: float | None = None
    """How long one export may take, retries included; ``None`` keeps the SDK's 10 s."""


def _first(env: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """The first of ``names`` set to a non-blank value, with that value."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return None


def otlp_settings_from_env(env: Mapping[str, str]) -> OTLPSettings | None:
    """Read the ``OTEL_EXPORTER_OTLP_*`` variables.

    Args:
        env: The environment (``os.environ``).

    Returns:
        The settings, or ``None`` when no endpoint variable is set (no OTLP export then).

    Raises:
        ConfigurationError: A variable holds a value the SDK could not use; the message names
            it and what it expects.

    Example:
        >>> otlp_settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
        OTLPSettings(endpoint='http://collector:4318/v1/traces', protocol='http/protobuf', \
headers={}, timeout_seconds=None)
    """
    protocol = _protocol(env)
    specific = _first(env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    found = specific or _first(env, OTEL_EXPORTER_OTLP_ENDPOINT)
    if found is None:
        return None
    name, endpoint = found
    _check_url(name, endpoint)
    if specific is None and protocol == "http/protobuf":
        endpoint = endpoint.rstrip("/") + _TRACES_PATH
    return OTLPSettings(
        endpoint=endpoint,
        protocol=protocol,
        headers=_headers(env),
        timeout_seconds=_timeout(env),
    )


def _protocol(env: Mapping[str, str]) -> Protocol:
    found = _first(env, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL)
    if found is None:
        return "http/protobuf"
    name, raw = found
    protocol = _PROTOCOLS.get(raw.lower())
    if protocol is None:
        hint = (
            " (the OpenTelemetry Python SDK has no http/json trace exporter)"
            if raw.lower() == "http/json"
            else ""
        )
        raise ConfigurationError(
            f"{name}={raw!r} is not a protocol evaltrace can export with{hint}; use "
            "'http/protobuf' (the default) or 'grpc' (pip install 'evaltrace[grpc]')"
        )
    return protocol


def _check_url(name: str, url: str) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise ConfigurationError(f"{name}={url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{name}={url!r} is not an http:// or https:// URL with a host; e.g. "
            f"{name}=http://localhost:4318"
        )


def _headers(env: Mapping[str, str]) -> dict[str, str]:
    found = _first(env, OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS)
    if found is None:
        return {}
    name, raw = found
    headers: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        # The SDK's own parser (liberal, as its exporters use it) skips what it cannot read;
        # here a pair it skips is an error, so that a typo never silently drops a header.
        parsed = parse_env_headers(item, liberal=True)
        if not parsed:
            raise ConfigurationError(
                f"{name} has the entry {item.strip()!r}, which is not key=value; the variable "
                "holds comma-separated pairs with URL-encoded values, e.g. "
                f"{name}=authorization=Bearer%20secret,x-team=search"
            )
        headers.update(parsed)
    return headers


def _timeout(env: Mapping[str, str]) -> float | None:
    found = _first(env, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT)
    if found is None:
        return None
    name, raw = found
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigurationError(
            f"{name}={raw!r} is not a number of seconds above 0 (the OpenTelemetry Python "
            f"SDK reads it in seconds), e.g. {name}=10"
        )
    return seconds


def resource_attributes_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """Read ``OTEL_RESOURCE_ATTRIBUTES`` (comma-separated ``key=value``, values URL-encoded).

    Raises:
        ConfigurationError: An entry is not ``key=value`` with a non-empty key.

    Example:
        >>> resource_attributes_from_env({"OTEL_RESOURCE_ATTRIBUTES": "team=search,tier=a%20b"})
        {'team': 'search', 'tier': 'a b'}
    """
    raw = env.get(OTEL_RESOURCE_ATTRIBUTES, "")
    attributes: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ConfigurationError(
                f"{OTEL_RESOURCE_ATTRIBUTES} has the entry {item.strip()!r}, which is not "
                "key=value; the variable holds comma-separated pairs with URL-encoded values, "
                f"e.g. {OTEL_RESOURCE_ATTRIBUTES}=deployment.environment=prod,team=search"
            )
        attributes[key.strip()] = unquote(value.strip())
    return attributes


def otlp_exporter(settings: OTLPSettings) -> SpanExporter:
    """Build the OpenTelemetry SDK's OTLP span exporter for ``settings``.

    Raises:
        ConfigurationError: ``grpc`` was asked for and the ``[grpc]`` extra is not installed.
    """
    if settings.protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GRPCSpanExporter,
            )
        except ImportError as exc:
            raise ConfigurationError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the gRPC exporter, which is not "
                f"installed ({exception_text(exc)}). Install it with: "
                "pip install 'evaltrace[grpc]' (or use OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
            ) from exc
        return GRPCSpanExporter(
            endpoint=settings.endpoint,
            headers=dict(settings.headers) or None,
            timeout=settings.timeout_seconds,
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=settings.endpoint,
        headers=dict(settings.headers) or None,
        timeout=settings.timeout_seconds,
    )


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
    data = {
        "trace_id": f"{context.trace_id if context is not None else 0:032x}",
        "span_id": f"{context.span_id if context is not None else 0:016x}",
        "parent_span_id": None if span.parent is None else f"{span.parent.span_id:016x}",
        "name": span.name,
        "kind": span.kind.name,
        "start_time_ns": start,
        "end_time_ns": span.end_time or start,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "attributes": _json_attributes(span.attributes),
        "events": [
            {
                "name": event.name,
                "timestamp_ns": event.timestamp,
                "attributes": _json_attributes(event.attributes),
            }
            for event in span.events
        ],
        "resource": _json_attributes(span.resource.attributes),
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates stay escapes
        text = json.dumps(data, separators=(",", ":"), default=str)
    return text


def _json_attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()
    }
