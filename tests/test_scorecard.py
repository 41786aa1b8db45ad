"""The HTML scorecard: what it gathers from a run and how it renders (the browser tests are in
test_scorecard_browser.py).

``build_run`` makes a real run with the runner: an instrumented app (an agent span, a
retriever, a GenAI model call), per-entry evaluators that differ, a repeated judge, a runnable
that raises, dataset-level classification results, hostile text in an output, and writes
``result.json`` and ``traces.jsonl`` as a results folder holds them.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_module
import json
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from opentelemetry import trace as otel

from evaltrace import Evaluable, Evaluation, save_traces, wrap
from evaltrace.engine import evaluate_inputs
from evaltrace.judges import Repeated
from evaltrace.llm.calls import ModelUsage
from evaltrace.llm.prices import ModelPrice, PriceTable
from evaltrace.metrics import compute_dataset_evaluator_results
from evaltrace.results import (
    DatasetScorecard,
    ResultFileError,
    ScorecardWriter,
    charts,
    generate_dataset_scorecard_html,
    save_dataset_scorecard,
    write_scorecard,
)
from evaltrace.results.model import CompletionStatus, EntryResult, RunResult
from evaltrace.results.scorecard import DatasetEntryResult, scorecard_row
from evaltrace.results.usage import latency_summary
from evaltrace.testing import FakeJudgeServer
from evaltrace.trace import capture_traces

HOSTILE = "</script><script>alert(1)</script> <img src=x onerror=alert(1)> {{7*7}}"
"""An output that must show as text: it would close the data element, add an element whose
handler runs, or be evaluated by a template engine, if anything on the way were wrong."""

TRACER = otel.get_tracer("scorecard-tests")
QUESTIONS = ["capital of France", "a failing question", HOSTILE, "longest river"]
LABELS = [("geo", "geo"), ("geo", "geo"), ("geo", "other"), ("other", "other")]


@wrap(kind="retriever")
def retrieve(question: str) -> list[str]:
    return [f"a document about {question}"]


@wrap(kind="agent")
async def answer(question: str) -> str:
    documents = retrieve(question)
    messages = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": "Paris"}]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(reply),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
    }
    with TRACER.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
        pass
    if question == "a failing question":
        raise ValueError("the app failed")
    if question == HOSTILE:
        return wrap(f"Paris {HOSTILE}", purpose="output", name="answer")
    wrap(documents, purpose="state", name="documents")
    return wrap(f"Paris, {question}", purpose="output", name="answer")


def mentions_paris(evaluable: Evaluable) -> Evaluation:
    text = evaluable.output_value("answer")
    return Evaluation(score=1.0 if "France" in text else 0.25, reasoning=f"answer was {text!r}")


def label(evaluable: Evaluable) -> Evaluation:
    expected = (evaluable.eval_metadata or {})["label"]
    actual = "geo" if "France" in evaluable.output_value("answer") else "other"
    return Evaluation(
        score=float(expected == actual),
        reasoning=f"expected {expected}, got {actual}",
        details={"expected": expected, "actual": actual},
    )


def short(evaluable: Evaluable) -> float:
    return 1.0 if len(evaluable.output_value("answer")) < 40 else 0.5


def build_run(
    folder: Path, *, names: tuple[str, ...] = ("capital", "boom", "xss", "river")
) -> RunResult:
    """Run the app over four inputs, save the results folder, return the run."""
    scores = iter([0.6, 0.8, 1.0] * 10)

    async def next_score(evaluable: Evaluable) -> float:
        return next(scores)  # async: the repeated runs take the scores in their order

    judge = Repeated(next_score, n=3, strategy="median", name="judge x3")
    cases = [
        Evaluable(
            expectation="Paris" if index == 0 else None,
            eval_metadata={
                "label": LABELS[index][0],
                "topic": "rivers" if index == 3 else "cities",
            },
            description=f"question {index}",
        )
        for index in range(len(QUESTIONS))
    ]
    per_input = [None, None, None, [mentions_paris, short]]
    results = anyio.run(
        lambda: evaluate_inputs(
            answer,
            QUESTIONS,
            [mentions_paris, judge, label],
            evaluables=cases,
            concurrency=1,
            per_input_evaluators=per_input,
        )
    )
    entries = [result.to_entry(name=names[result.index]) for result in results]
    labels = [
        evaluation
        for entry in entries
        for evaluation in entry.evaluations
        if evaluation.evaluator == "label"
    ]
    dataset = compute_dataset_evaluator_results(
        {"label": labels},
        {"label": [{"type": "fscore", "classes": ["geo", "other"], "averaging": "macro"}]},
    )
    roots = [node for result in results if result.run for node in result.run.handler.trace]
    folder.mkdir(parents=True, exist_ok=True)
    save_traces(roots, folder / "traces.jsonl")
    run = RunResult(
        run_id="20260101-120000-abc",
        name="geography",
        source="datasets/geo.json",
        evaluators=["mentions_paris", "judge x3", "label"],
        entries=entries,
        dataset_results=dataset,
        duration_s=1.25,
        settings={"judge_model": "gpt-4o-mini", "concurrency": 1, "note": "<b>bold</b> {{7*7}}"},
    )
    (folder / "result.json").write_text(run.model_dump_json(indent=1), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("results") / "20260101-120000-abc"
    build_run(folder)
    return folder


@pytest.fixture(scope="module")
def card(run_folder: Path) -> DatasetScorecard:
    return DatasetScorecard.from_folder(run_folder)


@pytest.fixture(scope="module")
def html(card: DatasetScorecard) -> str:
    return generate_dataset_scorecard_html(card)


def data_element(page: str) -> str:
    found = re.search(
        r'<script type="application/json" id="scorecard-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    return found.group(1)


def entry_named(card: DatasetScorecard, name: str) -> Any:
    return next(entry for entry in card.entries if entry.name == name)


# --- what the scorecard gathers ---------------------------------------------------------------


def test_the_summary_counts_statuses_and_the_pass_rate(card: DatasetScorecard) -> None:
    assert len(card.entries) == 4
    assert card.status_counts == {
        CompletionStatus.SUCCESS: 1,
        CompletionStatus.FAILED_PARTIAL_SCORE: 2,
        CompletionStatus.ERROR: 1,
    }
    assert card.pass_rate == 0.25
    assert (card.name, card.run_id, card.duration_s) == ("geography", "20260101-120000-abc", 1.25)


def test_each_row_equals_the_row_validation_makes_of_its_fields(card: DatasetScorecard) -> None:
    for row in card.entries:
        assert row == DatasetEntryResult(**dict(row))
        assert row.model_fields_set == DatasetEntryResult(**dict(row)).model_fields_set


def test_a_row_with_a_baseline_and_usage_equals_the_validated_row(run_folder: Path) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text(encoding="utf-8"))
    entry = run.entries[0].model_copy(
        update={"usage": {"gpt-4o-mini": ModelUsage(calls=2, input_tokens=10, output_tokens=5)}}
    )
    prices = PriceTable(models={"gpt-4o-mini": ModelPrice(input=1.0, output=2.0)})

    row = scorecard_row(entry, baseline=run.entries[1], prices=prices)

    assert (row.in_baseline, row.model_calls, row.tokens) == (True, 2, 15)
    assert row.cost is not None
    assert row == DatasetEntryResult(**dict(row))


def test_evaluators_may_differ_per_entry(card: DatasetScorecard) -> None:
    assert card.evaluators == ["mentions_paris", "judge x3", "label", "short"]
    river = entry_named(card, "river")
    assert [evaluation.evaluator for evaluation in river.evaluations] == ["mentions_paris", "short"]
    summary = {item.name: item for item in card.evaluator_summaries()}
    assert (summary["short"].applied, summary["label"].applied) == (1, 3)
    assert summary["mentions_paris"].errored == 1


def test_each_entry_carries_its_trace_as_a_tree_with_timings_and_messages(
    card: DatasetScorecard,
) -> None:
    trace = entry_named(card, "capital").trace
    agent = next(node for root in trace for node in [root, *root.children] if node.kind == "agent")
    assert [child.name for child in agent.children] == ["retrieve", "chat gpt-4o-mini"]
    chat = agent.children[1]
    assert (chat.kind, chat.model, chat.input_tokens, chat.output_tokens) == (
        "llm",
        "gpt-4o-mini",
        12,
        3,
    )
    assert [(m.direction, m.role, m.content) for m in chat.messages] == [
        ("in", "user", "capital of France"),
        ("out", "assistant", "Paris"),
    ]
    assert chat.start_ms >= agent.start_ms >= 0 and agent.duration_ms >= chat.duration_ms
    assert {value.name for value in agent.values} == {"documents", "answer"}


def test_a_model_call_recorded_by_wrap_shows_as_a_chat(
    tmp_path: Path, fake_judge: FakeJudgeServer
) -> None:
    fake_judge.add_rule("Capital", content="Paris.")
    client = openai.OpenAI(base_url=fake_judge.base_url, api_key="test", max_retries=0)

    @wrap(kind="llm")
    def call_model(messages: list[dict[str, str]], model: str) -> Any:
        return client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]

    with capture_traces() as handler:
        response = call_model([{"role": "user", "content": "Capital of France?"}], "gpt-4o-mini")
    save_traces(handler.trace, tmp_path / "traces.jsonl")
    trace_ids = [f"{trace_id:032x}" for trace_id in handler.trace_ids]
    run = RunResult(name="chat", entries=[EntryResult(index=0, name="q", trace_ids=trace_ids)])
    (tmp_path / "result.json").write_text(run.model_dump_json(), encoding="utf-8")

    (chat,) = DatasetScorecard.from_folder(tmp_path).entries[0].trace

    assert response.usage is not None
    assert (chat.kind, chat.model, chat.input_tokens, chat.output_tokens) == (
        "llm",
        "gpt-4o-mini",
        response.usage.prompt_tokens,
        response.usage.completion_tokens,
    )
    assert [(m.direction, m.role, m.content) for m in chat.messages] == [
        ("in", "user", "Capital of France?"),
        ("out", "assistant", "Paris."),
    ]


def test_the_failing_entry_keeps_its_error_and_its_trace(card: DatasetScorecard) -> None:
    boom = entry_named(card, "boom")
    assert boom.status is CompletionStatus.ERROR
    assert boom.error is not None and boom.error.message == "the app failed"
    agent = next(
        node for root in boom.trace for node in [root, *root.children] if node.kind == "agent"
    )
    assert agent.status == "error" and agent.error == "ValueError: the app failed"


def test_an_entry_whose_trace_is_not_in_the_file_says_so(run_folder: Path) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    lost = run.entries[0].model_copy(update={"trace_ids": ["0" * 32]})
    card = DatasetScorecard.from_run(
        run.model_copy(update={"entries": [lost]}), traces=run_folder / "traces.jsonl"
    )
    assert card.entries[0].trace == []
    assert (
        card.entries[0].trace_problem == f"trace {'0' * 32} is not in {run_folder / 'traces.jsonl'}"
    )


def test_an_unreadable_trace_file_is_reported_on_the_page(tmp_path: Path, run_folder: Path) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    broken = tmp_path / "traces.jsonl"
    broken.write_text('{"trace_id": "x"\n')
    card = DatasetScorecard.from_run(run, traces=broken)
    assert len(card.problems) == 1
    assert card.problems[0].startswith(
        f"Traces are not shown: {broken}: no line of it is a span (line 1: not valid JSON"
    )
    assert "Traces are not shown" in generate_dataset_scorecard_html(card)


def test_a_folder_without_traces_says_why_none_are_shown(tmp_path: Path, run_folder: Path) -> None:
    (tmp_path / "result.json").write_bytes((run_folder / "result.json").read_bytes())
    card = DatasetScorecard.from_folder(tmp_path / "result.json")
    assert card.problems == [
        f"Traces are not shown: there is no traces.jsonl beside {tmp_path / 'result.json'}."
    ]
    assert all(entry.trace == [] for entry in card.entries)


def test_a_folder_without_a_result_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"result\.json: no such file"):
        DatasetScorecard.from_folder(tmp_path)


def test_a_file_that_is_not_a_saved_run_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text('{"entries": 3}')
    with pytest.raises(
        ResultFileError, match=r"not a saved evaltrace run result: name: Field required"
    ):
        DatasetScorecard.from_folder(tmp_path)


def test_a_baseline_gives_each_cell_its_earlier_score(run_folder: Path) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    first = run.entries[0]
    lower = [
        evaluation.model_copy(update={"score": 0.5})
        if evaluation.evaluator == "mentions_paris"
        else evaluation
        for evaluation in first.evaluations
    ]
    old = run.model_copy(
        update={
            "run_id": "20251231-000000",
            "entries": [first.model_copy(update={"evaluations": lower}), *run.entries[1:3]],
        }
    )
    card = DatasetScorecard.from_run(run, baseline=old)
    capital = entry_named(card, "capital")
    assert capital.in_baseline and capital.baseline_scores["mentions_paris"] == 0.5
    assert entry_named(card, "river").in_baseline is False
    assert card.baseline is not None
    assert (card.baseline.run_id, card.baseline.matched, card.baseline.only_in_baseline) == (
        "20251231-000000",
        3,
        0,
    )
    summary = {item.name: item for item in card.evaluator_summaries()}
    assert summary["mentions_paris"].baseline_mean == pytest.approx((0.5 + 0.25) / 2)


def test_a_baseline_can_be_given_as_a_results_folder(run_folder: Path) -> None:
    card = DatasetScorecard.from_folder(run_folder, baseline=run_folder)
    assert card.baseline is not None and card.baseline.matched == 4
    assert entry_named(card, "boom").baseline_status is CompletionStatus.ERROR


def test_entries_of_one_name_match_baseline_entries_in_order() -> None:
    def run(scores: list[float]) -> RunResult:
        return RunResult(
            name="r",
            entries=[
                EntryResult(index=i, name="same", evaluations=[Evaluation(score=s, evaluator="e")])
                for i, s in enumerate(scores)
            ],
        )

    card = DatasetScorecard.from_run(run([1.0, 1.0]), baseline=run([0.2, 0.4]))
    assert [entry.baseline_scores["e"] for entry in card.entries] == [0.2, 0.4]


# --- the page ---------------------------------------------------------------------------------


def test_the_data_element_holds_the_scorecard_as_json_no_value_can_close(
    card: DatasetScorecard, html: str
) -> None:
    text = data_element(html)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    data = json.loads(text)["card"]
    assert [entry["name"] for entry in data["entries"]] == ["capital", "boom", "xss", "river"]
    assert data["entries"][2]["output"] == f"Paris {HOSTILE}"
    assert HOSTILE not in html  # nowhere on the page as markup, only escaped


def test_fields_at_their_default_are_left_out_and_listed_once(html: str) -> None:
    data = json.loads(data_element(html))
    river = data["card"]["entries"][3]
    assert "error" not in river and "trace_problem" not in river
    assert data["defaults"]["entry"]["error"] is None
    assert data["defaults"]["span"]["children"] == []
    assert data["defaults"]["evaluation"] == {
        "score": None,
        "reasoning": "",
        "details": {},
        "error": None,
        "skipped": False,
        "evaluator": None,
        "label": None,
    }


def test_line_and_paragraph_separators_are_escaped_in_the_data() -> None:
    run = RunResult(name="r", entries=[EntryResult(index=0, name="a\u2028b\u2029c & d")])
    text = data_element(generate_dataset_scorecard_html(run))
    assert "a\\u2028b\\u2029c \\u0026 d" in text
    assert json.loads(text)["card"]["entries"][0]["name"] == "a\u2028b\u2029c & d"


def test_text_the_template_writes_is_escaped_and_never_evaluated(html: str) -> None:
    assert "<code>&lt;b&gt;bold&lt;/b&gt; {{7*7}}</code>" in html
    assert "<b>bold</b>" not in html


def test_a_hostile_run_name_is_escaped_in_title_and_heading() -> None:
    run = RunResult(name="</title><script>alert(1)</script>", entries=[])
    page = generate_dataset_scorecard_html(run)
    assert (
        "<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; · evaltrace scorecard</title>"
        in page
    )
    assert page.count("<script") == 2


def test_the_page_loads_nothing_and_allows_only_its_own_style_and_script(html: str) -> None:
    markup = html.replace(data_element(html), "")
    # in a tag: the app's text (escaped, "&lt;img src=...") may say anything
    assert not re.search(r"<[^>]*\b(src|href)\s*=", markup)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert policy is not None
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    script = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert style is not None and len(script) == 1

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert html_module.unescape(policy.group(1)) == (
        f"default-src 'none'; style-src 'sha256-{digest(style.group(1))}'; "
        f"script-src 'sha256-{digest(script[0])}'; img-src data:; base-uri 'none'; "
        "form-action 'none'"
    )


def test_the_page_shows_the_summary_settings_and_evaluators(html: str) -> None:
    assert '<span class="tile-value" id="pass-rate">25.0%</span>' in html
    assert '<span class="tile-value" id="total-entries">4</span>' in html
    assert '<th scope="row">judge_model</th><td><code>gpt-4o-mini</code></td>' in html
    assert '<li data-status="FAILED_PARTIAL_SCORE">' in html
    assert '<th scope="row">short</th><td>1</td>' in html


def test_the_page_has_a_score_histogram_per_evaluator(html: str) -> None:
    assert html.count('aria-label="score distribution of') == 4
    assert 'mentions_paris <span class="muted">(3 scored; not counted: 1 errored)</span>' in html


def test_a_repeated_judge_gets_the_spread_of_its_runs(html: str) -> None:
    assert "judge x3: spread of the repeated runs" in html
    assert html.count('<g class="range">') == 2  # the two entries it scored
    assert "runs 0.6, 0.8, 1; score 0.8" in html


def test_many_repeated_entries_are_summarised_by_a_histogram_of_spreads() -> None:
    runs = {f"e{i}": ([0.0, 0.5], 0.5) for i in range(charts.MAX_RANGES + 1)}
    chart = charts.range_chart("judge", runs)
    assert chart.marks == [] and chart.spread is not None
    assert chart.spread.total == charts.MAX_RANGES + 1
    assert chart.spread.bars[5].label == f"0.5: {charts.MAX_RANGES + 1}"


def test_classification_results_show_a_prf_table_and_a_confusion_heat_map(html: str) -> None:
    assert "<h3>label</h3>" in html and '<span class="score-chip">fscore ' in html
    assert "Confusion matrix: rows are predicted classes, columns expected classes" in html
    # label scored two entries, both expected geo: one predicted geo, one other (the most: heat 9)
    assert (
        '<tr><th scope="row">geo</th><td class="heat-9" title="predicted geo, expected geo: 1">1'
        '</td><td class="heat-0" title="predicted geo, expected other: 0">0</td></tr>'
    ) in html
    assert '<td class="heat-9" title="predicted other, expected geo: 1">1</td>' in html
    assert '<th scope="row">macro average</th>' in html


def test_a_run_result_renders_without_building_a_scorecard_first() -> None:
    page = generate_dataset_scorecard_html(RunResult(name="plain"))
    assert page.startswith("<!DOCTYPE html>") and "<h1>plain</h1>" in page


def test_save_writes_the_page_and_returns_its_path(tmp_path: Path, card: DatasetScorecard) -> None:
    target = tmp_path / "out" / "scorecard.html"
    assert save_dataset_scorecard(card, target) == target
    assert target.read_text(encoding="utf-8") == generate_dataset_scorecard_html(card)
    assert [path.name for path in target.parent.iterdir()] == ["scorecard.html"]


def test_write_scorecard_puts_the_page_into_the_results_folder(run_folder: Path) -> None:
    path = write_scorecard(run_folder)
    assert path == run_folder / "scorecard.html"
    assert "capital of France" in path.read_text(encoding="utf-8")


# --- packaging and import cost ----------------------------------------------------------------


def test_the_template_and_its_assets_ship_inside_the_package() -> None:
    templates = files("evaltrace.results").joinpath("templates")
    names = {item.name for item in templates.iterdir()}
    assert {"scorecard.html.j2", "scorecard.css", "scorecard.js"} <= names


@pytest.mark.parametrize("asset", ["scorecard.css", "scorecard.js"])
def test_inline_assets_cannot_close_their_own_element(asset: str) -> None:
    text = files("evaltrace.results").joinpath("templates", asset).read_text(encoding="utf-8")
    assert "</" not in text


def test_jinja2_and_pandas_load_only_when_used() -> None:
    code = (
        "import sys, evaltrace.results\n"
        "card = evaltrace.results.DatasetScorecard.from_run(\n"
        "    evaltrace.results.model.RunResult(name='x'))\n"
        "before = [m for m in ('jinja2', 'pandas') if m in sys.modules]\n"
        "evaltrace.results.generate_dataset_scorecard_html(card)\n"
        "print(before, 'jinja2' in sys.modules, 'pandas' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] True False"


# --- the page written as the run goes -------------------------------------------------------


def written_as_the_run_goes(
    run: RunResult, tmp_path: Path, **chunks: int
) -> tuple[str, dict[str, Any]]:
    """The page a writer makes of ``run``'s entries added one by one (in reverse order)."""
    with ScorecardWriter(threshold=run.threshold, **chunks) as writer:
        for entry in reversed(run.entries):
            writer.add_entry(entry)
        path = writer.write(tmp_path / "scorecard.html", run.model_copy(update={"entries": []}))
    page = path.read_text(encoding="utf-8")
    return page, json.loads(data_element(page))


def test_a_page_written_as_the_run_goes_shows_what_one_built_from_the_run_shows(
    tmp_path: Path, run_folder: Path
) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    page, data = written_as_the_run_goes(run, tmp_path)
    built = json.loads(data_element(generate_dataset_scorecard_html(run)))
    by_index = sorted(data["card"]["entries"], key=lambda entry: entry.get("index", 0))
    assert by_index == built["card"]["entries"]
    assert {key: value for key, value in data["card"].items() if key != "entries"} == {
        key: value for key, value in built["card"].items() if key != "entries"
    }
    assert re.search(r'id="total-entries">4<', page) and re.search(r'id="passed-entries">1<', page)
    assert "score distribution of judge x3" in page and "Dataset-level results" in page


def test_a_large_run_keeps_each_entry_whole_in_chunks_and_the_grid_columns_inline(
    tmp_path: Path, run_folder: Path
) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    page, data = written_as_the_run_goes(run, tmp_path, inline_entries=2, chunk_entries=3)
    assert data["chunk"] == 3
    grid = data["card"]["entries"]
    assert [entry["name"] for entry in grid] == ["river", "xss", "boom", "capital"]
    assert all("output" not in entry and "trace_ids" not in entry for entry in grid)
    chunks = re.findall(
        r'<script type="application/json" id="scorecard-chunk-(\d)">(.*?)</script>', page, re.S
    )
    assert [number for number, _ in chunks] == ["0", "1"]
    assert not set(chunks[0][1]) & {"<", ">", "&", "\u2028", "\u2029"}
    whole = [entry for _, text in chunks for entry in json.loads(text)]
    assert [entry["name"] for entry in whole] == ["river", "xss", "boom", "capital"]
    assert whole[1]["output"] == f"Paris {HOSTILE}"
    assert HOSTILE not in page


def test_up_to_the_inline_size_the_page_has_no_chunk(tmp_path: Path, run_folder: Path) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    page, data = written_as_the_run_goes(run, tmp_path, inline_entries=4)
    assert data["chunk"] == 0 and 'id="scorecard-chunk-' not in page
    assert data["card"]["entries"][1]["output"] == f"Paris {HOSTILE}"


def test_a_writer_matches_each_entry_with_its_baseline_entry_as_it_is_added(
    tmp_path: Path, run_folder: Path
) -> None:
    run = RunResult.model_validate_json((run_folder / "result.json").read_text())
    old = run.model_copy(update={"entries": run.entries[:2], "name": "before"})
    with ScorecardWriter(threshold=run.threshold, baseline=old) as writer:
        for entry in run.entries:
            writer.add_entry(entry)
        page = writer.write(tmp_path / "page.html", run).read_text(encoding="utf-8")
    data = json.loads(data_element(page))
    assert [entry.get("in_baseline", False) for entry in data["card"]["entries"]] == [
        True,
        True,
        False,
        False,
    ]
    assert data["card"]["baseline"]["matched"] == 2
    assert "2 entries matched by name, 0 only in the baseline" in page


def test_a_writer_refuses_chunks_of_no_entry() -> None:
    with pytest.raises(ValueError, match="chunk_entries must be a whole number >= 1, got 0"):
        ScorecardWriter(chunk_entries=0)


def test_a_folder_written_by_release_0_1_0_gets_its_scorecard(tmp_path: Path) -> None:
    fixture = Path(__file__).parent / "fixtures" / "release_0_1_0"
    folders = [path.parent for path in fixture.rglob("result.json")] or [fixture]
    for folder in folders:
        copy = tmp_path / folder.name
        copy.mkdir()
        for file in folder.iterdir():
            if file.is_file():
                (copy / file.name).write_bytes(file.read_bytes())
        page = write_scorecard(copy).read_text(encoding="utf-8")
        assert json.loads(data_element(page))["card"]["entries"]


def test_the_results_of_one_classifier_share_one_panel_each_a_headline() -> None:
    labels = [
        Evaluation(score=1.0, details={"expected": "a", "actual": "a"}),
        Evaluation(score=0.0, details={"expected": "b", "actual": "a"}),
    ]
    classes = ["a", "b"]
    dataset = compute_dataset_evaluator_results(
        {"label": labels, "other": labels},
        {
            "label": [
                {"type": "precision", "classes": classes, "averaging": "macro"},
                {"type": "recall", "classes": classes, "averaging": "macro"},
                {"type": "confusion_matrix", "classes": classes},
            ],
            "other": [{"type": "recall", "classes": ["a"], "averaging": "micro"}],
        },
    )

    page = generate_dataset_scorecard_html(RunResult(name="panels", dataset_results=dataset))

    panels = page.split('<article class="dataset-result">')[1:]
    assert len(panels) == 2  # one per source evaluator, the tables of "label" shown once
    label, other = panels
    assert "<h3>label</h3>" in label and label.count('<table class="matrix">') == 1
    for kind in ("precision", "recall", "confusion_matrix"):
        assert f'<span class="score-chip">{kind} ' in label
    assert "<h3>other</h3>" in other and '<span class="score-chip">recall ' in other


def test_a_page_written_as_the_run_goes_shows_its_tokens_cost_and_latency(tmp_path: Path) -> None:
    entries = [EntryResult(index=0, name="a", duration_s=0.5)]
    run = RunResult(
        name="spent",
        entries=entries,
        usage={"m": ModelUsage(calls=2, input_tokens=100, output_tokens=20)},
        latency=latency_summary([0.5]),
    )
    with ScorecardWriter() as writer:
        writer.add_entry(entries[0])
        streamed = writer.write(tmp_path / "streamed.html", run).read_text(encoding="utf-8")
    built = generate_dataset_scorecard_html(run)

    for page in (streamed, built):  # the same tiles either way
        assert 'id="tokens"' in page and "120" in page and 'id="cost"' in page
        assert "unknown" in page and 'id="latency"' in page
