"""The JSON-lines trace format: one finished span per line, written in one place.

The trace file (``EVALTRACE_TRACE_FILE``, :class:`~evaltrace.capture.exporters.JsonLinesExporter`),
:func:`evaltrace.trace.save_traces` and a run's ``traces.jsonl`` all write their lines as
:func:`span_document` builds them and :func:`encode_span_document` encodes them, and
:func:`evaltrace.trace.load_traces` reads them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["encode_span_document", "span_document"]


def span_document(
    *,
    trace_id: int,
    span_id: int,
    parent_span_id: int | None,
    name: str,
    kind: str,
    start_time_ns: int,
    end_time_ns: int,
    status_code: str,
    status_description: str | None,
    attributes: Mapping[str, Any] | None,
    events: Iterable[tuple[str, int, Mapping[str, Any] | None]],
    resource: Mapping[str, Any] | None,
    named_values: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON document of one finished span's line of the trace format, before encoding.

    :func:`encode_span_document` makes it the line; a writer with an encoder of its own may
    use that, and :func:`encode_span_document` for what its encoder refuses.

    Args:
        trace_id: The span's trace id.
        span_id: Its id.
        parent_span_id: Its parent's id; ``None`` for a root.
        name: Its name.
        kind: Its OpenTelemetry kind's name (``"INTERNAL"``, ``"CLIENT"``, ...).
        start_time_ns: When it started (nanoseconds since the epoch).
        end_time_ns: When it ended.
        status_code: Its status code's name (``"UNSET"``, ``"OK"``, ``"ERROR"``).
        status_description: Its status description.
        attributes: Its attributes.
        events: Each event's name, time and attributes.
        resource: Its resource's attributes.
        named_values: The ``wrap`` values recorded on it, when they are not in its events.

    Example:
        >>> line = encode_span_document(span_document(
        ...     trace_id=1, span_id=2, parent_span_id=None, name="answer", kind="INTERNAL",
        ...     start_time_ns=0, end_time_ns=5, status_code="UNSET", status_description=None,
        ...     attributes={"n": (1, 2)}, events=(), resource={},
        ... ))
        >>> line[:61]
        '{"trace_id":"00000000000000000000000000000001","span_id":"000'
    """
    data: dict[str, Any] = {
        "trace_id": f"{trace_id:032x}",
        "span_id": f"{span_id:016x}",
        "parent_span_id": None if parent_span_id is None else f"{parent_span_id:016x}",
        "name": name,
        "kind": kind,
        "start_time_ns": start_time_ns,
        "end_time_ns": end_time_ns,
        "status": {"code": status_code, "description": status_description},
        "attributes": _attributes(attributes),
        "events": [
            {"name": event, "timestamp_ns": timestamp, "attributes": _attributes(values)}
            for event, timestamp, values in events
        ],
        "resource": _attributes(resource),
    }
    if named_values:
        data["named_values"] = named_values
    return data


def encode_span_document(data: Mapping[str, Any]) -> str:
    """A :func:`span_document` as a line (without the newline).

    Non-ASCII text is kept as it is, lone surrogates as escapes; a value JSON has no type for
    is written as its ``str()``.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them as escapes
        text = json.dumps(data, separators=(",", ":"), default=str)
    return text


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """Attributes as JSON data: OpenTelemetry's tuples become lists."""
    if not attributes:
        return {}
    return {
        key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()
    }
