"""The package's front door: every public name resolves, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import evaltrace


def test_every_public_name_resolves() -> None:
    missing = [name for name in evaltrace.__all__ if not hasattr(evaltrace, name)]
    assert missing == []


def test_the_evaluate_function_is_not_shadowed_by_a_subpackage() -> None:
    import evaltrace.evals

    assert callable(evaltrace.evaluate)
    assert evaltrace.evaluate.__module__ == "evaltrace.evals.evaluator"


SEED_NAMES = """
    wrap capture_traces MemoryTraceHandler InstrumentationHandler init flush shutdown
    ObservationNode LLMSpan load_traces save_traces root last_llm_call first_llm_call by_name
    NamedData Evaluable Evaluation Evaluator evaluate run_and_evaluate assert_pass
    assert_dataset_pass EvalAssertionError ScoreThreshold UNSET run_dataset evaluate_traces run
""".split()
"""The names a user imports first, at the root (DESIGN.md section 4, the seeds' names)."""

DESIGN_NAMES = """
    ObserveSpan by_kind TestCase
    AutoevalsAdapter create_llm_evaluator configure_judge Repeated AggregationMethod
    BaseJudgeAggregator AverageAggregationStrategy MedianAggregationStrategy
    MajorityVoteAggregationStrategy build_aggregation_strategy aggregate_repeated_results
    RepeatedResults MetricResult MetricsAggregator WeightedMetricsAggregator AggregationResult
    LevenshteinMatch ExactMatch NumericDiff JSONDiff ValidJSON ListContains EmbeddingSimilarity
    Factuality ClosedQA Battle Humor Security Sql Summary Translation Possible Moderation
    ContextRelevancy Faithfulness AnswerRelevancy AnswerCorrectness
    DocumentRecall DocumentMRR DocumentMAP AnswerExactMatch AnswerF1 SemanticAnswerSimilarity
    AggregatorSpec PrecisionAggregatorSpec RecallAggregatorSpec FScoreAggregatorSpec
    ConfusionMatrixAggregatorSpec ClassificationDetails ClassificationDatasetEvaluator
    build_dataset_evaluator compute_dataset_evaluator_results
    Dataset DatasetEntry load_dataset Runnable EntryResult CompletionStatus
    DatasetEntryResult DatasetScorecard generate_dataset_scorecard_html save_dataset_scorecard
    evaluate_runnable EvaluationResult Metric MetricsResult
    analyze_agent_log extract_task_outcome aggregate_results_to_dataframe
    register_evaluator RayExecutor
""".split()
"""The rest of DESIGN.md section 4: each in its floor's package."""


def test_the_front_door_is_small_and_holds_the_seeds_names() -> None:
    assert sorted(set(SEED_NAMES) - set(evaltrace.__all__)) == []
    assert len(evaltrace.__all__) <= 36


def test_every_design_name_lives_in_its_package() -> None:
    import importlib

    homes = {name: evaltrace._MOVED[name] for name in DESIGN_NAMES}
    missing = [
        f"{module}.{name}"
        for name, module in homes.items()
        if name not in importlib.import_module(module).__all__
    ]
    assert missing == []
    pipeline = importlib.import_module("evaltrace.pipeline")
    assert callable(pipeline.EvaluationResult.calculate_metrics)
    assert callable(pipeline.EvaluationResult.load)


def test_a_name_that_moved_still_works_with_a_warning_naming_its_new_import() -> None:
    from evaltrace.judges import ExactMatch

    with pytest.warns(DeprecationWarning, match=r"from evaltrace\.judges import ExactMatch"):
        moved = evaltrace.ExactMatch
    assert moved is ExactMatch
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        evaltrace.NoSuchThing  # noqa: B018


HEAVY_AT_IMPORT = [
    "openai", "autoevals", "numpy", "pandas", "pydantic", "pydantic_core", "asyncio", "anyio",
    "jinja2", "rich", "click", "httpx", "requests", "yaml", "ray", "grpc", "google.protobuf",
    "opentelemetry.exporter", "importlib.metadata", "pathlib", "evaltrace.evals",
    "evaltrace.trace.io", "evaltrace.trace.trace_file",
]  # fmt: skip
"""Modules the capture and trace floors do without: each is loaded where it is used."""


@pytest.mark.parametrize(
    "statement", ["import evaltrace", "from evaltrace import wrap, capture_traces"]
)
def test_import_does_not_load_heavy_optional_modules(statement: str) -> None:
    code = f"import sys\n{statement}\nprint([m for m in {HEAVY_AT_IMPORT!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_version_is_read_on_first_use() -> None:
    assert "__version__" in dir(evaltrace)
    assert isinstance(evaltrace.__version__, str)
    assert evaltrace.__version__


def test_star_import_binds_every_public_name() -> None:
    names: dict[str, object] = {}
    exec("from evaltrace import *", names)
    assert sorted(set(evaltrace.__all__) - set(names)) == []


def test_python_dash_m_evaltrace_runs_the_command_line() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "evaltrace", "--version"], capture_output=True, text=True
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("evaltrace ")
    usage = subprocess.run([sys.executable, "-m", "evaltrace"], capture_output=True, text=True)
    assert usage.returncode == 2
    assert usage.stderr.startswith("Usage: evaltrace ")
