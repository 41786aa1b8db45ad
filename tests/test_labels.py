"""Labels: an evaluation may carry a string result next to, or instead of, a score.

A label-only evaluation (``score=None``, a ``label``) is neither a pass, nor a failure, nor an
error: pass criteria and entry statuses leave it out, as they leave out a skipped one. The
report and the scorecard show how often each evaluator gave each label.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from evaltrace import Evaluable, Evaluation, NamedData, ScoreThreshold, evaluate
from evaltrace.evals import EvaluationError
from evaltrace.evals.telemetry import evaluation_attributes
from evaltrace.results import (
    CompletionStatus,
    EntryResult,
    RunResult,
    generate_dataset_scorecard_html,
    render_report,
)
from evaltrace.results.model import entry_status

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


def labelled(label: str, evaluator: str = "Sentiment") -> Evaluation:
    return Evaluation(label=label, evaluator=evaluator)


def scored(score: float, evaluator: str = "exact") -> Evaluation:
    return Evaluation(score=score, evaluator=evaluator)


# --- the evaluation -----------------------------------------------------------------------------


def test_an_evaluation_may_carry_a_label_instead_of_a_score() -> None:
    evaluation = Evaluation(label="positive", reasoning="cheerful wording")
    assert (evaluation.score, evaluation.label, evaluation.status) == (None, "positive", "labelled")
    assert not evaluation.passed(0.0)


def test_a_scored_evaluation_may_carry_a_label_beside_its_score() -> None:
    evaluation = Evaluation(score=0.8, label="mostly right")
    assert evaluation.status == "scored"
    assert evaluation.passed(0.5)


def test_an_evaluation_with_neither_score_nor_label_is_refused() -> None:
    with pytest.raises(ValidationError, match="label"):
        Evaluation()


def test_an_errored_or_skipped_evaluation_carries_no_label() -> None:
    error = EvaluationError(type="KeyError", message="x")
    with pytest.raises(ValidationError, match="label"):
        Evaluation(score=None, error=error, label="positive")
    with pytest.raises(ValidationError, match="label"):
        Evaluation(score=None, skipped=True, label="positive")


def test_an_empty_label_is_refused() -> None:
    with pytest.raises(ValidationError, match="label"):
        Evaluation(label="")


def test_an_evaluator_returning_a_string_gives_a_label() -> None:
    def sentiment(evaluable: Evaluable) -> str:
        return "positive" if "great" in evaluable.output_value() else "negative"

    case = Evaluable(eval_output=[NamedData(name="output", value="a great answer")])
    evaluation = anyio.run(evaluate, sentiment, case)
    assert (evaluation.status, evaluation.label, evaluation.evaluator) == (
        "labelled",
        "positive",
        "sentiment",
    )


def test_an_evaluator_returning_an_empty_string_is_an_error() -> None:
    evaluation = anyio.run(evaluate, lambda e: "", Evaluable())
    assert evaluation.status == "errored"
    assert evaluation.error is not None and "label" in evaluation.error.message


def test_a_label_round_trips_through_a_saved_entry() -> None:
    entry = EntryResult(index=0, name="a", evaluations=[labelled("positive"), scored(1.0)])
    assert EntryResult.model_validate_json(entry.model_dump_json()) == entry


def test_the_exported_evaluation_event_names_the_label() -> None:
    attributes = evaluation_attributes(labelled("positive"))
    assert attributes["gen_ai.evaluation.score.label"] == "positive"
    assert "gen_ai.evaluation.score.value" not in attributes


# --- pass criteria and statuses -----------------------------------------------------------------


def test_score_threshold_leaves_label_only_evaluations_out() -> None:
    criteria = ScoreThreshold(threshold=0.5)
    assert criteria([[scored(1.0), labelled("negative")]])[0]
    assert not criteria([[scored(0.2), labelled("positive")]])[0]


def test_score_threshold_leaves_out_an_input_with_only_labels() -> None:
    passed, message = ScoreThreshold()([[labelled("positive")], [scored(1.0)]])
    assert passed
    assert "1 of 1 inputs passed" in message


def test_an_entry_with_only_labels_has_no_score_logged() -> None:
    assert entry_status([labelled("positive")]) is CompletionStatus.NO_SCORE_LOGGED


def test_a_label_beside_passing_scores_does_not_change_the_status() -> None:
    assert entry_status([scored(1.0), labelled("negative")]) is CompletionStatus.SUCCESS


# --- counting labels ----------------------------------------------------------------------------


def sentiment_run() -> RunResult:
    labels = ["positive", "negative", "positive"]
    return RunResult(
        run_id="20261123T104107.123456Z",
        name="reviews",
        evaluators=["exact", "Sentiment"],
        entries=[
            EntryResult(index=i, name=f"r{i}", evaluations=[scored(1.0), labelled(label)])
            for i, label in enumerate(labels)
        ],
    )


def test_a_run_counts_each_evaluators_labels() -> None:
    assert sentiment_run().label_counts == {"Sentiment": {"positive": 2, "negative": 1}}


def test_label_counts_given_for_entries_not_held_are_kept() -> None:
    counts = {"Sentiment": {"positive": 40, "negative": 10}}
    result = RunResult(name="big", label_counts=counts, counts={CompletionStatus.SUCCESS: 50})
    assert RunResult.model_validate_json(result.model_dump_json()).label_counts == counts


def test_the_report_shows_the_label_in_its_cell_and_each_labels_frequency() -> None:
    text = render_report([sentiment_run()], plain=True)
    assert "| positive " in text
    lines = [line for line in text.splitlines() if "Sentiment" in line and "%" in line]
    assert any("positive" in line and "2 of 3" in line and "67%" in line for line in lines)
    assert any(
        "negative" in line and "1 of 3" in line and "33%" in line for line in text.splitlines()
    )


def test_the_scorecard_shows_each_evaluators_label_frequencies() -> None:
    html = generate_dataset_scorecard_html(sentiment_run())
    summary = html.split('id="evaluator-summary"')[1].split("</table>")[0]
    assert "positive 2 (67%)" in summary
    assert "negative 1 (33%)" in summary


APP = """\
def review(text: str) -> str:
    return text
"""

LABELLER = """\
def sentiment(evaluable):
    return "positive" if "good" in evaluable.output_value() else "negative"


def answered(evaluable):
    return bool(evaluable.output_value())
"""


def test_evaltrace_test_counts_the_labels_of_every_entry_of_a_large_run(tmp_path: Path) -> None:
    # 25 passing entries: the report holds none of them, yet counts every entry's label.
    texts = ["good"] * 18 + ["bad"] * 7
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "labels.py").write_text(LABELLER)
    (tmp_path / "reviews.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:review",
                "evaluators": ["labels.py:sentiment", "labels.py:answered"],
                "entries": [
                    {"name": f"r{i}", "entry_kwargs": {"text": t}} for i, t in enumerate(texts)
                ],
            }
        )
    )

    done = subprocess.run(
        [EVALTRACE, "test", "reviews.evaltrace.json", "--no-scorecard"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any("positive" in line and "18 of 25" in line and "72%" in line for line in lines), (
        done.stdout
    )
    assert any("negative" in line and "7 of 25" in line and "28%" in line for line in lines)
