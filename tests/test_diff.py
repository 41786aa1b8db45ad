"""Comparing a run with a baseline: better, worse, same, new, gone; deltas; status changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaltrace.cli import main
from evaltrace.evals import Evaluation, EvaluationError
from evaltrace.results import EntryResult, RunResult, diff_results, render_diff
from evaltrace.results.model import CompletionStatus

S = CompletionStatus


def scored(score: float, evaluator: str = "exact") -> Evaluation:
    return Evaluation(score=score, evaluator=evaluator)


def errored(evaluator: str = "exact") -> Evaluation:
    return Evaluation.errored(EvaluationError(type="ValueError", message="x"), evaluator=evaluator)


def run(entries: dict[str, list[Evaluation]], **more: object) -> RunResult:
    return RunResult(
        name="faq",
        run_id=str(more.pop("run_id", "r")),
        entries=[
            EntryResult(index=i, name=name, evaluations=evaluations)
            for i, (name, evaluations) in enumerate(entries.items())
        ],
        **more,  # type: ignore[arg-type]
    )


def test_score_deltas_are_new_minus_old_and_name_the_direction() -> None:
    old = run({"a": [scored(0.6), scored(0.9, "tone")], "b": [scored(1.0)]})
    new = run({"a": [scored(0.9), scored(0.6, "tone")], "b": [scored(1.0)]})

    diff = diff_results(old, new)

    a, b = diff.entries
    assert [(c.evaluator, c.change, round(c.delta or 0, 4)) for c in a.evaluations] == [
        ("exact", "better", 0.3),
        ("tone", "worse", -0.3),
    ]
    # Passing both times, one evaluation worse: a regression, even though another improved.
    assert a.change == "worse"
    assert [(c.change, c.delta) for c in b.evaluations] == [("same", 0.0)]
    assert b.change == "same"
    assert diff.regressions == [a]


def test_passing_and_failing_decide_an_entrys_direction() -> None:
    old = run({"fixed": [scored(0.2)], "broken": [scored(0.9)]})
    new = run({"fixed": [scored(0.8)], "broken": [scored(0.1)]})

    diff = diff_results(old, new)

    assert [(e.name, e.change, e.old_status, e.new_status) for e in diff.entries] == [
        ("fixed", "better", S.FAILED_PARTIAL_SCORE, S.SUCCESS),
        ("broken", "worse", S.SUCCESS, S.FAILED_PARTIAL_SCORE),
    ]
    assert all(entry.status_changed for entry in diff.entries)


def test_entries_and_evaluators_only_on_one_side_are_new_or_gone() -> None:
    old = run({"kept": [scored(1.0)], "dropped": [scored(1.0)]})
    new = run({"kept": [scored(1.0), scored(0.5, "tone")], "added": [scored(0.0)]})

    diff = diff_results(old, new)

    assert [(e.name, e.change) for e in diff.entries] == [
        ("kept", "same"),
        ("added", "new"),
        ("dropped", "gone"),
    ]
    assert [(c.evaluator, c.change, c.delta) for c in diff.entries[0].evaluations] == [
        ("exact", "same", 0.0),
        ("tone", "new", None),
    ]
    assert not diff.has_regressions
    assert diff.counts() == {"same": 1, "new": 2, "gone": 1}


def test_errored_ranks_below_skipped_below_scored() -> None:
    skipped = Evaluation.skip("no expectation", evaluator="exact")
    old = run({"a": [errored()], "b": [skipped], "c": [scored(0.0)], "d": [errored()]})
    new = run({"a": [scored(0.0)], "b": [errored()], "c": [skipped], "d": [errored()]})

    changes = [entry.evaluations[0] for entry in diff_results(old, new).entries]

    assert [(c.change, c.delta) for c in changes] == [
        ("better", None),
        ("worse", None),
        ("worse", None),
        ("same", None),
    ]


def test_a_status_change_without_a_score_change_is_shown() -> None:
    timeout = EvaluationError(type="EvaluatorTimeoutError", message="1 s", where="runnable")
    crash = EvaluationError(type="RuntimeError", message="boom", where="runnable")
    old = run({"a": []})
    new = run({"a": []})
    old = old.model_copy(
        update={"entries": [EntryResult(index=0, name="a", evaluations=[], error=timeout)]}
    )
    new = new.model_copy(
        update={"entries": [EntryResult(index=0, name="a", evaluations=[], error=crash)]}
    )

    diff = diff_results(old, new)

    (entry,) = diff.entries
    assert (entry.change, entry.old_status, entry.new_status) == ("same", S.TIMED_OUT, S.ERROR)
    assert "a: TIMED_OUT -> ERROR" in render_diff(diff, plain=True)


def test_dataset_level_results_are_compared_too() -> None:
    old = run({"a": [scored(1.0)]}, dataset_results={"intent::recall": scored(0.8, "")})
    new = run({"a": [scored(1.0)]}, dataset_results={"intent::recall": scored(0.5, "")})

    diff = diff_results(old, new)

    (result,) = diff.dataset_results
    assert (result.evaluator, result.change, round(result.delta or 0, 4)) == (
        "intent::recall",
        "worse",
        -0.3,
    )
    assert diff.regressions == [result]


def test_the_text_diff_lists_changes_with_signed_deltas() -> None:
    old = run({"a": [scored(0.4)], "b": [scored(0.5)]}, run_id="old-run")
    new = run({"a": [scored(0.65)], "b": [scored(0.5)]}, run_id="new-run")

    text = render_diff(diff_results(old, new), plain=True)
    verbose = render_diff(diff_results(old, new), plain=True, verbose=True)

    assert "faq new-run compared with faq old-run" in text
    assert "| a     | exact     | 0.4000 | 0.6500 | +0.2500 | better |" in text
    assert "| b " not in text and "| b " in verbose
    assert text.rstrip().endswith("1 better, 0 worse, 1 same, 0 new, 0 gone; 0 regressions")
    assert text.isascii()


def save(path: Path, result: RunResult) -> Path:
    path.mkdir(parents=True)
    (path / "result.json").write_text(result.model_dump_json())
    return path


def test_evaltrace_diff_exits_1_on_a_regression_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = save(tmp_path / "old", run({"a": [scored(0.9)]}))
    new = save(tmp_path / "new", run({"a": [scored(0.6)]}))

    assert main(["diff", str(old), str(new / "result.json")]) == 0
    assert "-0.3000" in capsys.readouterr().out
    assert main(["diff", str(old), str(new), "--fail-on-regression=any"]) == 1
    assert main(["diff", str(new), str(old), "--fail-on-regression=any"]) == 0
    # One entry is no evidence: only --fail-on-regression=any fails on it.
    assert main(["diff", str(old), str(new), "--fail-on-regression"]) == 0
    capsys.readouterr()
    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["entries"][0]["evaluations"][0]["delta"] == pytest.approx(-0.3)
    assert data["has_regressions"] is True


def test_evaltrace_diff_of_a_file_that_is_not_a_result_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = save(tmp_path / "old", run({"a": [scored(0.9)]}))
    (tmp_path / "junk.json").write_text('{"name": 3}')

    assert main(["diff", str(old), str(tmp_path / "junk.json")]) == 2
    err = capsys.readouterr().err
    assert "junk.json: not a saved evaltrace run result: name: " in err
    assert main(["diff", str(old), str(tmp_path / "missing")]) == 2
    assert "missing: no such file" in capsys.readouterr().err
