"""The gateway: OTLP intake, forwarding, assembly, sampling, scoring: :class:`Gateway`.

The HTTP server is aiohttp's (its parser, its limits). Intake (``POST /v1/traces``) reads a
request, checks that it is an export request, queues its encoding for forwarding as it is,
hands its spans to the scoring thread and answers; it never waits for assembly or scoring. In
the scoring thread, the spans are assembled into traces, a ticker takes the complete ones, the
sampler chooses, and the chosen ones are scored. OTLP/gRPC, when asked for, goes through
the same checks and the same :meth:`Gateway.accept` (:mod:`evaltrace.serve.grpc_intake`).

What an HTTP client gets back:

* 200 and an ``ExportTraceServiceResponse``: accepted (forwarded, or counted if it cannot be);
* 400 with the reason: a body that is not an OTLP export request;
* 401: a bearer token is required and was not given;
* 408: the body took longer than the request timeout;
* 413: the body (decompressed) is larger than the limit;
* 415: neither protobuf nor JSON;
* 429 or 503 with ``Retry-After``: too many requests at once, the forward queue is full, or
  the gateway is stopping; the OpenTelemetry exporters send again later.

A client that takes longer than the request timeout to send a request's headers is cut off
(aiohttp's keep-alive timer runs from the connection's start), as is one whose body takes
longer.

``/healthz`` answers 200 while the process runs; ``/readyz`` 200 while it accepts spans and
its last forward succeeded; ``/metrics`` the counters (:mod:`evaltrace.serve.metrics`).
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import ipaddress
import logging
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Final

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from evaltrace.errors import MissingExtraError, OTLPRequestError, ServeError
from evaltrace.results import ResultsStream
from evaltrace.serve.assembly import Assembler, PendingTrace
from evaltrace.serve.config import GatewayConfig
from evaltrace.serve.forward import Forwarder
from evaltrace.serve.intake import Refusal
from evaltrace.serve.metrics import CONTENT_TYPE, Metrics
from evaltrace.serve.otlp import JSON, PROTOBUF, decode_request, request_spans
from evaltrace.serve.sampling import Sampler
from evaltrace.serve.scoring import Chosen, Scorer

if TYPE_CHECKING:
    from evaltrace.serve.grpc_intake import GrpcIntake

__all__ = ["Gateway", "run_gateway"]

logger = logging.getLogger("evaltrace.serve")

_RETRY_AFTER: Final = "1"
_MAX_IN_FLIGHT: Final = 256
"""Most export requests read at once; beyond, 429 (the exporters send again later)."""
_TICK: Final = 0.1
_SWITCH_INTERVAL: Final = 0.0005


class Gateway:
    """One ``evaltrace serve``: start it, let it run, stop it.

    Args:
        config: How it runs.
    """

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.forwarder: Forwarder | None = None
        self.assembler: Assembler | None = None
        self.sampler: Sampler | None = None
        self.scorer: Scorer | None = None
        self.accepting = False
        """Whether intake takes requests (not before it started, nor once it stops)."""
        self.address = ""
        """The intake URL, once started."""
        self._in_flight = 0
        self._handed = 0
        """Bytes of requests handed to the scoring thread and not assembled yet."""
        self._handed_lock = threading.Lock()
        self.grpc: GrpcIntake | None = None
        """The gRPC intake, when asked for (``--grpc-listen``)."""
        self._runner: web.AppRunner | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Bind, start forwarding and scoring, and take requests.

        Raises:
            ServeError: The address cannot be bound, or the results file written.
        """
        config = self.config
        if config.grpc_listen is not None:
            _grpc_intake()  # before anything starts: a missing extra is said at once
        self._loop = asyncio.get_running_loop()
        metrics = self.metrics
        if config.forward is not None:
            self.forwarder = Forwarder(
                config.forward,
                metrics,
                max_bytes=config.forward_queue_bytes,
                batch_bytes=config.forward_batch_bytes,
                retry_seconds=config.forward_retry_seconds,
            )
        if config.online is not None:
            settings = config.online.settings
            self.assembler = Assembler(
                quiet_period=config.quiet_period,
                trace_timeout=config.trace_timeout,
                max_traces=config.max_pending_traces,
                max_bytes=config.max_pending_bytes,
                metrics=metrics,
            )
            self.sampler = Sampler(
                rate=settings.sample,
                rules=settings.sampling.rules,
                errors=settings.sampling.errors,
            )
            self.scorer = Scorer(
                config.online,
                metrics,
                queue_size=config.evaluation_queue,
                results=None,
                send_spans=self._send_evaluations if self.forwarder is not None else None,
            )
            if config.results is not None:
                try:
                    self.scorer.results = ResultsStream(config.results, self.scorer.header())
                except OSError as exc:
                    raise ServeError(str(exc)) from None
        self._gauges()
        app = web.Application(client_max_size=config.max_request_bytes)
        app.router.add_post("/v1/traces", self._traces)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            keepalive_timeout=config.request_timeout,
            shutdown_timeout=1.0,
        )
        await runner.setup()
        site = web.TCPSite(runner, config.host, config.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ServeError(
                f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}"
            ) from None
        self._runner = runner
        host, port = runner.addresses[0][:2]
        shown = f"[{host}]" if ":" in str(host) else host
        self.address = f"http://{shown}:{port}/v1/traces"
        if config.grpc_listen is not None:
            grpc = _grpc_intake()(self, *config.grpc_listen)
            try:
                await grpc.start()
            except ServeError:
                await runner.cleanup()
                raise
            self.grpc = grpc
        if self.forwarder is not None:
            self.forwarder.start()
        if self.scorer is not None:
            self.scorer.start()
            self.scorer.soon(self._start_ticker)
        self.accepting = True
        self._say_how_it_runs(str(host), int(port))

    def _say_how_it_runs(self, host: str, port: int) -> None:
        config = self.config
        grpc = self.grpc
        if grpc is not None:
            logger.info(
                "taking OTLP/gRPC on %s",
                grpc.address,
                extra={"event": "listening_grpc", "port": grpc.port},
            )
        logger.info("listening on %s", self.address, extra={"event": "listening", "port": port})
        hosts = [host] if grpc is None else [host, grpc.host]
        for exposed in dict.fromkeys(item for item in hosts if not _loopback(item)):
            logger.warning(
                "listening on %s, which is not a loopback address: anything that can reach "
                "this machine can send spans%s",
                exposed,
                "" if config.auth_token else " (--auth-token-file requires a bearer token)",
                extra={"event": "exposed", "host": exposed},
            )
        if config.forward is not None:
            logger.info(
                "forwarding every span to %s",
                config.forward.endpoint,
                extra={"event": "forwarding", "target": config.forward.endpoint},
            )
        else:
            logger.warning(
                "no --forward (nor OTEL_EXPORTER_OTLP_ENDPOINT): spans are only scored, not "
                "forwarded anywhere",
                extra={"event": "not_forwarding"},
            )
        if config.online is not None:
            settings = config.online.settings
            logger.info(
                "scoring %s of traces (and %s) with %s from %s",
                f"{settings.sample:.0%}",
                "every trace with an error" if settings.sampling.errors else "no error rule",
                ", ".join(item.name for item in config.online.evaluators),
                config.online.file,
                extra={"event": "scoring", "sample": settings.sample},
            )
        else:
            logger.info("no --evaluators: nothing is scored", extra={"event": "not_scoring"})

    def _gauges(self) -> None:
        metrics = self.metrics
        metrics.gauge(
            "forward_queue_bytes",
            "Bytes waiting to be forwarded.",
            lambda: 0 if self.forwarder is None else self.forwarder.queued_bytes,
        )
        metrics.gauge(
            "pending_traces",
            "Traces being assembled.",
            lambda: 0 if self.assembler is None else len(self.assembler),
        )
        metrics.gauge(
            "pending_bytes",
            "Bytes of spans held by assembly.",
            lambda: 0 if self.assembler is None else self.assembler.size,
        )
        metrics.gauge(
            "evaluation_queue",
            "Chosen traces waiting to be scored.",
            lambda: 0 if self.scorer is None else self.scorer.depth,
        )
        metrics.gauge(
            "scoring_paused",
            "1 while the budget (judge calls or traces per minute, cost per hour) stops scoring.",
            lambda: 0 if self.scorer is None or self.scorer.limiter.paused is None else 1,
        )

    # -- intake ----------------------------------------------------------------------------

    async def _traces(self, request: web.Request) -> web.StreamResponse:
        response = await self._take(request)
        self.metrics.requests.add(1, "http", str(response.status))
        return response

    async def _take(self, request: web.Request) -> web.StreamResponse:
        refused = self.refusal(request.headers.get("Authorization"))
        if refused is None and self._in_flight >= _MAX_IN_FLIGHT:
            refused = Refusal.TOO_MANY
        if refused is not None:
            return _refused(refused)
        self._in_flight += 1
        try:
            try:
                body = await asyncio.wait_for(request.read(), self.config.request_timeout)
            except web.HTTPRequestEntityTooLarge:
                return web.Response(
                    status=413,
                    text=f"the body is larger than {self.config.max_request_bytes} bytes "
                    "(decompressed); export smaller batches\n",
                )
            except TimeoutError:
                return web.Response(status=408, text="the body took too long to arrive\n")
            try:
                decoded, encoded = decode_request(body, request.content_type)
            except OTLPRequestError as exc:
                status = 415 if str(exc).startswith("unsupported Content-Type") else 400
                return web.Response(status=status, text=f"{exc}\n")
            refused = self.accept(decoded, encoded, "http")
            if refused is not None:
                return _refused(refused)
        finally:
            self._in_flight -= 1
        if request.content_type == JSON:
            return web.Response(body=b"{}", content_type=JSON)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF
        )

    @property
    def max_request_bytes(self) -> int:
        """The largest request taken (decompressed), over either protocol."""
        return self.config.max_request_bytes

    def refusal(self, authorization: str | None, size: int = 0) -> Refusal | None:
        """Why a request of ``size`` bytes with this ``Authorization`` is refused, if it is."""
        if not self.accepting:
            return Refusal.STOPPING
        token = self.config.auth_token
        if token is not None and not _authorized(authorization, token):
            return Refusal.UNAUTHORIZED
        if self.forwarder is not None and self.forwarder.full(size):
            return Refusal.FORWARD_QUEUE_FULL
        return None

    def accept(
        self, decoded: ExportTraceServiceRequest, encoded: bytes, protocol: str
    ) -> Refusal | None:
        """Take one export request, whatever protocol brought it; why not, if it was not.

        Its encoding is queued for forwarding as it is; its spans go to assembly in the
        scoring thread. Nothing here waits, and nothing of assembly, sampling or scoring runs
        in the intake loop (bench/bench_serve.py: the added p99 latency at half load).
        """
        forwarder = self.forwarder
        if forwarder is not None and forwarder.full(len(encoded)):
            return Refusal.FORWARD_QUEUE_FULL
        count = sum(
            len(scope.spans)
            for resource in decoded.resource_spans
            for scope in resource.scope_spans
        )
        if forwarder is not None and count:
            forwarder.offer(encoded, count)
        if self.scorer is not None and count:
            self._hand_over(decoded, len(encoded), count)
        self.metrics.spans_received.add(count, protocol)
        return None

    def _hand_over(self, decoded: ExportTraceServiceRequest, size: int, count: int) -> None:
        """Give a request's spans to assembly, unless what waits for it is past its bound."""
        with self._handed_lock:
            taken = self._handed + size <= self.config.max_pending_bytes
            if taken:
                self._handed += size
        if not taken:  # scoring is behind intake: these spans were forwarded, not assembled
            self.metrics.spans_not_assembled.add(count)
            return
        assert self.scorer is not None
        self.scorer.soon(self._assemble, decoded, size, time.monotonic())

    def _assemble(self, decoded: ExportTraceServiceRequest, size: int, arrived: float) -> None:
        """In the scoring thread: add the request's spans to assembly."""
        assembler = self.assembler
        assert assembler is not None
        for resource, span in request_spans(decoded):
            assembler.add(resource, span, arrived)
        with self._handed_lock:
            self._handed -= size

    def _send_evaluations(self, body: bytes, spans: int) -> None:
        """From the scoring thread: queue evaluation spans for forwarding, in this loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self.metrics.spans_dropped.add(spans, "shutdown")
            return
        loop.call_soon_threadsafe(self._offer_evaluations, body, spans)

    def _offer_evaluations(self, body: bytes, spans: int) -> None:
        forwarder = self.forwarder
        assert forwarder is not None
        if forwarder.full(len(body)):
            self.metrics.spans_dropped.add(spans, "forward_queue_full")
            return
        forwarder.offer(body, spans, "evaluation")

    # -- assembly and sampling -------------------------------------------------------------

    def _start_ticker(self) -> None:
        """In the scoring thread: take the complete traces every tick."""
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    def _drain_assembly(self) -> None:
        """In the scoring thread: stop the ticker, hand every trace held to the sampler."""
        if self._ticker is not None:
            self._ticker.cancel()
        assert self.assembler is not None
        self._choose(self.assembler.drain())

    async def _tick(self) -> None:
        assembler = self.assembler
        assert assembler is not None
        while True:
            await asyncio.sleep(min(_TICK, self.config.quiet_period / 4 or _TICK))
            self._choose(assembler.ready(time.monotonic()))

    def _choose(self, traces: list[PendingTrace]) -> None:
        sampler, scorer = self.sampler, self.scorer
        assert sampler is not None and scorer is not None
        now = time.monotonic()
        for trace in traces:
            reason = sampler.choose(trace)
            if reason is not None:
                self.metrics.traces_sampled.add(1, reason)
                scorer.offer(Chosen(trace=trace, reason=reason, chosen_at=now))

    # -- operations ------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if not self.accepting:
            return web.Response(status=503, text="stopping\n")
        if self.forwarder is not None and not self.forwarder.healthy:
            return web.Response(status=503, text="the forward target is failing\n")
        if self.forwarder is not None and self.forwarder.full():
            return web.Response(status=503, text="the forward queue is full\n")
        return web.Response(text="ready\n")

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics.exposition().encode(), headers={"Content-Type": CONTENT_TYPE}
        )

    async def stop(self) -> None:
        """Stop intake, score and forward what is held within the drain timeout, report."""
        self.accepting = False
        began = time.monotonic()
        deadline = began + self.config.drain_timeout
        logger.info(
            "stopping: intake closed, draining for up to %g s",
            self.config.drain_timeout,
            extra={"event": "stopping"},
        )
        if self.grpc is not None:
            # calls under way finish (refused now that intake is closed)
            await self.grpc.stop(max(0.0, min(1.0, deadline - time.monotonic())))
        while self._in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if self.scorer is not None:
            # after the assembly of the last requests, queued before it in the scoring thread
            await asyncio.wrap_future(self.scorer.call(self._drain_assembly))
            scoring_deadline = began + self.config.drain_timeout / 2
            await asyncio.to_thread(self.scorer.close, scoring_deadline)
        if self.forwarder is not None:
            await self.forwarder.close(deadline)
        if self._runner is not None:
            await self._runner.cleanup()
        summary = self.metrics.summary()
        logger.info(
            "stopped: %(spans_received)s spans received, %(spans_forwarded)s forwarded, "
            "dropped %(spans_dropped)s; %(traces_scored)s traces scored, not scored "
            "%(traces_not_scored)s",
            summary,
            extra={"event": "stopped", **summary},
        )


def _grpc_intake() -> type[GrpcIntake]:
    """The gRPC intake class, imported only when gRPC is asked for (grpcio is an extra).

    Raises:
        ServeError: grpcio (or google.rpc) is not installed; the message names the extra.
    """
    try:
        from evaltrace.serve.grpc_intake import GrpcIntake
    except ModuleNotFoundError:
        missing = MissingExtraError("evaltrace serve --grpc-listen", "grpcio", "grpc")
        raise ServeError(str(missing)) from None
    return GrpcIntake


def _refused(refused: Refusal) -> web.Response:
    if refused is Refusal.UNAUTHORIZED:
        return web.Response(
            status=401, text=f"{refused.value}\n", headers={"WWW-Authenticate": "Bearer"}
        )
    return web.Response(
        status=429 if refused is Refusal.TOO_MANY else 503,
        text=f"{refused.value}; send again later\n",
        headers={"Retry-After": _RETRY_AFTER},
    )


def _authorized(header: str | None, token: str) -> bool:
    if header is None:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _serve(config: GatewayConfig) -> None:
    gateway = Gateway(config)
    await gateway.start()
    # What is loaded by now lives as long as the process: a full collection of it held the
    # GIL for ~100 ms, every request of that moment waiting (bench/bench_serve.py: the added
    # p99 latency at half load).
    gc.freeze()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await stopping.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await gateway.stop()


def run_gateway(config: GatewayConfig) -> None:
    """Run a gateway until SIGTERM or SIGINT, then drain and stop.

    Raises:
        ServeError: It cannot start (the address, the results file).
    """
    # The scoring thread holds the GIL for up to the switch interval (5 ms by default) each
    # time intake wants it; 0.5 ms keeps forwarding's latency (bench/bench_serve.py: the added
    # p99 latency at half load). This process is the gateway's own.
    sys.setswitchinterval(_SWITCH_INTERVAL)
    asyncio.run(_serve(config))
