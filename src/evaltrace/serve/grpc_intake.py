"""OTLP over gRPC: ``TraceService/Export`` on grpcio's asyncio server: :class:`GrpcIntake`.

The service is the one ``opentelemetry-proto`` describes
(``opentelemetry.proto.collector.trace.v1.TraceService``, method ``Export``); its handler takes
the request's bytes as they arrived, so that they are checked and forwarded as they are, and
answers the OTLP way:

* ``OK`` and an ``ExportTraceServiceResponse``: taken;
* ``INVALID_ARGUMENT`` with the reason: the bytes are not an ``ExportTraceServiceRequest``;
* ``UNAUTHENTICATED``: a bearer token is required (metadata ``authorization``) and was not
  given;
* ``RESOURCE_EXHAUSTED``: the message (decompressed) is larger than the limit, or more calls
  than the server takes at once (both said by gRPC itself);
* ``UNAVAILABLE`` with a ``google.rpc.RetryInfo`` (in the ``google.rpc.retryinfo-bin`` trailer
  the OpenTelemetry SDKs read, and in ``grpc-status-details-bin``): the forward queue is full
  or the gateway is stopping; the exporters send again after the delay.

grpcio is in the ``[grpc]`` extra; without it this module cannot be imported, and
``evaltrace serve --grpc-listen`` says which extra to install. The gateway imports it only
when gRPC is asked for (grpcio's import costs ~9 MB and its start-up time otherwise).
"""

from __future__ import annotations

from typing import Final

import grpc  # type: ignore[import-untyped]
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo  # type: ignore[import-untyped]
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from evaltrace.errors import OTLPRequestError, ServeError
from evaltrace.serve.intake import Intake, Refusal
from evaltrace.serve.otlp import PROTOBUF, decode_request

__all__ = ["SERVICE", "GrpcIntake"]

SERVICE: Final[str] = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
"""The OTLP trace service's full name."""
_RETRY_SECONDS: Final = 1
_MAX_CALLS: Final = 256
"""Most calls handled at once; beyond, gRPC answers ``RESOURCE_EXHAUSTED`` itself."""
_ANSWER: Final[bytes] = ExportTraceServiceResponse().SerializeToString()
_CODES: Final = {
    Refusal.STOPPING: grpc.StatusCode.UNAVAILABLE,
    Refusal.UNAUTHORIZED: grpc.StatusCode.UNAUTHENTICATED,
    Refusal.FORWARD_QUEUE_FULL: grpc.StatusCode.UNAVAILABLE,
    Refusal.TOO_MANY: grpc.StatusCode.UNAVAILABLE,
}


class GrpcIntake:
    """Takes OTLP export requests over gRPC for a gateway.

    Args:
        intake: The gateway that takes them.
        host: The address listened on.
        port: The port (0: a free one).
    """

    def __init__(self, intake: Intake, host: str, port: int) -> None:
        self.intake = intake
        self.host = host
        self.port = port
        self.address = ""
        """``HOST:PORT`` listened on, once started."""
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        """Bind and take calls (in the running event loop).

        Raises:
            ServeError: The address cannot be bound.
        """
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._export)}
        )
        limit = self.intake.max_request_bytes
        server = grpc.aio.server(
            handlers=[handler],
            options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 0)],
            maximum_concurrent_rpcs=_MAX_CALLS,
        )
        shown = f"[{self.host}]" if ":" in self.host else self.host
        try:
            port = server.add_insecure_port(f"{shown}:{self.port}")
        except RuntimeError as exc:
            raise ServeError(f"cannot listen for gRPC on {shown}:{self.port}: {exc}") from None
        if port == 0 and self.port != 0:
            raise ServeError(f"cannot listen for gRPC on {shown}:{self.port}: it is taken")
        await server.start()
        self._server = server
        self.port = port
        self.address = f"{shown}:{port}"

    async def stop(self, grace: float) -> None:
        """Refuse new calls, let those running finish within ``grace`` seconds."""
        if self._server is not None:
            await self._server.stop(grace)

    async def _export(self, body: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        code, details = self._take(body, context)
        self.intake.metrics.requests.add(1, "grpc", code.name)
        if code is grpc.StatusCode.OK:
            return _ANSWER
        trailers: tuple[tuple[str, bytes], ...] = ()
        if code is grpc.StatusCode.UNAVAILABLE:
            trailers = _retry_after(code, details)
        await context.abort(code, details, trailing_metadata=trailers)
        raise AssertionError("abort raises")  # pragma: no cover

    def _take(
        self, body: bytes, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> tuple[grpc.StatusCode, str]:
        metadata = {key: value for key, value in context.invocation_metadata() or ()}
        given = metadata.get("authorization")
        refused = self.intake.refusal(given if isinstance(given, str) else None, len(body))
        if refused is None:
            try:
                decoded, encoded = decode_request(body, PROTOBUF)
            except OTLPRequestError as exc:
                return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
            refused = self.intake.accept(decoded, encoded, "grpc")
        if refused is None:
            return grpc.StatusCode.OK, ""
        if refused is Refusal.UNAUTHORIZED:
            return _CODES[refused], "a bearer token is required: metadata authorization: Bearer ..."
        return _CODES[refused], f"{refused.value}; send again later"


def _retry_after(code: grpc.StatusCode, details: str) -> tuple[tuple[str, bytes], ...]:
    """The trailers that tell an exporter when to send again."""
    retry = RetryInfo(retry_delay=Duration(seconds=_RETRY_SECONDS))
    detail = AnyMessage()
    detail.Pack(retry)
    status = Status(code=code.value[0], message=details, details=[detail])
    return (
        ("google.rpc.retryinfo-bin", retry.SerializeToString()),
        ("grpc-status-details-bin", status.SerializeToString()),
    )
