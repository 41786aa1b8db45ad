"""A real collector: an app configured only by OTEL_* variables exports to Arize Phoenix over
OTLP/HTTP and over gRPC, and the spans read back through Phoenix's REST API are the app's.

Phoenix lives in a virtual environment of its own, which the integration tier of ``.ci/run``
builds; ``EVALTRACE_PHOENIX`` names its ``phoenix`` executable. Without it the test is
skipped, except under CI (``CI`` set), where a missing integration part fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaltrace import LLMSpan, last_llm_call, load_traces
from evaltrace.testing import PhoenixServer
from serve_process import CHECKS, ServeProcess, app_spans, provider


@pytest.fixture(scope="module")
def phoenix() -> Iterator[PhoenixServer]:
    executable = os.environ.get("EVALTRACE_PHOENIX")
    if not executable:
        reason = (
            "EVALTRACE_PHOENIX is not set: it names the phoenix executable of a virtual "
            "environment with arize-phoenix (bash .ci/run builds one)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"the integration tier is missing under CI: {reason}")
        pytest.skip(reason)
    server = PhoenixServer(executable)
    server.start()
    try:
        yield server
    finally:
        server.stop()


APP = """
import openai
import evaltrace
from evaltrace.testing import FakeJudgeServer

evaltrace.init(instrument=["openai"])

@evaltrace.wrap(kind="retriever")
def retrieve(question):
    return ["Paris is the capital of France."]

@evaltrace.wrap(kind="agent")
def answer(question):
    question = evaltrace.wrap(question, purpose="input", name="question")
    documents = retrieve(question)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": "Answer from: " + " ".join(documents)},
            {"role": "user", "content": question},
        ],
    )
    return evaltrace.wrap(reply.choices[0].message.content, purpose="output", name="answer")

with FakeJudgeServer() as judge:
    judge.add_rule("capital", content="Paris is the capital of France.")
    client = openai.OpenAI(base_url=judge.base_url, api_key="test", max_retries=0)
    print(answer("What is the capital of France?"))
"""


def run_app(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(APP)],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,  # stops a hung test only
    )
    assert result.returncode == 0, result.stderr
    assert "evaltrace: exporter" not in result.stderr, result.stderr  # no failed export
    return result.stdout.strip()


@pytest.mark.parametrize(("protocol", "project"), [("http/protobuf", "http"), ("grpc", "grpc")])
def test_spans_exported_to_phoenix_read_back_as_the_apps(
    phoenix: PhoenixServer, protocol: str, project: str, tmp_path: Path
) -> None:
    endpoint = phoenix.otlp_grpc_endpoint if protocol == "grpc" else phoenix.otlp_http_endpoint
    project = f"evaltrace-{project}"
    output = run_app(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_SERVICE_NAME="capital-bot",
        EVALTRACE_PROJECT_NAME=project,
    )
    assert output == "Paris is the capital of France."

    spans = phoenix.spans(project, count=3)

    by_name: dict[str, dict[str, Any]] = {span["name"]: span for span in spans}
    assert sorted(by_name) == ["ChatCompletion", "answer", "retrieve"]
    agent, retriever, llm = by_name["answer"], by_name["retrieve"], by_name["ChatCompletion"]
    assert agent["parent_id"] is None
    agent_id = agent["context"]["span_id"]
    assert retriever["parent_id"] == agent_id and llm["parent_id"] == agent_id
    assert {span["context"]["trace_id"] for span in spans} == {agent["context"]["trace_id"]}
    assert (agent["span_kind"], retriever["span_kind"], llm["span_kind"]) == (
        "AGENT",
        "RETRIEVER",
        "LLM",
    )
    assert json.loads(agent["attributes"]["input.value"]) == {
        "question": "What is the capital of France?"
    }
    assert json.loads(agent["attributes"]["output.value"]) == "Paris is the capital of France."
    assert json.loads(retriever["attributes"]["output.value"]) == [
        "Paris is the capital of France."
    ]
    llm_attributes = llm["attributes"]
    assert llm_attributes["llm.model_name"].startswith("gpt-4o-mini")
    assert llm_attributes["llm.token_count.prompt"] > 0
    assert llm_attributes["llm.input_messages.1.message.content"] == (
        "What is the capital of France?"
    )

    # What Phoenix holds is a trace evaltrace evaluates as it would the live run.
    page = tmp_path / "phoenix.json"
    page.write_text(json.dumps({"data": spans, "next_cursor": None}))
    trace = load_traces(page)
    evaluable = last_llm_call(trace)
    assert evaluable.output_value("output") == "Paris is the capital of France."
    (root,) = trace
    assert [value.name for value in root.span.named_values] == ["question", "answer"]
    (llm_node,) = root.find("ChatCompletion")
    assert isinstance(llm_node.span, LLMSpan)


EVALUATED_APP = """
import sys
import evaltrace
from evaltrace import Evaluation

@evaltrace.wrap(kind="agent")
def answer(question):
    return "Paris"

def says_paris(evaluable):
    paris = evaluable.output_value() == "Paris"
    return Evaluation(score=1.0 if paris else 0.0, reasoning="compared with Paris")

if len(sys.argv) > 1:  # score the traces stored in that file, running nothing
    result = evaltrace.run(evaltrace.evaluate_traces(sys.argv[1], [says_paris]))
else:
    result = evaltrace.run(
        evaltrace.evaluate_inputs(answer, ["What is the capital of France?"], [says_paris])
    )
"""


def evaluation_nodes(spans: list[dict[str, Any]], tmp_path: Path) -> list[Any]:
    page = tmp_path / "phoenix.json"
    page.write_text(json.dumps({"data": spans, "next_cursor": None}))
    (root,) = load_traces(page)
    return [node for node in root.walk() if node.span.name.startswith("evaluation ")]


def test_evaluation_results_arrive_in_phoenix_in_the_trace_they_scored(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.otlp_http_endpoint,
        "EVALTRACE_PROJECT_NAME": "evaltrace-evaluations",
        "EVALTRACE_EXPORT_EVALUATIONS": "1",
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    script = tmp_path / "evaluated_app.py"
    script.write_text(textwrap.dedent(EVALUATED_APP))
    subprocess.run([sys.executable, str(script)], env={**clean, **env}, check=True, timeout=120)

    spans = phoenix.spans("evaltrace-evaluations", count=3)

    assert len({span["context"]["trace_id"] for span in spans}) == 1
    (run,) = [span for span in spans if span["parent_id"] is None]
    (evaluation,) = [span for span in spans if span["name"] == "evaluation says_paris"]
    assert evaluation["parent_id"] == run["context"]["span_id"]
    assert evaluation["span_kind"] == "EVALUATOR"
    (node,) = evaluation_nodes(spans, tmp_path)
    (event,) = node.span.record.events
    assert event.name == "gen_ai.evaluation.result"
    assert event.attributes == {
        "gen_ai.evaluation.name": "says_paris",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "compared with Paris",
    }

    # The traces Phoenix holds, scored later without running the app, get their results
    # in the same trace too.
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps({"data": [s for s in spans if s is not evaluation]}))
    subprocess.run(
        [sys.executable, str(script), str(stored)],
        env={**clean, **env},
        check=True,
        timeout=120,
    )
    # 4 in the app's trace, and the run's statistics in a trace of their own (a root span
    # and one span per evaluator; evaluate_inputs above computed none)
    spans = phoenix.spans("evaltrace-evaluations", count=6)
    app_trace = run["context"]["trace_id"]
    in_app = [span for span in spans if span["context"]["trace_id"] == app_trace]
    assert len(evaluation_nodes(in_app, tmp_path)) == 2
    statistics = {span["name"] for span in spans if span not in in_app}
    assert "evaluation statistics says_paris" in statistics


def test_serve_forwards_to_phoenix_and_its_scores_land_on_the_traces_they_scored(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "online.yaml").write_text("evaluators: ['checks.py:grounded']\nsample: 1\n")
    args = ("--forward", phoenix.otlp_http_endpoint, "--evaluators", "online.yaml")
    with ServeProcess(tmp_path, *args, "--quiet-period", "0.2") as serve:
        made = provider(serve.traces_url, project="evaltrace-serve")
        paris, rome = app_spans(made, ["Paris", "Rome"])
        made.shutdown()
        spans = phoenix.spans("evaltrace-serve", count=6)
    roots = {
        span["context"]["trace_id"]: span["context"]["span_id"]
        for span in spans
        if span["parent_id"] is None
    }
    assert set(roots) == {paris, rome}
    evaluations = [span for span in spans if span["name"] == "evaluation grounded"]
    assert sorted(span["context"]["trace_id"] for span in evaluations) == sorted([paris, rome])
    for span in evaluations:
        assert span["parent_id"] == roots[span["context"]["trace_id"]]
        assert span["span_kind"] == "EVALUATOR"
    page = tmp_path / "phoenix.json"
    page.write_text(json.dumps({"data": spans, "next_cursor": None}))
    scores = {
        node.span.trace_id: node.span.record.events[0].attributes["gen_ai.evaluation.score.value"]
        for root in load_traces(page)
        for node in root.walk()
        if node.span.name == "evaluation grounded"
    }
    assert scores == {int(paris, 16): 1.0, int(rome, 16): 0.0}
