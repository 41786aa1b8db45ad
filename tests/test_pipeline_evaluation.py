"""Pipeline evaluation, Haystack-style: run once under capture, then compute metrics."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest

from evaltrace import wrap
from evaltrace.errors import ConfigurationError
from evaltrace.llm.embeddings import openai_embedder
from evaltrace.metrics import PairMetric, Scoring
from evaltrace.pipeline import (
    AmbiguousInputError,
    EvaluationResult,
    InvalidMetricResultError,
    Metric,
    MetricInputError,
    MetricsResult,
    ProgressUpdate,
    ResultFileError,
    evaluate_runnable,
    iter_evaluate_runnable,
    register_metric,
)
from evaltrace.results.model import SCHEMA_VERSION, CompletionStatus, EntryResult, RunResult
from evaltrace.testing.fake_judge import FakeJudgeServer

pytestmark = pytest.mark.anyio

CORPUS = {
    "d1": "Paris is the capital of France.",
    "d2": "Berlin is the capital of Germany.",
    "d3": "France borders Spain.",
    "d4": "The Nile is the longest river.",
}
RANKING = {
    "capital of France?": ["d3", "d1", "d2"],
    "capital of Germany?": ["d2", "d1", "d3"],
    "longest river?": ["d1", "d2", "d3"],
}
ANSWERS = {
    "capital of France?": "Paris is the capital",
    "capital of Germany?": "Berlin",
    "longest river?": "the Nile river",
}
QUERIES = list(RANKING)


@wrap(kind="retriever")
def search(query: str, top_k: int = 3) -> list[dict[str, str]]:
    return [{"id": doc_id, "content": CORPUS[doc_id]} for doc_id in RANKING[query][:top_k]]


@wrap(kind="llm")
def generate(question: str, documents: list[dict[str, str]]) -> str:
    return ANSWERS[question]


def rag(request: dict[str, Any]) -> str:
    documents = search(request["query"])
    return generate(request["query"], documents)


INPUTS = [{"query": query} for query in QUERIES]
EXPECTED = [
    {"search": [{"id": "d1"}], "rag": "Paris"},
    {"search": [{"id": "d2"}], "rag": "Berlin"},
    {"search": [{"id": "d4"}], "rag": "Nile"},
]
# reciprocal ranks: d1 at rank 2 -> 1/2; d2 at rank 1 -> 1; d4 not retrieved -> 0
MRR = (1 / 2 + 1 + 0) / 3
# SQuAD F1 after normalisation:
#   "paris is capital" vs "paris": P = 1/3, R = 1 -> 0.5
#   "berlin" vs "berlin"                         -> 1.0
#   "nile river" vs "nile": P = 1/2, R = 1       -> 2/3
F1_PER_INPUT = [0.5, 1.0, 2 / 3]


@pytest.fixture
async def result() -> EvaluationResult:
    return await evaluate_runnable(rag, INPUTS, EXPECTED, progress=False)


# the record of a run


async def test_each_input_keeps_its_input_output_expected_output_and_components(
    result: EvaluationResult,
) -> None:
    record = result.entries[0]

    assert result.runnable == "rag"
    assert record.input == {"query": "capital of France?"}
    assert record.output == "Paris is the capital"
    assert record.expectation == EXPECTED[0]
    assert list(record.components) == ["rag", "search", "generate"]
    retriever = record.components["search"][0]
    assert retriever.kind == "retriever"
    assert retriever.input == {"query": "capital of France?", "top_k": 3}
    assert [doc["id"] for doc in retriever.output] == ["d3", "d1", "d2"]


async def test_a_component_called_several_times_keeps_every_call_in_order() -> None:
    def two_hops(request: dict[str, Any]) -> str:
        search("capital of France?", top_k=1)
        search("capital of Germany?", top_k=1)
        return "done"

    outcome = await evaluate_runnable(two_hops, [{"question": "x"}], progress=False)

    calls = outcome.entries[0].components["search"]
    assert [call.input["query"] for call in calls] == QUERIES[:2]


async def test_concurrent_runs_keep_their_own_components() -> None:
    inputs = [{"query": QUERIES[i % 3]} for i in range(24)]

    outcome = await evaluate_runnable(rag, inputs, concurrency=8, progress=False)

    for record in outcome.entries:
        assert [call.input["query"] for call in record.components["search"]] == [
            record.input["query"]
        ]


async def test_a_runnable_that_raises_is_recorded_and_the_others_still_run() -> None:
    def flaky(request: dict[str, Any]) -> str:
        if request["query"] == "longest river?":
            raise RuntimeError("index offline")
        return rag(request)

    outcome = await evaluate_runnable(flaky, INPUTS, ["Paris", "Berlin", "Nile"], progress=False)
    f1 = outcome.calculate_metrics(Metric.F1)

    assert outcome.entries[2].error is not None
    assert outcome.entries[2].error.message == "index offline"
    assert f1.per_input[:2] == F1_PER_INPUT[:2]
    assert f1.per_input[2] is None
    assert f1.reasons[2] == "the run raised RuntimeError: index offline"


# metrics


async def test_retriever_mrr_is_computed_from_the_retriever_span(result: EvaluationResult) -> None:
    mrr = result.calculate_metrics(Metric.MRR, component="search", key="id")

    assert mrr.metric == "mrr"
    assert mrr.component == "search"
    assert mrr.per_input == [0.5, 1.0, 0.0]
    assert mrr.score == pytest.approx(MRR)
    assert mrr.n_scored == 3


async def test_answer_f1_is_computed_from_the_final_output(result: EvaluationResult) -> None:
    f1 = result.calculate_metrics(Metric.F1)

    assert f1.component is None
    assert f1.per_input == pytest.approx(F1_PER_INPUT)
    assert f1.score == pytest.approx(sum(F1_PER_INPUT) / 3)


async def test_a_flat_expected_output_is_the_final_output() -> None:
    outcome = await evaluate_runnable(rag, INPUTS, ["Paris", "Berlin", "Nile"], progress=False)

    assert outcome.calculate_metrics(Metric.F1).per_input == pytest.approx(F1_PER_INPUT)
    assert outcome.calculate_metrics(Metric.EM, normalize=True).per_input == [0.0, 1.0, 0.0]


async def test_output_key_picks_a_field_of_the_expected_output() -> None:
    expected = [{"search": {"documents": [{"id": "d1"}, {"id": "d3"}]}}, None, None]

    outcome = await evaluate_runnable(rag, INPUTS, expected, progress=False)
    recall = outcome.calculate_metrics(
        Metric.RECALL, component="search", output_key="documents", key="id"
    )

    assert recall.per_input == [1.0, None, None]
    assert recall.parameters == {"mode": "single_hit", "key": "id"}


async def test_recall_defaults_to_single_hit_like_the_recall_function() -> None:
    # input 0 retrieves d3, d1, d2: d1 of {d1, d4} found
    expected = [{"search": [{"id": "d1"}, {"id": "d4"}]}, None, None]
    outcome = await evaluate_runnable(rag, INPUTS, expected, progress=False)

    single = outcome.calculate_metrics(Metric.RECALL, component="search", key="id")
    multi = outcome.calculate_metrics(Metric.RECALL, component="search", key="id", mode="multi_hit")

    assert single.per_input[0] == 1.0
    assert multi.per_input[0] == 0.5


async def test_an_expected_document_without_the_key_matches_nothing() -> None:
    # the second expected document has no id: it can never be found, so it is left out
    expected = [{"search": [{"id": "d1"}, {"content": "no id"}]}, None, None]
    outcome = await evaluate_runnable(rag, INPUTS, expected, progress=False)

    recall = outcome.calculate_metrics(
        Metric.RECALL, component="search", key="id", mode="multi_hit"
    )

    assert recall.per_input == [1.0, None, None]


async def test_an_unknown_document_key_is_refused_even_when_nothing_can_be_scored() -> None:
    outcome = await evaluate_runnable(rag, INPUTS, progress=False)  # blind: nothing to compare

    with pytest.raises(ConfigurationError, match="invalid document key 'embedding'"):
        outcome.calculate_metrics(Metric.MRR, component="search", key="embedding")


async def test_a_compared_value_of_the_wrong_shape_is_an_error(result: EvaluationResult) -> None:
    with pytest.raises(MetricInputError, match=r"input #0 \(the pipeline\).*expected a list"):
        result.calculate_metrics(Metric.MRR, key="id")


async def test_a_custom_metric_callable_gets_the_result_and_the_options(
    result: EvaluationResult,
) -> None:
    def answer_words(
        evaluation: EvaluationResult, *, limit: int, component: str | None = None
    ) -> MetricsResult:
        scores = [
            min(1.0, len(str(pair.actual).split()) / limit)
            for pair in evaluation.output_pairs(component)
        ]
        return MetricsResult.from_scores("answer_words", scores, component=component)

    metric = result.calculate_metrics(answer_words, component="generate", limit=4)

    # "Paris is the capital" 4 words, "Berlin" 1, "the Nile river" 3
    assert metric.per_input == [1.0, 0.25, 0.75]
    assert metric.component == "generate"


async def test_a_custom_metric_returning_too_few_scores_is_refused(
    result: EvaluationResult,
) -> None:
    def first_only(evaluation: EvaluationResult) -> MetricsResult:
        return MetricsResult.from_scores("first_only", [1.0])

    with pytest.raises(InvalidMetricResultError, match=r"'first_only' returned 1 score") as caught:
        result.calculate_metrics(first_only)
    assert "3 inputs" in str(caught.value)
    assert "None" in str(caught.value)


async def test_a_registered_metric_returning_too_many_scores_is_refused(
    result: EvaluationResult,
) -> None:
    def doubled(evaluation: EvaluationResult, **options: Any) -> MetricsResult:
        return MetricsResult.from_scores("doubled", [1.0] * (2 * len(evaluation.entries)))

    register_metric("test_doubled", doubled, replace=True)

    with pytest.raises(InvalidMetricResultError, match="returned 6 scores for 3 inputs"):
        result.calculate_metrics("test_doubled")


async def test_an_async_custom_metric_returning_the_wrong_count_is_refused(
    result: EvaluationResult,
) -> None:
    async def none_at_all(evaluation: EvaluationResult) -> MetricsResult:
        return MetricsResult.from_scores("none_at_all", [])

    with pytest.raises(InvalidMetricResultError, match="returned 0 scores for 3 inputs"):
        await result.acalculate_metrics(none_at_all)


async def test_a_custom_metric_returning_the_wrong_count_is_a_value_error(
    result: EvaluationResult,
) -> None:
    def first_only(evaluation: EvaluationResult) -> MetricsResult:
        return MetricsResult.from_scores("first_only", [1.0])

    with pytest.raises(ValueError, match="returned 1 score for 3 inputs"):
        result.calculate_metrics(first_only)


async def test_a_pair_metric_scoring_the_wrong_count_is_a_value_error(
    result: EvaluationResult,
) -> None:
    def build() -> Scoring:
        return Scoring(score=lambda comparisons: [1.0])

    register_metric("test_one_score", PairMetric(compares="answers", build=build), replace=True)

    with pytest.raises(ValueError, match="gave 1 scores for 3 comparisons"):
        result.calculate_metrics("test_one_score")


async def test_a_custom_metric_returning_something_else_is_a_type_error(
    result: EvaluationResult,
) -> None:
    def a_number(evaluation: EvaluationResult) -> float:
        return 1.0

    with pytest.raises(TypeError, match="'a_number' returned float; a metric must return"):
        result.calculate_metrics(a_number)


async def test_a_registered_metric_is_computed_by_name(result: EvaluationResult) -> None:
    def run_count(evaluation: EvaluationResult, **options: Any) -> MetricsResult:
        return MetricsResult.from_scores("runs", [1.0 for _ in evaluation.entries])

    register_metric("test_run_count", run_count, replace=True)

    assert result.calculate_metrics("test_run_count").score == 1.0


async def test_an_unknown_metric_name_lists_the_known_ones(result: EvaluationResult) -> None:
    with pytest.raises(ValueError, match=r"registered metrics: .*mrr"):
        result.calculate_metrics("bleu")


async def test_sas_embeds_through_the_fake_judge(
    result: EvaluationResult, fake_judge: FakeJudgeServer
) -> None:
    client = openai.AsyncOpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    sas = await result.acalculate_metrics(
        Metric.SAS, embed=openai_embedder(client, "text-embedding-3-small")
    )

    assert sas.n_scored == 3
    assert sas.per_input[1] == pytest.approx(1.0)  # "Berlin" vs "Berlin"
    assert all(0.0 <= score <= 1.0 for score in sas.per_input if score is not None)


def test_an_async_metric_can_be_computed_from_sync_code() -> None:
    entry = EntryResult(index=0, name="0", input="q", output="yes", expectation="yes")
    saved = EvaluationResult(RunResult(name="app", entries=[entry]))

    sas = saved.calculate_metrics(Metric.SAS, embed=lambda texts: [[1.0, 0.0] for _ in texts])

    assert sas.per_input == [1.0]


# blind evaluation


async def test_a_blind_run_keeps_outputs_and_scores_nothing() -> None:
    outcome = await evaluate_runnable(rag, INPUTS, progress=False)

    assert [record.output for record in outcome.entries] == list(ANSWERS.values())
    for metric in (Metric.F1, Metric.EM):
        blind = outcome.calculate_metrics(metric)
        assert blind.per_input == [None, None, None]
        assert blind.n_scored == 0
        assert blind.score is None
        assert blind.reasons == ["no expected output (blind evaluation)"] * 3
    assert outcome.calculate_metrics(Metric.MRR, component="search").n_scored == 0


# the saved result


async def test_the_result_is_a_run_result_with_one_entry_per_input(
    result: EvaluationResult,
) -> None:
    run = result.run

    assert isinstance(run, RunResult)
    assert run.name == "rag"
    assert [entry.index for entry in run.entries] == [0, 1, 2]
    assert all(len(entry.trace_ids) == 1 and len(entry.trace_ids[0]) == 32 for entry in run.entries)
    assert {key: run.settings[key] for key in ("concurrency", "timeout", "serve_inputs")} == {
        "concurrency": 8,
        "timeout": None,
        "serve_inputs": True,
    }
    assert run.started_at is not None and run.finished_at is not None
    assert run.started_at <= run.finished_at


async def test_each_entry_gets_a_status_from_how_its_run_ended() -> None:
    async def app(request: dict[str, Any]) -> str:
        if request["query"] == "raise":
            raise RuntimeError("index offline")
        if request["query"] == "hang":
            await anyio.Event().wait()
        return "done"

    inputs = [{"query": "raise"}, {"query": "hang"}, {"query": "ok"}]
    outcome = await evaluate_runnable(app, inputs, progress=False, timeout=0.05)

    assert [entry.status for entry in outcome.entries] == [
        CompletionStatus.ERROR,
        CompletionStatus.TIMED_OUT,
        CompletionStatus.NO_SCORE_LOGGED,  # nothing scores a run until a metric is computed
    ]


async def test_a_blind_input_has_no_expectation_in_the_saved_result() -> None:
    outcome = await evaluate_runnable(rag, INPUTS[:2], [None, "Berlin"], progress=False)

    blind, given = outcome.entries
    assert not blind.has_expectation
    assert "expectation" not in blind.model_dump(mode="json")
    assert given.expectation == "Berlin"


# save and load


async def test_the_saved_file_is_the_run_result_with_its_schema_version(
    result: EvaluationResult, tmp_path: Path
) -> None:
    path = tmp_path / "evaluation.json"

    result.save(path)

    text = path.read_text()
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION
    saved = RunResult.model_validate_json(text)
    assert saved == result.run
    assert saved.entries[0].components["search"][0].kind == "retriever"


async def test_load_refuses_a_file_in_the_format_before_run_result(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    old = {"format": "evaltrace.pipeline-evaluation", "version": 1, "runnable": "rag"}
    path.write_text(json.dumps({**old, "records": []}))

    with pytest.raises(ResultFileError) as caught:
        EvaluationResult.load(path)

    message = str(caught.value)
    assert str(path) in message
    assert "in the format used before results were saved as RunResult" in message
    assert "run evaluate_runnable again" in message


async def test_load_refuses_another_schema_version(
    result: EvaluationResult, tmp_path: Path
) -> None:
    data = result.run.model_dump(mode="json")
    data["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))

    with pytest.raises(ResultFileError, match=f"saved with schema_version {SCHEMA_VERSION + 1}"):
        EvaluationResult.load(path)


def test_a_saved_dataset_run_loads_and_its_final_outputs_can_be_scored(tmp_path: Path) -> None:
    run = RunResult(
        name="capitals",
        entries=[EntryResult(index=0, name="france", output="Paris", expectation="Paris")],
    )
    path = tmp_path / "result.json"
    path.write_text(run.model_dump_json())

    loaded = EvaluationResult.load(path)

    assert loaded.calculate_metrics(Metric.EM).per_input == [1.0]
    assert loaded.calculate_metrics(Metric.MRR, component="search").reasons == [
        "component 'search' did not run (components: none)"
    ]


async def test_save_then_load_gives_the_same_metrics(
    result: EvaluationResult, tmp_path: Path
) -> None:
    path = tmp_path / "evaluation.json"

    result.save(path)
    loaded = EvaluationResult.load(path)

    assert loaded == result
    for metric, options in ((Metric.MRR, {"component": "search", "key": "id"}), (Metric.F1, {})):
        assert loaded.calculate_metrics(metric, **options) == result.calculate_metrics(
            metric, **options
        )


async def test_load_refuses_a_file_that_is_not_a_saved_evaluation(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"records": []}))

    with pytest.raises(ResultFileError, match="not a saved evaltrace run result"):
        EvaluationResult.load(path)


async def test_metrics_result_saves_as_json(result: EvaluationResult, tmp_path: Path) -> None:
    mrr = result.calculate_metrics(Metric.MRR, component="search", key="id")
    path = tmp_path / "mrr.json"

    mrr.save(path)

    data = json.loads(path.read_text())
    assert data["metric"] == "mrr"
    assert data["component"] == "search"
    assert data["per_input"] == [0.5, 1.0, 0.0]
    assert data["score"] == pytest.approx(MRR)
    assert MetricsResult.model_validate(data) == mrr


async def test_metrics_result_saves_as_csv(tmp_path: Path) -> None:
    metric = MetricsResult.from_scores(
        "f1", [0.5, None], component="generate", reasons=[None, "no expected output"]
    )
    path = tmp_path / "f1.csv"

    metric.save(path)

    with path.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert rows == [
        {
            "metric": "f1",
            "component": "generate",
            "output_key": "",
            "input_index": "0",
            "score": "0.5",
            "reason": "",
        },
        {
            "metric": "f1",
            "component": "generate",
            "output_key": "",
            "input_index": "1",
            "score": "",
            "reason": "no expected output",
        },
        {
            "metric": "f1",
            "component": "generate",
            "output_key": "",
            "input_index": "",
            "score": "0.5",
            "reason": "mean of 1 scored inputs of 2",
        },
    ]


async def test_metrics_result_refuses_other_suffixes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.json, \.csv"):
        MetricsResult.from_scores("f1", [1.0]).save(tmp_path / "f1.xlsx")


async def test_to_dataframe_has_a_row_per_input_and_component_columns(
    result: EvaluationResult,
) -> None:
    frame = result.to_dataframe()

    assert len(frame) == 3  # nothing scores a pipeline's inputs while it runs: a row each
    columns = list(frame.columns)
    assert columns[:9] == [
        "run_id",
        "run",
        "entry_index",
        "entry",
        "description",
        "entry_status",
        "input",
        "output",
        "expectation",
    ]
    assert columns[-6:] == [
        "rag.input",
        "rag.output",
        "search.input",
        "search.output",
        "generate.input",
        "generate.output",
    ]
    assert frame["output"].tolist() == list(ANSWERS.values())
    assert frame["evaluator"].isna().all()


async def test_to_dataframe_without_pandas_names_the_extra(
    result: EvaluationResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)

    with pytest.raises(ImportError, match=r"pip install 'evaltrace\[pandas\]'"):
        result.to_dataframe()


# inputs


def ambiguous_rag(request: dict[str, Any]) -> str:
    documents = search(request["search"]["query"])
    return answer(request["answer"]["query"], documents)


@wrap(kind="llm")
def answer(query: str, documents: list[dict[str, str]]) -> str:
    return "Paris"


async def test_a_flat_key_taken_by_two_components_is_ambiguous() -> None:
    def app(request: dict[str, Any]) -> str:
        return answer(request["query"], search(request["query"]))

    with pytest.raises(AmbiguousInputError) as caught:
        await evaluate_runnable(app, [{"query": "capital of France?"}], progress=False)

    message = str(caught.value)
    assert "'query' is an argument of 2 components ('search', 'answer')" in message
    assert '{"search": {"query": ...}, "answer": {"query": ...}}' in message


async def test_the_component_qualified_form_resolves_the_ambiguity() -> None:
    request = {"search": {"query": "capital of France?"}, "answer": {"query": "capital?"}}

    outcome = await evaluate_runnable(ambiguous_rag, [request], progress=False)

    record = outcome.entries[0]
    assert record.components["search"][0].input == {"query": "capital of France?", "top_k": 3}
    assert record.components["answer"][0].input["query"] == "capital?"


async def test_mapping_inputs_are_served_to_wrap_inputs_by_name() -> None:
    def app(request: dict[str, Any]) -> str:
        flat = wrap("live", purpose="input", name="user")
        qualified = wrap("live", purpose="input", name="search.query")
        return f"{flat}/{qualified}"

    outcome = await evaluate_runnable(
        app, [{"user": "ada", "search": {"query": "q"}}], progress=False
    )

    assert outcome.entries[0].output == "ada/q"


@pytest.mark.parametrize(
    ("inputs", "expected_outputs", "options", "error", "message"),
    [
        ({"query": "q"}, None, {}, TypeError, r"wrap it in a list"),
        ("query", None, {}, TypeError, r"inputs must be a list"),
        ([{"query": "q"}], ["a", "b"], {}, ValueError, r"expected_outputs has 2 items"),
        ([{"query": "q"}], None, {"concurrency": 0}, ValueError, r"concurrency must be"),
        ([{"query": "q"}], None, {"timeout": -1}, ValueError, r"timeout must be"),
    ],
)
async def test_invalid_arguments_are_rejected_before_running(
    inputs: Any, expected_outputs: Any, options: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        await evaluate_runnable(rag, inputs, expected_outputs, progress=False, **options)


# progress


async def test_the_progress_callback_is_called_once_per_input() -> None:
    updates: list[ProgressUpdate] = []

    await evaluate_runnable(rag, INPUTS, on_progress=updates.append, progress=False)

    assert [update.done for update in updates] == [1, 2, 3]
    assert {update.total for update in updates} == {3}
    assert sorted(update.latest.index for update in updates) == [0, 1, 2]


async def test_the_iterator_form_yields_progress_then_the_result() -> None:
    steps: list[Any] = []

    async with contextlib.aclosing(iter_evaluate_runnable(rag, INPUTS, EXPECTED)) as iterator:
        async for step in iterator:
            steps.append(step)

    assert [type(step) for step in steps] == [ProgressUpdate] * 3 + [EvaluationResult]
    final = steps[-1]
    assert final.calculate_metrics(Metric.MRR, component="search", key="id").score == MRR


async def test_the_iterator_form_raises_an_ambiguous_input() -> None:
    def app(request: dict[str, Any]) -> str:
        return answer(request["query"], search(request["query"]))

    with pytest.raises(AmbiguousInputError):
        async for _ in iter_evaluate_runnable(app, [{"query": "capital of France?"}]):
            pass


async def test_leaving_the_iterator_early_cancels_the_remaining_runs() -> None:
    async def slow(request: dict[str, Any]) -> str:
        await anyio.sleep(0 if request["n"] == 0 else 30)
        return "done"

    inputs = [{"n": n} for n in range(4)]
    with anyio.fail_after(5):  # the slow runs are cancelled, not awaited
        async with contextlib.aclosing(iter_evaluate_runnable(slow, inputs)) as iterator:
            async for step in iterator:
                assert isinstance(step, ProgressUpdate)
                assert step.latest.output == "done"
                break


async def test_a_progress_bar_is_drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)

    await evaluate_runnable(rag, INPUTS)

    drawn = terminal.getvalue()
    assert "rag" in drawn and "3/3" in drawn and "errored" not in drawn
