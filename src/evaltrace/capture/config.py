"""Configuration in one place: :func:`init`, :func:`flush`, :func:`shutdown`.

Environment variables are read once, when this module is imported:

``EVALTRACE_DISABLED``
    ``1``/``true`` turns instrumentation off: ``@wrap`` returns the function unchanged and
    ``wrap(value, ...)`` returns the value unchanged.
``EVALTRACE_CAPTURE_CONTENT``
    ``0``/``false`` keeps input, output and ``wrap`` values off the exported spans (in-memory
    captures for evaluation still receive the values).
``EVALTRACE_MAX_VALUE_BYTES``
    Size limit of one value on a span, in bytes of JSON (default 1,000,000); larger values
    are replaced by a truncation marker with a preview.
``EVALTRACE_REDACT_KEYS``
    Comma-separated extra key names whose values are redacted (added to the defaults).
``EVALTRACE_SERVICE_NAME`` (or ``OTEL_SERVICE_NAME``)
    The ``service.name`` of the tracer provider evaltrace creates when the app has none
    (else ``service.name`` of ``OTEL_RESOURCE_ATTRIBUTES``, else ``evaltrace-app``).
``EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS``
    How long process exit (and :func:`shutdown`) may wait for exporters and handlers to
    take the spans still queued (default 5000); whatever is left then is dropped, counted
    and logged.
``EVALTRACE_PROJECT_NAME``
    The ``openinference.project.name`` resource attribute of a provider evaltrace creates
    (Arize Phoenix files the spans under that project).
``EVALTRACE_TRACE_FILE``
    A JSONL file every finished span is appended to (any provider).
``EVALTRACE_EXPORT_ON_APP_PROVIDER``
    ``1``/``true``: export over OTLP per the ``OTEL_*`` variables even when the app set
    up its own tracer provider (which, being configured by the same variables, usually
    exports already).
``EVALTRACE_EXPORT_EVALUATIONS``
    ``1``/``true``: each evaluation the runner makes is emitted as a
    ``gen_ai.evaluation.result`` event on a short span in the trace of the run it scored
    (see :mod:`evaltrace.evals.telemetry`).
``OTEL_SDK_DISABLED``
    ``true`` turns OpenTelemetry off, and evaltrace with it (as ``EVALTRACE_DISABLED``).
``OTEL_EXPORTER_OTLP_*``, ``OTEL_RESOURCE_ATTRIBUTES``
    Export over OTLP from a provider evaltrace creates: see
    :mod:`evaltrace.capture.exporters`.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from evaltrace._safe_text import exception_text, safe_repr, type_name
from evaltrace.capture.codec import DEFAULT_REDACT_KEYS, Codec
from evaltrace.capture.context import arm
from evaltrace.capture.exporters import (
    EVALTRACE_TRACE_FILE,
    PROJECT_NAME_ATTRIBUTE,
    JsonLinesExporter,
    OTLPSettings,
    otlp_exporter,
    otlp_settings_from_env,
    resource_attributes_from_env,
)
from evaltrace.capture.instrumentors import (
    check_instrument,
    enable_instrumentors,
    find_instrumentors,
)
from evaltrace.errors import ConfigurationError

if TYPE_CHECKING:
    from evaltrace.capture.processor import ScopeSpanProcessor

__all__ = ["Runtime", "Settings", "flush", "init", "runtime", "settings_from_env", "shutdown"]

logger = logging.getLogger("evaltrace")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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
    """How long process exit and :func:`shutdown` may wait for exporters and handlers."""
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


def _env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean; use 1/0, true/false or yes/no")


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Read the ``EVALTRACE_*`` environment variables into :class:`Settings`."""
    env = os.environ if env is None else env
    max_bytes_raw = env.get("EVALTRACE_MAX_VALUE_BYTES")
    max_bytes = Settings.max_value_bytes
    if max_bytes_raw is not None:
        try:
            max_bytes = int(max_bytes_raw)
        except ValueError:
            raise ConfigurationError(
                f"EVALTRACE_MAX_VALUE_BYTES={max_bytes_raw!r} is not a whole number of bytes"
            ) from None
        _check_max_bytes(max_bytes, "EVALTRACE_MAX_VALUE_BYTES")
    timeout_raw = env.get("EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS")
    timeout = Settings.shutdown_timeout_millis
    if timeout_raw is not None:
        try:
            timeout = int(timeout_raw)
        except ValueError:
            timeout = -1
        if timeout < 0:
            raise ConfigurationError(
                f"EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS={timeout_raw!r} is not a whole number of "
                "milliseconds (0 or more)"
            )
    extra_keys = {k.strip().lower() for k in env.get("EVALTRACE_REDACT_KEYS", "").split(",")}
    resource = resource_attributes_from_env(env)
    return Settings(
        service_name=env.get("EVALTRACE_SERVICE_NAME")
        or env.get("OTEL_SERVICE_NAME")
        or resource.get("service.name")
        or Settings.service_name,
        disabled=_env_bool(env, "EVALTRACE_DISABLED", False) or _sdk_disabled(env),
        capture_content=_env_bool(env, "EVALTRACE_CAPTURE_CONTENT", True),
        max_value_bytes=max_bytes,
        redact_keys=DEFAULT_REDACT_KEYS | {k for k in extra_keys if k},
        shutdown_timeout_millis=timeout,
        project_name=env.get("EVALTRACE_PROJECT_NAME", "").strip() or None,
        resource_attributes=resource,
        otlp=otlp_settings_from_env(env),
        trace_file=env.get(EVALTRACE_TRACE_FILE, "").strip() or None,
        export_on_app_provider=_env_bool(env, "EVALTRACE_EXPORT_ON_APP_PROVIDER", False),
        export_evaluations=_env_bool(env, "EVALTRACE_EXPORT_EVALUATIONS", False),
    )


def _sdk_disabled(env: Mapping[str, str]) -> bool:
    """``OTEL_SDK_DISABLED``, read as the SDK reads it: only ``true`` turns it off."""
    raw = env.get("OTEL_SDK_DISABLED")
    value = "" if raw is None else raw.strip().lower()
    if value not in ("true", "false", ""):
        raise ConfigurationError(
            f"OTEL_SDK_DISABLED={raw!r} is neither 'true' nor 'false' (OpenTelemetry reads "
            "only 'true' as true, so this value would leave the SDK on)"
        )
    return value == "true"


def _check_max_bytes(value: int, source: str) -> None:
    if value < 256:
        raise ConfigurationError(f"{source}={value} is too small; it must be at least 256 bytes")


_ENV_ERROR: ConfigurationError | None = None
try:
    _ENV_SETTINGS = settings_from_env()
except ConfigurationError as exc:  # reported by init(), where the app can see it
    _ENV_ERROR = exc
    _ENV_SETTINGS = Settings()


class Runtime:
    """What :func:`init` set up: the settings, the tracer, our span processor, exporters."""

    def __init__(
        self,
        settings: Settings,
        provider: SDKTracerProvider,
        processor: ScopeSpanProcessor,
        owns_provider: bool,
    ) -> None:
        self.settings = settings
        self.codec = settings.codec()
        self.provider = provider
        self.tracer = provider.get_tracer("evaltrace")
        self.processor = processor
        self.owns_provider = owns_provider
        self.otlp_added = False
        """Whether the OTLP exporter of the ``OTEL_*`` variables was added."""
        self.instrumented: list[Any] = []
        """Instrumentors that ``init(instrument=...)`` enabled, uninstrumented on shutdown."""
        self.spans_leave_process = not owns_provider
        """Whether spans may be seen outside captures (the app's provider, exporters,
        handlers); when not, ``wrap`` skips span events outside captures."""
        if self.spans_leave_process:
            arm()

    def spans_now_leave_process(self) -> None:
        """Record that exporters or handlers now see spans outside captures."""
        self.spans_leave_process = True
        arm()


_LOCK = threading.RLock()
RUNTIME: Runtime | None = None
"""The runtime in effect, or ``None`` before :func:`init` (or after :func:`shutdown`).

Read it where every nanosecond counts (``wrap`` does, on every call); change it only
through :func:`init` and :func:`shutdown`."""


def runtime() -> Runtime:
    """The current runtime, initialising with defaults on first use."""
    return RUNTIME or init()


def current_runtime() -> Runtime | None:
    """The current runtime, or ``None`` before :func:`init` (no side effect)."""
    return RUNTIME


def settings() -> Settings:
    """The settings in effect (from the environment until :func:`init` is called)."""
    return RUNTIME.settings if RUNTIME is not None else _ENV_SETTINGS


def init(
    service_name: str | None = None,
    *,
    capture_content: bool | None = None,
    max_value_bytes: int | None = None,
    redact_keys: Iterable[str] | None = None,
    exporters: Sequence[SpanExporter] = (),
    tracer_provider: otel_trace.TracerProvider | None = None,
    disabled: bool | None = None,
    shutdown_timeout_millis: int | None = None,
    project_name: str | None = None,
    export_on_app_provider: bool | None = None,
    instrument: Sequence[str] = (),
    export_evaluations: bool | None = None,
) -> Runtime:
    """Configure evaltrace. Optional: the API initialises itself with defaults on first use.

    If the app already set an SDK ``TracerProvider``, evaltrace adds its span processor to it;
    only when there is none does it create one (and set it as the global provider). It never
    replaces the app's provider.

    A provider evaltrace creates is configured by the OpenTelemetry variables: its resource
    by ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, its OTLP export by
    ``OTEL_EXPORTER_OTLP_*`` (see :mod:`evaltrace.capture.exporters`). On the app's own
    provider evaltrace adds its processor and nothing else, unless asked:
    ``export_on_app_provider=True``, or ``exporters``. ``EVALTRACE_TRACE_FILE`` is honoured on
    either.

    Args:
        service_name: ``service.name`` of the provider evaltrace creates (if it creates one).
        capture_content: Whether values go on spans; ``False`` keeps them off exported spans.
        max_value_bytes: Size limit of one value on a span (JSON bytes, at least 256).
        redact_keys: Key names whose values are redacted, added to the defaults.
        exporters: Span exporters (OTLP, JSONL, ...). Each gets a bounded queue and a thread
            of its own that exports in batches; results are counted (:func:`export_stats`).
        tracer_provider: An SDK provider to use instead of the global one.
        disabled: Turn instrumentation off.
        shutdown_timeout_millis: How long process exit (and :func:`shutdown`) may wait for
            exporters and handlers to take the spans still queued.
        project_name: The ``openinference.project.name`` resource attribute of the provider
            evaltrace creates (Arize Phoenix's project); ``EVALTRACE_PROJECT_NAME`` by default.
        export_on_app_provider: Export over OTLP per the ``OTEL_*`` variables even when the
            app set up its own provider (``EVALTRACE_EXPORT_ON_APP_PROVIDER``).
        instrument: Libraries to instrument on evaltrace's provider with an installed
            third-party instrumentor, e.g. ``["openai"]`` (see
            :mod:`evaltrace.capture.instrumentors`).
        export_evaluations: Emit each evaluation the runner (and
            :func:`~evaltrace.evaluate_traces`) makes as a ``gen_ai.evaluation.result``
            event, on a short span in the trace of the run it scored, so that a collector
            shows the scores next to the run (``EVALTRACE_EXPORT_EVALUATIONS``; off by
            default).

    Returns:
        The runtime in effect. Calling ``init`` again replaces the settings and adds the
        given exporters; the span processor is registered once, and the provider (with its
        resource) stays the one made first.

    Raises:
        ConfigurationError: An argument or environment variable is invalid, an exporter it
            asks for cannot be made, or an instrumentor is missing; nothing is changed then.
    """
    global RUNTIME
    if _ENV_ERROR is not None:
        raise _ENV_ERROR
    keys = _check_options(
        service_name=service_name,
        capture_content=capture_content,
        max_value_bytes=max_value_bytes,
        redact_keys=redact_keys,
        exporters=exporters,
        tracer_provider=tracer_provider,
        disabled=disabled,
        shutdown_timeout_millis=shutdown_timeout_millis,
        project_name=project_name,
        export_on_app_provider=export_on_app_provider,
        export_evaluations=export_evaluations,
    )
    instrumentors = find_instrumentors(check_instrument(instrument))
    with _LOCK:
        base = RUNTIME.settings if RUNTIME is not None else _ENV_SETTINGS
        options = {
            "service_name": service_name,
            "capture_content": capture_content,
            "max_value_bytes": max_value_bytes,
            "redact_keys": None if keys is None else base.redact_keys | keys,
            "disabled": disabled,
            "shutdown_timeout_millis": shutdown_timeout_millis,
            "project_name": project_name,
            "export_on_app_provider": export_on_app_provider,
            "export_evaluations": export_evaluations,
        }
        updates = {name: value for name, value in options.items() if value is not None}
        new_settings = replace(base, **updates)  # type: ignore[arg-type]
        if RUNTIME is None or tracer_provider is not None:
            RUNTIME = _build_runtime(new_settings, tracer_provider)
        else:
            _update_runtime(RUNTIME, new_settings)
        for exporter in exporters:
            _add_exporter(RUNTIME, exporter)
        if not RUNTIME.settings.disabled:
            RUNTIME.instrumented += enable_instrumentors(
                instrumentors, RUNTIME.provider, os.environ
            )
        return RUNTIME


def _update_runtime(rt: Runtime, new: Settings) -> None:
    """Apply ``new`` settings to the runtime in effect (its provider stays)."""
    old = rt.settings
    if rt.owns_provider and (new.service_name, new.project_name) != (
        old.service_name,
        old.project_name,
    ):
        logger.warning(
            "evaltrace: service_name and project_name set the resource of the tracer "
            "provider evaltrace creates, which was created already (by the first traced call "
            "or init()); call init() before the first traced call for them to apply"
        )
    rt.settings = new
    rt.codec = new.codec()
    rt.processor.shutdown_timeout_millis = new.shutdown_timeout_millis
    if not rt.otlp_added and _exports_over_otlp(new, rt.owns_provider):
        otlp = new.otlp
        assert otlp is not None
        _add_exporter(rt, otlp_exporter(otlp))
        rt.otlp_added = True


def _add_exporter(rt: Runtime, exporter: SpanExporter) -> None:
    rt.processor.add_exporter(exporter)
    rt.spans_now_leave_process()


def _exports_over_otlp(settings: Settings, owns_provider: bool) -> bool:
    """Whether the ``OTEL_EXPORTER_OTLP_*`` export applies to the provider in use."""
    return (
        settings.otlp is not None
        and not settings.disabled
        and (owns_provider or settings.export_on_app_provider)
    )


def _found(value: object) -> str:
    text = safe_repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"the {type_name(value)} {text}"


def _check_flag(name: str, value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(
            f"{name} expects True or False; got {_found(value)}. Pass a bool, e.g. "
            f"{name}=False (environment variables are the place for strings such as 'false')"
        )


def _check_millis(name: str, value: object) -> None:
    if value is not None and (type(value) is not int or value < 0):
        raise ConfigurationError(
            f"{name} expects a whole number of milliseconds, 0 or more; got {_found(value)}"
        )


def _check_options(
    *,
    service_name: object,
    capture_content: object,
    max_value_bytes: object,
    redact_keys: object,
    exporters: object,
    tracer_provider: object,
    disabled: object,
    shutdown_timeout_millis: object,
    project_name: object,
    export_on_app_provider: object,
    export_evaluations: object,
) -> frozenset[str] | None:
    """Check every option of :func:`init` before anything changes.

    Returns:
        The extra redact keys, lower-cased (``None`` when not given).
    """
    if service_name is not None and (not isinstance(service_name, str) or not service_name):
        raise ConfigurationError(
            f"service_name expects a non-empty string; got {_found(service_name)}, "
            "e.g. service_name='checkout-bot'"
        )
    if project_name is not None and (not isinstance(project_name, str) or not project_name):
        raise ConfigurationError(
            f"project_name expects a non-empty string; got {_found(project_name)}, "
            "e.g. project_name='checkout-bot-evals'"
        )
    _check_flag("capture_content", capture_content)
    _check_flag("disabled", disabled)
    _check_flag("export_on_app_provider", export_on_app_provider)
    _check_flag("export_evaluations", export_evaluations)
    if max_value_bytes is not None:
        if type(max_value_bytes) is not int:
            raise ConfigurationError(
                "max_value_bytes expects a whole number of bytes (at least 256); got "
                f"{_found(max_value_bytes)}, e.g. max_value_bytes=100_000"
            )
        _check_max_bytes(max_value_bytes, "max_value_bytes")
    _check_millis("shutdown_timeout_millis", shutdown_timeout_millis)
    keys = _check_redact_keys(redact_keys)
    _check_exporters(exporters)
    if tracer_provider is not None and not isinstance(tracer_provider, otel_trace.TracerProvider):
        raise ConfigurationError(
            "tracer_provider expects an OpenTelemetry TracerProvider (e.g. "
            f"opentelemetry.sdk.trace.TracerProvider()); got {_found(tracer_provider)}"
        )
    return keys


def _check_redact_keys(redact_keys: object) -> frozenset[str] | None:
    if redact_keys is None:
        return None
    if isinstance(redact_keys, str | bytes):
        raise ConfigurationError(
            f"redact_keys expects an iterable of key names, not one string; got "
            f"{_found(redact_keys)}. Pass a list, e.g. redact_keys=[{safe_repr(redact_keys)}]"
        )
    if not isinstance(redact_keys, Iterable):
        raise ConfigurationError(
            f"redact_keys expects an iterable of key names; got {_found(redact_keys)}, "
            "e.g. redact_keys=['ssn', 'employee_id']"
        )
    keys = list(redact_keys)
    for index, key in enumerate(keys):
        if not isinstance(key, str) or not key:
            raise ConfigurationError(
                f"redact_keys expects key names (strings); item {index} is {_found(key)}"
            )
    return frozenset(key.lower() for key in keys)


def _check_exporters(exporters: object) -> None:
    if isinstance(exporters, str | bytes) or not isinstance(exporters, Iterable):
        one = (
            " (one exporter: pass a list, exporters=[exporter])" if _is_exporter(exporters) else ""
        )
        raise ConfigurationError(
            f"exporters expects a list of span exporters; got {_found(exporters)}{one}"
        )
    for index, exporter in enumerate(exporters):
        if not _is_exporter(exporter):
            raise ConfigurationError(
                "exporters expects span exporters (objects with export() and shutdown(), such "
                "as OTLPSpanExporter or any opentelemetry SpanExporter); item "
                f"{index} is {_found(exporter)}"
            )


def _is_exporter(value: object) -> bool:
    return callable(getattr(value, "export", None)) and callable(getattr(value, "shutdown", None))


def _build_runtime(settings: Settings, explicit: otel_trace.TracerProvider | None) -> Runtime:
    from evaltrace.capture.processor import ScopeSpanProcessor

    candidate = explicit if explicit is not None else otel_trace.get_tracer_provider()
    owns = not isinstance(candidate, SDKTracerProvider)
    exporters = _environment_exporters(settings, owns)  # may raise: nothing is changed yet
    if isinstance(candidate, SDKTracerProvider):
        provider = candidate
        if settings.project_name is not None:
            logger.warning(
                "evaltrace: project_name (EVALTRACE_PROJECT_NAME) applies to a tracer provider "
                "evaltrace creates; the app's provider keeps its resource: add the %s "
                "attribute to it (Resource.create({%r: %r}))",
                PROJECT_NAME_ATTRIBUTE,
                PROJECT_NAME_ATTRIBUTE,
                settings.project_name,
            )
    else:
        provider = SDKTracerProvider(resource=_resource(settings))
        if explicit is None and isinstance(candidate, otel_trace.ProxyTracerProvider):
            if not settings.disabled:  # disabled: leave the global provider to the app
                otel_trace.set_tracer_provider(provider)
        else:
            logger.info(
                "evaltrace: the tracer provider %s is not an OpenTelemetry SDK provider; "
                "evaltrace's spans use a private provider",
                type(candidate).__name__,
            )
    processor = ScopeSpanProcessor(settings.shutdown_timeout_millis)
    provider.add_span_processor(processor)
    _register_exit_hook()
    rt = Runtime(settings, provider, processor, owns_provider=owns)
    for exporter in exporters:
        _add_exporter(rt, exporter)
    rt.otlp_added = _exports_over_otlp(settings, owns)
    return rt


def _resource(settings: Settings) -> Resource:
    """The resource of a provider evaltrace creates."""
    attributes: dict[str, str] = {
        **settings.resource_attributes,
        "service.name": settings.service_name,
    }
    if settings.project_name is not None:
        attributes[PROJECT_NAME_ATTRIBUTE] = settings.project_name
    return Resource.create(attributes)


def _environment_exporters(settings: Settings, owns_provider: bool) -> list[SpanExporter]:
    """The exporters the environment asks for, on the provider in use."""
    if settings.disabled:
        return []
    exporters = []
    if _exports_over_otlp(settings, owns_provider):
        assert settings.otlp is not None
        exporters.append(otlp_exporter(settings.otlp))
    if settings.trace_file is not None:
        try:
            exporters.append(JsonLinesExporter(settings.trace_file))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{EVALTRACE_TRACE_FILE}: {exc}") from None
    return exporters


_EXIT_HOOK_REGISTERED = False


def _register_exit_hook() -> None:
    """At exit, shut down within the configured timeout (even if the provider never does)."""
    global _EXIT_HOOK_REGISTERED
    if not _EXIT_HOOK_REGISTERED:
        _EXIT_HOOK_REGISTERED = True
        atexit.register(shutdown)


def flush(timeout_millis: int = 30_000) -> bool:
    """Deliver every finished span to the exporters and handlers, within ``timeout_millis``.

    One deadline covers all exporters and handlers together.

    Returns:
        ``True`` when everything given to the exporters and handlers since the previous
        flush was delivered: nothing still waiting at the deadline, nothing dropped from a
        full queue, no export that failed (see :func:`export_stats` and
        :func:`handler_stats` for the counts).

    Raises:
        ConfigurationError: ``timeout_millis`` is not a whole number of 0 or more.
    """
    _check_millis("timeout_millis", timeout_millis)
    rt = RUNTIME
    if rt is None:
        return True
    return rt.processor.force_flush(timeout_millis)


def shutdown(timeout_millis: int | None = None) -> bool:
    """Flush, then stop the exporters evaltrace added, all within one timeout.

    Runs at process exit too. Spans still queued when the timeout passes are dropped,
    counted in :func:`export_stats` and logged; a dead collector or a stuck handler never
    holds the process up longer than the timeout. The app's own provider is left running.
    Handlers stay registered. A later call to the API initialises again.

    Args:
        timeout_millis: The time allowed (default: ``shutdown_timeout_millis`` of
            :func:`init`, or ``EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS``, 5000 ms by default).

    Returns:
        Whether everything was delivered (as for :func:`flush`).
    """
    global RUNTIME
    _check_millis("timeout_millis", timeout_millis)
    with _LOCK:
        rt = RUNTIME
        if rt is None:
            return True
        if timeout_millis is None:
            timeout_millis = rt.settings.shutdown_timeout_millis
        delivered = rt.processor.shutdown_within(timeout_millis)
        rt.processor.detached = True
        for instrumentor in rt.instrumented:
            _uninstrument(instrumentor)
        RUNTIME = None
        return delivered


def _uninstrument(instrumentor: Any) -> None:
    try:
        instrumentor.uninstrument()
    except Exception as exc:  # shutdown runs at exit too: it never breaks the app
        logger.warning(
            "evaltrace: %s raised on uninstrument: %s", type_name(instrumentor), exception_text(exc)
        )
