"""The root span of a run, started by hand where the SDK's general path would add nothing.

``Tracer.start_span`` asks the sampler, builds the trace flags, builds the span through its
constructor (its attribute store, event and link lists, a dozen fields) and fans ``on_start``
out: about 40% of capturing one run (bench_runner.py's c=50 figure, bench/README.md). For the
root of a new trace on a tracer with the SDK's defaults (the ``parentbased_always_on``
sampler, no tracer metrics, the tracer enabled) every one of those steps comes to a known
result: the span is recorded and sampled, its trace state is empty, its fields other than
the name, ids, lock, stores and start time are the same for every span of the tracer. So
:class:`RunSpans` fills a span of the SDK's own class with those fields, taken once from a
span the SDK's constructor built, and starts it on the tracer's processors as the SDK does.
Everything else (a parent span, another sampler or tracer, an SDK whose spans are laid out
otherwise) goes through ``Tracer.start_span``.

The span is the SDK's ``Span``: the app's code annotates it, parents its own spans to it, and
the tracer's processors (evaltrace's capture, the app's exporters) see it start and end like
any other.
"""

from __future__ import annotations

import threading
from time import time_ns
from typing import Any, Final

import opentelemetry.sdk.trace as sdk_trace
from opentelemetry import trace as otel_trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Span as SDKSpan
from opentelemetry.sdk.trace import Tracer as SDKTracer
from opentelemetry.sdk.trace import sampling
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import INVALID_SPAN_CONTEXT, Span, SpanContext, TraceFlags

__all__ = ["RunSpans"]

_PER_SPAN: Final = frozenset(
    {"_name", "_context", "_lock", "_attributes", "_events", "_links", "_start_time"}
)
"""The fields of an SDK span that :meth:`RunSpans.start` sets for each span."""

_LAYOUT: Final = _PER_SPAN | {
    "_end_time",
    "_instrumentation_info",
    "_instrumentation_scope",
    "_kind",
    "_limits",
    "_parent",
    "_record_end_metrics",
    "_record_exception",
    "_resource",
    "_sampler",
    "_set_status_on_exception",
    "_span_processor",
    "_status",
    "_trace_config",
}
"""Every field of an SDK span, as the SDK this was written for lays one out."""


class RunSpans:
    """Starts the root spans of runs on one tracer (see the module's docstring).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> spans = RunSpans(TracerProvider().get_tracer("app"))
        >>> span = spans.start("answer")
        >>> span.get_span_context().is_valid
        True
        >>> span.end()
    """

    __slots__ = ("_flags", "_ids", "_limits", "_span_class", "_template", "_tracer")

    def __init__(self, tracer: otel_trace.Tracer) -> None:
        self._tracer = tracer
        self._template: dict[str, Any] | None = None
        """The fields every span of the tracer shares; ``None``: start each through it."""
        if type(tracer) is not SDKTracer or tracer.sampler is not sampling.DEFAULT_ON:
            return
        metrics = getattr(tracer, "_tracer_metrics", None)
        if type(metrics).__name__ != "NoOpTracerMetrics" or not hasattr(tracer, "_is_enabled"):
            return  # the tracer counts its spans, or is an SDK this was not written for
        probe = _probe(tracer, metrics)
        if probe is None or probe.__dict__.keys() != _LAYOUT:
            return
        self._span_class = type(probe)
        self._template = {k: v for k, v in probe.__dict__.items() if k not in _PER_SPAN}
        self._ids = tracer.id_generator
        self._limits = tracer._span_limits
        random = getattr(TraceFlags, "RANDOM_TRACE_ID", 0) if self._ids.is_trace_id_random() else 0
        self._flags = TraceFlags(TraceFlags.SAMPLED | random)

    @property
    def by_hand(self) -> bool:
        """Whether root spans of new traces are started by hand on this tracer."""
        return self._template is not None

    def start(self, name: str) -> Span:
        """Start a span called ``name`` (under the current span, if any); the caller ends it."""
        template = self._template
        tracer = self._tracer
        if (
            template is None
            or otel_trace.get_current_span().get_span_context().is_valid
            or not tracer._is_enabled()  # type: ignore[attr-defined]
        ):
            return tracer.start_span(name)
        span: SDKSpan = object.__new__(self._span_class)
        fields = span.__dict__
        fields.update(template)
        limits = self._limits
        ids = self._ids
        fields["_name"] = name
        fields["_context"] = SpanContext(
            ids.generate_trace_id(), ids.generate_span_id(), False, self._flags
        )
        fields["_lock"] = threading.Lock()
        fields["_attributes"] = BoundedAttributes(
            limits.max_span_attributes,
            None,
            immutable=False,
            max_value_len=limits.max_span_attribute_length,
        )
        fields["_events"] = BoundedList(limits.max_events)
        fields["_links"] = BoundedList(limits.max_links)
        fields["_start_time"] = time_ns()
        template["_span_processor"].on_start(span, parent_context=None)
        return span


def _probe(tracer: SDKTracer, metrics: Any) -> SDKSpan | None:
    """A span built (not started) by the SDK's constructor as ``Tracer.start_span`` builds a root.

    ``None`` when the constructor does not take what that SDK passes it.
    """
    span_class = getattr(sdk_trace, "_Span", None)  # the class Tracer.start_span builds
    if not isinstance(span_class, type) or not issubclass(span_class, SDKSpan):
        return None
    try:
        span: SDKSpan = span_class(
            name="",
            context=INVALID_SPAN_CONTEXT,
            parent=None,
            sampler=tracer.sampler,
            resource=tracer.resource,
            attributes=None,
            span_processor=tracer.span_processor,
            kind=otel_trace.SpanKind.INTERNAL,
            links=(),
            instrumentation_info=tracer.instrumentation_info,
            record_exception=True,
            set_status_on_exception=True,
            limits=tracer._span_limits,
            instrumentation_scope=tracer._instrumentation_scope,
            record_end_metrics=metrics.start_span(None, sampling.Decision.RECORD_AND_SAMPLE),
        )
    except TypeError:
        return None
    return span
