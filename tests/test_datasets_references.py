"""References to user code and the evaluator registry, resolved by resolve_dataset."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import evaltrace
import evaltrace.errors
import evaltrace.judges
import evaltrace.metrics
from evaltrace.datasets import (
    BUILTIN_EVALUATORS,
    DatasetError,
    EvaluatorBuildError,
    ReferenceLoader,
    UnknownEvaluatorError,
    build_evaluator,
    dataset_from_data,
    load_dataset,
    lookup_evaluator,
    register_evaluator,
    registered_evaluators,
    resolve_dataset,
)
from evaltrace.datasets.references import module_name_for
from evaltrace.evals import Evaluable, Evaluation, NamedData

FIXTURES = Path(__file__).parent / "fixtures" / "datasets"
USER_CODE = FIXTURES / "user_code"
SEED_004 = FIXTURES / "seed004" / "customer_faq.json"

ANSWER = Evaluable(eval_output=[NamedData(name="answer", value="Paris is the capital of France")])


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def write_dataset(folder: Path, document: dict[str, Any], name: str = "dataset.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def with_user_code(tmp_path: Path) -> Path:
    for name in ("evaluators.py", "app.py"):
        shutil.copy(USER_CODE / name, tmp_path / name)
    return tmp_path


@pytest.mark.anyio
async def test_a_user_evaluator_module_with_future_annotations_dataclass_and_models_runs(
    tmp_path: Path,
) -> None:
    path = write_dataset(
        with_user_code(tmp_path),
        {
            "runnable": "app.py:answer",
            "evaluators": [
                "evaluators.py:mentions_paris",
                {"name": "evaluators.py:KeywordCheck", "args": {"keywords": ["paris", "rome"]}},
                "evaluators.py:strict_keywords",
                "evaluators.py:prebuilt",
                "evaluators.py:async_length",
            ],
            "entries": [{"entry_kwargs": {"question": "capital?"}}],
        },
    )

    resolved = resolve_dataset(load_dataset(path))
    results = [await evaltrace.evaluate(e.evaluator, ANSWER) for e in resolved.evaluators]

    assert [(r.evaluator, r.score) for r in results] == [
        ("mentions_paris", 1.0),
        ("keywords", 0.5),
        ("strict_keywords", 1.0),
        ("prebuilt", 1.0),
        ("async_length", 1.0),
    ]
    assert json.loads(results[1].reasoning)["findings"][1] == {"word": "rome", "present": False}


def test_a_user_file_is_executed_once_per_loader_under_a_stable_module_name(
    tmp_path: Path,
) -> None:
    counter = tmp_path / "executions.txt"
    code = (
        "from pathlib import Path\n"
        f"with Path({str(counter)!r}).open('a') as f:\n    f.write('x')\n\n"
        "def tone(evaluable):\n    return 1.0\n\n"
        "def run(question: str) -> str:\n    return question\n"
    )
    (tmp_path / "checks.py").write_text(code, encoding="utf-8")
    document = {
        "runnable": "checks.py:run",
        "evaluators": ["checks.py:tone"],
        "entries": [{"entry_kwargs": {"question": "hi"}, "evaluators": ["./checks.py:tone"]}],
    }
    dataset = load_dataset(write_dataset(tmp_path, document))

    loader = ReferenceLoader()
    first = resolve_dataset(dataset, loader=loader)
    again = resolve_dataset(dataset, loader=loader)
    assert counter.read_text() == "x"
    name = module_name_for(tmp_path / "checks.py")
    assert first.evaluators[0].evaluator.__module__ == name
    assert sys.modules[name].tone is first.evaluators[0].evaluator
    assert again.evaluators[0].evaluator is first.evaluators[0].evaluator

    fresh = resolve_dataset(dataset, loader=ReferenceLoader())
    assert counter.read_text() == "xx"
    assert fresh.evaluators[0].evaluator is not first.evaluators[0].evaluator
    assert sys.modules[name].tone is fresh.evaluators[0].evaluator


def test_a_relative_path_is_found_beside_the_dataset_first_then_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "checks.py").write_text("def tone(evaluable):\n    return 0.25\n")
    (tmp_path / "data" / "code").mkdir(parents=True)
    (tmp_path / "data" / "code" / "checks.py").write_text("def tone(evaluable):\n    return 0.75\n")
    (tmp_path / "other").mkdir()
    document = {
        "runnable": "json:dumps",
        "evaluators": ["code/checks.py:tone"],
        "entries": [{"entry_kwargs": {"obj": 1}}],
    }
    beside = load_dataset(write_dataset(tmp_path / "data", document))
    only_in_cwd = load_dataset(write_dataset(tmp_path / "other", document))
    monkeypatch.chdir(tmp_path)

    assert resolve_dataset(beside).evaluators[0].evaluator(ANSWER) == 0.75
    assert resolve_dataset(only_in_cwd).evaluators[0].evaluator(ANSWER) == 0.25


def test_a_module_reference_is_imported_by_name() -> None:
    dataset = dataset_from_data(
        {
            "runnable": "json:dumps",
            "evaluators": [{"name": "evaltrace.metrics:DocumentMRR", "args": {"key": "id"}}],
            "entries": [{"entry_kwargs": {"obj": [1]}}],
        }
    )

    resolved = resolve_dataset(dataset)

    assert resolved.runnable.target is json.dumps
    assert type(resolved.evaluators[0].evaluator).__name__ == "DocumentMRR"
    assert resolved.evaluators[0].evaluator.key == "id"


def test_the_seed_004_dataset_resolves_with_its_runnable_and_evaluators() -> None:
    resolved = resolve_dataset(load_dataset(SEED_004))

    assert resolved.runnable.name == "pixie_qa/scripts/run_app.py:AppRunnable"
    assert resolved.runnable.takes_one_argument
    names = [[e.name for e in row] for row in resolved.entry_evaluators]
    assert names == [["Factuality", "ClosedQA"], ["Factuality", "tool_call_check"]]
    factuality = [row[0].evaluator for row in resolved.entry_evaluators]
    assert factuality[0] is factuality[1] is resolved.evaluators[0].evaluator


def test_dataset_level_evaluators_keep_their_aggregators() -> None:
    dataset = dataset_from_data(
        {
            "runnable": "json:dumps",
            "evaluators": [
                {"name": "ExactMatch", "aggregators": [{"type": "recall", "classes": ["a", "b"]}]}
            ],
            "entries": [{"entry_kwargs": {"obj": "a"}}],
        }
    )

    (evaluator,) = resolve_dataset(dataset).evaluators

    assert [spec.type for spec in evaluator.spec.aggregators] == ["recall"]


def test_a_runnable_given_in_code_replaces_the_reference() -> None:
    dataset = dataset_from_data({"entries": [{"entry_kwargs": {"x": 1}}]})

    def app(x: int) -> int:
        return x

    assert resolve_dataset(dataset, runnable=app).runnable.target is app


# -- the registry ---------------------------------------------------------------------------------


def test_every_evaluator_judge_and_metric_shipped_is_registered_by_name() -> None:
    autoevals_factories = {
        "LevenshteinMatch",
        "ExactMatch",
        "NumericDiff",
        "JSONDiff",
        "ValidJSON",
        "ListContains",
        "EmbeddingSimilarity",
        "Factuality",
        "ClosedQA",
        "Battle",
        "Humor",
        "Security",
        "Sql",
        "Summary",
        "Translation",
        "Possible",
        "Moderation",
        "ContextRelevancy",
        "Faithfulness",
        "AnswerRelevancy",
        "AnswerCorrectness",
    }
    metrics = {
        "DocumentRecall",
        "DocumentMRR",
        "DocumentMAP",
        "DocumentNDCG",
        "AnswerExactMatch",
        "AnswerF1",
        "SemanticAnswerSimilarity",
        "Contains",
        "IsInstance",
        "MaxDuration",
        "HasMatchingSpan",
    }
    shipped = autoevals_factories | metrics

    assert len(BUILTIN_EVALUATORS) == 32
    assert shipped <= set(registered_evaluators())
    for name in shipped:
        home = evaltrace.judges if name in autoevals_factories else evaltrace.metrics
        assert lookup_evaluator(name) is getattr(home, name)


def test_a_registered_evaluator_can_be_named_by_a_dataset() -> None:
    name = unique("Politeness")

    @register_evaluator(name)
    def politeness(evaluable: Evaluable) -> float:
        return 1.0

    dataset = dataset_from_data(
        {"runnable": "json:dumps", "evaluators": [name], "entries": [{"entry_kwargs": {"obj": 1}}]}
    )
    assert resolve_dataset(dataset).evaluators[0].evaluator is politeness


def test_an_evaluator_registered_by_the_runnable_module_can_be_named(tmp_path: Path) -> None:
    path = write_dataset(
        with_user_code(tmp_path),
        {
            "runnable": "app.py:answer",
            "evaluators": ["AppRegisteredCheck"],
            "entries": [{"entry_kwargs": {"question": "hi"}}],
        },
    )

    resolved = resolve_dataset(load_dataset(path))

    assert resolved.evaluators[0].name == "app_registered_check"


def test_registering_another_evaluator_under_a_taken_name_needs_replace() -> None:
    name = unique("Check")
    register_evaluator(name, lambda evaluable: 1.0)

    def other(evaluable: Evaluable) -> float:
        return 0.0

    with pytest.raises(ValueError, match="already registered"):
        register_evaluator(name, other)
    assert register_evaluator(name, other, replace=True) is other
    assert lookup_evaluator(name) is other


def test_the_same_definition_executed_again_registers_without_replace() -> None:
    name = unique("Reloaded")
    source = "def check(evaluable):\n    return 1.0\n"
    first: dict[str, Any] = {"__name__": "user_checks"}
    second: dict[str, Any] = {"__name__": "user_checks"}
    exec(source, first)
    exec(source, second)

    register_evaluator(name, first["check"])
    register_evaluator(name, second["check"])

    assert lookup_evaluator(name) is second["check"]


@pytest.mark.parametrize("name", ["", "  ", "evals.py:check", "...", " Padded"])
def test_a_name_a_dataset_could_not_use_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        register_evaluator(name, lambda evaluable: 1.0)


def test_registering_something_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="callable"):
        register_evaluator(unique("Number"), 3)  # type: ignore[type-var]


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownEvaluatorError, match="Did you mean 'Factuality'"):
        lookup_evaluator("Factualty")


def test_the_unknown_evaluator_error_is_one_class_from_errors_judges_and_datasets() -> None:
    assert evaltrace.errors.UnknownEvaluatorError is UnknownEvaluatorError
    assert evaltrace.judges.UnknownEvaluatorError is UnknownEvaluatorError


# -- factories and evaluators ---------------------------------------------------------------------


class Threshold:
    def __init__(self, at: float = 0.5) -> None:
        self.at = at

    def __call__(self, evaluable: Evaluable) -> bool:
        return True


def make_threshold(at: float = 0.9) -> Threshold:
    return Threshold(at)


def plain(evaluable: Evaluable) -> float:
    return 1.0


def test_a_class_is_instantiated_with_the_args() -> None:
    built = build_evaluator(Threshold, {"at": 0.7}, label="Threshold")

    assert isinstance(built, Threshold)
    assert built.at == 0.7


def test_a_function_without_required_parameters_is_a_factory_called_with_the_args() -> None:
    assert build_evaluator(make_threshold, {}, label="make").at == 0.9  # type: ignore[attr-defined]
    assert build_evaluator(make_threshold, {"at": 0.1}, label="make").at == 0.1  # type: ignore[attr-defined]


def test_an_evaluator_function_or_object_is_used_as_is() -> None:
    instance = Threshold()

    assert build_evaluator(plain, {}, label="plain") is plain
    assert build_evaluator(instance, {}, label="instance") is instance


def test_a_factory_that_raises_is_a_build_error_with_its_exception() -> None:
    def broken() -> Threshold:
        raise RuntimeError("no model configured")

    with pytest.raises(EvaluatorBuildError, match="RuntimeError: no model configured"):
        build_evaluator(broken, {}, label="broken")


def test_an_async_factory_is_a_build_error() -> None:
    async def make() -> Threshold:
        return Threshold()

    with pytest.raises(EvaluatorBuildError, match="returned an awaitable"):
        build_evaluator(make, {}, label="make")


def test_a_class_whose_instances_are_not_callable_is_a_build_error() -> None:
    class NotAnEvaluator:
        pass

    with pytest.raises(EvaluatorBuildError, match="not callable"):
        build_evaluator(NotAnEvaluator, {}, label="NotAnEvaluator")


def test_the_same_spec_failing_in_many_entries_is_reported_once() -> None:
    dataset = dataset_from_data(
        {
            "runnable": "json:dumps",
            "entries": [{"entry_kwargs": {"obj": i}, "evaluators": ["Nope"]} for i in range(5)],
        }
    )

    with pytest.raises(DatasetError) as caught:
        resolve_dataset(dataset)

    assert [p.location for p in caught.value.problems] == ["entries[0].evaluators[0]"]


def test_an_evaluation_from_a_seed_004_custom_evaluator_reads_the_metadata() -> None:
    resolved = resolve_dataset(load_dataset(SEED_004))
    check = resolved.entry_evaluators[1][1].evaluator
    evaluable = (
        resolved.dataset.entries[1]
        .to_evaluable()
        .model_copy(update={"eval_output": [NamedData(name="function_called", value="endCall")]})
    )

    result = check(evaluable)

    assert isinstance(result, Evaluation)
    assert result.score == 1.0


def test_references_resolve_beside_the_file_after_the_current_folder_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "checks.py").write_text("def tone(evaluable):\n    return 1.0\n")
    write_dataset(
        tmp_path / "suite",
        {"runnable": "json:dumps", "evaluators": ["checks.py:tone", "Nope"],
         "entries": [{"entry_kwargs": {"obj": 1}}]},
    )  # fmt: skip
    monkeypatch.chdir(tmp_path)
    dataset = load_dataset("suite/dataset.json")
    monkeypatch.chdir(tmp_path.parent)

    with pytest.raises(DatasetError) as caught:
        resolve_dataset(dataset)

    assert [(p.file, p.location) for p in caught.value.problems] == [
        ("suite/dataset.json", "evaluators[1]")
    ]


def stored_entries(folder: Path, *traces: str) -> Path:
    return write_dataset(
        folder,
        {"evaluators": ["ExactMatch"], "entries": [{"trace": trace} for trace in traces]},
    )


def test_a_trace_reference_resolves_beside_the_dataset(tmp_path: Path) -> None:
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / "data" / "runs" / "a.jsonl").write_text("")
    path = stored_entries(tmp_path / "data", "runs/a.jsonl", "runs/../runs/a.jsonl")

    resolve_dataset(load_dataset(path))


def test_a_symlink_leading_out_of_the_dataset_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.jsonl").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "inside.jsonl").symlink_to(tmp_path / "outside.jsonl")
    path = stored_entries(tmp_path / "data", "inside.jsonl")

    with pytest.raises(DatasetError) as caught:
        resolve_dataset(load_dataset(path))

    (problem,) = caught.value.problems
    assert problem.location == "entries[0].trace"
    assert problem.message == (
        "the trace file 'inside.jsonl' leads out of the dataset's folder "
        f"(to {tmp_path / 'outside.jsonl'})"
    )
    assert problem.hint == (
        "move the trace file into the dataset's folder, or give its absolute path"
    )


def test_an_absolute_trace_path_may_be_anywhere(tmp_path: Path) -> None:
    (tmp_path / "outside.jsonl").write_text("")
    path = stored_entries(tmp_path / "data", str(tmp_path / "outside.jsonl"))

    resolve_dataset(load_dataset(path))


def test_each_entry_naming_a_missing_trace_file_is_reported(tmp_path: Path) -> None:
    path = stored_entries(tmp_path, "gone.jsonl", "gone.jsonl", "lost.jsonl")

    with pytest.raises(DatasetError) as caught:
        resolve_dataset(load_dataset(path))

    assert [(p.location, p.message) for p in caught.value.problems] == [
        ("entries[0].trace", f"no such file: {tmp_path / 'gone.jsonl'}"),
        ("entries[1].trace", f"no such file: {tmp_path / 'gone.jsonl'}"),
        ("entries[2].trace", f"no such file: {tmp_path / 'lost.jsonl'}"),
    ]
