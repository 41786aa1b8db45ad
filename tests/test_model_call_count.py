"""Counting a trace's model calls (app_model_usage) over traces of several spans."""

from __future__ import annotations

from typing import Any

from evaltrace.llm import ModelUsage, app_model_usage
from evaltrace.llm.calls import UNKNOWN_MODEL
from evaltrace.trace import ObservationNode, SpanRecord, build_trace

TRACE = 0x5B8EFFF798038103D269B633813FC60C


def span(span_id: int, parent: int | None, kind: str, start: int, **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=f"{kind.lower()}{span_id}",
        start_time_ns=start,
        end_time_ns=start + 100,
        attributes={"openinference.span.kind": kind, **attributes},
    )


def model_call(span_id: int, parent: int | None, start: int, model: str, tokens: int) -> SpanRecord:
    return span(
        span_id,
        parent,
        "LLM",
        start,
        **{
            "llm.model_name": model,
            "llm.token_count.prompt": tokens,
            "llm.token_count.completion": 1,
        },
    )


def trace(*records: SpanRecord) -> list[ObservationNode]:
    return build_trace(records)


def test_a_trace_of_several_spans_without_a_model_call_counts_none() -> None:
    roots = trace(span(1, None, "AGENT", 0), span(2, 1, "TOOL", 1), span(3, 2, "CHAIN", 2))

    assert app_model_usage(roots) == {}


def test_sibling_model_calls_are_each_counted_under_their_model() -> None:
    roots = trace(
        span(1, None, "AGENT", 0),
        model_call(2, 1, 1, "model-a", 10),
        span(3, 1, "TOOL", 2),
        model_call(4, 1, 3, "model-a", 5),
        model_call(5, 3, 4, "model-b", 7),
    )

    assert app_model_usage(roots) == {
        "model-a": ModelUsage(calls=2, input_tokens=15, output_tokens=2),
        "model-b": ModelUsage(calls=1, input_tokens=7, output_tokens=1),
    }


def test_a_chain_of_nested_model_calls_counts_only_the_innermost() -> None:
    roots = trace(
        span(1, None, "LLM", 0),
        span(2, 1, "LLM", 1),
        model_call(3, 2, 2, "model-a", 10),
    )

    assert app_model_usage(roots) == {
        "model-a": ModelUsage(calls=1, input_tokens=10, output_tokens=1)
    }


def test_a_model_call_below_another_through_other_spans_counts_the_inner_one() -> None:
    roots = trace(
        span(1, None, "AGENT", 0),
        span(2, 1, "LLM", 1),
        span(3, 2, "TOOL", 2),
        model_call(4, 3, 3, "model-a", 10),
        span(5, 1, "LLM", 4),
    )

    assert app_model_usage(roots) == {
        "model-a": ModelUsage(calls=1, input_tokens=10, output_tokens=1),
        UNKNOWN_MODEL: ModelUsage(calls=1, calls_without_tokens=1),
    }


def test_traces_with_the_same_counts_read_equal_and_others_differ() -> None:
    first = app_model_usage(trace(model_call(1, None, 0, "model-a", 3)))
    again = app_model_usage(trace(model_call(1, None, 0, "model-a", 3)))
    other = app_model_usage(trace(model_call(1, None, 0, "model-a", 4)))

    assert first == again == {"model-a": ModelUsage(calls=1, input_tokens=3, output_tokens=1)}
    assert other == {"model-a": ModelUsage(calls=1, input_tokens=4, output_tokens=1)}


def test_model_calls_by_their_kind_alone_each_have_their_own_parameters() -> None:
    first, second = (node.span for node in trace(span(1, None, "LLM", 0), span(2, None, "LLM", 1)))

    assert first.parameters == second.parameters == {}
    assert first.parameters is not second.parameters
    assert (first.model, first.usage.input_tokens, first.source) == (None, None, "kind")
