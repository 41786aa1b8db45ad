"""Reading a run's named values and a retriever span's documents: one rule for repeated names."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from evaltrace.errors import DuplicateWrapNameError
from evaltrace.trace import build_trace
from evaltrace.trace.values import recorded_value, recorded_values, span_documents
from span_factory import Spans, wrap_event


@pytest.fixture
def spans() -> Iterator[Spans]:
    factory = Spans()
    yield factory
    factory.provider.shutdown()


def test_a_name_recorded_twice_without_many_is_an_error(spans: Spans) -> None:
    app = spans.start("app", 0)
    wrap_event(app, "answer", "output", "first")
    wrap_event(app, "answer", "state", "second")
    spans.end(app, 1)

    with pytest.raises(DuplicateWrapNameError) as caught:
        recorded_values(build_trace(spans.finished()))

    message = str(caught.value)
    assert "'answer'" in message
    assert "2" in message
    assert "many=True" in message


def test_many_values_are_collected_into_one_list_in_record_order(spans: Spans) -> None:
    app = spans.start("app", 0)
    for index in range(3):
        step = spans.start("step", index + 1, parent=app)
        wrap_event(step, "retrieved", "state", f"doc {index}", many=True)
        spans.end(step, index + 1.5)
    wrap_event(app, "answer", "output", "done")
    spans.end(app, 10)

    values = recorded_values(build_trace(spans.finished()))

    assert values == {"retrieved": ["doc 0", "doc 1", "doc 2"], "answer": "done"}
    assert list(values) == ["retrieved", "answer"]


def test_one_name_may_be_both_an_input_and_an_output(spans: Spans) -> None:
    app = spans.start("app", 0)
    wrap_event(app, "profile", "input", {"name": "Ada"})
    wrap_event(app, "profile", "output", {"name": "Ada", "seen": True})
    spans.end(app, 1)
    trace = build_trace(spans.finished())

    assert recorded_values(trace, "input") == {"profile": {"name": "Ada"}}
    assert recorded_values(trace, "output") == {"profile": {"name": "Ada", "seen": True}}


def test_one_value_is_read_by_name_whatever_other_names_hold(spans: Spans) -> None:
    app = spans.start("app", 0)
    wrap_event(app, "draft", "state", "a")
    wrap_event(app, "draft", "state", "b")  # repeated, but not the name asked for
    wrap_event(app, "answer", "output", "Paris")
    spans.end(app, 1)
    trace = build_trace(spans.finished())

    assert recorded_value(trace, "answer") == "Paris"
    with pytest.raises(DuplicateWrapNameError, match="'draft'"):
        recorded_value(trace, "draft")


def test_a_name_never_recorded_is_a_key_error(spans: Spans) -> None:
    app = spans.start("app", 0)
    wrap_event(app, "question", "input", "q")
    spans.end(app, 1)

    with pytest.raises(KeyError):
        recorded_value(build_trace(spans.finished()), "question")  # an input, not an output


def test_openinference_document_attributes_are_the_documents(spans: Spans) -> None:
    attributes = {
        "retrieval.documents.1.document.content": "second",
        "retrieval.documents.0.document.content": "first",
        "retrieval.documents.0.document.id": "d1",
        "retrieval.documents.0.document.metadata": json.dumps({"url": "https://a"}),
        "output.value": json.dumps(["ignored"]),
        "output.mime_type": "application/json",
    }
    spans.end(spans.start("search", 0, attributes=attributes), 1)

    span = build_trace(spans.finished())[0].span

    assert span_documents(span) == [
        {"content": "first", "id": "d1", "metadata": {"url": "https://a"}},
        {"content": "second"},
    ]


@pytest.mark.parametrize(
    ("output", "documents"),
    [
        (["a", "b"], ["a", "b"]),
        ({"documents": ["a"], "query": "q"}, ["a"]),
        ({"answer": "no documents"}, None),
    ],
)
def test_a_span_output_gives_the_documents_when_it_holds_a_list(
    spans: Spans, output: object, documents: list[str] | None
) -> None:
    attributes = {"output.value": json.dumps(output), "output.mime_type": "application/json"}
    spans.end(spans.start("search", 0, attributes=attributes), 1)

    assert span_documents(build_trace(spans.finished())[0].span) == documents
