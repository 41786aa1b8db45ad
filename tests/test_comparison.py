"""Comparing a run with a baseline: paired tests, Holm's correction, a verdict per evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evaltrace.cli import main
from evaltrace.evals import Evaluation, EvaluationError
from evaltrace.results import EntryResult, RunResult, diff_results, render_diff
from evaltrace.results.comparison import compare_runs
from evaltrace.results.run_statistics import stream_seed
from evaltrace.statistics import (
    bootstrap_means,
    mcnemar_exact,
    percentile_interval,
    wilcoxon_signed_rank,
)

# -- what must show: six more failures of sixty, through the real commands -------------------

APP = """\
BROKEN = {f"question {i}" for i in range(10, 16)}


def old(question: str) -> str:
    return question.upper()


def new(question: str) -> str:
    return "I do not know" if question in BROKEN else question.upper()
"""


CHECKS = """\
def lenient(evaluable):
    # A wrong answer still passes (0.6 >= 0.5): only the scores tell the versions apart.
    return 1.0 if evaluable.output_value() == evaluable.expectation else 0.6
"""


def write_runs(folder: Path, evaluator: str = "ExactMatch") -> None:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    entries = [
        {
            "name": f"q{i}",
            "entry_kwargs": {"question": f"question {i}"},
            # The old app already fails six entries (a wrong expectation): 54 of 60 pass.
            "expectation": f"QUESTION {i}" if i < 54 else "something else",
        }
        for i in range(60)
    ]
    for version in ("old", "new"):
        document = {
            "name": "qa",
            "runnable": f"app.py:{version}",
            "evaluators": [evaluator],
            "entries": entries,
        }
        (folder / f"{version}.evaltrace.json").write_text(json.dumps(document))


def test_six_more_failures_of_sixty_is_worse_with_p_below_005(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_runs(tmp_path)
    for version in ("old", "new"):
        code = main(["test", f"{version}.evaltrace.json", "--output-dir", version, "--exit-zero"])
        assert code == 0
    (old,) = (tmp_path / "old").iterdir()
    (new,) = (tmp_path / "new").iterdir()
    capsys.readouterr()

    assert main(["diff", str(old), str(new), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert main(["diff", str(old), str(new)]) == 0
    text = capsys.readouterr().out

    (exact,) = data["comparison"]["evaluators"]
    assert (exact["evaluator"], exact["test"], exact["verdict"]) == (
        "ExactMatch",
        "mcnemar",
        "worse",
    )
    assert (exact["old_passed"], exact["new_passed"], exact["fixed"], exact["broken"]) == (
        54,
        48,
        0,
        6,
    )
    assert exact["p_value"] < 0.05 and exact["adjusted_p_value"] < 0.05
    assert data["significant_regressions"] == ["ExactMatch"]
    assert "McNemar p=0.031" in text and "| worse" in text
    assert "54/60 -> 48/60 (+0 -6)" in text
    assert main(["diff", str(old), str(new), "--fail-on-regression"]) == 1


# -- what must show: a noisy judge, run twice, is no change ----------------------------------


def noisy_run(quality: np.ndarray, seed: int) -> RunResult:
    """One run of an unchanged app judged by a noisy judge (its noise drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    graded = np.clip(np.round((quality + rng.normal(0, 0.15, quality.size)) * 20) / 20, 0, 1)
    verdicts = (rng.random(quality.size) < quality).astype(float)
    return RunResult(
        name="qa",
        run_id=f"run-{seed}",
        evaluators=["judge", "judge_pass", "exact"],
        entries=[
            EntryResult(
                index=i,
                name=f"q{i}",
                evaluations=[
                    Evaluation(score=float(graded[i]), evaluator="judge"),
                    Evaluation(score=float(verdicts[i]), evaluator="judge_pass"),
                    Evaluation(score=float(quality[i] > 0.5), evaluator="exact"),
                ],
            )
            for i in range(quality.size)
        ],
    )


def test_two_runs_of_one_app_with_a_noisy_judge_show_no_change_in_95_of_100_pairs() -> None:
    quality = np.random.default_rng(0).beta(5, 2, 60)
    unchanged = 0
    for pair in range(100):
        old, new = noisy_run(quality, 2 * pair + 1), noisy_run(quality, 2 * pair + 2)
        comparison = compare_runs(old, new, resamples=200, seed=pair)
        verdicts = {item.verdict for item in comparison.evaluators}
        unchanged += verdicts == {"no significant change"}

    assert unchanged >= 95, unchanged


# -- the figures -----------------------------------------------------------------------------


def run(scores: dict[str, list[float | None]], **more: object) -> RunResult:
    """A run whose entry ``e{i}`` has, per evaluator, the i-th score (``None``: it errored)."""
    count = max(len(values) for values in scores.values())
    entries = []
    for i in range(count):
        evaluations = []
        for name, values in scores.items():
            if i >= len(values):
                continue
            value = values[i]
            evaluations.append(
                Evaluation(score=value, evaluator=name)
                if value is not None
                else Evaluation.errored(EvaluationError(type="E", message="x"), evaluator=name)
            )
        entries.append(EntryResult(index=i, name=f"e{i}", evaluations=evaluations))
    return RunResult(name="qa", entries=entries, evaluators=list(scores), **more)  # type: ignore[arg-type]


def test_graded_scores_are_decided_by_wilcoxon_with_a_paired_bootstrap_interval() -> None:
    rng = np.random.default_rng(1)
    before = np.round(rng.random(40), 2)
    after = np.clip(np.round(before - 0.15 + rng.normal(0, 0.05, 40), 2), 0, 1)

    (item,) = compare_runs(run({"judge": list(before)}), run({"judge": list(after)})).evaluators

    differences = after - before
    assert (item.test, item.n, item.verdict) == ("wilcoxon", 40, "worse")
    assert item.mean_difference == pytest.approx(differences.mean())
    assert item.p_value == wilcoxon_signed_rank(differences).p_value
    assert item.interval == percentile_interval(
        bootstrap_means(differences, resamples=1000, seed=stream_seed(0, "judge"))
    )
    assert item.interval is not None and item.interval.high < 0


def test_pass_fail_scores_are_decided_by_an_exact_mcnemar_test() -> None:
    before = [1.0] * 20 + [0.0] * 20
    after = [1.0] * 17 + [0.0] * 3 + [1.0] * 5 + [0.0] * 15

    (item,) = compare_runs(run({"exact": before}), run({"exact": after})).evaluators

    assert (item.test, item.fixed, item.broken) == ("mcnemar", 5, 3)
    assert item.p_value == mcnemar_exact(5, 3)
    assert item.verdict == "no significant change"


def test_an_error_is_a_fail_in_mcnemars_test_but_not_a_score() -> None:
    before: list[float | None] = [1.0] * 10
    after: list[float | None] = [1.0] * 4 + [None] * 6

    (item,) = compare_runs(run({"exact": before}), run({"exact": after})).evaluators

    assert (item.n, item.pass_n, item.broken) == (4, 10, 6)
    assert (item.test, item.verdict) == ("mcnemar", "worse")


def test_holm_adjusts_the_p_values_of_every_evaluator_together() -> None:
    before = [1.0] * 60
    after = [1.0] * 54 + [0.0] * 6  # six broken: p = 2 / 2**6 = 0.031 alone

    alone = compare_runs(run({"a": before}), run({"a": after}))
    together = compare_runs(run({"a": before, "b": before}), run({"a": after, "b": after}))

    assert [item.verdict for item in alone.evaluators] == ["worse"]
    assert together.comparisons == 2
    assert [item.p_value for item in together.evaluators] == [0.03125, 0.03125]
    assert [item.adjusted_p_value for item in together.evaluators] == [0.0625, 0.0625]
    assert {item.verdict for item in together.evaluators} == {"no significant change"}
    text = render_diff(diff_results(run({"a": before, "b": before}), run({"a": after, "b": after})))
    assert "2 comparisons adjusted together by Holm's method at level 0.05" in text


def test_the_level_decides_the_verdict() -> None:
    before = [1.0] * 60
    after = [1.0] * 54 + [0.0] * 6

    (item,) = compare_runs(run({"a": before}), run({"a": after}), level=0.01).evaluators

    assert (item.p_value, item.verdict) == (0.03125, "no significant change")


def test_a_comparison_without_change_states_the_smallest_change_it_could_have_seen() -> None:
    same = [1.0] * 30 + [0.0] * 10

    (item,) = compare_runs(run({"exact": same}), run({"exact": same})).evaluators

    assert (item.p_value, item.verdict) == (1.0, "no significant change")
    # No change at all: only six entries or more changing one way could be significant.
    assert item.detectable == pytest.approx(6 / 40)
    assert "0.150" in render_diff(diff_results(run({"exact": same}), run({"exact": same})))


def test_entries_in_one_run_only_are_listed_apart_and_not_compared() -> None:
    old = run({"exact": [1.0, 1.0, 0.0]})
    new = run({"exact": [1.0, 0.0, 0.0, 1.0, 1.0]})

    comparison = compare_runs(old, new)

    assert (comparison.paired, comparison.new_entries, comparison.gone_entries) == (
        3,
        ["e3", "e4"],
        [],
    )
    assert comparison.evaluators[0].pass_n == 3
    assert "not compared: 2 entries (e3, e4) only in the new run" in render_diff(
        diff_results(old, new)
    )


def test_entries_of_a_repeated_name_pair_in_input_order_not_finish_order() -> None:
    def repeated(scores: list[float], finish_order: list[int]) -> RunResult:
        entries = [
            EntryResult(index=i, name="same", evaluations=[Evaluation(score=s, evaluator="x")])
            for i, s in enumerate(scores)
        ]
        return RunResult(name="qa", entries=[entries[i] for i in finish_order])

    # The same two inputs, unchanged between runs; the old run's second input finished first.
    old = repeated([1.0, 0.0], finish_order=[1, 0])
    new = repeated([1.0, 0.0], finish_order=[0, 1])

    (scores,) = compare_runs(old, new).evaluators

    assert (scores.fixed, scores.broken) == (0, 0)


def label_run(pairs: list[tuple[str, str]]) -> RunResult:
    aggregators = {"intent": [{"type": "recall", "classes": ["buy", "sell"]}]}
    entries = [
        EntryResult(
            index=i,
            name=f"e{i}",
            evaluations=[
                Evaluation(
                    score=float(expected == actual),
                    evaluator="intent",
                    details={"expected": expected, "actual": actual},
                )
            ],
        )
        for i, (expected, actual) in enumerate(pairs)
    ]
    from evaltrace.metrics import compute_dataset_evaluator_results

    results = compute_dataset_evaluator_results(
        {"intent": [entry.evaluations[0] for entry in entries]}, aggregators
    )
    return RunResult(
        name="qa",
        entries=entries,
        evaluators=["intent"],
        aggregators=aggregators,  # type: ignore[arg-type]
        dataset_results=results,
    )


def test_dataset_level_results_are_compared_by_a_paired_bootstrap() -> None:
    expected = ["buy"] * 50 + ["sell"] * 50
    old = label_run([(label, label) for label in expected])
    new = label_run([(label, "sell" if i < 30 else label) for i, label in enumerate(expected)])

    comparison = compare_runs(old, new)

    (metric,) = comparison.dataset_results
    assert (metric.key, metric.n, metric.old, metric.new) == ("intent::recall", 100, 1.0, 0.7)
    assert metric.difference == pytest.approx(-0.3)
    assert metric.interval is not None and metric.interval.high < 0
    assert metric.verdict == "worse"
    assert comparison.comparisons == 2  # the evaluator and its recall, adjusted together


def test_the_text_diff_shows_changed_outputs_side_by_side() -> None:
    def entry(output: str, score: float) -> EntryResult:
        evaluation = Evaluation(score=score, evaluator="exact")
        return EntryResult(index=0, name="capital", output=output, evaluations=[evaluation])

    old = RunResult(name="qa", entries=[entry("Paris", 1.0)])
    new = RunResult(name="qa", entries=[entry("Lyon", 0.0)])

    diff = diff_results(old, new)
    text = render_diff(diff)

    (changed,) = diff.entries
    assert (changed.old_output, changed.new_output) == ("Paris", "Lyon")
    assert "Entries that now pass or now fail, old output beside new" in text
    assert "| capital | SUCCESS -> FAILED_SCORE_ZERO | Paris      | Lyon       |" in text


def test_fail_on_regression_takes_a_level_or_any_and_leaves_the_paths_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def save(name: str, result: RunResult) -> str:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "result.json").write_text(result.model_dump_json())
        return str(folder)

    old = save("old", run({"a": [1.0] * 60}))
    new = save("new", run({"a": [1.0] * 54 + [0.0] * 6}))

    assert main(["diff", "--fail-on-regression", old, new]) == 1  # p = 0.031 < 0.05
    assert main(["diff", "--fail-on-regression", "0.01", old, new]) == 0
    assert main(["diff", old, new, "--fail-on-regression=0.01"]) == 0
    assert main(["diff", old, new, "--fail-on-regression", "any"]) == 1
    capsys.readouterr()
    assert main(["diff", old, new, "--fail-on-regression=often"]) == 2
    assert "takes 'any' or a significance level between 0 and 1" in capsys.readouterr().err


def test_evaltrace_test_refuses_fail_on_regression_without_a_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_runs(tmp_path)

    assert main(["test", "old.evaltrace.json", "--fail-on-regression"]) == 2
    assert "--fail-on-regression compares with a baseline" in capsys.readouterr().err


def test_evaltrace_test_fails_on_a_significant_regression_even_when_every_entry_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_runs(tmp_path, evaluator="checks.py:lenient")
    assert main(["test", "old.evaltrace.json", "--output-dir", "old"]) == 0
    (baseline,) = (tmp_path / "old").iterdir()

    compared = ["test", "new.evaltrace.json", "--baseline", str(baseline)]
    assert main(compared) == 0  # every entry still passes
    assert main([*compared, "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    assert "Wilcoxon p=0.020" in out and "| worse" in out
    assert main([*compared, "--fail-on-regression=0.01"]) == 0
