"""run_dataset: the entries through the runnable, scored, written to a results folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from evaltrace import Evaluable, Evaluation, load_traces
from evaltrace.datasets import (
    DatasetError,
    NoEntriesSelectedError,
    dataset_from_data,
    prepare_dataset,
    run_dataset,
)
from evaltrace.datasets.references import module_name_for
from evaltrace.results import (
    ENTRIES_FILE,
    RESULT_FILE,
    RUN_FILE,
    TRACES_FILE,
    CompletionStatus,
    ResultsFolderError,
    RunResult,
    load_result,
    new_run_id,
)
from evaltrace.trace import split_traces

S = CompletionStatus

APP = """\
import anyio
from evaltrace import wrap

EVENTS = []


class App:
    async def setup(self) -> None:
        EVENTS.append("setup")

    async def run(self, question: str) -> str:
        if question == "boom":
            raise RuntimeError("kaboom")
        if question == "hang":
            await anyio.sleep(3600)
        profile = wrap(lambda: "live", purpose="input", name="profile")()
        return wrap(f"{question.upper()} for {profile}", purpose="output", name="answer")

    async def teardown(self) -> None:
        EVENTS.append("teardown")
"""

CHECKS = """\
from evaltrace import Evaluation


def mentions_expectation(evaluable):
    answer = evaluable.output_value("answer")
    ok = str(evaluable.expectation) in answer
    return Evaluation(score=1.0 if ok else 0.0, reasoning=f"answer {answer!r}")


def broken(evaluable):
    raise ValueError("evaluator bug")
"""


def write_project(tmp_path: Path, entries: list[dict[str, Any]], **top: Any) -> Path:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "checks.py").write_text(CHECKS)
    document = {
        "name": "faq",
        "runnable": "app.py:App",
        "evaluators": ["checks.py:mentions_expectation"],
        "entries": entries,
        **top,
    }
    path = tmp_path / "faq.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def entry(name: str, question: str, expectation: str = "", **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "entry_kwargs": {"question": question},
        "eval_input": [{"name": "profile", "value": "Ada"}],
        "expectation": expectation or question.upper(),
        **more,
    }


def app_events(tmp_path: Path) -> list[str]:
    """What the app's setup and teardown recorded, in the module the run loaded."""
    return list(sys.modules[module_name_for(tmp_path / "app.py")].EVENTS)


@pytest.mark.anyio
async def test_each_entry_gets_its_status_and_its_served_inputs(tmp_path: Path) -> None:
    dataset = write_project(
        tmp_path,
        [
            entry("hello", "hello", "HELLO for Ada"),
            entry("wrong", "bye", "nope"),
            entry("boom", "boom"),
            entry("hang", "hang"),
            entry("buggy", "hi", evaluators=["checks.py:broken"]),
        ],
    )

    result = await run_dataset(dataset, timeout=0.5)

    statuses = {item.name: item.status for item in result.entries}
    assert statuses == {
        "hello": S.SUCCESS,
        "wrong": S.FAILED_SCORE_ZERO,
        "boom": S.ERROR,
        "hang": S.TIMED_OUT,
        "buggy": S.ERROR,
    }
    hello = result.entries[0]
    assert hello.output == "HELLO for Ada"  # the entry's eval_input was served, not "live"
    assert hello.input == {"question": "hello"}
    assert result.entries[2].error is not None and result.entries[2].error.where == "runnable"
    assert result.evaluators == ["mentions_expectation", "broken"]
    assert [e.evaluator for e in result.entries[4].evaluations] == ["broken"]
    assert result.name == "faq" and result.source == str(dataset)
    assert result.settings["timeout"] == 0.5 and not result.interrupted
    assert app_events(tmp_path) == ["setup", "teardown"]


@pytest.mark.anyio
async def test_the_results_folder_holds_the_result_and_every_entrys_spans(
    tmp_path: Path,
) -> None:
    dataset = write_project(tmp_path, [entry("a", "one"), entry("b", "two"), entry("c", "boom")])

    result = await run_dataset(dataset, output_dir=tmp_path / "results")

    (folder,) = (tmp_path / "results").iterdir()
    assert folder.name == result.run_id
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        [ENTRIES_FILE, RESULT_FILE, RUN_FILE, TRACES_FILE]
    )
    assert load_result(folder) == result
    traces = split_traces(load_traces(folder / TRACES_FILE))
    assert sorted(f"{one[0].span.trace_id:032x}" for one in traces) == sorted(
        trace_id for item in result.entries for trace_id in item.trace_ids
    )
    assert all(len(item.trace_ids) == 1 for item in result.entries)


@pytest.mark.anyio
async def test_run_ids_sort_in_run_order_and_never_repeat(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, [entry("a", "one")])
    ids = [new_run_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)

    first = await run_dataset(dataset, output_dir=tmp_path / "out")
    second = await run_dataset(dataset, output_dir=tmp_path / "out", run_id=first.run_id)

    assert second.run_id > first.run_id
    assert len(list((tmp_path / "out").iterdir())) == 2


@pytest.mark.anyio
async def test_an_unwritable_output_dir_fails_before_the_app_is_set_up(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, [entry("a", "one")])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")

    with pytest.raises(ResultsFolderError, match="a-file"):
        await run_dataset(dataset, output_dir=blocker / "results")

    assert app_events(tmp_path) == []


@pytest.mark.anyio
async def test_an_interrupted_run_writes_the_entries_that_finished_and_tears_down(
    tmp_path: Path,
) -> None:
    dataset = write_project(
        tmp_path, [entry("a", "one"), entry("b", "two"), entry("c", "hang"), entry("d", "hang")]
    )
    finished = anyio.Event()
    seen: list[str] = []

    def on_entry(item: Any, done: int, total: int) -> None:
        seen.append(item.name)
        if done == 2:
            finished.set()

    async with anyio.create_task_group() as group:

        async def run() -> None:
            await run_dataset(dataset, output_dir=tmp_path / "out", on_entry=on_entry, timeout=None)

        group.start_soon(run)
        await finished.wait()
        group.cancel_scope.cancel()

    (folder,) = (tmp_path / "out").iterdir()
    saved = load_result(folder)
    assert saved.interrupted and not saved.passed
    assert sorted(item.name for item in saved.entries) == sorted(seen) == ["a", "b"]
    assert len(split_traces(load_traces(folder / TRACES_FILE))) == 2
    assert app_events(tmp_path) == ["setup", "teardown"]
    assert not [path for path in folder.iterdir() if path.name.endswith(".tmp")]


@pytest.mark.anyio
async def test_a_setup_that_raises_errors_every_entry_and_still_tears_down(
    tmp_path: Path,
) -> None:
    dataset = write_project(tmp_path, [entry("a", "one"), entry("b", "two")])
    app = (tmp_path / "app.py").read_text()
    (tmp_path / "app.py").write_text(
        app.replace('EVENTS.append("setup")', 'EVENTS.append("setup"); raise OSError("no db")')
    )

    result = await run_dataset(dataset)

    assert [item.status for item in result.entries] == [S.ERROR, S.ERROR]
    assert [error.where for error in result.errors] == ["setup"]
    first = result.entries[0]
    assert first.error is not None and first.error.message == "no db"
    assert [e.evaluator for e in first.evaluations] == ["mentions_expectation"]
    assert app_events(tmp_path) == ["setup", "teardown"]


@pytest.mark.anyio
async def test_a_teardown_that_raises_is_a_run_error_and_keeps_the_entries(
    tmp_path: Path,
) -> None:
    dataset = write_project(tmp_path, [entry("a", "one")])
    app = (tmp_path / "app.py").read_text()
    (tmp_path / "app.py").write_text(
        app.replace('EVENTS.append("teardown")', 'raise RuntimeError("cleanup failed")')
    )

    result = await run_dataset(dataset)

    assert [item.status for item in result.entries] == [S.SUCCESS]
    assert [(error.where, error.message) for error in result.errors] == [
        ("teardown", "cleanup failed")
    ]
    assert not result.passed


@pytest.mark.anyio
async def test_the_entry_filter_selects_by_name_or_description(tmp_path: Path) -> None:
    dataset = write_project(
        tmp_path,
        [
            entry("refund-late", "one"),
            entry("greeting", "two", description="says hello on REFUND day"),
            entry("other", "three"),
        ],
    )

    by_text = await run_dataset(dataset, entry_filter="refund")
    by_predicate = await run_dataset(dataset, entry_filter=lambda item: item.name == "other")

    assert [item.name for item in by_text.entries] == ["refund-late", "greeting"]
    assert [item.name for item in by_predicate.entries] == ["other"]
    with pytest.raises(NoEntriesSelectedError, match="'nothing' matches none of the 3 entries"):
        await run_dataset(dataset, entry_filter="nothing")


@pytest.mark.anyio
async def test_evaluators_given_in_code_replace_the_files_and_keep_its_aggregators(
    tmp_path: Path,
) -> None:
    def label(evaluable: Evaluable) -> Evaluation:
        actual = "long" if len(str(evaluable.output_value("answer"))) > 14 else "short"
        expected = evaluable.expectation
        return Evaluation(
            score=float(actual == expected), details={"expected": expected, "actual": actual}
        )

    aggregators = [{"type": "precision", "classes": ["long", "short"], "averaging": "micro"}]
    dataset = write_project(
        tmp_path,
        [entry("a", "hi", "short"), entry("b", "a long question", "long"), entry("c", "x", "long")],
        evaluators=["NoSuchEvaluator", {"name": "label", "aggregators": aggregators}],
    )

    with pytest.warns(UserWarning, match=r"'NoSuchEvaluator' \(not a known evaluator\)"):
        result = await run_dataset(dataset, evaluators=[label])

    assert result.evaluators == ["label"]
    assert [item.status for item in result.entries] == [S.SUCCESS, S.SUCCESS, S.FAILED_SCORE_ZERO]
    assert result.dataset_results["label::precision"].score == pytest.approx(2 / 3)


@pytest.mark.anyio
async def test_the_files_evaluators_give_dataset_level_results(tmp_path: Path) -> None:
    (tmp_path / "intent.py").write_text(
        "from evaltrace import Evaluation\n\n"
        "def intent(evaluable):\n"
        "    actual = 'book' if 'BOOK' in evaluable.output_value('answer') else 'cancel'\n"
        "    return Evaluation(score=float(actual == evaluable.expectation),\n"
        "                      details={'expected': evaluable.expectation, 'actual': actual})\n"
    )
    matrix = {"type": "confusion_matrix", "classes": ["book", "cancel"]}
    dataset = write_project(
        tmp_path,
        [entry("a", "book it", "book"), entry("b", "cancel", "cancel"), entry("c", "x", "book")],
        evaluators=[{"name": "intent.py:intent", "aggregators": [matrix]}],
    )

    result = await run_dataset(dataset)

    details = result.dataset_results["intent::confusion_matrix"].details
    assert isinstance(details, dict)
    assert details["confusion_matrix"] == [[1, 0], [1, 1]]  # [predicted][expected]


def test_an_entry_that_no_evaluator_scores_is_a_dataset_problem(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, [entry("a", "one"), entry("b", "two", evaluators=[])])

    with pytest.raises(DatasetError) as info:
        prepare_dataset(dataset)

    (problem,) = info.value.problems
    assert problem.location == "entries[1].evaluators"
    assert "no evaluator scores entry 'b'" in problem.message


@pytest.mark.anyio
async def test_problems_of_the_dataset_are_raised_before_anything_runs(tmp_path: Path) -> None:
    dataset = write_project(
        tmp_path,
        [entry("a", "one"), {"name": "b", "entry_kwargs": {"questoin": "x"}}],
        evaluators=["Factualty"],
    )

    with pytest.raises(DatasetError) as info:
        await run_dataset(dataset, output_dir=tmp_path / "out")

    locations = sorted(problem.location for problem in info.value.problems)
    assert locations == [
        "entries[1].entry_kwargs",
        "entries[1].entry_kwargs.questoin",
        "evaluators[0]",
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.anyio
async def test_a_dataset_built_in_code_runs_with_a_runnable_given_in_code() -> None:
    async def shout(question: str) -> str:
        return question.upper()

    dataset = dataset_from_data(
        {
            "evaluators": ["ExactMatch"],
            "entries": [{"name": "a", "entry_kwargs": {"question": "hi"}, "expectation": "HI"}],
        }
    )

    result = await run_dataset(dataset, runnable=shout)

    assert result.passed and result.name == "shout" and result.source is None


@pytest.mark.anyio
async def test_a_bad_threshold_is_refused(tmp_path: Path) -> None:
    dataset = write_project(tmp_path, [entry("a", "one")])
    with pytest.raises(ValueError, match="threshold must be a number in"):
        await run_dataset(dataset, threshold=1.5)


def test_a_run_result_with_run_errors_and_an_interruption_round_trips() -> None:
    from evaltrace.evals import EvaluationError

    result = RunResult(
        name="faq",
        errors=[EvaluationError(type="OSError", message="no db", where="setup")],
        interrupted=True,
    )
    assert RunResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.anyio
async def test_a_user_evaluator_module_with_models_runs_in_a_dataset_run(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from pydantic import BaseModel\n"
        "from evaltrace import Evaluation\n\n"
        "class Verdict(BaseModel):\n    reason: Reason\n\n"
        "class Reason(BaseModel):\n    text: str\n\n"
        "@dataclass\nclass Check:\n    word: str = 'HELLO'\n\n"
        "    def __call__(self, evaluable) -> Evaluation:\n"
        "        verdict = Verdict(reason=Reason(text=str(evaluable.output_value('answer'))))\n"
        "        return Evaluation(score=float(self.word in verdict.reason.text),\n"
        "                          details=verdict.model_dump())\n"
    )
    dataset = write_project(tmp_path, [entry("a", "hello")], evaluators=["typed.py:Check"])

    result = await run_dataset(dataset)

    assert result.passed
    assert result.entries[0].evaluations[0].details == {"reason": {"text": "HELLO for Ada"}}


@pytest.mark.anyio
async def test_assert_dataset_pass_uses_the_files_runnable_and_evaluators(tmp_path: Path) -> None:
    from evaltrace import EvalAssertionError
    from evaltrace.datasets import assert_dataset_pass

    passing = write_project(tmp_path, [entry("a", "one", "ONE for Ada")])
    outcome = await assert_dataset_pass(None, passing)
    assert outcome.run.passed and [[e.score for e in row] for row in outcome.results] == [[1.0]]

    failing = write_project(tmp_path, [entry("a", "one", "ONE for Ada"), entry("b", "boom")])
    with pytest.raises(EvalAssertionError) as info:
        await assert_dataset_pass(None, failing)
    message = str(info.value)
    assert message.startswith(f"assert_dataset_pass failed for {failing}: 1 of 2 inputs passed")
    assert "entry  input" in message
    assert 'b      {"question": "boom"}' in message
    assert "RuntimeError: kaboom" in message


@pytest.mark.anyio
async def test_assert_dataset_pass_fails_when_the_setup_raises(tmp_path: Path) -> None:
    from evaltrace import EvalAssertionError
    from evaltrace.datasets import assert_dataset_pass

    dataset = write_project(tmp_path, [entry("a", "one", "ONE for Ada")])
    app = (tmp_path / "app.py").read_text()
    (tmp_path / "app.py").write_text(
        app.replace('EVENTS.append("setup")', 'raise OSError("no db")')
    )

    with pytest.raises(EvalAssertionError, match="the runnable's setup raised OSError: no db"):
        await assert_dataset_pass(None, dataset)


@pytest.mark.anyio
async def test_a_sync_app_abandoned_past_its_timeout_never_keeps_the_process_alive(
    tmp_path: Path,
) -> None:
    import threading

    release = threading.Event()
    threads: list[threading.Thread] = []

    def stuck(question: str) -> str:
        threads.append(threading.current_thread())
        release.wait()
        return question

    dataset = dataset_from_data(
        {"evaluators": ["ExactMatch"], "entries": [{"entry_kwargs": {"question": "q"}}]}
    )
    try:
        result = await run_dataset(dataset, runnable=stuck, timeout=0.2)
    finally:
        release.set()

    assert [item.status for item in result.entries] == [S.TIMED_OUT]
    (thread,) = threads
    assert thread.daemon
