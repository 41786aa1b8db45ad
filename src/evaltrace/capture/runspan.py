"""The root span of a run, started by hand where the SDK's general path would add nothing.

``Tracer.start_span`` asks the sampler, builds the trace flags and the span context, builds
the span through its constructor (its attribute store, event and link lists, a dozen fields)
and fans ``on_start`` out: about 40% of capturing one run (bench_runner.py's c=50 figure,
bench/README.md). For the root of a new trace on a tracer with the SDK's defaults (the
``parentbased_always_on`` sampler, random ids, no tracer metrics, the tracer enabled) each of
those steps comes to a known result: the span is recorded and sampled, its trace state is
empty, and its fields other than the name, ids, lock, attribute store and start time are
the same for every span of the tracer. So :class:`RunSpans` fills a span of the SDK's own
class with those fields, taken once from a span the SDK's constructor built, and starts it
on the tracer's processors as the SDK does. Its event and link lists are made when first
used. Everything else (a parent span, another sampler, id generator or tracer, an SDK laid
out otherwise) goes through ``Tracer.start_span``.

The span is an SDK ``Span``: the app's code annotates it and parents its own spans to it, and
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
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, sampling
from opentelemetry.sdk.trace import Span as SDKSpan
from opentelemetry.sdk.trace import Tracer as SDKTracer
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import INVALID_SPAN_CONTEXT, Span, SpanContext, TraceFlags

__all__ = ["RunSpans"]

_PER_SPAN: Final = frozenset(
    {"_name", "_context", "_lock", "_attributes", "_events", "_links", "_start_time"}
)
"""The fields of an SDK span that are each span's own: set by :meth:`RunSpans.start`, or
(the event and link lists) made on first use."""

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

    __slots__ = ("_flags", "_ids", "_limits", "_template", "_tracer")

    def __init__(self, tracer: otel_trace.Tracer) -> None:
        self._tracer = tracer
        self._template: dict[str, Any] | None = None
        """The fields every span of the tracer shares; ``None``: start each through it."""
        if (
            type(tracer) is not SDKTracer
            or tracer.sampler is not sampling.DEFAULT_ON
            or type(tracer.id_generator) is not RandomIdGenerator  # ids never 0, in range
        ):
            return
        metrics = getattr(tracer, "_tracer_metrics", None)
        if type(metrics).__name__ != "NoOpTracerMetrics" or not hasattr(tracer, "_is_enabled"):
            return  # the tracer counts its spans, or is an SDK this was not written for
        probe = _probe(tracer, metrics)
        if probe is None or probe.__dict__.keys() != _LAYOUT:
            return
        if type(probe) is not _SDK_SPAN or not _contexts_known(self._flags_of(tracer)):
            return
        self._template = {k: v for k, v in probe.__dict__.items() if k not in _PER_SPAN}
        self._ids = tracer.id_generator
        self._limits = tracer._span_limits
        self._flags = self._flags_of(tracer)

    @staticmethod
    def _flags_of(tracer: SDKTracer) -> TraceFlags:
        """The trace flags of a root span the tracer samples."""
        random = tracer.id_generator.is_trace_id_random()
        return TraceFlags(TraceFlags.SAMPLED | (getattr(TraceFlags, "RANDOM_TRACE_ID", 0) * random))

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
            or tracer.sampler is not sampling.DEFAULT_ON  # type: ignore[attr-defined]
        ):
            return tracer.start_span(name)
        if tracer.resource is not template["_resource"]:  # type: ignore[attr-defined]
            # The provider gave its tracers a new resource (as it does in a forked child).
            template["_resource"] = tracer.resource  # type: ignore[attr-defined]
        span: SDKSpan = object.__new__(_RunSpan)
        fields = span.__dict__
        fields.update(template)
        limits = self._limits
        ids = self._ids
        fields["_name"] = name
        # The tuple SpanContext() makes, without the checks of ids the generator made valid.
        fields["_context"] = _new_context(
            SpanContext,
            (ids.generate_trace_id(), ids.generate_span_id(), False, self._flags, _NO_STATE, True),
        )
        fields["_lock"] = threading.Lock()
        fields["_attributes"] = BoundedAttributes(
            limits.max_span_attributes,
            None,
            immutable=False,
            max_value_len=limits.max_span_attribute_length,
        )
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


_new_context = tuple.__new__
_NO_STATE: Final = SpanContext(1, 1, False).trace_state
"""The trace state of a root span the default sampler samples: empty."""


def _contexts_known(flags: TraceFlags) -> bool:
    """Whether ``SpanContext`` is the tuple :meth:`RunSpans.start` makes of valid ids."""
    made = SpanContext(3, 5, False, flags)
    by_hand = _new_context(SpanContext, (3, 5, False, flags, _NO_STATE, True))
    return (
        made == by_hand and by_hand.is_valid and by_hand.span_id == 5 and len(made.trace_state) == 0
    )


class _NoneAfterEnd(tuple[Any, ...]):
    """The events or links of a run span that ended without any: empty, shared by all.

    A late ``append`` (another thread's, racing the end) is dropped, as the SDK drops an
    event added to an ended span.
    """

    __slots__ = ()

    def append(self, item: object) -> None:
        """Drop ``item``: the span has ended."""

    def extend(self, items: object) -> None:
        """Drop ``items``: the span has ended."""


_NONE_AFTER_END: Final = _NoneAfterEnd()


class _MadeOnFirstUse:
    """A run span's event or link list, made when first used before the span ends.

    Most runs add no event or link to their root span: two lists, each with its deque and
    lock, were a sixth of starting the span and six of the objects the garbage collector
    tracks for every row a run returns (bench_runner.py's c=50 figure, bench/README.md).
    """

    def __init__(self, limit: str) -> None:
        self._limit = limit
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, span: SDKSpan | None, owner: type) -> Any:
        if span is None:
            return self
        if span._end_time is not None:  # ended with none: what the SDK's copy reads
            return _NONE_AFTER_END
        made: Any = BoundedList(getattr(span._limits, self._limit))
        return span.__dict__.setdefault(self._name, made)  # one list, whichever thread won


_SDK_SPAN: Final[type[SDKSpan]] = getattr(sdk_trace, "_Span", SDKSpan)
"""The class of the spans ``Tracer.start_span`` makes."""


class _RunSpan(_SDK_SPAN):  # type: ignore[misc,valid-type]
    """An SDK span whose event and link lists are made on first use."""

    _events = _MadeOnFirstUse("max_events")
    _links = _MadeOnFirstUse("max_links")

    def _readable_span(self) -> ReadableSpan:
        """The ended span as the processors receive it, its attributes kept in a plain dict.

        The attribute store of an ended span no longer changes: the copy shares its dict
        rather than the store with its lock, two fewer objects the garbage collector tracks
        per row a run returns (bench_runner.py's c=50 figure, bench/README.md). A store
        that dropped attributes is kept, for its count of them. The copy's fields are set
        one by one rather than through ``ReadableSpan``'s keyword constructor, the fields
        that constructor sets (:data:`_READABLE_KNOWN`): about 1.5 us of the 61 us a run,
        its tree and ``root`` cost (bench_runner.py's c=50 figure, bench/README.md).
        """
        store = self._attributes
        plain = (
            self._end_time is not None
            and type(store) is BoundedAttributes
            and not store.dropped
            and type(store._dict) is dict
        )
        if not _READABLE_KNOWN or self._resource is None:
            readable: ReadableSpan = super()._readable_span()
            if plain:
                readable._attributes = store._dict
            return readable
        readable = _new_readable(ReadableSpan)
        readable._name = self._name
        readable._context = self._context
        readable._kind = self._kind
        readable._instrumentation_info = self._instrumentation_info
        readable._instrumentation_scope = self._instrumentation_scope
        readable._parent = self._parent
        readable._start_time = self._start_time
        readable._end_time = self._end_time
        readable._attributes = store._dict if plain else store
        readable._events = self._events
        readable._links = self._links
        readable._resource = self._resource
        readable._status = self._status
        return readable


_new_readable = object.__new__

_READABLE_FIELDS: Final = frozenset(
    {
        "_name",
        "_context",
        "_kind",
        "_instrumentation_info",
        "_instrumentation_scope",
        "_parent",
        "_start_time",
        "_end_time",
        "_attributes",
        "_events",
        "_links",
        "_resource",
        "_status",
    }
)
"""The fields :meth:`_RunSpan._readable_span` sets on the copy the processors receive."""


def _readable_known() -> bool:
    """Whether ``ReadableSpan``'s constructor sets exactly :data:`_READABLE_FIELDS`, as given."""
    try:
        probe = ReadableSpan(name="", resource=Resource.get_empty())
    except TypeError:
        return False
    return (
        type(probe).__init__ is ReadableSpan.__init__
        and vars(probe).keys() == _READABLE_FIELDS
        and probe._name == ""
    )


_READABLE_KNOWN: Final = _readable_known()
