"""Tokens, cost and latency: the app's model calls per entry and per run, priced by a table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opentelemetry import trace as otel_trace

from evaltrace.capture import conventions as conv
from evaltrace.datasets import dataset_from_data, run_dataset
from evaltrace.engine import evaluate_inputs
from evaltrace.errors import PriceFileError
from evaltrace.judges import configure_judge, create_llm_evaluator
from evaltrace.judges.scorers import ExactMatch
from evaltrace.llm.calls import ModelUsage
from evaltrace.llm.prices import ModelPrice, PriceTable, load_prices
from evaltrace.metrics.check_types import Check
from evaltrace.results import load_result, merge_results
from evaltrace.results.diff import diff_results, render_diff
from evaltrace.results.report import render_report
from evaltrace.results.usage import latency_summary
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))
APP_MODEL = "gpt-4o-mini"
PRICES = PriceTable(models={APP_MODEL: ModelPrice(input=0.15, output=0.6, cached=0.075)})


def gen_ai_call(model: str = APP_MODEL, prompt: int = 100, completion: int = 20) -> None:
    """A model call as an OpenTelemetry GenAI instrumentor records it."""
    tracer = otel_trace.get_tracer("tests.gen_ai")
    attributes = {
        conv.GEN_AI_OPERATION_NAME: "chat",
        conv.GEN_AI_REQUEST_MODEL: model,
        conv.GEN_AI_RESPONSE_MODEL: f"{model}-2024-07-18",
        conv.GEN_AI_USAGE_INPUT_TOKENS: prompt,
        conv.GEN_AI_USAGE_OUTPUT_TOKENS: completion,
        conv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 40,
    }
    with tracer.start_as_current_span(f"chat {model}", attributes=attributes):
        pass


def openinference_call(
    model: str = "claude-3-haiku", prompt: int = 300, completion: int = 7
) -> None:
    """A model call as an OpenInference instrumentor records it."""
    tracer = otel_trace.get_tracer("tests.openinference")
    attributes = {
        conv.SPAN_KIND: "LLM",
        conv.LLM_MODEL_NAME: model,
        conv.LLM_TOKEN_COUNT_PROMPT: prompt,
        conv.LLM_TOKEN_COUNT_COMPLETION: completion,
        conv.LLM_TOKEN_COUNT_CACHE_READ: 100,
    }
    with tracer.start_as_current_span("llm", attributes=attributes):
        pass


def two_calls(question: str) -> str:
    gen_ai_call()
    gen_ai_call()
    return question.upper()


def both_conventions(question: str) -> str:
    gen_ai_call()
    openinference_call()
    return question


def dataset(count: int = 3) -> Any:
    return dataset_from_data(
        {
            "entries": [
                {"name": f"entry-{i}", "entry_kwargs": {"question": f"question {i}"}}
                for i in range(count)
            ]
        }
    )


# -- tokens per entry and per run --------------------------------------------------------------


@pytest.mark.anyio
async def test_token_counts_are_read_from_gen_ai_spans() -> None:
    [row] = await evaluate_inputs(two_calls, ["q"], [ExactMatch()])

    usage = row.entry.usage
    # The response model is the dated version; its tokens are counted under it.
    assert usage == {
        f"{APP_MODEL}-2024-07-18": ModelUsage(
            calls=2, input_tokens=200, output_tokens=40, cached_tokens=80
        )
    }


@pytest.mark.anyio
async def test_token_counts_are_read_from_openinference_spans_too() -> None:
    [row] = await evaluate_inputs(both_conventions, ["q"], [ExactMatch()])

    usage = row.entry.usage
    assert usage["claude-3-haiku"] == ModelUsage(
        calls=1, input_tokens=300, output_tokens=7, cached_tokens=100
    )
    assert usage[f"{APP_MODEL}-2024-07-18"].calls == 1


@pytest.mark.anyio
async def test_a_run_adds_up_its_entries_tokens_per_model() -> None:
    result = await run_dataset(dataset(3), runnable=two_calls, evaluators=[ExactMatch()])

    total = result.usage[f"{APP_MODEL}-2024-07-18"]
    assert (total.calls, total.input_tokens, total.output_tokens) == (6, 600, 120)


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.mark.anyio
async def test_the_judges_calls_are_kept_apart_from_the_apps(
    judge_server: FakeJudgeServer,
) -> None:
    judge_server.reset()
    grader = create_llm_evaluator(
        "grader", "Right?\n{eval_output}", choice_scores={"A": 1.0, "B": 0.0}
    )
    with configure_judge(
        base_url=judge_server.base_url, api_key="k", model="judge-model", max_retries=0
    ):
        result = await run_dataset(dataset(2), runnable=two_calls, evaluators=[grader])

    for entry in result.entries:
        assert set(entry.usage) == {f"{APP_MODEL}-2024-07-18"}
        assert entry.usage[f"{APP_MODEL}-2024-07-18"].calls == 2
        assert set(entry.judge_usage) == {"judge-model"}
    assert set(result.usage) == {f"{APP_MODEL}-2024-07-18"}
    assert result.judge_usage["judge-model"].requests == 2


# -- cost --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_with_a_price_table_the_run_has_its_cost() -> None:
    result = await run_dataset(
        dataset(3), runnable=two_calls, evaluators=[ExactMatch()], prices=PRICES
    )

    # 600 input tokens, 240 of them cached, 120 output tokens, per million.
    expected = (360 * 0.15 + 240 * 0.075 + 120 * 0.6) / 1e6
    assert result.cost is not None
    assert result.cost.app.total == pytest.approx(expected)
    assert result.cost.total == pytest.approx(expected)
    assert result.to_records()[0]["cost"] == pytest.approx(expected / 3)


@pytest.mark.anyio
async def test_without_a_price_table_the_cost_is_unknown_never_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EVALTRACE_PRICES", raising=False)
    result = await run_dataset(dataset(2), runnable=two_calls, evaluators=[ExactMatch()])

    assert result.cost is None
    assert result.to_records()[0]["cost"] is None
    assert result.to_records()[0]["input_tokens"] == 200
    report = render_report([result])
    assert "cost unknown" in report
    assert "400 input tokens" in report


@pytest.mark.anyio
async def test_a_model_without_a_price_makes_the_cost_unknown_and_is_named() -> None:
    result = await run_dataset(
        dataset(1), runnable=both_conventions, evaluators=[ExactMatch()], prices=PRICES
    )

    assert result.cost is not None
    assert result.cost.total is None
    assert result.cost.app.unpriced == ["claude-3-haiku"]
    assert "no price for claude-3-haiku" in render_report([result])


@pytest.mark.anyio
async def test_evaltrace_prices_names_the_price_file_a_run_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  gpt-4o-mini:\n    input: 1\n    output: 1\n")
    monkeypatch.setenv("EVALTRACE_PRICES", str(prices))

    result = await run_dataset(dataset(1), runnable=two_calls, evaluators=[ExactMatch()])

    assert result.cost is not None
    assert result.cost.app.total == pytest.approx(240 / 1e6)
    assert result.prices is not None and result.prices.source == str(prices)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    return path


def test_a_price_file_is_read_with_its_models_prices(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  m:\n    input: 0.5\n    output: 2\n    cached: 0.25\n")

    assert load_prices(path).models == {"m": ModelPrice(input=0.5, output=2.0, cached=0.25)}


def test_a_bad_price_names_the_file_the_line_the_model_and_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  gpt-4o:\n    input: 2.5\n    output: cheap\n")

    with pytest.raises(PriceFileError) as raised:
        load_prices(path)

    message = str(raised.value)
    assert str(path) in message
    assert "line 4" in message
    assert "'gpt-4o'" in message
    assert "'output'" in message
    assert "'cheap'" in message
    assert "per million tokens" in message


def test_a_missing_price_field_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  gpt-4o:\n    input: 2.5\n")

    with pytest.raises(PriceFileError, match=r"line 2, model 'gpt-4o': field 'output' is missing"):
        load_prices(path)


def test_an_unknown_price_field_is_named_with_the_fields_there_are(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  gpt-4o:\n    input: 2.5\n    ouput: 10\n")

    with pytest.raises(PriceFileError, match=r"line 4.*unknown field 'ouput'.*'output'"):
        load_prices(path)


def test_a_negative_price_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  m:\n    input: -1\n    output: 1\n")

    with pytest.raises(PriceFileError, match=r"line 3, model 'm', field 'input'"):
        load_prices(path)


@pytest.mark.anyio
async def test_a_bad_price_file_stops_the_run_before_anything_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    def app(question: str) -> str:
        ran.append(question)
        return question

    path = write(tmp_path, "- not a table\n")
    with pytest.raises(PriceFileError, match="a price file is a mapping with 'models'"):
        await run_dataset(dataset(1), runnable=app, evaluators=[ExactMatch()], prices=path)
    assert ran == []


def test_a_price_applies_to_the_dated_versions_of_its_model() -> None:
    table = PriceTable(
        models={
            "gpt-4o": ModelPrice(input=1, output=1),
            "gpt-4o-mini": ModelPrice(input=2, output=2),
        }
    )

    assert table.price_of("gpt-4o-mini-2024-07-18") == ModelPrice(input=2, output=2)
    assert table.price_of("gpt-4o-2024-08-06") == ModelPrice(input=1, output=1)
    assert table.price_of("gpt-4") is None


# -- latency -----------------------------------------------------------------------------------


def test_latency_percentiles_agree_with_numpy() -> None:
    durations = [0.12, 0.5, 0.33, 2.4, 0.07, 0.91, 1.3, 0.44, 0.29, 5.0, 0.61]

    summary = latency_summary(durations)

    assert summary is not None
    expected = np.percentile(durations, [50, 95, 99])
    assert (summary.p50_s, summary.p95_s, summary.p99_s) == pytest.approx(list(expected), abs=1e-12)
    assert summary.mean_s == pytest.approx(float(np.mean(durations)))
    assert (summary.n, summary.max_s) == (11, 5.0)


@pytest.mark.anyio
async def test_a_run_reports_the_apps_latency_over_its_entries() -> None:
    result = await run_dataset(dataset(4), runnable=two_calls, evaluators=[ExactMatch()])

    assert result.latency is not None
    durations = [entry.duration_s for entry in result.entries]
    assert result.latency.n == 4
    assert result.latency.p95_s == pytest.approx(float(np.percentile(durations, 95)))
    assert "latency: p50" in render_report([result])


# -- checks ------------------------------------------------------------------------------------


def priced_dataset(checks: list[dict[str, Any]]) -> Any:
    return dataset_from_data(
        {
            "evaluators": checks,
            "entries": [{"name": "one", "entry_kwargs": {"question": "q"}}],
        }
    )


@pytest.mark.anyio
async def test_max_cost_passes_when_the_apps_calls_cost_less() -> None:
    # Two calls: 120 + 80 cached input tokens and 40 output tokens cost $0.000048.
    data = priced_dataset([{"type": "max-cost", "value": 0.0001}])

    result = await run_dataset(data, runnable=two_calls, prices=PRICES)

    [evaluation] = result.entries[0].evaluations
    assert evaluation.score == 1.0, evaluation.reasoning
    assert evaluation.reasoning == "the app's model calls cost $0.000048, at most $0.0001"


@pytest.mark.anyio
async def test_max_cost_fails_when_the_apps_calls_cost_more() -> None:
    data = priced_dataset([{"type": "max-cost", "value": 0.00001}])

    result = await run_dataset(data, runnable=two_calls, prices=PRICES)

    [evaluation] = result.entries[0].evaluations
    assert evaluation.score == 0.0
    assert "more than" in (evaluation.reasoning or "")


@pytest.mark.anyio
async def test_max_cost_without_a_price_table_is_an_error_that_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EVALTRACE_PRICES", raising=False)
    data = priced_dataset([{"type": "max-cost", "value": 1}])

    result = await run_dataset(data, runnable=two_calls)

    [evaluation] = result.entries[0].evaluations
    assert evaluation.error is not None
    assert "--prices" in evaluation.error.message


@pytest.mark.anyio
async def test_max_latency_passes_and_fails_on_the_apps_wall_time() -> None:
    data = priced_dataset(
        [{"type": "max-latency", "value": 60}, {"type": "max-latency", "value": 0}]
    )

    result = await run_dataset(data, runnable=two_calls)

    fast, never = result.entries[0].evaluations
    assert fast.score == 1.0
    assert never.score == 0.0
    assert "more than 0 s" in (never.reasoning or "")


def test_max_cost_refuses_a_value_that_is_not_an_amount() -> None:
    with pytest.raises(ValueError, match="max-cost"):
        Check("max-cost", "a dollar")


# -- resumed and merged runs -------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_resumed_run_keeps_the_tokens_of_the_entries_it_had(tmp_path: Path) -> None:
    first = await run_dataset(
        dataset(4),
        runnable=two_calls,
        evaluators=[ExactMatch()],
        output_dir=tmp_path,
        prices=PRICES,
        shard="1/1",
    )
    folder = tmp_path / first.run_id
    lines = (folder / "entries.jsonl").read_text().splitlines()
    (folder / "entries.jsonl").write_text("\n".join(lines[:2]) + "\n")  # as if it stopped

    resumed = await run_dataset(
        dataset(4), runnable=two_calls, evaluators=[ExactMatch()], resume=folder, prices=PRICES
    )

    assert resumed.usage == first.usage
    assert resumed.latency is not None and resumed.latency.n == 4
    assert resumed.cost is not None and first.cost is not None
    assert resumed.cost.total == pytest.approx(first.cost.total)


@pytest.mark.anyio
async def test_merged_shards_keep_the_runs_totals_and_latencies(tmp_path: Path) -> None:
    shards = [
        await run_dataset(
            dataset(5),
            runnable=two_calls,
            evaluators=[ExactMatch()],
            output_dir=tmp_path / "shards",
            shard=f"{k}/2",
            prices=PRICES,
        )
        for k in (1, 2)
    ]

    merged = load_result(
        merge_results([tmp_path / "shards" / s.run_id for s in shards], tmp_path / "merged")
    )

    total = merged.usage[f"{APP_MODEL}-2024-07-18"]
    assert total.calls == 10
    assert total.input_tokens == sum(
        s.usage[f"{APP_MODEL}-2024-07-18"].input_tokens for s in shards
    )
    durations = [entry.duration_s for s in shards for entry in s.entries]
    assert merged.latency is not None
    assert merged.latency.n == 5
    assert merged.latency.p99_s == pytest.approx(float(np.percentile(durations, 99)))
    assert merged.cost is not None and merged.cost.total is not None
    assert merged.cost.total == pytest.approx(sum(s.cost.total for s in shards if s.cost))  # type: ignore[misc]


def test_a_result_saved_before_usage_still_reads_with_no_usage(tmp_path: Path) -> None:
    data = {"schema_version": 2, "name": "old", "entries": [{"index": 0, "name": "0"}]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))

    result = load_result(path)

    assert result.usage == {}
    assert result.latency is None and result.cost is None
    assert result.entries[0].usage == {}


# -- the diff ----------------------------------------------------------------------------------


def one_call(question: str) -> str:
    gen_ai_call()
    return question.upper()


@pytest.mark.anyio
async def test_the_diff_gives_the_cost_difference_per_entry_with_its_interval() -> None:
    old = await run_dataset(dataset(8), runnable=one_call, evaluators=[ExactMatch()], prices=PRICES)
    new = await run_dataset(
        dataset(8), runnable=two_calls, evaluators=[ExactMatch()], prices=PRICES
    )

    comparison = diff_results(old, new, resamples=200).comparison

    assert comparison is not None
    cost = next(item for item in comparison.spend if item.measure == "cost")
    per_call = (60 * 0.15 + 40 * 0.075 + 20 * 0.6) / 1e6
    assert cost.n == 8
    assert cost.mean_difference == pytest.approx(per_call)
    assert cost.interval is not None
    assert cost.interval.low == pytest.approx(per_call)  # every entry costs one call more
    assert cost.unit == "USD"


@pytest.mark.anyio
async def test_the_diff_gives_the_latency_difference_paired_over_entries() -> None:
    old = await run_dataset(dataset(6), runnable=one_call, evaluators=[ExactMatch()])
    new = await run_dataset(dataset(6), runnable=two_calls, evaluators=[ExactMatch()])

    diff = diff_results(old, new, resamples=200)

    assert diff.comparison is not None
    latency = next(item for item in diff.comparison.spend if item.measure == "latency")
    differences = [
        b.duration_s - a.duration_s for a, b in zip(old.entries, new.entries, strict=True)
    ]
    assert latency.n == 6
    assert latency.mean_difference == pytest.approx(float(np.mean(differences)))
    assert latency.interval is not None
    assert latency.interval.low <= latency.mean_difference <= latency.interval.high
    assert "The app's cost and latency" in render_diff(diff)


@pytest.mark.anyio
async def test_without_prices_the_diff_compares_no_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALTRACE_PRICES", raising=False)
    old = await run_dataset(dataset(3), runnable=one_call, evaluators=[ExactMatch()])
    new = await run_dataset(dataset(3), runnable=two_calls, evaluators=[ExactMatch()])

    comparison = diff_results(old, new, resamples=50).comparison

    assert comparison is not None
    assert [item.measure for item in comparison.spend] == ["latency"]


# -- the command line --------------------------------------------------------------------------


APP = """
from opentelemetry import trace

def answer(question: str) -> str:
    tracer = trace.get_tracer("app")
    with tracer.start_as_current_span("chat", attributes={
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100,
    }):
        pass
    return question.upper()
"""


def project(folder: Path, checks: list[dict[str, Any]] | None = None) -> Path:
    (folder / "app.py").write_text(APP)
    document = {
        "name": "costly",
        "runnable": "app.py:answer",
        "evaluators": checks or [{"type": "max-latency", "value": 60}],
        "entries": [{"name": f"e{i}", "entry_kwargs": {"question": f"q{i}"}} for i in range(3)],
    }
    path = folder / "costly.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def evaltrace(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "EVALTRACE_PRICES"}
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, "CI": "1", **env},
    )


def test_evaltrace_test_prices_the_run_with_the_prices_option(tmp_path: Path) -> None:
    project(tmp_path, [{"type": "max-cost", "value": 0.001}])
    write(tmp_path, "models:\n  gpt-4o-mini:\n    input: 0.15\n    output: 0.60\n")

    done = evaltrace(tmp_path, "test", "--prices", "prices.yaml", "--no-judge-cache")

    assert done.returncode == 0, done.stdout + done.stderr
    # 3 calls of 1,000 input and 100 output tokens: 3 * (150 + 60) / 10^6.
    assert "3 model calls (3,000 input tokens; 300 output tokens); cost $0.00063" in done.stdout
    assert "latency: p50" in done.stdout


def test_evaltrace_test_refuses_a_bad_price_file_before_running(tmp_path: Path) -> None:
    project(tmp_path)
    write(tmp_path, "models:\n  gpt-4o-mini:\n    input: 0.15\n    output: '0.60'\n")

    done = evaltrace(tmp_path, "test", "--prices", "prices.yaml")

    assert done.returncode == 2
    assert "prices.yaml, line 4, model 'gpt-4o-mini', field 'output'" in done.stderr
    assert not (tmp_path / "evaltrace_results").exists()


def test_evaltrace_report_prices_a_saved_run_with_the_prices_option(tmp_path: Path) -> None:
    project(tmp_path)
    assert evaltrace(tmp_path, "test").returncode == 0
    [run] = list((tmp_path / "evaltrace_results").iterdir())
    write(tmp_path, "models:\n  gpt-4o-mini:\n    input: 1\n    output: 10\n")

    unpriced = evaltrace(tmp_path, "report", str(run))
    priced = evaltrace(tmp_path, "report", str(run), "--prices", "prices.yaml")

    assert "cost unknown (no price table)" in unpriced.stdout
    assert "cost $0.006" in priced.stdout, priced.stdout


def test_evaltrace_diff_shows_the_cost_and_latency_change(tmp_path: Path) -> None:
    project(tmp_path)
    write(tmp_path, "models:\n  gpt-4o-mini:\n    input: 1\n    output: 10\n")
    assert evaltrace(tmp_path, "test").returncode == 0
    assert evaltrace(tmp_path, "test").returncode == 0
    old, new = sorted((tmp_path / "evaltrace_results").iterdir())

    done = evaltrace(tmp_path, "diff", str(old), str(new), "--prices", "prices.yaml")

    assert done.returncode == 0, done.stderr
    assert "The app's cost and latency" in done.stdout
    assert "cost (USD)" in done.stdout
    assert "latency (s)" in done.stdout


# -- the DataFrame -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_dataframe_has_each_entrys_calls_tokens_and_cost() -> None:
    result = await run_dataset(
        dataset(2), runnable=two_calls, evaluators=[ExactMatch()], prices=PRICES
    )

    frame = result.to_dataframe()

    assert list(frame["model_calls"]) == [2, 2]
    assert list(frame["input_tokens"]) == [200, 200]
    assert list(frame["output_tokens"]) == [40, 40]
    assert list(frame["cached_tokens"]) == [80, 80]
    assert frame["cost"].tolist() == pytest.approx([0.000048, 0.000048])
