"""Configuration in one place: :func:`init`, :func:`flush`, :func:`shutdown`.

The environment is read once, when this module is imported, by
:func:`~evaltrace.capture.environment.read_environment`, which documents every variable
(the ``OTEL_BSP_*`` ones are read again each time an exporter is added). Following
OpenTelemetry, a variable whose value cannot be used never raises: the runtime logs the
problem once, as a warning on the ``evaltrace`` logger (the variable, the value, what is used
instead), when it is built, and uses the fallback. Arguments given in code to :func:`init`
are checked strictly: a wrong one is a :class:`~evaltrace.errors.ConfigurationError` and
changes nothing.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from evaltrace._safe_text import exception_text, safe_repr, type_name
from evaltrace.capture.context import arm, note_spans_stay
from evaltrace.capture.environment import (
    MIN_VALUE_BYTES,
    Environment,
    Problem,
    Settings,
    read_batching,
    read_environment,
)
from evaltrace.capture.exporters import (
    EVALTRACE_TRACE_FILE,
    PROJECT_NAME_ATTRIBUTE,
    JsonLinesExporter,
    otlp_exporter,
    settled_variables,
)
from evaltrace.capture.instrumentors import (
    check_instrument,
    enable_instrumentors,
    find_instrumentors,
)
from evaltrace.capture.runspan import RunSpans
from evaltrace.errors import ConfigurationError

if TYPE_CHECKING:
    from evaltrace.capture.processor import ScopeSpanProcessor

__all__ = ["Runtime", "Settings", "flush", "init", "runtime", "settings_from_env", "shutdown"]

logger = logging.getLogger("evaltrace")


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """The :class:`Settings` the environment asks for (``os.environ`` by default).

    A variable whose value cannot be used gets its fallback; see
    :func:`~evaltrace.capture.environment.read_environment` for the problems.
    """
    return read_environment(env).settings


def _check_max_bytes(value: int, source: str) -> None:
    if value < MIN_VALUE_BYTES:
        raise ConfigurationError(
            f"{source}={value} is too small; it must be at least {MIN_VALUE_BYTES} bytes"
        )


_ENVIRONMENT: Environment = read_environment()
"""The environment as read when evaltrace was imported."""
_ENV_SETTINGS = _ENVIRONMENT.settings
_REPORTED: set[Problem] = set()
"""The problems logged so far: each is logged once per process, however often the runtime is
built (``init``, ``shutdown`` and the next traced call)."""


def _report(problems: Iterable[Problem]) -> None:
    """Log each of ``problems`` not logged before, as one warning line."""
    for problem in problems:
        if problem not in _REPORTED:
            _REPORTED.add(problem)
            logger.warning("evaltrace: %s", problem)


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
        self.run_spans = RunSpans(self.tracer)
        """Starts the root span of each run (``run_captured``) on :attr:`tracer`."""
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
        if self is RUNTIME:
            note_spans_stay(False)


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
        ConfigurationError: An argument is invalid, or an instrumentor it asks for is
            missing; nothing is changed then. Environment variables never raise: a value that
            cannot be used is logged once as a warning and its fallback is used.
    """
    global RUNTIME
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
        note_spans_stay(not RUNTIME.spans_leave_process)
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
        for exporter in _otlp_exporters(new):
            _add_exporter(rt, exporter)
        rt.otlp_added = True


def _add_exporter(rt: Runtime, exporter: SpanExporter) -> None:
    batching, problems = read_batching(os.environ)
    _report(problems)
    rt.processor.add_exporter(exporter, batching)
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

    _report(_ENVIRONMENT.problems)
    candidate = explicit if explicit is not None else otel_trace.get_tracer_provider()
    owns = not isinstance(candidate, SDKTracerProvider)
    exporters = _environment_exporters(settings, owns)
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
        provider = _new_provider(settings)
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


_DEFAULT_SPAN_LIMITS: Final = SpanLimits(
    max_attributes=128,
    max_events=128,
    max_links=128,
    max_span_attributes=128,
    max_event_attributes=128,
    max_link_attributes=128,
    max_attribute_length=SpanLimits.UNSET,
    max_span_attribute_length=SpanLimits.UNSET,
)
"""OpenTelemetry's default span limits, every one given, so that none is read from the
environment."""


def _new_provider(settings: Settings) -> SDKTracerProvider:
    """The tracer provider evaltrace creates; never raises because of the environment."""
    resource = _resource(settings)
    try:
        return SDKTracerProvider(resource=resource)
    except ValueError as exc:  # the SDK reads its span limits (OTEL_*_LIMIT) itself
        logger.warning(
            "evaltrace: %s; using OpenTelemetry's default span limits", exception_text(exc)
        )
        return SDKTracerProvider(resource=resource, span_limits=_DEFAULT_SPAN_LIMITS)


def _resource(settings: Settings) -> Resource:
    """The resource of a provider evaltrace creates."""
    attributes: dict[str, str] = {
        **settings.resource_attributes,
        "service.name": settings.service_name,
    }
    if settings.project_name is not None:
        attributes[PROJECT_NAME_ATTRIBUTE] = settings.project_name
    with settled_variables():  # the SDK reads OTEL_RESOURCE_ATTRIBUTES again
        return Resource.create(attributes)


def _environment_exporters(settings: Settings, owns_provider: bool) -> list[SpanExporter]:
    """The exporters the environment asks for, on the provider in use; never raises."""
    if settings.disabled:
        return []
    exporters = _otlp_exporters(settings) if _exports_over_otlp(settings, owns_provider) else []
    if settings.trace_file is not None:
        try:
            exporters.append(JsonLinesExporter(settings.trace_file))
        except ConfigurationError as exc:  # read_environment checked it; it changed since
            _report(
                [
                    Problem(
                        variable=EVALTRACE_TRACE_FILE,
                        value=settings.trace_file,
                        reason=f"cannot be used: {exc}",
                        used="no trace file",
                    )
                ]
            )
    return exporters


def _otlp_exporters(settings: Settings) -> list[SpanExporter]:
    """The OTLP exporter of ``settings`` (none when it cannot be made); never raises."""
    otlp = settings.otlp
    assert otlp is not None
    try:
        return [otlp_exporter(otlp)]
    except Exception as exc:  # the SDK's exporter reads more variables itself: never fatal
        _report(
            [
                Problem(
                    variable="OTEL_EXPORTER_OTLP_*",
                    value=otlp.endpoint,
                    reason=(
                        f"cannot be exported to: the OpenTelemetry SDK's {otlp.protocol} "
                        f"exporter could not be made ({exception_text(exc)})"
                    ),
                    used="no OTLP export",
                )
            ]
        )
        return []


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
        note_spans_stay(False)  # the next traced call sets evaltrace up again
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
