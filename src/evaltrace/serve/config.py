"""How ``evaltrace serve`` is set up: the evaluators file, the forward target, the bounds.

The evaluators file (``--evaluators online.yaml``, JSON or YAML) names what scores the traces
in a dataset file's evaluator syntax, what of each trace is scored, which traces, and what
scoring may spend. At its smallest::

    {"evaluators": ["checks.py:grounded"], "sample": 0.05}

It is read as a dataset file is, and every problem is reported at once, each naming the file,
the line and the field (:class:`~evaltrace.datasets.DatasetError`). Its evaluators are built
by the dataset's registry and loader (``"ExactMatch"``, ``"checks.py:grounded"`` relative to
the file, ``{"name": ..., "args": {...}}``).

The forward target is ``--forward URL``, else the ``OTEL_EXPORTER_OTLP_*`` variables, read as
the OpenTelemetry SDK reads them (:mod:`evaltrace.capture.environment`): headers, timeout,
compression and TLS files apply to either.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from evaltrace.capture.environment import read_environment
from evaltrace.capture.exporters import OTLPSettings
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_THRESHOLD,
    SERVE_DRAIN_TIMEOUT,
    SERVE_EVALUATION_QUEUE,
    SERVE_FORWARD_BATCH_BYTES,
    SERVE_FORWARD_QUEUE_BYTES,
    SERVE_FORWARD_RETRY_SECONDS,
    SERVE_MAX_PENDING_BYTES,
    SERVE_MAX_PENDING_TRACES,
    SERVE_MAX_REQUEST_BYTES,
    SERVE_QUIET_PERIOD,
    SERVE_REQUEST_TIMEOUT,
    SERVE_TRACE_TIMEOUT,
)
from evaltrace.datasets import (
    DatasetError,
    EvaluatorSpec,
    ReferenceLoader,
    ResolvedEvaluator,
    read_document,
    resolve_evaluators,
    validate_document,
)
from evaltrace.errors import ServeError
from evaltrace.evals import SELECTOR_NAMES, TraceSelector, named_selector

__all__ = [
    "Budget",
    "GatewayConfig",
    "Online",
    "OnlineEvaluators",
    "SamplingRule",
    "SamplingSettings",
    "forward_target",
    "load_online",
    "parse_listen",
]


class SamplingRule(BaseModel):
    """A rate for the traces whose root span matches: by name, attributes, or both."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    root_name: str | None = Field(default=None, min_length=1)
    """A glob pattern the root span's name must match (``checkout*``)."""
    attributes: dict[str, JsonValue] = Field(default_factory=dict)
    """Attributes the root span (or its resource) must hold, with these values."""
    sample: float = Field(ge=0, le=1)
    """The rate of the traces it matches (0: none, 1: all)."""

    @model_validator(mode="after")
    def _matches_something(self) -> SamplingRule:
        if self.root_name is None and not self.attributes:
            raise ValueError("a rule matches by root_name, attributes or both; give one")
        return self


class SamplingSettings(BaseModel):
    """Which traces are scored beyond the ``sample`` rate."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    errors: bool = True
    """Score every trace that has a span with the error status."""
    rules: list[SamplingRule] = Field(default_factory=list)
    """Rates by root span, the first that matches applies."""


class Budget(BaseModel):
    """What scoring may spend; past it, scoring stops (forwarding goes on) until it may again."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    judge_calls_per_minute: int | None = Field(default=None, ge=1)
    """Most judge calls (requests the judges sent; judge cache hits are free) a minute: a
    token bucket refilled continuously, from which each scored trace's calls are taken."""
    traces_per_minute: int | None = Field(default=None, ge=1)
    """Most traces scored in a minute (a token bucket refilled continuously): for evaluators
    whose cost is their own work rather than judge calls."""
    cost_per_hour: float | None = Field(default=None, gt=0)
    """Most cost scored in an hour (a fixed hour window), as the evaluators report it in
    their details' ``cost_usd``."""


class OnlineEvaluators(BaseModel):
    """An evaluators file of ``evaltrace serve``."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, title="evaltrace serve"
    )

    name: str = Field(default="serve", min_length=1)
    """The name of the results (``evaltrace report`` shows it)."""
    evaluators: list[EvaluatorSpec] = Field(min_length=1)
    """What scores each chosen trace, as a dataset file names its evaluators."""
    from_trace: str = "root"
    """What of the trace is scored: ``root``, ``last_llm_call``, ``first_llm_call`` or
    ``name:SPAN``."""
    sample: float = Field(default=1.0, ge=0, le=1)
    """The rate of traces scored (0.05: one in twenty), beside rules and errors."""
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    """Traces scored by rules, and traces with errors."""
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0, le=1)
    """The score each evaluation must reach to pass."""
    timeout: float | None = Field(default=60.0, gt=0)
    """Seconds each evaluation may take."""
    concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1)
    """Most traces scored at once."""
    budget: Budget = Field(default_factory=Budget)
    """What scoring may spend."""

    @field_validator("from_trace")
    @classmethod
    def _known_selector(cls, text: str) -> str:
        try:
            named_selector(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a selector; use {SELECTOR_NAMES}") from None
        return text

    @field_validator("timeout")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("the timeout must be a finite number of seconds")
        return value


@dataclass(frozen=True, kw_only=True)
class Online:
    """The evaluators file, read and resolved."""

    file: Path
    """The file."""
    settings: OnlineEvaluators
    """What it says."""
    evaluators: list[ResolvedEvaluator]
    """Its evaluators, built."""
    selector: TraceSelector
    """Its ``from_trace``, as a selector."""


def load_online(path: str | os.PathLike[str]) -> Online:
    """Read, validate and resolve an evaluators file.

    Raises:
        DatasetError: Every problem with the file, each naming the file, line and field: it
            cannot be read, is not JSON or YAML, has an unknown or invalid field, or names an
            evaluator that does not resolve.
    """
    file = os.fspath(path)
    try:
        data, text = read_document(path)
        settings = validate_document(data, OnlineEvaluators, file=file, text=text)
        evaluators = resolve_evaluators(
            settings.evaluators,
            file=file,
            base_dir=Path(path).absolute().parent,
            loader=ReferenceLoader(),
        )
    except DatasetError as exc:  # the same problems, said of an evaluators file
        raise DatasetError(exc.problems, subject="evaluators file") from None
    return Online(
        file=Path(path),
        settings=settings,
        evaluators=evaluators,
        selector=named_selector(settings.from_trace),
    )


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    """Everything ``evaltrace serve`` runs with; every default from :mod:`evaltrace.constants`."""

    host: str = "127.0.0.1"
    """The address listened on."""
    port: int = 4318
    """The port listened on (0: a free one, logged at startup)."""
    grpc_listen: tuple[str, int] | None = None
    """The address and port OTLP/gRPC is taken on (the ``[grpc]`` extra); ``None``: none."""
    forward: OTLPSettings | None = None
    """Where spans are forwarded; ``None``: they are only scored."""
    online: Online | None = None
    """What scores traces; ``None``: spans are only forwarded."""
    results: Path | None = None
    """The results stream each scored trace is appended to."""
    auth_token: str | None = None
    """The bearer token intake requires, if any."""
    quiet_period: float = SERVE_QUIET_PERIOD
    """Seconds without a span after which a trace with its root is complete."""
    trace_timeout: float = SERVE_TRACE_TIMEOUT
    """Seconds after which a trace without its root is taken as it is."""
    max_pending_traces: int = SERVE_MAX_PENDING_TRACES
    """Most traces held while assembled."""
    max_pending_bytes: int = SERVE_MAX_PENDING_BYTES
    """Most bytes of spans held while assembled."""
    evaluation_queue: int = SERVE_EVALUATION_QUEUE
    """Most chosen traces waiting to be scored."""
    forward_queue_bytes: int = SERVE_FORWARD_QUEUE_BYTES
    """Most bytes waiting to be forwarded (then intake answers 503)."""
    forward_batch_bytes: int = SERVE_FORWARD_BATCH_BYTES
    """Most bytes in one forward request."""
    forward_retry_seconds: float = SERVE_FORWARD_RETRY_SECONDS
    """How long a failing forward is retried before it is dropped."""
    max_request_bytes: int = SERVE_MAX_REQUEST_BYTES
    """The largest request body taken (then 413)."""
    request_timeout: float = SERVE_REQUEST_TIMEOUT
    """Seconds a client has to send a request's headers, and again its body."""
    drain_timeout: float = SERVE_DRAIN_TIMEOUT
    """Seconds given on SIGTERM to score and forward what is held."""
    log_format: Literal["plain", "json"] = "plain"
    """Log lines as plain text or one JSON object each."""


def parse_listen(text: str, option: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:4318`` for IPv6) as a host and a port.

    Raises:
        ServeError: ``text`` is not ``HOST:PORT`` with a port from 0 to 65535 (the message
            names ``option``).

    Example:
        >>> parse_listen("127.0.0.1:4318")
        ('127.0.0.1', 4318)
    """
    host, colon, port = text.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        port = "4317" if option == "--grpc-listen" else "4318"
        raise ServeError(
            f"{option} {text!r} is not HOST:PORT, e.g. 127.0.0.1:{port} (or 0.0.0.0:{port} to "
            "listen on every interface)"
        )
    return host, int(port)


def forward_target(url: str | None, env: Mapping[str, str] | None = None) -> OTLPSettings | None:
    """Where spans are forwarded: ``url``, else the ``OTEL_EXPORTER_OTLP_*`` variables.

    ``url`` is read as the variables' endpoints are: a URL without a path is the collector's
    base (``/v1/traces`` is appended, as for ``OTEL_EXPORTER_OTLP_ENDPOINT``), one with a path
    is the traces URL, used as given (as ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). Headers,
    timeout, compression and TLS files come from the variables for either.

    Returns:
        The target, or ``None`` when neither names one.

    Raises:
        ServeError: ``url`` is not an ``http://`` or ``https://`` URL, or the variables ask
            for gRPC (``evaltrace serve`` forwards over OTLP/HTTP).
    """
    environment = dict(os.environ if env is None else env)
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServeError(
                f"--forward {url!r} is not an http:// or https:// URL with a host, e.g. "
                "http://127.0.0.1:4318 (a collector's OTLP/HTTP base URL)"
            )
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            environment.pop(name, None)
        variable = (
            "OTEL_EXPORTER_OTLP_ENDPOINT"
            if parts.path in ("", "/")
            else "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        )
        environment[variable] = url
        for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
            environment.pop(name, None)
    target = read_environment(environment).settings.otlp
    if target is not None and target.protocol != "http/protobuf":
        raise ServeError(
            "OTEL_EXPORTER_OTLP_PROTOCOL asks for gRPC, but evaltrace serve forwards over "
            "OTLP/HTTP: give --forward with the collector's OTLP/HTTP URL (port 4318), or "
            "set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
        )
    return target
