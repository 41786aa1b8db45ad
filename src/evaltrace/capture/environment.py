"""Every variable evaltrace reads from the environment, read in one place; reading never raises.

OpenTelemetry's rule for configuration from the environment is evaltrace's: a value that
cannot be used is reported and a fallback is used instead, so that a typo in a deployment
never takes the app down. :func:`read_environment` reads every ``EVALTRACE_*`` and ``OTEL_*``
variable below into the settings in effect, with, for each variable, what it holds, what
evaltrace uses and where that came from, and the :class:`Problem` found: the variable, the
value (header values masked), what is wrong with it and what is used instead. The runtime
logs each problem once, as one warning line, when it is built (at :func:`~evaltrace.init` or
the first traced call); ``evaltrace config`` prints them all. Arguments given in code are
checked strictly instead: a wrong one is a :class:`~evaltrace.errors.ConfigurationError`.

An empty value counts as not set, as OpenTelemetry specifies. Where a traces-specific
variable and a generic one configure the same thing, the first of them holding a usable value
wins, the traces-specific one first.

Capture:

``EVALTRACE_DISABLED``
    ``1``/``true``/``yes``/``on`` turns instrumentation off: ``@wrap`` returns the function
    unchanged and ``wrap(value, ...)`` the value (``0``/``false``/``no``/``off``: on).
``OTEL_SDK_DISABLED``
    ``true`` (in any case) turns OpenTelemetry off, and evaltrace with it. OpenTelemetry reads
    no other value as true, so any other value than ``true`` or ``false`` is a problem and
    means false.
``EVALTRACE_CAPTURE_CONTENT``
    ``0``/``false`` keeps input, output and ``wrap`` values off the exported spans (in-memory
    captures for evaluation still receive the values).
``EVALTRACE_MAX_VALUE_BYTES``
    Size limit of one value on a span, in bytes of JSON (default 1,000,000, at least 256);
    a larger value is replaced by a truncation marker with a preview.
``EVALTRACE_REDACT_KEYS``
    Comma-separated extra key names whose values are redacted (added to the defaults).
``EVALTRACE_SERVICE_NAME``, ``OTEL_SERVICE_NAME``
    The ``service.name`` of a tracer provider evaltrace creates (else ``service.name`` of
    ``OTEL_RESOURCE_ATTRIBUTES``, else ``evaltrace-app``).
``OTEL_RESOURCE_ATTRIBUTES``
    ``key=value`` pairs separated by commas, values URL-encoded, on the resource of that
    provider; an entry that is not ``key=value`` is skipped.
``EVALTRACE_PROJECT_NAME``
    The ``openinference.project.name`` resource attribute of that provider.
``EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS``
    How long process exit and :func:`~evaltrace.shutdown` may wait for exporters and
    handlers (default 5000).
``EVALTRACE_TRACE_FILE``
    A JSONL file every finished span is appended to; one that cannot be written (its folder
    is missing, say) means no trace file.
``EVALTRACE_EXPORT_ON_APP_PROVIDER``
    ``1``/``true``: export over OTLP even from a tracer provider the app set up itself
    (which, configured by the same variables, usually exports already).
``EVALTRACE_EXPORT_EVALUATIONS``
    ``1``/``true``: each evaluation is emitted as a ``gen_ai.evaluation.result`` event.

Export over OTLP (as the OpenTelemetry Python SDK documents the variables; each also in its
``OTEL_EXPORTER_OTLP_TRACES_*`` form):

``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
    The collector's base URL (over HTTP ``/v1/traces`` is appended), or the full traces URL,
    used as given. An ``http://`` or ``https://`` URL with a host; without one, no OTLP export.
``OTEL_EXPORTER_OTLP_PROTOCOL``
    ``http/protobuf`` (the default) or ``grpc`` (needs ``pip install 'evaltrace[grpc]'``).
``OTEL_EXPORTER_OTLP_HEADERS``
    ``key=value`` pairs separated by commas, values URL-encoded; the traces form replaces
    the generic one. A pair that is not ``key=value``, is not properly percent-encoded, or
    whose value holds a line break once decoded (header injection) is never sent.
``OTEL_EXPORTER_OTLP_TIMEOUT``
    Seconds one export may take, retries included (10 by default; the Python SDK reads
    seconds).
``OTEL_EXPORTER_OTLP_COMPRESSION``
    ``gzip``, ``deflate`` or ``none`` (the default).
``OTEL_EXPORTER_OTLP_CERTIFICATE``, ``..._CLIENT_KEY``, ``..._CLIENT_CERTIFICATE``
    Files for TLS; one that cannot be read means no OTLP export.

Each exporter's queue, read when an exporter is made (:func:`read_batching`):

``OTEL_BSP_MAX_QUEUE_SIZE`` (2048), ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` (512, at most the queue
size), ``OTEL_BSP_SCHEDULE_DELAY`` (5000 ms: how long a partial batch waits for more spans).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias, TypeVar
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.environment_variables import (
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_SCHEDULE_DELAY,
    OTEL_EXPORTER_OTLP_CERTIFICATE,
    OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE,
    OTEL_EXPORTER_OTLP_CLIENT_KEY,
    OTEL_EXPORTER_OTLP_COMPRESSION,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TIMEOUT,
    OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE,
    OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE,
    OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY,
    OTEL_EXPORTER_OTLP_TRACES_COMPRESSION,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_RESOURCE_ATTRIBUTES,
    OTEL_SDK_DISABLED,
    OTEL_SERVICE_NAME,
)

from evaltrace.capture.codec import DEFAULT_REDACT_KEYS, Codec
from evaltrace.capture.exporters import (
    EVALTRACE_TRACE_FILE,
    Compression,
    OTLPSettings,
    Protocol,
)

__all__ = [
    "BatchSettings",
    "Environment",
    "Problem",
    "Settings",
    "Source",
    "Variable",
    "read_batching",
    "read_environment",
]

T = TypeVar("T")

MIN_VALUE_BYTES: Final = 256
"""The smallest size limit of one value on a span."""

_TRACES_PATH: Final = "/v1/traces"
_GRPC_EXPORTER: Final = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})
_PROTOCOLS: Final[Mapping[str, Protocol]] = {"http/protobuf": "http/protobuf", "grpc": "grpc"}
_COMPRESSIONS: Final[Mapping[str, Compression]] = {
    "gzip": "gzip",
    "deflate": "deflate",
    "none": "none",
}
# A header entry as OpenTelemetry specifies it (a W3C baggage member), read liberally as the
# Python SDK reads it: a token key, and a value of printable ASCII without '"', ';', '\' (or
# ',', which separates entries), with spaces allowed.
_HEADER_KEY: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE: Final = re.compile(r"[\x20\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_LINE_BREAK: Final = re.compile(r"[\r\n]")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

_CERTIFICATES: Final = (
    (OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE, OTEL_EXPORTER_OTLP_CERTIFICATE),
    (OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY, OTEL_EXPORTER_OTLP_CLIENT_KEY),
    (OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE),
)

VARIABLES: Final = (
    "EVALTRACE_DISABLED",
    OTEL_SDK_DISABLED,
    "EVALTRACE_CAPTURE_CONTENT",
    "EVALTRACE_MAX_VALUE_BYTES",
    "EVALTRACE_REDACT_KEYS",
    "EVALTRACE_SERVICE_NAME",
    OTEL_SERVICE_NAME,
    OTEL_RESOURCE_ATTRIBUTES,
    "EVALTRACE_PROJECT_NAME",
    "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS",
    EVALTRACE_TRACE_FILE,
    "EVALTRACE_EXPORT_ON_APP_PROVIDER",
    "EVALTRACE_EXPORT_EVALUATIONS",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_HEADERS,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_EXPORTER_OTLP_TIMEOUT,
    OTEL_EXPORTER_OTLP_TRACES_COMPRESSION,
    OTEL_EXPORTER_OTLP_COMPRESSION,
    *(name for pair in _CERTIFICATES for name in pair),
    OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    OTEL_BSP_SCHEDULE_DELAY,
)
"""Every variable :func:`read_environment` reads, in the order it reports them."""


@dataclass(kw_only=True, frozen=True)
class Settings:
    """The configuration in effect."""

    service_name: str = "evaltrace-app"
    """``service.name`` of a tracer provider that evaltrace creates."""
    disabled: bool = False
    """Whether instrumentation is off."""
    capture_content: bool = True
    """Whether values go on spans (in-memory captures always get them)."""
    max_value_bytes: int = 1_000_000
    """Size limit of one value on a span, in bytes of JSON."""
    redact_keys: frozenset[str] = field(default_factory=lambda: DEFAULT_REDACT_KEYS)
    """Key names whose values are redacted."""
    max_generator_items: int = 1000
    """How many yielded items of a decorated generator are kept as its output."""
    shutdown_timeout_millis: int = 5000
    """How long process exit and :func:`~evaltrace.shutdown` may wait for exporters and
    handlers."""
    project_name: str | None = None
    """``openinference.project.name`` on the resource of a provider evaltrace creates."""
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    """Resource attributes of a provider evaltrace creates (``OTEL_RESOURCE_ATTRIBUTES``)."""
    otlp: OTLPSettings | None = None
    """Where spans go over OTLP (the ``OTEL_EXPORTER_OTLP_*`` variables); ``None``: nowhere."""
    trace_file: str | None = None
    """A JSONL file every finished span is appended to."""
    export_on_app_provider: bool = False
    """Whether the OTLP export of :attr:`otlp` is added to a provider the app set up too."""
    export_evaluations: bool = False
    """Whether each evaluation is emitted as a ``gen_ai.evaluation.result`` event in the trace
    of the run it scored."""

    def codec(self) -> Codec:
        """The value codec for these settings."""
        return Codec(max_bytes=self.max_value_bytes, redact_keys=self.redact_keys)


@dataclass(kw_only=True, frozen=True)
class BatchSettings:
    """How each exporter's queue batches spans (the ``OTEL_BSP_*`` variables)."""

    max_queue_size: int = 2048
    """Spans the queue holds; beyond it new spans are dropped and counted."""
    max_export_batch_size: int = 512
    """Spans per export (at most :attr:`max_queue_size`)."""
    schedule_delay_millis: int = 5000
    """How long a partial batch waits for more spans."""


@dataclass(kw_only=True, frozen=True)
class Problem:
    """A variable whose value evaltrace cannot use, and what it uses instead.

    ``str(problem)`` is the one line logged and printed, e.g.
    ``OTEL_EXPORTER_OTLP_TIMEOUT='abc' is not a number of seconds above 0, e.g. 10; using 10 s
    (the default)``.
    """

    variable: str
    """The variable."""
    value: str
    """The value it holds, as given (header values masked: they are often secrets)."""
    reason: str
    """What is wrong with the value, and what the variable expects."""
    used: str
    """What evaltrace uses instead."""

    def __str__(self) -> str:
        return f"{self.variable}={self.value!r} {self.reason}; using {self.used}"


Source: TypeAlias = Literal["environment", "default", "fallback", "unused"]
"""Where what evaltrace uses for a variable comes from: ``environment`` (its value),
``default`` (it is not set), ``fallback`` (its value cannot be used: see the problems), or
``unused`` (another variable configures the same thing, and wins)."""


@dataclass(kw_only=True, frozen=True)
class Variable:
    """One variable evaltrace reads: what it holds and what evaltrace uses."""

    name: str
    """The variable."""
    value: str | None
    """What it holds (header values masked); ``None`` when it is not set."""
    effective: str
    """What evaltrace uses for what the variable configures (header values masked)."""
    source: Source
    """Where :attr:`effective` comes from."""


@dataclass(kw_only=True, frozen=True)
class Environment:
    """What the environment configures: the settings, each variable, and the problems."""

    settings: Settings
    """The settings in effect."""
    batching: BatchSettings
    """How each exporter's queue batches spans."""
    variables: tuple[Variable, ...]
    """Every variable read, in the order of :data:`VARIABLES`."""
    problems: tuple[Problem, ...]
    """The variables whose values cannot be used, in the same order."""


class _Reader:
    """Reads variables from one environment, noting each one and the problems found."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.variables: dict[str, Variable] = {}
        self.problems: list[Problem] = []

    def given(self, name: str) -> str | None:
        """The value of ``name``, stripped; ``None`` when unset or blank."""
        value = self._env.get(name, "").strip()
        return value or None

    def note(self, name: str, value: str | None, effective: str, source: Source) -> None:
        self.variables[name] = Variable(name=name, value=value, effective=effective, source=source)

    def problem(self, name: str, value: str, reason: str, used: str, effective: str) -> None:
        self.problems.append(Problem(variable=name, value=value, reason=reason, used=used))
        self.note(name, value, effective, "fallback")

    def pick(
        self,
        names: Sequence[str],
        parse: Callable[[str, str], T],
        default: T,
        *,
        show: Callable[[T], str] = str,
        unit: str = "",
        default_used: str | None = None,
    ) -> tuple[str | None, T]:
        """The value of the first of ``names`` that holds a usable one, else ``default``.

        ``parse(name, value)`` raises ``ValueError`` saying what is wrong with a value; each
        such value is a problem, whose fallback is what is used in the end.

        Returns:
            The variable that gave the value (``None`` for the default), and the value.
        """
        chosen: tuple[str, T] | None = None
        invalid: list[tuple[str, str, str]] = []
        for name in names:
            raw = self.given(name)
            if raw is None:
                continue
            if chosen is not None:
                self.note(name, raw, f"{chosen[0]} is used", "unused")
                continue
            try:
                value = parse(name, raw)
            except ValueError as exc:
                invalid.append((name, raw, str(exc)))
                continue
            chosen = (name, value)
            self.note(name, raw, show(value), "environment")
        if chosen is None:
            effective = show(default)
            used = default_used or f"{effective}{unit} (the default)"
        else:
            effective = show(chosen[1])
            used = f"{effective}{unit} ({chosen[0]})"
        for name, raw, reason in invalid:
            self.problem(name, raw, reason, used, effective)
        for name in names:
            if name not in self.variables:
                if chosen is None:
                    self.note(name, None, effective, "default")
                else:
                    self.note(name, None, f"{chosen[0]} is used", "unused")
        return (None, default) if chosen is None else chosen

    def flag(self, name: str, default: bool) -> bool:
        """A yes/no variable (``1``/``0``, ``true``/``false``, ``yes``/``no``, ``on``/``off``)."""
        return self.pick([name], _flag, default, show=_yes_no)[1]

    def whole_number(
        self, name: str, default: int, *, minimum: int, noun: str, unit: str = ""
    ) -> int:
        """A whole number of ``noun`` (``unit`` after a value), at least ``minimum``."""

        def parse(name: str, raw: str) -> int:
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"is not a whole number of {noun}") from None
            if value < minimum:
                raise ValueError(f"is less than {minimum}{unit}, the least it takes")
            return value

        return self.pick([name], parse, default, unit=unit)[1]

    def text(self, name: str) -> str | None:
        """A free-form text variable."""
        value = self.given(name)
        self.note(name, value, value or "none", "default" if value is None else "environment")
        return value

    def result(self) -> tuple[tuple[Variable, ...], tuple[Problem, ...]]:
        """The variables and problems, in the order of :data:`VARIABLES`."""
        order = {name: index for index, name in enumerate(VARIABLES)}
        variables = sorted(self.variables.values(), key=lambda v: order.get(v.name, len(order)))
        problems = sorted(self.problems, key=lambda p: order.get(p.variable, len(order)))
        return tuple(variables), tuple(problems)


def _flag(name: str, raw: str) -> bool:
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError("is not a boolean: use 1/0, true/false, yes/no or on/off")


def _yes_no(value: bool) -> str:
    return "true" if value else "false"


def _or_none(value: str | None) -> str:
    return "none" if value is None else value


def read_environment(env: Mapping[str, str] | None = None) -> Environment:
    """Read every variable evaltrace uses: a value that cannot be used is a problem, never raised.

    Args:
        env: The environment (``os.environ`` by default).

    Returns:
        The settings in effect, the batching of exporter queues, every variable read and the
        problems found.

    Example:
        >>> environment = read_environment({"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"})
        >>> environment.settings == Settings()
        True
        >>> print(environment.problems[0])
        OTEL_EXPORTER_OTLP_TIMEOUT='abc' is not a number of seconds above 0, e.g. 10; using 10 s \
(the default)
    """
    reader = _Reader(os.environ if env is None else env)
    evaltrace_disabled = reader.flag("EVALTRACE_DISABLED", False)
    sdk_disabled = reader.pick(
        [OTEL_SDK_DISABLED],
        _sdk_disabled,
        False,
        show=_yes_no,
        default_used="false (OpenTelemetry reads only 'true' as true)",
    )[1]
    capture_content = reader.flag("EVALTRACE_CAPTURE_CONTENT", True)
    max_value_bytes = reader.whole_number(
        "EVALTRACE_MAX_VALUE_BYTES",
        Settings.max_value_bytes,
        minimum=MIN_VALUE_BYTES,
        noun="bytes",
        unit=" bytes",
    )
    extra_keys = reader.text("EVALTRACE_REDACT_KEYS") or ""
    resource = _resource_attributes(reader)
    service_name = reader.pick(
        ["EVALTRACE_SERVICE_NAME", OTEL_SERVICE_NAME],
        lambda name, raw: raw,
        resource.get("service.name") or Settings.service_name,
    )[1]
    project_name = reader.text("EVALTRACE_PROJECT_NAME")
    shutdown_timeout = reader.whole_number(
        "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS",
        Settings.shutdown_timeout_millis,
        minimum=0,
        noun="milliseconds",
        unit=" ms",
    )
    trace_file = _trace_file(reader)
    export_on_app_provider = reader.flag("EVALTRACE_EXPORT_ON_APP_PROVIDER", False)
    export_evaluations = reader.flag("EVALTRACE_EXPORT_EVALUATIONS", False)
    otlp = _otlp(reader)
    batching = _batching(reader)
    variables, problems = reader.result()
    settings = Settings(
        service_name=service_name,
        disabled=evaltrace_disabled or sdk_disabled,
        capture_content=capture_content,
        max_value_bytes=max_value_bytes,
        redact_keys=DEFAULT_REDACT_KEYS
        | {key.strip().lower() for key in extra_keys.split(",") if key.strip()},
        shutdown_timeout_millis=shutdown_timeout,
        project_name=project_name,
        resource_attributes=resource,
        otlp=otlp,
        trace_file=trace_file,
        export_on_app_provider=export_on_app_provider,
        export_evaluations=export_evaluations,
    )
    return Environment(settings=settings, batching=batching, variables=variables, problems=problems)


def read_batching(
    env: Mapping[str, str] | None = None,
) -> tuple[BatchSettings, tuple[Problem, ...]]:
    """Read the ``OTEL_BSP_*`` variables: each exporter's queue, when it is made.

    Returns:
        The batching in effect, and the problems found.
    """
    reader = _Reader(os.environ if env is None else env)
    return _batching(reader), reader.result()[1]


# Capture -------------------------------------------------------------------------------------


def _sdk_disabled(name: str, raw: str) -> bool:
    value = raw.lower()
    if value not in ("true", "false"):
        raise ValueError("is neither true nor false")
    return value == "true"


def _resource_attributes(reader: _Reader) -> dict[str, str]:
    raw = reader.given(OTEL_RESOURCE_ATTRIBUTES)
    attributes: dict[str, str] = {}
    skipped: list[str] = []
    for item in (raw or "").split(","):
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            skipped.append(item.strip())
            continue
        attributes[key.strip()] = unquote(value.strip())
    effective = ",".join(f"{key}={value}" for key, value in attributes.items()) or "none"
    if raw is None:
        reader.note(OTEL_RESOURCE_ATTRIBUTES, None, effective, "default")
    elif not skipped:
        reader.note(OTEL_RESOURCE_ATTRIBUTES, raw, effective, "environment")
    kept = ", ".join(attributes) or "none"
    for item in skipped:
        reader.problem(
            OTEL_RESOURCE_ATTRIBUTES,
            raw or "",
            f"has the entry {item!r}, which is not key=value (comma-separated pairs, values "
            f"URL-encoded, e.g. deployment.environment=prod,team=search)",
            f"the other attributes ({kept})",
            effective,
        )
    return attributes


def _trace_file(reader: _Reader) -> str | None:
    def parse(name: str, path: str) -> str | None:
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise ValueError("is a folder, not a file spans can be appended to")
        if not os.path.isdir(folder):
            raise ValueError(f"is in a folder that does not exist ({folder})")
        if not os.access(path if os.path.exists(path) else folder, os.W_OK):
            raise ValueError("cannot be written")
        return path

    return reader.pick(
        [EVALTRACE_TRACE_FILE],
        parse,
        None,
        show=_or_none,
        default_used="no trace file",
    )[1]


# Export over OTLP ----------------------------------------------------------------------------


def _otlp(reader: _Reader) -> OTLPSettings | None:
    """The OTLP export the variables ask for; ``None`` when none, or when it cannot work."""
    default: Protocol = "http/protobuf"
    protocol_variable, protocol = reader.pick(
        [OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL], _protocol, default
    )

    def endpoint(name: str, url: str) -> str | None:
        _check_url(url)
        if name == OTEL_EXPORTER_OTLP_ENDPOINT and protocol == "http/protobuf":
            return url.rstrip("/") + _TRACES_PATH
        return url

    _, url = reader.pick(
        [OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT],
        endpoint,
        None,
        show=_or_none,
        default_used="no OTLP export",
    )
    headers, refused = _headers(reader, protocol)
    timeout = _timeout(reader, protocol)
    no_compression: Compression = "none"
    compression = reader.pick(
        [OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION],
        _compression,
        no_compression,
    )[1]
    certificates = [_certificate(reader, names) for names in _CERTIFICATES]
    usable = timeout is not None and headers is not None and all(ok for ok, _ in certificates)
    if protocol_variable is not None and protocol == "grpc" and url is not None:
        usable = _grpc_exporter_installed(reader, protocol_variable) and usable
    if url is None or not usable:
        return None
    assert timeout is not None and headers is not None
    ca, client_key, client_certificate = (path for _, path in certificates)
    return OTLPSettings(
        endpoint=url,
        protocol=protocol,
        headers=headers,
        refused_headers=refused,
        timeout_seconds=timeout,
        compression=compression,
        certificate_file=ca,
        client_key_file=client_key,
        client_certificate_file=client_certificate,
    )


def _grpc_exporter_installed(reader: _Reader, variable: str) -> bool:
    """Whether the gRPC exporter ``variable`` asks for is installed (a problem when not)."""
    # importlib.util (with importlib._abc) is imported only here: `import evaltrace` stays
    # within its bench/bench_capture.py import-time figure.
    import importlib.util

    if importlib.util.find_spec(_GRPC_EXPORTER) is not None:
        return True
    reader.problem(
        variable,
        "grpc",
        "needs the gRPC exporter, which is not installed: pip install 'evaltrace[grpc]' "
        "(or use http/protobuf)",
        "no OTLP export",
        "grpc",
    )
    return False


def _protocol(name: str, raw: str) -> Protocol:
    protocol = _PROTOCOLS.get(raw.lower())
    if protocol is None:
        hint = (
            " (the OpenTelemetry Python SDK has no http/json trace exporter)"
            if raw.lower() == "http/json"
            else ""
        )
        raise ValueError(
            f"is not a protocol evaltrace exports with{hint}: use http/protobuf or grpc"
        )
    return protocol


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"is not a URL ({exc}), e.g. http://localhost:4318") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "is not an http:// or https:// URL with a host, e.g. http://localhost:4318"
        )


def _compression(name: str, raw: str) -> Compression:
    compression = _COMPRESSIONS.get(raw.lower())
    if compression is None:
        raise ValueError("is not a compression OTLP exporters know: use gzip, deflate or none")
    return compression


def _timeout(reader: _Reader, protocol: Protocol) -> float | None:
    """Seconds one export may take; ``None`` when no exporter can be made with the variables."""
    specific = reader.given(OTEL_EXPORTER_OTLP_TRACES_TIMEOUT)
    if protocol == "grpc" and specific is not None and not _is_float(specific):
        # The SDK's gRPC exporter converts this variable itself when it is made, whatever it is
        # given, and raises on a value that is not a number.
        reader.pick([OTEL_EXPORTER_OTLP_TIMEOUT], _seconds, 10.0, show=_number, unit=" s")
        reader.problem(
            OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
            specific,
            "is not a number of seconds",
            "no OTLP export (the gRPC exporter reads this variable itself and fails on it)",
            "no OTLP export",
        )
        return None
    return reader.pick(
        [OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT],
        _seconds,
        10.0,
        show=_number,
        unit=" s",
    )[1]


def _is_float(raw: str) -> bool:
    try:
        float(raw)
    except ValueError:
        return False
    return True


def _seconds(name: str, raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ValueError("is not a number of seconds above 0, e.g. 10")
    return seconds


def _number(value: float) -> str:
    return f"{value:g}"


def _certificate(reader: _Reader, names: tuple[str, str]) -> tuple[bool, str | None]:
    """The file two TLS variables name (the traces one first), and whether all can be read."""
    readable = True
    chosen: tuple[str, str] | None = None
    for name in names:
        path = reader.given(name)
        if path is None:
            continue
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            reason = (
                "names no file"
                if not os.path.exists(path)
                else "is not a file"
                if not os.path.isfile(path)
                else "names a file that cannot be read"
            )
            reader.problem(name, path, reason, "no OTLP export", "no OTLP export")
            readable = False
        elif chosen is None:
            chosen = (name, path)
            reader.note(name, path, path, "environment")
        else:
            reader.note(name, path, f"{chosen[0]} is used", "unused")
    for name in names:
        if name not in reader.variables:
            if chosen is None:
                reader.note(name, None, "none", "default")
            else:
                reader.note(name, None, f"{chosen[0]} is used", "unused")
    return readable, None if chosen is None else chosen[1]


# Headers -------------------------------------------------------------------------------------


def _headers(reader: _Reader, protocol: Protocol) -> tuple[dict[str, str] | None, frozenset[str]]:
    """The headers of every export, and the names of those refused.

    The traces variable, when set, replaces the generic one. Returns ``None`` for the headers
    when no exporter can be made without sending a refused one.
    """
    specific = reader.given(OTEL_EXPORTER_OTLP_TRACES_HEADERS)
    generic = reader.given(OTEL_EXPORTER_OTLP_HEADERS)
    raw: str | None
    if specific is not None:
        name, raw = OTEL_EXPORTER_OTLP_TRACES_HEADERS, specific
        unused = None if generic is None else _masked(generic)
        reader.note(OTEL_EXPORTER_OTLP_HEADERS, unused, f"{name} is used", "unused")
    else:
        name, raw = OTEL_EXPORTER_OTLP_HEADERS, generic
        source: Source = "default" if generic is None else "unused"
        effective = "none" if generic is None else f"{name} is used"
        reader.note(OTEL_EXPORTER_OTLP_TRACES_HEADERS, None, effective, source)
    if raw is None:
        reader.note(name, None, "none", "default")
        return {}, frozenset()
    headers: dict[str, str] = {}
    bad: list[tuple[str, str]] = []
    refused: set[str] = set()
    for entry in raw.split(","):
        if not entry.strip():
            continue
        key, equals, value = entry.partition("=")
        key, value = key.strip(), value.strip()
        reason = _header_problem(key, equals, value)
        if reason is None:
            headers[key.lower()] = unquote(value)
        else:
            bad.append((entry.strip(), reason))
            if equals and _HEADER_KEY.fullmatch(key):
                refused.add(key.lower())
    refused -= set(headers)
    shown = _masked(raw)
    effective = ",".join(f"{key}=***" for key in headers) or "none"
    if not bad:
        reader.note(name, shown, effective, "environment")
        return headers, frozenset()
    # Over gRPC, the SDK's exporter reads the variable itself when it is given no header, and
    # would send what was refused.
    blocked = protocol == "grpc" and not headers and bool(refused)
    used = (
        "no OTLP export (given no header, the gRPC exporter would read the variable itself)"
        if blocked
        else f"the other headers ({', '.join(headers)})"
        if headers
        else "no headers"
    )
    for entry, reason in bad:
        reader.problem(name, shown, reason.format(entry=_masked(entry)), used, effective)
    return (None if blocked else headers), frozenset(refused)


def _header_problem(key: str, equals: str, value: str) -> str | None:
    """What is wrong with one header entry (``{entry}`` stands for it), or ``None``."""
    if not equals or not _HEADER_KEY.fullmatch(key):
        return (
            "has the entry '{entry}', which is not key=value (comma-separated pairs, values "
            "URL-encoded, e.g. authorization=Bearer%20secret,x-team=search)"
        )
    if not _HEADER_VALUE.fullmatch(value):
        return (
            f"has a value for {key} with characters a header value cannot hold unencoded "
            '(", ;, \\ or non-ASCII): URL-encode them'
        )
    if _PERCENT.search(value):
        return f"has a value for {key} with a % that is not followed by two hex digits"
    try:
        decoded = unquote(value, errors="strict")
    except UnicodeDecodeError:
        return f"has a value for {key} whose percent-encoded bytes are not UTF-8"
    if _LINE_BREAK.search(decoded):
        return (
            f"has a value for {key} that holds a line break once decoded (%0d or %0a), which "
            "would inject headers into the request"
        )
    if _CONTROL.search(decoded):
        return f"has a value for {key} that holds a control character once decoded"
    return None


def _masked(raw: str) -> str:
    """A header variable's value with every value masked (headers often hold secrets)."""
    shown = []
    for entry in raw.split(","):
        key, equals, _ = entry.strip().partition("=")
        if equals:
            shown.append(f"{key.strip()}=***")
        elif entry.strip():
            text = entry.strip()
            shown.append(text[:3] + "***" if len(text) > 3 else "***")
    return ",".join(shown)


# Batching ------------------------------------------------------------------------------------


def _batching(reader: _Reader) -> BatchSettings:
    default = BatchSettings()
    queue = reader.whole_number(
        OTEL_BSP_MAX_QUEUE_SIZE, default.max_queue_size, minimum=1, noun="spans"
    )
    batch = reader.whole_number(
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE, default.max_export_batch_size, minimum=1, noun="spans"
    )
    if batch > queue:  # a batch is taken from the queue: it is never larger
        given = reader.variables[OTEL_BSP_MAX_EXPORT_BATCH_SIZE]
        if given.source == "environment" and given.value is not None:
            reader.problem(
                OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
                given.value,
                f"is more than the queue holds ({OTEL_BSP_MAX_QUEUE_SIZE}={queue})",
                f"{queue} ({OTEL_BSP_MAX_QUEUE_SIZE})",
                str(queue),
            )
        batch = queue
    delay = reader.whole_number(
        OTEL_BSP_SCHEDULE_DELAY,
        default.schedule_delay_millis,
        minimum=0,
        noun="milliseconds",
        unit=" ms",
    )
    return BatchSettings(
        max_queue_size=queue, max_export_batch_size=batch, schedule_delay_millis=delay
    )
