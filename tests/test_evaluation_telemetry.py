"""Evaluations as telemetry: gen_ai.evaluation.result in the trace of the run they scored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

import evaltrace
from evaltrace import Evaluable, Evaluation, evaluate_traces, run_and_evaluate, wrap
from evaltrace.capture.config import settings_from_env
from evaltrace.capture.exporters import JsonLinesExporter
from evaltrace.engine import evaluate_inputs
from evaltrace.errors import ConfigurationError
from evaltrace.testing import OTLPReceiver, ReceivedSpan

RESULT_EVENT = "gen_ai.evaluation.result"


@wrap(kind="agent")
def capital(country: str) -> str:
    return {"France": "Paris"}.get(country, "unknown")


def is_paris(evaluable: Evaluable) -> Evaluation:
    paris = evaluable.output_value() == "Paris"
    return Evaluation(score=1.0 if paris else 0.0, reasoning="said Paris" if paris else "did not")


def broken(evaluable: Evaluable) -> float:
    raise LookupError("no reference answer")


@pytest.fixture
def collector() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver
    evaltrace.shutdown(timeout_millis=1000)


def export_to(collector: OTLPReceiver, **options: bool) -> None:
    exporter = OTLPSpanExporter(endpoint=collector.traces_url, timeout=5)
    evaltrace.init(exporters=[exporter], **options)


def evaluation_spans(collector: OTLPReceiver) -> list[ReceivedSpan]:
    return [span for span in collector.spans if span.name.startswith("evaluation ")]


def test_each_evaluation_is_a_result_event_under_the_root_of_the_run_it_scored(
    collector: OTLPReceiver,
) -> None:
    export_to(collector, export_evaluations=True)

    evaltrace.run(evaluate_inputs(capital, ["France", "Spain"], [is_paris, broken]))
    assert evaltrace.flush()

    runs = {span.trace_id: span for span in collector.spans if span.parent_span_id is None}
    evaluations = evaluation_spans(collector)
    assert len(runs) == 2 and len(evaluations) == 4
    for span in evaluations:
        assert span.parent_span_id == runs[span.trace_id].span_id
        assert span.attributes["openinference.span.kind"] == "EVALUATOR"
        ((name, attributes),) = span.events
        assert name == RESULT_EVENT
        assert attributes.items() <= span.attributes.items()  # on the span too, for queries
    events = {
        (
            runs[span.trace_id].attributes["input.value"],
            span.events[0][1]["gen_ai.evaluation.name"],
        ): span.events[0][1]
        for span in evaluations
    }
    assert events['"France"', "is_paris"] == {
        "gen_ai.evaluation.name": "is_paris",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "said Paris",
    }
    assert events['"Spain"', "is_paris"]["gen_ai.evaluation.score.label"] == "fail"
    errored = events['"France"', "broken"]
    assert errored["error.type"] == "LookupError"
    assert "gen_ai.evaluation.score.value" not in errored
    assert "gen_ai.evaluation.score.label" not in errored


def test_the_label_follows_the_threshold_given(collector: OTLPReceiver) -> None:
    export_to(collector, export_evaluations=True)

    def half(evaluable: Evaluable) -> float:
        return 0.6

    evaltrace.run(evaluate_inputs(capital, ["France"], [half], threshold=0.8))
    assert evaltrace.flush()

    ((_, attributes),) = evaluation_spans(collector)[0].events
    assert attributes["gen_ai.evaluation.score.label"] == "fail"


def test_evaluations_are_not_exported_unless_asked(collector: OTLPReceiver) -> None:
    export_to(collector)

    evaltrace.run(evaluate_inputs(capital, ["France"], [is_paris]))
    assert evaltrace.flush()

    assert [span.name for span in collector.spans] == ["capital", "capital"]  # run, function
    assert evaluation_spans(collector) == []


def test_run_and_evaluate_exports_its_evaluation(collector: OTLPReceiver) -> None:
    export_to(collector, export_evaluations=True)

    evaltrace.run(run_and_evaluate(is_paris, capital, "France"))
    assert evaltrace.flush()

    (span,) = evaluation_spans(collector)
    assert span.name == "evaluation is_paris"


def test_stored_traces_get_their_evaluations_in_their_own_trace(
    collector: OTLPReceiver, tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    evaltrace.init(exporters=[JsonLinesExporter(path)])
    capital("France")
    assert evaltrace.flush()
    evaltrace.shutdown()
    (stored,) = evaltrace.load_traces(path)
    export_to(collector, export_evaluations=True)

    evaltrace.run(evaluate_traces(path, [is_paris]))
    assert evaltrace.flush()

    # Nothing of the app ran again: the evaluation, and the run's statistics at its end.
    assert all(span.name.startswith("evaluation ") for span in collector.spans)
    (span,) = [span for span in collector.spans if span.name == "evaluation is_paris"]
    (summary,) = [span for span in collector.spans if span.name.startswith("evaluation run ")]
    assert summary.trace_id != span.trace_id
    assert span.trace_id == f"{stored.span.trace_id:032x}"
    assert span.parent_span_id == f"{stored.span.span_id:016x}"
    assert span.events[0][1]["gen_ai.evaluation.score.value"] == 1.0


def test_the_environment_variable_turns_the_export_on() -> None:
    assert settings_from_env({"EVALTRACE_EXPORT_EVALUATIONS": "1"}).export_evaluations
    assert not settings_from_env({}).export_evaluations


def test_init_refuses_a_flag_that_is_not_a_bool() -> None:
    with pytest.raises(ConfigurationError, match="export_evaluations expects True or False"):
        evaltrace.init(export_evaluations="yes")  # type: ignore[arg-type]
