from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from opentelemetry.trace import Status, StatusCode

from evaltrace.capture.values import WrapRecord
from evaltrace.trace import (
    LLMSpan,
    ObservationNode,
    SpanError,
    SpanEventRecord,
    SpanRecord,
    build_trace,
    build_trace_and_cycles,
    span_view,
    split_traces,
    trace_to_text,
    walk_trace,
)
from span_factory import Spans, wrap_event


@pytest.fixture
def spans() -> Iterator[Spans]:
    factory = Spans()
    yield factory
    factory.provider.shutdown()


def names(nodes: list[ObservationNode]) -> list[str]:
    return [node.span.name for node in nodes]


def test_children_nest_under_their_parent_ordered_by_start_time(spans: Spans) -> None:
    root = spans.start("root", 0)
    late = spans.start("late", 20, parent=root)
    early = spans.start("early", 10, parent=root)
    grandchild = spans.start("grandchild", 21, parent=late)
    for span, end in ((grandchild, 22), (late, 25), (early, 15), (root, 30)):
        spans.end(span, end)

    trace = build_trace(spans.finished())

    assert names(trace) == ["root"]
    assert names(trace[0].children) == ["early", "late"]
    assert names(trace[0].children[1].children) == ["grandchild"]
    assert trace[0].children[0].span.parent_span_id == trace[0].span.span_id


def test_roots_are_ordered_by_start_time(spans: Spans) -> None:
    second = spans.start("second", 5)
    first = spans.start("first", 1)
    spans.end(second, 6)
    spans.end(first, 2)

    assert names(build_trace(spans.finished())) == ["first", "second"]


def test_span_whose_parent_is_absent_becomes_a_root_with_its_subtree(spans: Spans) -> None:
    root = spans.start("root", 0)
    orphan = spans.start("orphan", 1, parent=root)
    child = spans.start("child", 2, parent=orphan)
    for span, end in ((child, 3), (orphan, 4), (root, 5)):
        spans.end(span, end)
    without_root = [span for span in spans.finished() if span.name != "root"]

    trace = build_trace(without_root)

    assert names(trace) == ["orphan"]
    assert names(trace[0].children) == ["child"]


def test_a_span_given_twice_is_kept_once(spans: Spans) -> None:
    spans.end(spans.start("only", 0), 1)
    finished = spans.finished()

    trace = build_trace([*finished, *finished])

    assert len(list(walk_trace(trace))) == 1


def test_parent_links_that_form_a_cycle_lose_no_span() -> None:
    first = SpanRecord(
        trace_id=1, span_id=1, parent_span_id=2, name="a", start_time_ns=1, end_time_ns=5
    )
    second = SpanRecord(
        trace_id=1, span_id=2, parent_span_id=1, name="b", start_time_ns=2, end_time_ns=4
    )

    trace = build_trace([second, first])

    assert names(trace) == ["a"]
    assert names(trace[0].children) == ["b"]


def record(span_id: int, parent: int | None, name: str, start: int) -> SpanRecord:
    return SpanRecord(
        trace_id=1,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_time_ns=start,
        end_time_ns=start + 10,
    )


def test_a_parent_cycle_is_reported_from_its_earliest_span() -> None:
    spans = [record(3, 2, "c", 3), record(1, 3, "a", 1), record(2, 1, "b", 2)]

    trace, cycles = build_trace_and_cycles(spans)

    (cycle,) = cycles
    assert [span.name for span in cycle.spans] == ["a", "c", "b"]  # each the parent of the last
    assert str(cycle) == (
        "the parent links of spans 0000000000000001 ('a') -> 0000000000000003 ('c') -> "
        "0000000000000002 ('b') -> 0000000000000001 go round in a loop"
    )
    assert names(trace) == ["a"]  # broken at its earliest span: no span is lost
    assert len(list(walk_trace(trace))) == 3


def test_a_span_that_is_its_own_parent_is_a_cycle_of_one() -> None:
    trace, cycles = build_trace_and_cycles([record(1, 1, "a", 1), record(2, 1, "b", 2)])

    (cycle,) = cycles
    assert str(cycle) == "span 0000000000000001 ('a') names itself as its parent"
    assert names(trace) == ["a"] and names(trace[0].children) == ["b"]


def test_a_span_below_a_parent_cycle_stays_under_its_parent() -> None:
    below = record(3, 2, "below", 0)  # the earliest span, hanging under the loop a <-> b
    spans = [below, record(1, 2, "a", 1), record(2, 1, "b", 2)]

    trace, cycles = build_trace_and_cycles(spans)

    assert [[span.name for span in cycle.spans] for cycle in cycles] == [["a", "b"]]
    assert names(trace) == ["a"]
    assert names(trace[0].children) == ["b"]
    assert names(trace[0].children[0].children) == ["below"]


def test_a_trace_without_a_cycle_reports_none(spans: Spans) -> None:
    top = spans.start("top", 0)
    spans.end(spans.start("child", 1, parent=top), 2)
    spans.end(top, 3)

    trace, cycles = build_trace_and_cycles(spans.finished())

    assert cycles == [] and names(trace) == ["top"]


def test_split_traces_gives_one_trace_per_trace_id_in_start_order(spans: Spans) -> None:
    first = spans.start("first run", 0)
    second = spans.start("second run", 1)
    late_part = spans.start("late part of the first run", 2, parent=first)
    for span, end in ((late_part, 3), (second, 4), (first, 5)):
        spans.end(span, end)
    # Without its root span, the first run's trace has a second root (an orphan).
    finished = [span for span in spans.finished() if span.name != "first run"]
    finished.append(spans.start("third run", 6))
    finished[-1].end()

    traces = split_traces(build_trace(finished))

    assert [names(one) for one in traces] == [
        ["second run"],
        ["late part of the first run"],
        ["third run"],
    ]
    assert len({node.span.trace_id for one in traces for node in one}) == 3


def test_split_traces_keeps_the_roots_of_one_trace_together(spans: Spans) -> None:
    run = spans.start("run", 0)
    one = spans.start("one", 1, parent=run)
    other = spans.start("other", 2)
    two = spans.start("two", 3, parent=run)
    for span in (one, other, two, run):
        spans.end(span, 4)
    without_run = [span for span in spans.finished() if span.name != "run"]

    traces = split_traces(build_trace(without_run))

    assert [names(one) for one in traces] == [["one", "two"], ["other"]]


def test_empty_input_gives_an_empty_trace() -> None:
    assert build_trace([]) == []


def test_walk_is_depth_first_parents_before_children(spans: Spans) -> None:
    root = spans.start("root", 0)
    a = spans.start("a", 1, parent=root)
    a1 = spans.start("a1", 2, parent=a)
    b = spans.start("b", 3, parent=root)
    for span, end in ((a1, 2.5), (a, 2.8), (b, 4), (root, 5)):
        spans.end(span, end)

    trace = build_trace(spans.finished())

    assert [node.span.name for node in trace[0].walk()] == ["root", "a", "a1", "b"]
    assert [node.span.name for node in walk_trace(trace)] == ["root", "a", "a1", "b"]


def test_find_returns_every_node_of_that_name_depth_first(spans: Spans) -> None:
    root = spans.start("root", 0)
    first = spans.start("search", 1, parent=root, attributes={"input.value": '"one"'})
    nested = spans.start("search", 2, parent=first, attributes={"input.value": '"two"'})
    last = spans.start("search", 4, parent=root, attributes={"input.value": '"three"'})
    for span, end in ((nested, 3), (first, 3.5), (last, 5), (root, 6)):
        spans.end(span, end)

    found = build_trace(spans.finished())[0].find("search")

    assert [node.span.input for node in found] == ["one", "two", "three"]
    assert build_trace(spans.finished())[0].find("missing") == []


def test_find_all_tests_each_span_view(spans: Spans) -> None:
    root = spans.start("root", 0)
    llm = spans.start("chat", 1, parent=root, attributes={"openinference.span.kind": "LLM"})
    tool = spans.start("tool", 2, parent=root, attributes={"openinference.span.kind": "TOOL"})
    for span, end in ((llm, 1.5), (tool, 3), (root, 4)):
        spans.end(span, end)

    trace = build_trace(spans.finished())

    assert names(trace[0].find_all(lambda span: isinstance(span, LLMSpan))) == ["chat"]
    assert names(trace[0].find_all(lambda span: span.kind == "tool")) == ["tool"]


def test_records_replace_the_values_read_from_the_span_events(spans: Spans) -> None:
    root = spans.start("root", 0)
    marker = {"__evaltrace_truncated__": True, "original_bytes": 9000, "preview": "aaa"}
    wrap_event(root, "document", "state", marker)
    spans.end(root, 1)
    finished = spans.finished()
    span_id = finished[0].context.span_id
    full = WrapRecord(name="document", purpose="state", value="a" * 9000, span_id=span_id)

    from_events = build_trace(finished)[0].span.named_values
    from_records = build_trace(finished, [full])[0].span.named_values

    assert [(value.name, value.value) for value in from_events] == [("document", marker)]
    assert from_records == (full,)


def test_values_without_a_matching_span_go_to_the_earliest_root(spans: Spans) -> None:
    spans.end(spans.start("later", 5), 6)
    spans.end(spans.start("earliest", 1), 2)
    loose = WrapRecord(name="answer", purpose="output", value=42)
    unknown = WrapRecord(name="other", purpose="output", value=1, span_id=12345)

    trace = build_trace(spans.finished(), [loose, unknown])

    assert trace[0].span.name == "earliest"
    assert trace[0].span.named_values == (loose, unknown)
    assert trace[1].span.named_values == ()


def test_to_text_outlines_the_tree(spans: Spans) -> None:
    root = spans.start(
        "answer_question",
        0,
        attributes={
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": "Weather in Paris?"}),
            "output.value": json.dumps("It's sunny."),
        },
    )
    wrap_event(root, "answer", "output", "It's sunny.")
    lookup = spans.start(
        "lookup_city", 10, parent=root, attributes={"openinference.span.kind": "TOOL"}
    )
    lookup.record_exception(KeyError("Paris"))
    lookup.set_status(Status(StatusCode.ERROR, "KeyError: 'Paris'"))
    spans.end(lookup, 30)
    chat = spans.start(
        "chat gpt-4o-mini",
        50,
        parent=root,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 25,
            "gen_ai.usage.output_tokens": 4,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "It's sunny."}]}]
            ),
        },
    )
    spans.end(chat, 1150)
    root.set_status(Status(StatusCode.OK))
    spans.end(root, 1250)

    text = trace_to_text(build_trace(spans.finished()))

    assert text == "\n".join(
        [
            "[chain] answer_question (1.25 s, ok)",
            '  input: {"question":"Weather in Paris?"}',
            '  output: "It\'s sunny."',
            '  output answer: "It\'s sunny."',
            "  [tool] lookup_city (20.0 ms, error)",
            "    error: KeyError: 'Paris'",
            "  [llm] chat gpt-4o-mini (1.10 s, unset) model=gpt-4o-mini tokens=25->4",
            "    user: Weather in Paris?",
            "    output: It's sunny.",
        ]
    )


def test_to_text_shortens_long_values_to_one_line(spans: Spans) -> None:
    span = spans.start("big", 0, attributes={"input.value": json.dumps("word\n" * 200)})
    spans.end(span, 1)

    lines = build_trace(spans.finished())[0].to_text().splitlines()

    assert len(lines) == 2
    assert lines[1].startswith('  input: "word\\nword')
    assert lines[1].endswith("…")
    assert len(lines[1]) <= 2 + len("input: ") + 120


def test_to_text_keeps_each_span_on_its_own_line_whatever_its_name(spans: Spans) -> None:
    attributes = {"openinference.span.kind": "chain\n[tool]"}
    spans.end(spans.start("first\n[llm] forged", 0, attributes=attributes), 1)

    lines = build_trace(spans.finished())[0].to_text().splitlines()

    assert lines == ["[chain [tool]] first [llm] forged (1.0 ms, unset)"]


def test_to_text_shows_only_the_last_messages_of_a_long_conversation(spans: Spans) -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": f"turn {index}"}]}
        for index in range(6)
    ]
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages)}
    spans.end(spans.start("chat", 0, attributes=attributes), 1)

    lines = build_trace(spans.finished())[0].to_text().splitlines()

    assert lines[1:] == [
        "  (3 earlier messages)",
        "  user: turn 3",
        "  user: turn 4",
        "  user: turn 5",
    ]


def test_build_trace_accepts_records_and_sdk_spans_alike(spans: Spans) -> None:
    root = spans.start("root", 0)
    child = spans.start("child", 1, parent=root)
    spans.end(child, 2)
    spans.end(root, 3)
    finished = spans.finished()
    mixed = [SpanRecord.from_readable(finished[0]), finished[1]]

    assert build_trace(mixed) == build_trace(finished)


# Views read their fields when first asked


class CountingAttributes(dict[str, object]):
    """Span attributes that count the reads of each key."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.reads: dict[str, int] = {}

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.reads[key] = self.reads.get(key, 0) + 1
        return super().get(key, default)


def test_a_view_decodes_its_input_and_output_only_when_asked_and_once() -> None:
    attributes = CountingAttributes(
        {"input.value": '{"q": 1}', "output.value": '"a"', "openinference.span.kind": "TOOL"}
    )
    record = SpanRecord(trace_id=1, span_id=2, name="n", start_time_ns=0, end_time_ns=1)
    object.__setattr__(record, "attributes", attributes)

    view = span_view(record)
    assert attributes.reads.get("input.value", 0) == 0

    assert (view.input, view.input, view.output) == ({"q": 1}, {"q": 1}, "a")
    assert attributes.reads["input.value"] == 1 and attributes.reads["output.value"] == 1


def test_a_view_read_on_demand_equals_one_with_every_field_given() -> None:
    record = SpanRecord(
        trace_id=1,
        span_id=2,
        parent_span_id=3,
        name="call",
        start_time_ns=1_000_000,
        end_time_ns=3_000_000,
        attributes={"llm.model_name": "m", "output.value": "hi", "openinference.span.kind": "LLM"},
        status_code="ERROR",
        status_description="boom",
    )
    view = span_view(record)
    eager = LLMSpan(
        **{f.name: getattr(span_view(record), f.name) for f in dataclasses.fields(view)}
    )

    assert isinstance(view, LLMSpan)
    assert view == eager and repr(view) == repr(eager)
    assert (view.model, view.error, view.duration_ms) == (
        "m",
        SpanError(type=None, message="boom"),
        2.0,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.name = "other"  # type: ignore[misc]


def test_a_trace_whose_parent_starts_after_its_child_is_linked_as_any_other() -> None:
    child = SpanRecord(
        trace_id=1, span_id=2, parent_span_id=1, name="child", start_time_ns=5, end_time_ns=6
    )
    parent = SpanRecord(trace_id=1, span_id=1, name="parent", start_time_ns=7, end_time_ns=9)

    roots, cycles = build_trace_and_cycles([child, parent])

    assert names(roots) == ["parent"] and names(roots[0].children) == ["child"] and cycles == []


def test_a_record_copies_every_field_of_a_finished_sdk_span(spans: Spans) -> None:
    parent = spans.start("parent", 0)
    span = spans.start("step", 1, parent=parent, attributes={"n": 3, "tags": ("a", "b")})
    span.add_event("note", {"k": "v"}, timestamp=spans.t0 + 2)
    span.set_status(Status(StatusCode.ERROR, "it broke"))
    spans.end(span, 4)
    spans.end(parent, 5)
    finished = spans.finished()[0]

    record = SpanRecord.from_readable(finished)

    context, parent_context = finished.context, finished.parent
    assert context is not None and parent_context is not None
    assert record == SpanRecord(
        trace_id=context.trace_id,
        span_id=context.span_id,
        parent_span_id=parent_context.span_id,
        name="step",
        start_time_ns=spans.t0 + 1_000_000,
        end_time_ns=spans.t0 + 4_000_000,
        attributes={"n": 3, "tags": ("a", "b")},
        events=(SpanEventRecord(name="note", timestamp_ns=spans.t0 + 2, attributes={"k": "v"}),),
        status_code="ERROR",
        status_description="it broke",
        kind="INTERNAL",
        resource_attributes=finished.resource.attributes,
    )


def test_a_record_holds_its_own_copy_of_the_span_attributes(spans: Spans) -> None:
    span = spans.start("step", 0, attributes={"n": 3})
    spans.end(span, 1)
    finished = spans.finished()[0]

    record = SpanRecord.from_readable(finished)
    record.attributes["n"] = 4

    assert finished.attributes == {"n": 3}
