"""The intent classifier's dataset: one entry fails on purpose, and the metrics show it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltrace import RunResult, run_dataset
from evaltrace.results import CompletionStatus

DATASET = Path(__file__).with_name("intent_classifier.evaltrace.json")


@pytest.fixture(scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return await run_dataset(DATASET, output_dir=tmp_path_factory.mktemp("results"))


@pytest.mark.anyio
async def test_only_the_refund_question_read_as_order_status_fails(run: RunResult) -> None:
    failed = {entry.name: entry.status for entry in run.entries if not entry.status.passed}

    assert failed == {"refund-not-received": CompletionStatus.FAILED_SCORE_ZERO}
    [entry] = [entry for entry in run.entries if entry.name == "refund-not-received"]
    assert entry.evaluations[0].reasoning == "predicted 'order_status', expected 'refund'"


@pytest.mark.anyio
async def test_the_mistake_lowers_refund_recall_and_order_status_precision(run: RunResult) -> None:
    fscore = run.dataset_results["intent_matches::fscore"].details
    assert isinstance(fscore, dict)

    assert fscore["per_class"]["refund"]["recall"] == pytest.approx(2 / 3)
    assert fscore["per_class"]["order_status"]["precision"] == pytest.approx(3 / 4)
    assert fscore["macro"]["f_score"] == pytest.approx((6 / 7 + 4 / 5 + 1 + 1) / 4)
    assert run.dataset_results["intent_matches::precision"].score == pytest.approx(0.9375)
    assert run.dataset_results["intent_matches::recall"].score == pytest.approx(11 / 12)


@pytest.mark.anyio
async def test_the_confusion_matrix_has_one_refund_in_the_order_status_row(run: RunResult) -> None:
    matrix = run.dataset_results["intent_matches::confusion_matrix"].details
    assert isinstance(matrix, dict)

    assert matrix["classes"] == ["order_status", "refund", "cancellation", "product_question"]
    # Rows are predicted labels, columns expected ones.
    assert matrix["confusion_matrix"] == [[3, 1, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]
