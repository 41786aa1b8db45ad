"""What intake answers, whatever protocol brought a request: :class:`Refusal`, :class:`Intake`.

OTLP/HTTP and OTLP/gRPC take the same export requests through the same pipeline (forwarded
as they are, assembled, sampled, scored) within the same limits. Each protocol reads its
request and asks the gateway (an :class:`Intake`) whether it may take it and then to take it;
a refusal is said the protocol's way (an HTTP status, a gRPC status code).
"""

from __future__ import annotations

import enum
from typing import Protocol

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from evaltrace.serve.metrics import Metrics

__all__ = ["Intake", "Refusal"]


class Refusal(enum.Enum):
    """Why a request is not taken (its value says it to the client)."""

    STOPPING = "the gateway is stopping"
    """Intake is closed: the gateway drains (or has not started)."""
    UNAUTHORIZED = "a bearer token is required: Authorization: Bearer <token>"
    """The bearer token is missing or wrong."""
    FORWARD_QUEUE_FULL = "the forward queue is full"
    """Forwarding is behind: the exporter should send again later."""
    TOO_MANY = "too many requests at once"
    """More requests are being read than the gateway reads at once."""


class Intake(Protocol):
    """The gateway as a protocol's intake sees it."""

    @property
    def metrics(self) -> Metrics:
        """Where requests and spans are counted."""
        ...

    @property
    def max_request_bytes(self) -> int:
        """The largest request taken (decompressed)."""
        ...

    def refusal(self, authorization: str | None, size: int = 0) -> Refusal | None:
        """Why a request of ``size`` bytes with this ``Authorization`` is refused, if it is."""
        ...

    def accept(
        self, decoded: ExportTraceServiceRequest, encoded: bytes, protocol: str
    ) -> Refusal | None:
        """Take a read request (never waiting); why not, if it was not taken."""
        ...
