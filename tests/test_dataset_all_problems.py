"""One validation lists every problem of a dataset file: its schema, its references, the
runnable's signature against each entry's arguments, the evaluators' signatures, and
aggregators paired with evaluators that give no labels; each with its line in the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace import Evaluable, Evaluation, NamedData, evaluate
from evaltrace.datasets import DatasetError, prepare_dataset, run_dataset
from evaltrace.errors import EvaluatorSignatureError
from evaltrace.evals import EvaluatorContext
from evaltrace.metrics import compute_dataset_evaluator_results

pytestmark = pytest.mark.anyio

CASE = Evaluable(eval_output=[NamedData(name="answer", value="x")])

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))

APP = "def answer(question: str) -> str:\n    return question.upper()\n"

CHECKS = """\
from evaltrace import Evaluation


def two_args(output, expected):
    return 1.0


def unlabelled(evaluable):
    return Evaluation(score=1.0)
"""

MISTAKES = """\
name: qa
runnable: app.py:answer
evaluators:
  - ExactMatch
  - checks.py:two_args
entries:
  - name: one
    entry_kwargs: {question: hi}
    expectation: HI
  - name: two
    entry_kwargs: {question: bye}
    eval_input: [{value: bye}]
  - name: three
    entry_kwargs: {query: hello, question: x}
    eval_input: [{name: question, value: other}]
    expectation: HELLO
"""


def project(tmp_path: Path, dataset: str, name: str = "qa.evaltrace.yaml") -> Path:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "checks.py").write_text(CHECKS)
    path = tmp_path / name
    path.write_text(dataset)
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        prepare_dataset(path)
    return [str(problem) for problem in caught.value.problems]


def test_a_file_with_four_mistakes_reports_all_four_at_once(tmp_path: Path) -> None:
    path = project(tmp_path, MISTAKES)

    problems = problems_of(path)

    assert len(problems) == 4, problems
    missing, differs, unexpected, signature = problems
    assert "entries[1].eval_input[0].name: missing required key 'name'" in missing
    assert "entries[2].eval_input[0].value: eval_input 'question' differs" in differs
    assert "entries[2].entry_kwargs.query: unexpected argument 'query'" in unexpected
    assert "evaluators[1]: evaluator two_args(output, expected)" in signature
    assert "f(evaluable)" in signature and "f(ctx: EvaluatorContext)" in signature


def test_each_problem_names_its_line_in_the_file(tmp_path: Path) -> None:
    path = project(tmp_path, MISTAKES)

    missing, differs, unexpected, signature = problems_of(path)

    assert missing.startswith(f"{path}:12:")  # the eval_input item without a name
    assert differs.startswith(f"{path}:15:")  # entry three's eval_input value
    assert unexpected.startswith(f"{path}:14:")  # entry three's entry_kwargs
    assert signature.startswith(f"{path}:5:")  # the evaluator's line


def test_a_json_file_names_lines_too(tmp_path: Path) -> None:
    dataset = (
        '{\n  "runnable": "app.py:answer",\n  "evaluators": ["ExactMatch"],\n'
        '  "entries": [\n    {"entry_kwargs": {"question": "a"}},\n'
        '    {"entry_kwargs": {"qestion": "b"}}\n  ]\n}\n'
    )
    path = project(tmp_path, dataset, "qa.evaltrace.json")

    problems = problems_of(path)

    assert all(problem.startswith(f"{path}:6:") for problem in problems), problems
    assert any("unexpected argument 'qestion'" in problem for problem in problems)


def test_a_schema_problem_does_not_hide_a_runnable_that_cannot_be_imported(
    tmp_path: Path,
) -> None:
    dataset = MISTAKES.replace("app.py:answer", "app.py:nowhere")
    path = project(tmp_path, dataset)

    problems = problems_of(path)

    assert any("missing required key 'name'" in problem for problem in problems)
    assert any("runnable" in problem and "nowhere" in problem for problem in problems)


def test_the_command_line_lists_all_four_in_one_validate(tmp_path: Path) -> None:
    project(tmp_path, MISTAKES)

    done = subprocess.run(
        [EVALTRACE, "dataset", "validate", "qa.evaltrace.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )

    assert done.returncode == 2, done.stderr
    assert "4 problems" in done.stderr
    for expected in ("missing required key", "differs", "unexpected argument", "two_args"):
        assert expected in done.stderr


async def test_an_evaluator_whose_parameters_fit_no_form_is_refused_before_scoring() -> None:
    calls: list[object] = []

    def two_args(output: object, expected: object) -> float:
        calls.append(output)
        return 1.0

    with pytest.raises(EvaluatorSignatureError, match=r"two_args\(output, expected\)") as caught:
        await evaluate(two_args, CASE)

    assert isinstance(caught.value, TypeError)
    assert "evaluable.eval_output" in str(caught.value)
    assert calls == []


@pytest.mark.parametrize(
    "evaluator",
    [
        lambda evaluable: 1.0,
        lambda evaluable, *, trace=None: 1.0,
        lambda evaluable, threshold=0.5: 1.0,
        lambda *values: 1.0,
        lambda evaluable, **options: 1.0,
    ],
    ids=["evaluable", "trace", "optional", "varargs", "kwargs"],
)
async def test_the_accepted_forms_are_not_refused(evaluator: object) -> None:
    result = await evaluate(evaluator, CASE)  # type: ignore[arg-type]

    assert result.score == 1.0


async def test_a_context_evaluator_and_a_callable_object_are_not_refused() -> None:
    def on_context(ctx: EvaluatorContext) -> float:
        return 1.0 if ctx.evaluable.eval_output else 0.0

    class Scorer:
        def __call__(self, evaluable: Evaluable) -> float:
            return 1.0

    assert (await evaluate(on_context, CASE)).score == 1.0
    assert (await evaluate(Scorer(), CASE)).score == 1.0


def test_aggregators_on_a_builtin_evaluator_are_refused_with_the_fix(tmp_path: Path) -> None:
    dataset = """\
runnable: app.py:answer
evaluators:
  - name: ExactMatch
    aggregators: [{type: confusion_matrix, classes: [HI, BYE]}]
entries:
  - {entry_kwargs: {question: hi}, expectation: HI}
"""
    path = project(tmp_path, dataset)

    (problem,) = problems_of(path)

    assert "evaluators[0].aggregators" in problem
    assert "confusion_matrix counts each entry's expected and actual labels" in problem
    assert "'ExactMatch' does not record" in problem
    assert "details={'expected': <label>, 'actual': <label>}" in problem


async def test_a_metric_over_results_without_labels_errors_and_fails_the_run(
    tmp_path: Path,
) -> None:
    dataset = """\
runnable: app.py:answer
evaluators:
  - name: checks.py:unlabelled
    aggregators: [{type: confusion_matrix, classes: [HI, BYE]}]
entries:
  - {entry_kwargs: {question: hi}}
  - {entry_kwargs: {question: bye}}
"""
    path = project(tmp_path, dataset)

    result = await run_dataset(path)

    (metric,) = result.dataset_results.values()
    assert metric.error is not None and metric.score is None
    assert metric.error.type == "UnlabelledResultsError"
    assert "none of the 2 results" in metric.error.message
    assert all(entry.status.passed for entry in result.entries)
    assert not result.passed


async def test_a_metric_over_labelled_results_still_scores() -> None:
    labelled = [Evaluation(score=1.0, details={"expected": "a", "actual": "a"})] * 2
    spec = {"type": "confusion_matrix", "classes": ["a", "b"]}

    results = compute_dataset_evaluator_results({"label": labelled}, {"label": [spec]})

    (metric,) = results.values()
    assert metric.error is None and metric.score == 1.0
