"""Selectors: turn a captured trace into the :class:`~evaltrace.Evaluable` an evaluator scores.

A selector is any callable ``(trace: list[ObservationNode]) -> Evaluable``; pass one as
``from_trace=`` to the runners. The ones here cover the usual choices: the run as a whole
(:func:`root`), a model call (:func:`last_llm_call`, :func:`first_llm_call`), a span by name or
kind (:func:`by_name`, :func:`by_kind`) or by any test (:func:`select`).

An evaluable read from a model call (an :class:`~evaltrace.trace.LLMSpan`) carries what the
span recorded about the call in ``eval_metadata``, under the keys of :data:`LLM_METADATA_KEYS`;
a key is present only when the span recorded its value. The runners keep these beside the
metadata a dataset entry gives, and the entry's value wins where a key is in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

from pydantic import JsonValue

from evaltrace.capture.codec import is_truncated
from evaltrace.errors import MultipleTracesError, NoTraceError
from evaltrace.evals.evaluable import Evaluable, NamedData, checked_model
from evaltrace.trace.spans import LLMSpan, ObserveSpan
from evaltrace.trace.tree import ObservationNode, SpanPredicate, split_traces, walk_trace
from evaltrace.trace.values import collect_values, wrap_records

__all__ = [
    "SELECTOR_NAMES",
    "named_selector",
    "LLM_METADATA_KEYS",
    "TraceSelector",
    "by_kind",
    "by_name",
    "first_llm_call",
    "last_llm_call",
    "llm_metadata",
    "root",
    "select",
]

TraceSelector: TypeAlias = Callable[[Sequence[ObservationNode]], Evaluable]
"""A function that picks what to evaluate from a trace (a list of root nodes)."""

LLM_METADATA_KEYS: Final = (
    "llm_model",
    "llm_provider",
    "llm_input_tokens",
    "llm_output_tokens",
    "llm_total_tokens",
    "llm_cache_read_tokens",
    "llm_cache_creation_tokens",
    "trace_id",
    "span_id",
)
"""The ``eval_metadata`` keys of an evaluable read from a model call: the span's model and
provider (:attr:`~evaltrace.trace.LLMSpan.model`, :attr:`~evaltrace.trace.LLMSpan.provider`),
its token counts (:class:`~evaltrace.trace.TokenUsage`: input, output, total, read from and
written to the prompt cache), and its trace and span ids (32 and 16 lower-case hex digits)."""

_NAMES_LISTED = 20
_TRACES_LISTED = 5


# Selectors build their named data and evaluables with ``checked_model``: every value comes
# from the capture codec or from decoding span attributes, so it is JSON data already, and
# validating it again (or ``model_construct``, which copies each default) was a sixth of an
# entry's CPU in a run (bench_runner.py's c=50 figure, bench/README.md).


def root(trace: Sequence[ObservationNode]) -> Evaluable:
    """Evaluate the run as a whole.

    ``eval_input`` is the ``wrap(purpose="input")`` values recorded anywhere in the run, or when
    there are none the first root span's input: one item per argument when it is a mapping of
    arguments, else one item named ``"input"``. ``eval_output`` is every ``"output"`` and
    ``"state"`` value, in the order they were recorded, or when there are none the first root
    span's output named ``"output"``. A name recorded more than once follows the one rule of
    :mod:`evaltrace.trace.values`: with ``many=True`` its values are collected into a list,
    otherwise it is an error.

    The roots given are read as one run. When they belong to several traces (a capture around
    several top-level calls), their ``wrap`` values are pooled and the root span standing for
    the run is the first one with an input (or output); but one trace's value is never taken
    for the run's: a name recorded in more than one of the traces (as in a file holding several
    runs of one app), or, with nothing recorded, root spans of several traces that have an
    input (or output), raise :class:`~evaltrace.errors.MultipleTracesError`. Evaluate each
    trace of :func:`~evaltrace.trace.split_traces` on its own instead.

    When the run is one model call (its root span is an LLM span, as in a run of a
    ``@wrap(kind="llm")`` function), ``eval_metadata`` holds what :func:`last_llm_call` puts
    there.

    Args:
        trace: The trace (its roots).

    Returns:
        The evaluable, without expectation; without metadata unless the run is a model call.

    Raises:
        NoTraceError: The trace is empty.
        DuplicateWrapNameError: A name was recorded twice in one trace without ``many=True``.
        MultipleTracesError: The roots belong to several traces that do not read as one run.

    Example:
        >>> evaluable = root(trace)  # doctest: +SKIP
        >>> evaluable.output_value("answer")  # doctest: +SKIP
    """
    if not trace:
        raise _no_span(trace, "a root span")
    if len(trace) == 1 and not trace[0].children and not trace[0].span.named_values:
        # One span and nothing recorded (a run of an undecorated app): its input and output
        # are the run's, read without gathering values (bench_runner.py's c=50 figure).
        span = trace[0].span
        return checked_model(
            Evaluable,
            {
                "eval_input": _arguments(span.input),
                "eval_output": [_named_data("output", span.output)],
                "eval_metadata": llm_metadata(span) if isinstance(span, LLMSpan) else None,
            },
        )
    # One root is one trace: not split by trace id (each id read from its span), and no
    # side's values gathered when there are none: 22.5 us instead of 25.0 us for root() of
    # a 10-span trace (bench_stored.py's file, median of 7 in one process).
    traces = [list(trace)] if len(trace) == 1 else split_traces(trace)
    if len(traces) > 1:
        _check_names(traces)
    inputs: dict[str, JsonValue] = {}
    outputs: dict[str, JsonValue] = {}
    recorded = wrap_records(trace)
    if recorded:
        given = [value for value in recorded if value.purpose == "input"]
        if given:
            inputs = collect_values(given, "input")
        if len(given) < len(recorded):
            kept = [value for value in recorded if value.purpose != "input"] if given else recorded
            outputs = collect_values(kept, "output")
    first = traces[0][0].span
    return checked_model(
        Evaluable,
        {
            "eval_input": (
                _named(inputs) if inputs else _arguments(_root_with(traces, "input").input)
            ),
            "eval_output": (
                _named(outputs)
                if outputs
                else [_named_data("output", _root_with(traces, "output").output)]
            ),
            "eval_metadata": (
                llm_metadata(first) if len(traces) == 1 and isinstance(first, LLMSpan) else None
            ),
        },
    )


def last_llm_call(trace: Sequence[ObservationNode]) -> Evaluable:
    """Evaluate the model call that ended last.

    A model call is an LLM span. The one that records the call best stands for it: an
    instrumented client's span (``llm.*`` or ``gen_ai.*`` attributes with a model name or
    messages) over a ``@wrap(kind="llm")`` span whose input and output are the OpenAI request
    and response (:attr:`~evaltrace.trace.LLMSpan.source` ``"input_output"``), and either over a
    span that is an LLM span by its kind alone. A span counts only when no span below it
    records the call better, so the instrumented call inside a decorated function is chosen
    over the decorator's span, which ends after it.

    ``eval_input`` is one item ``"messages"``: the input messages as dictionaries with ``role``,
    ``content`` and ``tool_calls``; a span that records no messages (``@wrap(kind="llm")`` alone)
    adds its arguments, one item each. ``eval_output`` is ``"output"`` (the returned text) and,
    when the model asked for tools, ``"tool_calls"``. ``eval_metadata`` holds the span's model,
    provider, token counts and ids under the keys of :data:`LLM_METADATA_KEYS`
    (:func:`llm_metadata`).

    Raises:
        NoTraceError: The trace holds no model call.
    """
    return _span_evaluable(_pick(trace, _model_calls(trace), "an LLM span", latest=True))


def first_llm_call(trace: Sequence[ObservationNode]) -> Evaluable:
    """Evaluate the model call that started first, chosen and read as :func:`last_llm_call` does.

    Raises:
        NoTraceError: The trace holds no model call.
    """
    return _span_evaluable(_pick(trace, _model_calls(trace), "an LLM span", latest=False))


def by_name(name: str) -> TraceSelector:
    """Select the span called ``name`` that ended last.

    A model call is read as :func:`last_llm_call` reads one; any other span gives its input
    (one item per argument) and its output (``"output"``).

    Example:
        >>> run_and_evaluate(evaluator, app, question, from_trace=by_name("retrieve"))
        ...     # doctest: +SKIP
    """
    return _selector(lambda span: span.name == name, f"a span named {name!r}", f"by_name({name!r})")


def by_kind(kind: str) -> TraceSelector:
    """Select the span of the given kind that ended last.

    Kinds are the lower-case OpenInference kinds (``"llm"``, ``"tool"``, ``"retriever"``, ...);
    the comparison ignores case. Read as :func:`by_name` reads a span.
    """
    wanted = kind.lower()
    return _selector(
        lambda span: span.kind == wanted, f"a span of kind {wanted!r}", f"by_kind({wanted!r})"
    )


def select(predicate: SpanPredicate, *, description: str | None = None) -> TraceSelector:
    """Select the span satisfying ``predicate`` that ended last.

    Args:
        predicate: A test on a span view.
        description: What is looked for, for the error raised when nothing matches.

    Returns:
        The selector, read as :func:`by_name` reads a span.

    Example:
        >>> slow = select(lambda span: span.duration_ms > 500)  # doctest: +SKIP
    """
    looked_for = description or "a span matching the predicate"
    return _selector(predicate, looked_for, f"select({looked_for})")


SELECTOR_NAMES = "root, last_llm_call, first_llm_call, or name:SPAN (the span named SPAN)"
"""The selectors a name can give (:func:`named_selector`), as messages list them."""


def named_selector(text: str) -> TraceSelector:
    """The selector a name stands for, as command lines and files write it.

    Args:
        text: ``root``, ``last_llm_call``, ``first_llm_call``, or ``name:SPAN`` (the span
            named ``SPAN``, as :func:`by_name`).

    Raises:
        ValueError: ``text`` names no selector.

    Example:
        >>> named_selector("last_llm_call") is last_llm_call
        True
    """
    if text.startswith("name:") and text[5:]:
        return by_name(text[5:])
    named = {"root": root, "last_llm_call": last_llm_call, "first_llm_call": first_llm_call}
    if text not in named:
        raise ValueError(f"{text!r} is not a selector; use {SELECTOR_NAMES}")
    return named[text]


def _selector(predicate: SpanPredicate, looked_for: str, label: str) -> TraceSelector:
    def selector(trace: Sequence[ObservationNode]) -> Evaluable:
        return _span_evaluable(_pick(trace, predicate, looked_for, latest=True))

    selector.__name__ = selector.__qualname__ = label
    return selector


def _call_rank(span: ObserveSpan | LLMSpan) -> int:
    """How well a span records a model call (higher is better; -1: not a model call).

    2: read from the conventions; 1: from its OpenAI-shaped input and output; 0: an LLM span
    by its kind alone, or one that recorded no model name and no message.
    """
    if not isinstance(span, LLMSpan):
        return -1
    if span.source == "kind" or not (
        span.model is not None or span.input_messages or span.output_messages
    ):
        return 0
    return 2 if span.source == "conventions" else 1


def _model_calls(trace: Sequence[ObservationNode]) -> SpanPredicate:
    """A test for the LLM spans that stand for a model call (see :func:`last_llm_call`)."""
    nodes = list(walk_trace(trace))
    rank: dict[int, int] = {id(node): _call_rank(node.span) for node in nodes}
    below: dict[int, int] = {}  # id(node) -> the best rank of a span under it
    for node in reversed(nodes):  # children before their parents
        below[id(node)] = max(
            (max(rank[id(child)], below[id(child)]) for child in node.children), default=-1
        )
    chosen = {
        id(node.span) for node in nodes if rank[id(node)] >= 0 and rank[id(node)] >= below[id(node)]
    }
    return lambda span: id(span) in chosen


def _pick(
    trace: Sequence[ObservationNode], predicate: SpanPredicate, looked_for: str, *, latest: bool
) -> ObserveSpan | LLMSpan:
    """The matching span that ended last (``latest``) or started first; ties go to walk order."""
    best: ObserveSpan | LLMSpan | None = None
    for node in walk_trace(trace):
        span = node.span
        if not predicate(span):
            continue
        if best is None:
            best = span
        elif latest and span.record.end_time_ns >= best.record.end_time_ns:
            best = span
        elif not latest and span.record.start_time_ns < best.record.start_time_ns:
            best = span
    if best is None:
        raise _no_span(trace, looked_for)
    return best


def _no_span(trace: Sequence[ObservationNode], looked_for: str) -> NoTraceError:
    if not trace:
        return NoTraceError(
            f"Cannot select {looked_for}: the trace is empty (no span was captured). Run the "
            "code inside capture_traces() and make sure it starts spans: decorate its "
            "functions with @wrap or instrument its model client."
        )
    seen: dict[tuple[str, str], None] = {}
    for node in walk_trace(trace):
        seen.setdefault((node.span.name, node.span.kind), None)
    listed = [f"{name!r} ({kind})" for name, kind in list(seen)[:_NAMES_LISTED]]
    more = len(seen) - len(listed)
    present = ", ".join(listed) + (f" and {more} more" if more > 0 else "")
    return NoTraceError(
        f"Found no {looked_for.removeprefix('a ').removeprefix('an ')} in the trace. "
        f"Spans present (name and kind): {present}."
    )


def _span_evaluable(span: ObserveSpan | LLMSpan) -> Evaluable:
    if isinstance(span, LLMSpan):
        return _llm_evaluable(span)
    return checked_model(
        Evaluable,
        {"eval_input": _arguments(span.input), "eval_output": [_named_data("output", span.output)]},
    )


def _llm_evaluable(span: LLMSpan) -> Evaluable:
    messages: list[JsonValue] = [message.as_dict() for message in span.input_messages]
    outputs = [_named_data("output", span.output_text)]
    if span.tool_calls:
        calls: list[JsonValue] = [call.as_dict() for call in span.tool_calls]
        outputs.append(_named_data("tool_calls", calls))
    inputs = [_named_data("messages", messages)]
    if not messages:  # an LLM span by its kind alone: its arguments are what the model was asked
        inputs += [item for item in _arguments(span.input) if item.name != "messages"]
    return checked_model(
        Evaluable,
        {"eval_input": inputs, "eval_output": outputs, "eval_metadata": llm_metadata(span)},
    )


def llm_metadata(span: LLMSpan) -> dict[str, JsonValue]:
    """What a model call's span recorded, as ``eval_metadata`` (:data:`LLM_METADATA_KEYS`).

    A key whose value the span did not record is left out.

    Example:
        >>> llm_metadata(span)  # doctest: +SKIP
        {'llm_model': 'gpt-4o-mini', 'llm_input_tokens': 8, ..., 'span_id': '00f067aa0ba902b7'}
    """
    usage = span.usage
    values: tuple[JsonValue, ...] = (
        span.model,
        span.provider,
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.cache_read_tokens,
        usage.cache_creation_tokens,
        f"{span.trace_id:032x}",
        f"{span.span_id:016x}",
    )
    return {
        key: value
        for key, value in zip(LLM_METADATA_KEYS, values, strict=True)
        if value is not None
    }


def _check_names(traces: list[list[ObservationNode]]) -> None:
    """Refuse a name recorded in several traces (as in several runs of one app)."""
    positions: dict[str, set[int]] = {}
    listed: dict[str, bool] = {}
    for position, one in enumerate(traces):
        for node in walk_trace(one):
            for value in node.span.named_values:
                positions.setdefault(value.name, set()).add(position)
                listed[value.name] = listed.get(value.name, True) and value.many
    for name, where in positions.items():
        if len(where) > 1 and not listed[name]:
            raise _several_traces(
                traces,
                f"wrap(..., name={name!r}) was recorded in {len(where)} of them, as happens when "
                "a file holds several runs of one app",
            )


def _root_with(
    traces: list[list[ObservationNode]], what: Literal["input", "output"]
) -> ObserveSpan | LLMSpan:
    """The root span whose input or output stands for the run's, when nothing was recorded.

    In one trace, the first root. Across several, the first root that has one, provided the
    roots that have one belong to a single trace: else which trace is the run is anyone's guess.
    """
    if len(traces) == 1:
        return traces[0][0].span
    having = [
        (position, node.span)
        for position, one in enumerate(traces)
        for node in one
        if getattr(node.span, what) is not None
    ]
    if len({position for position, _ in having}) > 1:
        raise _several_traces(
            traces,
            f'no wrap(..., purpose="{what}") value was recorded, and the root spans of several '
            f"of them have an {what}, so the run's {what} would be one of theirs (record it "
            f'with wrap(..., purpose="{what}") to read the traces as one run)',
        )
    return having[0][1] if having else traces[0][0].span


def _several_traces(traces: list[list[ObservationNode]], reason: str) -> MultipleTracesError:
    trace_ids = [f"{one[0].span.trace_id:032x}" for one in traces]
    listed = ", ".join(trace_ids[:_TRACES_LISTED])
    if len(trace_ids) > _TRACES_LISTED:
        listed += f" and {len(trace_ids) - _TRACES_LISTED} more"
    return MultipleTracesError(
        f"root() reads one run, but the trace holds {len(trace_ids)} traces ({listed}) and "
        f"{reason}. Evaluate each trace on its own: "
        "[root(run) for run in evaltrace.trace.split_traces(trace)], or on the command line "
        "`evaltrace trace FILE --select root` (one evaluable per trace) or "
        "`evaltrace trace FILE --trace-id ID --select root`.",
        trace_ids=trace_ids,
    )


def _arguments(value: Any) -> list[NamedData]:
    """A span input as named data: one item per bound argument, else one item ``"input"``."""
    if value is None:
        return []
    if isinstance(value, dict) and not is_truncated(value):
        return [
            _named_data(name, item)
            for name, item in value.items()
            if isinstance(name, str) and name
        ]
    return [_named_data("input", value)]


def _named_data(name: str, value: JsonValue) -> NamedData:
    return checked_model(NamedData, {"name": name, "value": value})


def _named(values: dict[str, JsonValue]) -> list[NamedData]:
    return [_named_data(name, value) for name, value in values.items()]
