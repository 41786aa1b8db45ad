"""A run's statistics: computed once at its end, saved, and shown everywhere it is read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from scipy import stats as scipy_stats

import evaltrace
from evaltrace import Evaluable, Evaluation
from evaltrace.datasets import Dataset, dataset_from_data, run_dataset
from evaltrace.engine import RunConfig
from evaltrace.metrics import (
    ConfusionMatrixAggregatorSpec,
    FScoreAggregatorSpec,
    PrecisionAggregatorSpec,
    RecallAggregatorSpec,
    build_dataset_evaluator,
)
from evaltrace.results import (
    DatasetScorecard,
    EntryResult,
    RunResult,
    generate_dataset_scorecard_html,
    load_result,
    merge_results,
    render_report,
)
from evaltrace.results.run_statistics import StatisticsTally, run_statistics, stream_seed
from evaltrace.statistics import bootstrap_means, percentile_interval, wilson_interval
from evaltrace.testing import OTLPReceiver

CLASSES = ["spam", "ham", "eggs"]
SPECS = [
    PrecisionAggregatorSpec(classes=CLASSES, averaging="macro"),
    PrecisionAggregatorSpec(classes=CLASSES, averaging="micro"),
    RecallAggregatorSpec(classes=CLASSES, averaging="macro"),
    RecallAggregatorSpec(classes=CLASSES, averaging="micro"),
    FScoreAggregatorSpec(classes=CLASSES, averaging="macro", f_value=2.0),
    FScoreAggregatorSpec(classes=CLASSES, averaging="micro", f_value=0.5),
    ConfusionMatrixAggregatorSpec(classes=CLASSES),
]
LABELS = [*CLASSES, "SPAM ", "other"]


def random_items(rng: np.random.Generator, count: int) -> list[tuple[str, str]]:
    return [(str(rng.choice(LABELS)), str(rng.choice(LABELS))) for _ in range(count)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: f"{spec.type}")
def test_headline_scores_from_code_counts_equal_the_evaluators_score(spec: object) -> None:
    evaluator = build_dataset_evaluator(spec, "intent")  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    items = random_items(rng, 300)
    codes = evaluator.codes(items)
    distinct, first = np.unique(codes, return_index=True)
    representative = [items[i] for i in first]
    weights = rng.integers(0, 4, size=(20, distinct.size)).astype(float)

    scores = evaluator.headline_of_counts(weights, distinct)

    for row, score in zip(weights, scores, strict=True):
        multiset = [item for item, times in zip(representative, row, strict=True)
                    for _ in range(int(times))]  # fmt: skip
        expected = evaluator.evaluate(multiset).score or 0.0
        assert score == pytest.approx(expected, abs=1e-12)


# -- a run's statistics ----------------------------------------------------------------------

SCORES = [1.0, 0.0, 0.5, 1.0, 1.0, 0.25, 1.0, 0.75, 0.0, 1.0, 1.0, 0.5]


def scored_dataset(scores: list[float] = SCORES) -> Dataset:
    return dataset_from_data(
        {
            "name": "graded",
            "entries": [
                {"name": f"e{i}", "entry_kwargs": {"score": score}}
                for i, score in enumerate(scores)
            ],
        }
    )


def echo(score: float) -> float:
    return score


def graded(evaluable: Evaluable) -> float:
    return float(evaluable.output_value())


def never_sure(evaluable: Evaluable) -> Evaluation:
    score = float(evaluable.output_value())
    if score == 0.25:
        raise ValueError("cannot judge a quarter")
    if score == 0.75:
        return Evaluation.skip("no opinion")
    return Evaluation(score=1.0 - score)


async def run_graded(**options: Any) -> RunResult:
    return await run_dataset(
        scored_dataset(), runnable=echo, evaluators=[graded, never_sure], **options
    )


@pytest.mark.anyio
async def test_a_run_saves_each_evaluators_mean_with_its_interval_and_n() -> None:
    result = await run_graded()

    statistics = result.statistics
    assert statistics is not None
    assert (statistics.confidence, statistics.resamples, statistics.seed) == (0.95, 1000, 0)
    assert statistics.method == "bootstrap-percentile"
    stats = statistics.evaluator("graded")
    assert stats is not None
    assert (stats.n, stats.entries) == (12, 12)
    assert stats.mean == pytest.approx(np.mean(SCORES))
    assert stats.mean_interval is not None and stats.mean in stats.mean_interval
    assert stats.mean_interval.width > 0.2  # 12 scores between 0 and 1: a wide interval
    assert stats.standard_error == pytest.approx(scipy_stats.sem(SCORES), abs=1e-12)
    expected = percentile_interval(
        bootstrap_means(SCORES, resamples=1000, seed=stream_seed(0, "graded")), confidence=0.95
    )
    assert stats.mean_interval == expected


@pytest.mark.anyio
async def test_the_pass_rate_has_a_wilson_interval_and_errors_count_as_fails() -> None:
    result = await run_graded()

    assert result.statistics is not None
    stats = result.statistics.evaluator("never_sure")
    assert stats is not None
    # 12 entries: one errored (a fail), one skipped (left out); 10 scored 1 - score.
    assert (stats.n, stats.errored, stats.skipped, stats.pass_n) == (10, 1, 1, 11)
    scored = [1.0 - s for s in SCORES if s not in (0.25, 0.75)]
    passed = sum(score >= 0.5 for score in scored)
    assert (stats.passed, stats.pass_rate) == (passed, passed / 11)
    assert stats.pass_rate_method == "wilson"
    assert stats.pass_rate_interval == wilson_interval(passed, 11, confidence=0.95)


@pytest.mark.anyio
async def test_the_same_entries_give_the_same_intervals_whatever_the_order() -> None:
    first = await run_graded(concurrency=1)
    second = await run_graded(concurrency=12)

    assert first.statistics == second.statistics


@pytest.mark.anyio
async def test_confidence_resamples_and_seed_are_the_runs_to_set() -> None:
    default = await run_graded()
    other = await run_graded(confidence=0.8, resamples=300, statistics_seed=7)
    none = await run_graded(resamples=0)

    assert other.statistics is not None and default.statistics is not None
    assert (other.statistics.confidence, other.statistics.resamples) == (0.8, 300)
    assert other.statistics.seed == 7
    narrow = other.statistics.evaluators[0].mean_interval
    wide = default.statistics.evaluators[0].mean_interval
    assert narrow is not None and wide is not None and narrow.width < wide.width
    assert none.statistics is None


def test_a_bad_confidence_or_resample_count_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="confidence must be a number between 0 and 1"):
        RunConfig(confidence=95)
    with pytest.raises(ValueError, match=r"resamples must be a whole number >= 0 \(0: no"):
        RunConfig(resamples=-5)


@pytest.mark.anyio
async def test_statistics_are_saved_in_result_json_and_read_back(tmp_path: Path) -> None:
    result = await run_graded(output_dir=tmp_path)

    saved = load_result(tmp_path / result.run_id)

    assert saved.statistics == result.statistics
    assert json.loads((tmp_path / result.run_id / "result.json").read_text())["statistics"]


def test_a_result_saved_before_statistics_still_opens_without_them() -> None:
    old = Path(__file__).parent / "fixtures" / "release_0_1_0"
    folders = [path for path in old.rglob("result.json")]
    assert folders
    for path in folders:
        assert load_result(path).statistics is None


def entry_with(index: int, **scores: float | None) -> EntryResult:
    return EntryResult(
        index=index,
        name=f"e{index}",
        evaluations=[
            Evaluation(score=score, evaluator=name)
            if score is not None
            else Evaluation.skip("n/a", evaluator=name)
            for name, score in scores.items()
        ],
    )


def test_many_distinct_scores_give_the_figures_of_every_score() -> None:
    scores = np.random.default_rng(3).random(1000)
    tally = StatisticsTally(threshold=0.5)
    for index, score in enumerate(scores):
        tally.add(entry_with(index, judge=float(score)))

    (stats,) = tally.statistics(confidence=0.95, resamples=500, seed=1).evaluators

    assert stats.mean == pytest.approx(scores.mean(), abs=1e-12)
    assert stats.mean_interval == percentile_interval(
        bootstrap_means(scores, resamples=500, seed=stream_seed(1, "judge"))
    )
    assert stats.passed == int((scores >= 0.5).sum())


def test_entries_that_repeat_are_resampled_whole() -> None:
    # Five repetitions of each of 30 entries, identical within an entry: the run knows 30
    # entries, not 150 independent scores, and its interval says so.
    per_entry = np.random.default_rng(4).random(30)
    clustered = StatisticsTally(threshold=0.5, clustered=True)
    naive = StatisticsTally(threshold=0.5)
    for index, score in enumerate(np.repeat(per_entry, 5)):
        clustered.add(entry_with(index, judge=float(score)), cluster=index // 5)
        naive.add(entry_with(index, judge=float(score)))

    (whole,) = clustered.statistics(confidence=0.95, resamples=2000, seed=0).evaluators
    (single,) = naive.statistics(confidence=0.95, resamples=2000, seed=0).evaluators

    assert (whole.n, whole.entries) == (150, 30)
    assert whole.pass_rate_method == "bootstrap-percentile"
    assert whole.mean_interval is not None and single.mean_interval is not None
    assert whole.mean_interval.width > 1.8 * single.mean_interval.width
    assert whole.standard_error == pytest.approx(scipy_stats.sem(per_entry), rel=1e-9)


def label(evaluable: Evaluable) -> Evaluation:
    expected, actual = evaluable.expectation, evaluable.output_value()
    return Evaluation(
        score=float(actual == expected), details={"expected": expected, "actual": actual}
    )


def labelled_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    labels = ["spam", "ham"]
    return [
        (str(expected), str(expected) if rng.random() < 0.8 else str(rng.choice(labels)))
        for expected in rng.choice(labels, count)
    ]


def intent_dataset(pairs: list[tuple[str, str]]) -> Dataset:
    aggregators = [{"type": "precision", "classes": ["spam", "ham"]}]
    return dataset_from_data(
        {
            "name": "intent",
            "evaluators": [{"name": "label", "aggregators": aggregators}],
            "entries": [
                {"name": f"e{i}", "entry_kwargs": {"label": actual}, "expectation": expected}
                for i, (expected, actual) in enumerate(pairs)
            ],
        }
    )


def classify(label: str) -> str:
    return label


@pytest.mark.anyio
async def test_dataset_level_results_get_a_bootstrap_interval_over_entries() -> None:
    result = await run_dataset(
        intent_dataset(labelled_pairs(60, 5)), runnable=classify, evaluators=[label]
    )

    assert result.statistics is not None
    (metric,) = result.statistics.dataset_results
    key = "label::precision"
    assert (metric.key, metric.n) == (key, 60)
    assert metric.score == result.dataset_results[key].score
    assert metric.interval is not None and metric.score in metric.interval
    assert 0.05 < metric.interval.width < 0.5


@pytest.mark.anyio
async def test_a_saved_runs_statistics_can_be_computed_again_from_its_entries() -> None:
    result = await run_graded()

    assert run_statistics(result, confidence=0.95, resamples=1000, seed=0) == result.statistics


@pytest.mark.anyio
async def test_merged_shards_have_the_statistics_of_the_whole_run(tmp_path: Path) -> None:
    (tmp_path / "grading.py").write_text(
        "def echo(score):\n    return score\n\n"
        "def graded(evaluable):\n    return float(evaluable.output_value())\n"
    )
    scores = np.round(np.random.default_rng(6).random(40), 2)
    document = {
        "name": "graded",
        "runnable": "grading.py:echo",
        "evaluators": ["grading.py:graded"],
        "entries": [{"name": f"e{i}", "entry_kwargs": {"score": s}} for i, s in enumerate(scores)],
    }
    path = tmp_path / "graded.evaltrace.json"
    path.write_text(json.dumps(document))
    whole = await run_dataset(path, output_dir=tmp_path / "whole")
    shards = [
        await run_dataset(path, output_dir=tmp_path / "shards", shard=f"{k}/2") for k in (1, 2)
    ]

    merged = load_result(
        merge_results([tmp_path / "shards" / shard.run_id for shard in shards], tmp_path / "m")
    )

    assert whole.statistics is not None
    assert merged.statistics == whole.statistics
    assert shards[0].statistics != whole.statistics


# -- where the statistics are shown ----------------------------------------------------------


@pytest.mark.anyio
async def test_the_text_report_shows_each_interval_with_its_n() -> None:
    result = await run_graded()

    text = render_report([result], plain=True)

    assert "Scores with 95% intervals" in text
    graded = result.statistics.evaluator("graded")  # type: ignore[union-attr]
    assert graded is not None and graded.mean_interval is not None
    low, high = graded.mean_interval.low, graded.mean_interval.high
    assert f"| graded     | 12 | 0.667 [{low:.3f}, {high:.3f}]" in text
    assert "| never_sure | 10 |" in text and "4/11" in text
    assert "mean: bootstrap percentile over entries (1000 resamples, seed 0)" in text
    assert "fewer than 30 entries (graded, never_sure): the intervals are wide" in text


@pytest.mark.anyio
async def test_the_scorecard_shows_the_intervals_and_the_baselines_verdicts() -> None:
    baseline = await run_graded()
    result = await run_dataset(
        scored_dataset([0.0] * len(SCORES)), runnable=echo, evaluators=[graded, never_sure]
    )
    result = result.model_copy(
        update={"entries": [e.model_copy(update={"name": f"e{e.index}"}) for e in result.entries]}
    )

    html = generate_dataset_scorecard_html(DatasetScorecard.from_run(result, baseline=baseline))

    assert 'id="evaluator-statistics"' in html and "Scores with 95% intervals" in html
    assert "0.000 [0.000, 0.000]" in html
    assert 'id="baseline-verdicts"' in html
    assert '<td class="verdict verdict-worse">worse</td>' in html
    assert "Holm" in html and "Fewer than 30 entries" in html


@pytest.mark.anyio
async def test_the_statistics_frame_has_one_row_per_evaluator_and_metric() -> None:
    result = await run_graded()

    frame = result.statistics_dataframe()

    assert list(frame["name"]) == ["graded", "never_sure"]
    assert list(frame.columns[:4]) == ["run_id", "run", "kind", "name"]
    row = frame.set_index("name").loc["graded"]
    interval = result.statistics.evaluators[0].mean_interval  # type: ignore[union-attr]
    assert interval is not None
    assert (row["n"], row["mean_low"], row["mean_high"]) == (12, interval.low, interval.high)
    assert row["confidence"] == 0.95 and row["resamples"] == 1000


@pytest.fixture
def collector() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver
    evaltrace.shutdown(timeout_millis=1000)


@pytest.mark.anyio
async def test_the_runs_statistics_are_exported_as_evaluation_results_at_its_end(
    collector: OTLPReceiver,
) -> None:
    evaltrace.init(
        exporters=[OTLPSpanExporter(endpoint=collector.traces_url, timeout=5)],
        export_evaluations=True,
    )
    result = await run_graded()
    assert evaltrace.flush()

    (root,) = [span for span in collector.spans if span.name == "evaluation run graded"]
    children = {span.name: span for span in collector.spans if span.parent_span_id == root.span_id}
    assert sorted(children) == ["evaluation statistics graded", "evaluation statistics never_sure"]
    ((name, event),) = children["evaluation statistics graded"].events
    stats = result.statistics.evaluator("graded")  # type: ignore[union-attr]
    assert stats is not None and stats.mean_interval is not None
    assert name == "gen_ai.evaluation.result"
    assert event["gen_ai.evaluation.score.value"] == stats.mean
    assert event["evaltrace.statistics.mean.low"] == stats.mean_interval.low
    assert event["evaltrace.statistics.n"] == 12
    assert event["evaltrace.statistics.confidence"] == 0.95
    assert event["evaltrace.statistics.run_id"] == result.run_id
    assert "n=12" in event["gen_ai.evaluation.explanation"]
