"""The typed views evaluators read: :class:`ObserveSpan` and, for a model call, :class:`LLMSpan`.

:func:`span_view` reads a :class:`~evaltrace.trace.spans.records.SpanRecord` as an
:class:`LLMSpan` when its attributes describe a model call in the OpenInference (``llm.*``) or
OpenTelemetry GenAI (``gen_ai.*``) conventions, or its kind is ``llm`` (``@wrap(kind="llm")``,
whose OpenAI-shaped input and output are read as the call), else as an :class:`ObserveSpan`.
A view reads each of its fields from the record when it is first asked for, and keeps it: a
span that nothing reads costs no decoding (a stored trace's spans, most of which no selector
looks at). Views are frozen: they equal, print and copy as if every field had been given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from evaltrace.capture import conventions as conv
from evaltrace.capture.values import WrapRecord
from evaltrace.trace.spans.messages import LLMMessage, TokenUsage, ToolCall, ToolDefinition
from evaltrace.trace.spans.openai_bodies import openai_call
from evaltrace.trace.spans.parsers import (
    decode_json,
    finish_reasons,
    input_messages,
    is_llm,
    json_text,
    llm_model,
    llm_provider,
    output_messages,
    parse_named_values,
    request_parameters,
    span_kind,
    str_or_none,
    token_usage,
    tool_definitions,
)
from evaltrace.trace.spans.records import SpanRecord

__all__ = [
    "LLMCallSource",
    "LLMSpan",
    "ObserveSpan",
    "SpanError",
    "SpanStatus",
    "SpanView",
    "span_view",
]

SpanStatus: TypeAlias = Literal["ok", "error", "unset"]
"""The status of a span as a view reports it."""

LLMCallSource: TypeAlias = Literal["conventions", "input_output", "kind"]
"""Where an :class:`LLMSpan` was read from (see :attr:`LLMSpan.source`)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STATUSES: Mapping[str, SpanStatus] = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}
# Every attribute a model call is read from is named under one of these.
_MODEL_CALL_PREFIXES = ("llm.", "gen_ai.")


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanError:
    """Why a span ended in error."""

    type: str | None
    """The exception type name (``exception.type``), when an exception was recorded."""
    message: str
    """The exception message, else the status description; may be empty."""


@dataclass(kw_only=True, frozen=True, slots=True)
class SpanView:
    """What every span view offers: identity, timing, status, input, output, named values."""

    record: SpanRecord = field(repr=False, compare=False)
    """The record the view was read from (events, resource, exact times)."""
    span_id: int
    """The 64-bit span id."""
    trace_id: int
    """The 128-bit trace id."""
    parent_span_id: int | None
    """The parent's span id, or ``None``."""
    name: str
    """The span name (for ``@wrap`` spans, the function name)."""
    kind: str
    """The OpenInference kind in lower case (``chain``, ``llm``, ``tool``, ...), or ``unknown``."""
    started_at: datetime
    """Start, as an aware UTC datetime."""
    ended_at: datetime
    """End, as an aware UTC datetime."""
    status: SpanStatus
    """``"ok"``, ``"error"`` or ``"unset"``."""
    error: SpanError | None
    """Why the span failed, when its status is ``"error"``."""
    attributes: Mapping[str, Any] = field(repr=False)
    """The raw span attributes (read-only)."""
    input: Any
    """``input.value`` decoded (JSON text becomes data); ``None`` when absent."""
    output: Any
    """``output.value`` decoded; ``None`` when absent."""
    named_values: tuple[WrapRecord, ...] = ()
    """The ``wrap(value, purpose=..., name=...)`` values recorded while this span was current."""

    @property
    def duration_ms(self) -> float:
        """The span duration in milliseconds."""
        return (self.record.end_time_ns - self.record.start_time_ns) / 1_000_000

    if not TYPE_CHECKING:  # to mypy a view has its fields only

        def __getattr__(self, name: str) -> Any:
            # Called for a field not read yet (see span_view): read it, and keep it.
            reader = _READERS.get(name)
            if reader is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            value = reader(self)
            _set(self, name, value)
            return value


@dataclass(kw_only=True, frozen=True, slots=True)
class ObserveSpan(SpanView):
    """A span that is not a model call: a ``@wrap`` function, a tool, a retriever, ..."""


@dataclass(kw_only=True, frozen=True, slots=True)
class LLMSpan(SpanView):
    """A model call.

    Read from OpenInference or OpenTelemetry GenAI attributes, or from the OpenAI-shaped input
    and output of a span of kind ``llm`` (``@wrap(kind="llm")``): see :attr:`source`.

    Example:
        >>> span.model, span.output_text  # doctest: +SKIP
        ('gpt-4o-mini-2024-07-18', 'It is 18 °C in Paris.')
    """

    model: str | None = None
    """The response model, else the request model, else ``llm.model_name``."""
    provider: str | None = None
    """The provider or system (``openai``, ``anthropic``, ...), if recorded."""
    input_messages: tuple[LLMMessage, ...] = ()
    """The messages sent to the model, system instructions first."""
    output_messages: tuple[LLMMessage, ...] = ()
    """The messages the model returned (one per choice)."""
    usage: TokenUsage = field(default_factory=TokenUsage)
    """Token counts."""
    finish_reasons: tuple[str, ...] = ()
    """Why generation stopped, one per choice (``stop``, ``tool_calls``, ``length``, ...)."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """Request parameters: ``llm.invocation_parameters``, the ``gen_ai.request.*`` values, or
    the request's other arguments."""
    tools: tuple[ToolDefinition, ...] = ()
    """The tools offered to the model (``llm.tools``, ``gen_ai.tool.definitions``, or the
    request's ``tools``)."""
    source: LLMCallSource = "conventions"
    """Where the call was read from: ``"conventions"``, the ``llm.*`` / ``gen_ai.*`` attributes
    and events an instrumentor records; ``"input_output"``, the OpenAI request and response a
    span of kind ``llm`` recorded as its input and output (``@wrap(kind="llm")`` around a
    client call); ``"kind"``, nowhere: the span is a model call by its kind alone."""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the output messages."""
        return tuple(call for message in self.output_messages for call in message.tool_calls)

    @property
    def output_text(self) -> str | None:
        """The text the model returned.

        The text content of the output messages joined with newlines (empty when they carry
        only tool calls); without output messages, ``output.value`` as text; ``None`` when the
        span recorded no output at all.
        """
        if self.output_messages:
            return "\n".join(m.content for m in self.output_messages if m.content is not None)
        if self.output is None:
            return None
        if isinstance(self.output, str):
            return self.output
        return json_text(self.output)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            position = _CALL_FIELDS.get(name)
            if position is None:
                return SpanView.__getattr__(self, name)
            values = _model_call(self)
            for setter, value in zip(_CALL_SETTERS, values, strict=True):
                setter(self, value)
            return values[position]


def span_view(record: SpanRecord, named_values: Iterable[WrapRecord] = ()) -> ObserveSpan | LLMSpan:
    """Read a record as an :class:`LLMSpan` (a model call) or an :class:`ObserveSpan`.

    Only the kind of view is decided here; each field is read from the record when it is
    first asked for (and kept), so a span nobody reads costs no decoding.

    Args:
        record: The finished span.
        named_values: The values ``wrap`` recorded on this span. When given they are used as they
            are (they hold the untruncated values); when empty they are read from the span's
            ``evaltrace.wrap`` events.

    Returns:
        The view.

    Example:
        >>> view = span_view(SpanRecord(trace_id=1, span_id=2, name="answer",
        ...                             start_time_ns=0, end_time_ns=2_000_000))
        >>> view.kind, view.duration_ms
        ('unknown', 2.0)
    """
    attributes = record.attributes
    raw = attributes.get(conv.SPAN_KIND)
    # The usual kinds by table, is_llm's rules for the rest: is_llm was 0.6 us of each
    # span's 1.5 us view (bench_stored.py's spans, timeit).
    llm = _LLM_BY_KIND.get(raw) if type(raw) is str else None
    if llm is None:
        llm = is_llm(attributes)
    kind: type[ObserveSpan | LLMSpan] = LLMSpan if llm else ObserveSpan
    view: ObserveSpan | LLMSpan = _new(kind)
    # Writes to a frozen view as it is made, and below as each field is first read: eager
    # views cost ~7 us a span that nothing reads (bench_stored.py, bench/README.md).
    _set_record(view, record)
    values = named_values if type(named_values) is tuple else tuple(named_values)
    if values or not record.events:  # none given, and no event to read them from
        _set_named_values(view, values)
    if llm and not record.events and not _may_record_a_call(attributes):
        # A model call by its kind alone that records nothing of one: the two fields that
        # counting a trace's model calls reads are known now, not each read through a miss
        # and _model_call: building and counting a trace of bench_stored.py's file (4 such
        # calls in 10 spans) took 33.8 us instead of 38.1 us. The others are read (as
        # none) when asked: such a span's view is made in 2.2 us instead of 2.9 us with
        # every field of the call set (bench_stored.py's spans, timeit).
        _set_model(view, None)
        _set_usage(view, _NO_USAGE)
    return view


_new = object.__new__

_USUAL_KINDS: Final = (
    "LLM",
    "CHAIN",
    "TOOL",
    "AGENT",
    "RETRIEVER",
    "EMBEDDING",
    "RERANKER",
    "GUARDRAIL",
    "EVALUATOR",
    "PROMPT",
    "UNKNOWN",
)
_LLM_BY_KIND: Final[Mapping[str, bool]] = {
    **{kind: kind == "LLM" for kind in _USUAL_KINDS},
    **{kind.lower(): kind == "LLM" for kind in _USUAL_KINDS},
}
"""Whether a span of each usual OpenInference kind is a model call, as :func:`is_llm` says."""

_set = object.__setattr__
# Through the slots themselves, not object.__setattr__ and a name, the two fields every
# view is made with: 0.46 us instead of 0.58 us a view (bench_stored.py's spans, timeit).
_set_record = SpanView.__dict__["record"].__set__
_set_named_values = SpanView.__dict__["named_values"].__set__


def _kind(view: SpanView) -> str:
    return span_kind(view.record.attributes)


def _status(view: SpanView) -> SpanStatus:
    return _STATUSES.get(view.record.status_code, "unset")


def _span_error(view: SpanView) -> SpanError | None:
    return _error(view.record) if view.status == "error" else None


def _input(view: SpanView) -> Any:
    attributes = view.record.attributes
    return decode_json(attributes.get(conv.INPUT_VALUE), attributes.get(conv.INPUT_MIME_TYPE))


def _output(view: SpanView) -> Any:
    attributes = view.record.attributes
    return decode_json(attributes.get(conv.OUTPUT_VALUE), attributes.get(conv.OUTPUT_MIME_TYPE))


_READERS: Mapping[str, Callable[[SpanView], Any]] = {
    "span_id": lambda view: view.record.span_id,
    "trace_id": lambda view: view.record.trace_id,
    "parent_span_id": lambda view: view.record.parent_span_id,
    "name": lambda view: view.record.name,
    "kind": _kind,
    "started_at": lambda view: _datetime(view.record.start_time_ns),
    "ended_at": lambda view: _datetime(view.record.end_time_ns),
    "status": _status,
    "error": _span_error,
    "attributes": lambda view: MappingProxyType(view.record.attributes),
    "input": _input,
    "output": _output,
    "named_values": lambda view: parse_named_values(view.record),
}
"""How each field of a view is read from its record, when first asked for."""


def _model_call(view: LLMSpan) -> tuple[Any, ...]:
    """The fields of a model call (in :data:`_CALL_ORDER`), read together from the span.

    See :attr:`LLMSpan.source` for where they are read from.
    """
    record = view.record
    attributes = record.attributes
    by_conventions = _names_a_call(attributes)
    if not by_conventions:
        # A model call by its kind (``@wrap(kind="llm")``): its input and output may be the
        # request and response of the client call it wraps. Their text is decoded only when
        # it may hold one: decoding every such span's input and output was a tenth of
        # scoring a stored trace (bench_stored.py, bench/README.md).
        call = None
        if _may_hold(
            attributes.get(conv.INPUT_VALUE), attributes.get(conv.INPUT_MIME_TYPE), _REQUEST
        ) or _may_hold(
            attributes.get(conv.OUTPUT_VALUE), attributes.get(conv.OUTPUT_MIME_TYPE), _RESPONSE
        ):
            call = openai_call(view.input, view.output)
        if call is not None:
            return (
                call.model,
                None,
                call.input_messages,
                call.output_messages,
                call.usage,
                call.finish_reasons,
                call.parameters,
                call.tools,
                "input_output",
            )
        if not record.events:
            return _no_call()
    inputs = input_messages(record)
    outputs, output_finish_reasons = output_messages(record)
    return (
        llm_model(attributes),
        llm_provider(attributes),
        inputs,
        outputs,
        token_usage(attributes),
        finish_reasons(attributes, output_finish_reasons, view.output),
        request_parameters(attributes),
        tool_definitions(attributes),
        # Events alone (GenAI messages as span events) record a call only when they hold one.
        "conventions" if by_conventions or inputs or outputs else "kind",
    )


def _may_record_a_call(attributes: Mapping[str, Any]) -> bool:
    """Whether a span's attributes may record a model call (see :func:`_model_call`).

    ``False`` when none is named under a model call's conventions and neither the input
    nor the output may hold an OpenAI request or response.
    """
    return (
        _names_a_call(attributes)
        or _may_hold(
            attributes.get(conv.INPUT_VALUE), attributes.get(conv.INPUT_MIME_TYPE), _REQUEST
        )
        or _may_hold(
            attributes.get(conv.OUTPUT_VALUE), attributes.get(conv.OUTPUT_MIME_TYPE), _RESPONSE
        )
    )


def _names_a_call(attributes: Mapping[str, Any]) -> bool:
    """Whether an attribute is named under a model call's conventions (``llm.``, ``gen_ai.``)."""
    # The usual names of a span's kind, input and output checked in one step, in C:
    # 0.3 us instead of 1.2 us for a span of those five names (bench_stored.py's spans,
    # timeit), a third of reading a model call by its kind alone.
    if attributes.keys() <= _PLAIN_NAMES:
        return False
    # A loop rather than any() over a generator: a third less, for every model call's span
    # of a stored trace (bench_stored.py, bench/README.md).
    for key in attributes:
        if key.startswith(_MODEL_CALL_PREFIXES):
            return True
    return False


_PLAIN_NAMES: Final = frozenset(
    {
        conv.SPAN_KIND,
        conv.INPUT_VALUE,
        conv.INPUT_MIME_TYPE,
        conv.OUTPUT_VALUE,
        conv.OUTPUT_MIME_TYPE,
        conv.RUN_SPAN_ATTRIBUTE,
    }
)
"""Attribute names a span of ``@wrap`` records, none of them a model call's."""

_REQUEST: Final = ('"messages"', '"input"', '"instructions"')
"""The keys of which an OpenAI request holds one (at its top, or one level down)."""
_RESPONSE: Final = ('"choices"', '"output"', '"role"')
"""The keys of which an OpenAI response holds one."""


def _may_hold(value: Any, mime_type: Any, keys: tuple[str, ...]) -> bool:
    """Whether an attribute may decode (:func:`decode_json`) to an object with one of ``keys``.

    ``False`` only when it cannot: it is absent, text of another media type, text that is
    not a JSON object (one opens with ``{`` after its whitespace, which ``lstrip`` removes
    and more), or a JSON object whose text names none of the keys (written without escapes,
    a key is in the text as it is).
    """
    if value is None:
        return False
    if not isinstance(value, str):
        return True  # not text: decoded as it is, whatever it is
    # The JSON media type and an opening brace, the usual case, tested first: 0.4-0.7 us
    # instead of 0.8-1.2 us a value (bench_stored.py's spans, timeit).
    if (
        mime_type is not None
        and mime_type != conv.MIME_JSON
        and isinstance(mime_type, str)
        and not mime_type.startswith(conv.MIME_JSON)
    ):
        return False
    if value[:1] != "{" and not value.lstrip().startswith("{"):
        return False
    if "\\" in value:
        return True
    for key in keys:  # not any() over a generator: see _names_a_call
        if key in value:
            return True
    return False


_NO_USAGE: Final = TokenUsage()
"""The token counts of a span that recorded none (frozen: one is shared)."""

_CALL_ORDER: Final = (
    "model",
    "provider",
    "input_messages",
    "output_messages",
    "usage",
    "finish_reasons",
    "parameters",
    "tools",
    "source",
)
"""The fields of :class:`LLMSpan` that :func:`_model_call` reads, all at once, in its order."""


def _no_call() -> tuple[Any, ...]:
    """The fields of a model call (in :data:`_CALL_ORDER`) of a span that records none."""
    return (None, None, (), (), _NO_USAGE, (), {}, (), "kind")


_CALL_FIELDS: Final[Mapping[str, int]] = {name: at for at, name in enumerate(_CALL_ORDER)}
"""The position of each field of a model call in what :func:`_model_call` returns."""

# Each field written through its slot, not a dict of fields and a setattr each: a model
# call's usage read in 5.1 us instead of 10.0 us (bench_stored.py's spans, timeit).
_CALL_SETTERS: Final = tuple(LLMSpan.__dict__[name].__set__ for name in _CALL_ORDER)
"""The slot setters of the fields of a model call, in :data:`_CALL_ORDER`."""

_set_model = LLMSpan.__dict__["model"].__set__
_set_usage = LLMSpan.__dict__["usage"].__set__


def _datetime(ns: int) -> datetime:
    try:
        return _EPOCH + timedelta(0, 0, ns // 1000)  # positional: quicker than microseconds=
    except (OverflowError, TypeError):
        return _EPOCH


def _error(record: SpanRecord) -> SpanError:
    exception = next(
        (event for event in reversed(record.events) if event.name == conv.EXCEPTION_EVENT), None
    )
    type_name = message = None
    if exception is not None:
        type_name = str_or_none(exception.attributes.get(conv.EXCEPTION_TYPE))
        message = str_or_none(exception.attributes.get(conv.EXCEPTION_MESSAGE))
    return SpanError(type=type_name, message=message or record.status_description or "")
