"""``evaltrace serve``: an OTLP gateway that forwards every span and scores a sample of traces."""

from __future__ import annotations

from pathlib import Path

import click

from evaltrace.cli._terminal import CommandError
from evaltrace.constants import (
    SERVE_DRAIN_TIMEOUT,
    SERVE_EVALUATION_QUEUE,
    SERVE_FORWARD_QUEUE_BYTES,
    SERVE_FORWARD_RETRY_SECONDS,
    SERVE_LISTEN,
    SERVE_MAX_PENDING_BYTES,
    SERVE_MAX_PENDING_TRACES,
    SERVE_MAX_REQUEST_BYTES,
    SERVE_QUIET_PERIOD,
    SERVE_REQUEST_TIMEOUT,
    SERVE_TRACE_TIMEOUT,
)
from evaltrace.errors import MissingExtraError

__all__ = ["serve"]

_SECONDS = click.FloatRange(min=0, min_open=True)


@click.command("serve", short_help="Forward OTLP spans to a collector and score a sample.")
@click.option(
    "--listen",
    default=SERVE_LISTEN,
    show_default=True,
    metavar="HOST:PORT",
    help="Where to take OTLP/HTTP (POST /v1/traces). Only loopback unless told: "
    "0.0.0.0:4318 listens on every interface.",
)
@click.option(
    "--grpc-listen",
    metavar="HOST:PORT",
    help="Also take OTLP/gRPC (TraceService/Export) there, e.g. 127.0.0.1:4317 (the [grpc] "
    "extra); off by default. Only loopback unless told, as --listen.",
)
@click.option(
    "--forward",
    metavar="URL",
    help="The collector every span is forwarded to (its OTLP/HTTP base URL, or its traces "
    "URL); default OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT. Without either, spans are only "
    "scored.",
)
@click.option(
    "--evaluators",
    "evaluators_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The evaluators file (JSON or YAML): evaluators, from_trace, sample, sampling, "
    "budget. Without it nothing is scored.",
)
@click.option(
    "--results",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Append one line per scored trace to FILE (evaltrace report FILE reads it).",
)
@click.option(
    "--auth-token-file",
    type=click.Path(dir_okay=False, exists=True),
    metavar="FILE",
    help="Require 'Authorization: Bearer <token>' on intake, the token read from FILE.",
)
@click.option(
    "--log-format",
    type=click.Choice(["plain", "json"]),
    default="plain",
    show_default=True,
    help="Log lines on standard error as plain text or one JSON object each.",
)
@click.option(
    "--quiet-period",
    type=_SECONDS,
    default=SERVE_QUIET_PERIOD,
    show_default=True,
    help="Seconds without a new span after which a trace whose root span ended is complete.",
)
@click.option(
    "--trace-timeout",
    type=_SECONDS,
    default=SERVE_TRACE_TIMEOUT,
    show_default=True,
    help="Seconds after which a trace whose root span never arrives is taken as it is.",
)
@click.option(
    "--max-pending-traces",
    type=click.IntRange(min=1),
    default=SERVE_MAX_PENDING_TRACES,
    show_default=True,
    help="Most traces held while assembled (then the oldest is evicted, counted).",
)
@click.option(
    "--max-pending-bytes",
    type=click.IntRange(min=1),
    default=SERVE_MAX_PENDING_BYTES,
    show_default=True,
    help="Most bytes of spans held while assembled.",
)
@click.option(
    "--evaluation-queue",
    type=click.IntRange(min=1),
    default=SERVE_EVALUATION_QUEUE,
    show_default=True,
    help="Most chosen traces waiting to be scored (then one is dropped, counted).",
)
@click.option(
    "--forward-queue-bytes",
    type=click.IntRange(min=1),
    default=SERVE_FORWARD_QUEUE_BYTES,
    show_default=True,
    help="Most bytes waiting to be forwarded (then intake answers 503 with Retry-After).",
)
@click.option(
    "--forward-retry",
    type=_SECONDS,
    default=SERVE_FORWARD_RETRY_SECONDS,
    show_default=True,
    help="Seconds a failing forward is retried, with backoff, before it is dropped.",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=1),
    default=SERVE_MAX_REQUEST_BYTES,
    show_default=True,
    help="The largest request body taken, decompressed (then 413).",
)
@click.option(
    "--request-timeout",
    type=_SECONDS,
    default=SERVE_REQUEST_TIMEOUT,
    show_default=True,
    help="Seconds a client has to send a request's headers, and again its body.",
)
@click.option(
    "--drain-timeout",
    type=_SECONDS,
    default=SERVE_DRAIN_TIMEOUT,
    show_default=True,
    help="Seconds given on SIGTERM to score and forward what is held; the rest is counted "
    "as dropped.",
)
def serve(
    listen: str,
    grpc_listen: str | None,
    forward: str | None,
    evaluators_file: str | None,
    results: str | None,
    auth_token_file: str | None,
    log_format: str,
    quiet_period: float,
    trace_timeout: float,
    max_pending_traces: int,
    max_pending_bytes: int,
    evaluation_queue: int,
    forward_queue_bytes: int,
    forward_retry: float,
    max_request_bytes: int,
    request_timeout: float,
    drain_timeout: float,
) -> int:
    """Take OTLP spans, forward every one, and score a sample of the traces.

    Apps in any language export to it as to any OTLP collector, over OTLP/HTTP (and
    OTLP/gRPC with --grpc-listen). Every request's spans are forwarded unchanged to
    --forward; the spans are assembled into traces, the evaluators file chooses some and
    scores them, and the scores go to the collector as
    gen_ai.evaluation.result spans in the traces they score (and to --results). Runs until
    SIGTERM or Ctrl-C, then drains. Exit code 0 once stopped, 2 when it cannot start.
    """
    try:
        import aiohttp  # noqa: F401  (checked here: the message names the extra)
    except ImportError:
        raise CommandError(str(MissingExtraError("evaltrace serve", "aiohttp", "serve"))) from None
    from evaltrace.capture.config import init, settings
    from evaltrace.datasets import DatasetError
    from evaltrace.errors import ServeError
    from evaltrace.serve import (
        GatewayConfig,
        forward_target,
        load_online,
        parse_listen,
        run_gateway,
        setup_logging,
    )

    if results is not None and evaluators_file is None:
        raise CommandError("--results writes the scores of --evaluators; give --evaluators too")
    setup_logging("json" if log_format == "json" else "plain")
    try:
        host, port = parse_listen(listen)
        grpc_at = parse_listen(grpc_listen, "--grpc-listen") if grpc_listen is not None else None
        target = forward_target(forward)
        online = load_online(evaluators_file) if evaluators_file is not None else None
        token = _token(auth_token_file) if auth_token_file is not None else None
    except (ServeError, DatasetError) as exc:
        raise CommandError(str(exc)) from None
    if settings().export_evaluations:
        # The gateway sends the evaluation spans itself, under each trace's resource.
        init(export_evaluations=False)
    config = GatewayConfig(
        host=host,
        port=port,
        grpc_listen=grpc_at,
        forward=target,
        online=online,
        results=Path(results) if results is not None else None,
        auth_token=token,
        quiet_period=quiet_period,
        trace_timeout=trace_timeout,
        max_pending_traces=max_pending_traces,
        max_pending_bytes=max_pending_bytes,
        evaluation_queue=evaluation_queue,
        forward_queue_bytes=forward_queue_bytes,
        forward_retry_seconds=forward_retry,
        max_request_bytes=max_request_bytes,
        request_timeout=request_timeout,
        drain_timeout=drain_timeout,
        log_format="json" if log_format == "json" else "plain",
    )
    try:
        run_gateway(config)
    except ServeError as exc:
        raise CommandError(str(exc)) from None
    return 0


def _token(path: str) -> str:
    from evaltrace.errors import ServeError

    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeError(f"--auth-token-file {path}: cannot be read ({exc})") from None
    if not token:
        raise ServeError(f"--auth-token-file {path} is empty; put the bearer token in it")
    return token
