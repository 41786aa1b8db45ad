"""Code written for pixie-qa runs once its imports are changed (docs/migration.md).

Each test is something pixie-qa code does: a keyword it passes, a ``wrap`` purpose it uses,
or a builtin exception it catches where evaltrace raises its own class.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaltrace import capture_traces, wrap
from evaltrace.capture import eval_inputs
from evaltrace.datasets import load_dataset, lookup_evaluator, resolve_dataset
from evaltrace.evals import last_llm_call, root
from evaltrace.evals.evaluable import UNSET, Evaluable, TestCase
from evaltrace.results import load_result


def write_dataset(folder: Path, **document: Any) -> Path:
    document.setdefault("entries", [{"entry_kwargs": {"text": "hi"}}])
    path = folder / "dataset.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


# -- Evaluable(expected_output=...) ------------------------------------------------------------


def test_evaluable_expected_output_keyword_is_the_expectation_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"expectation="):
        evaluable = Evaluable(expected_output="ref")  # type: ignore[call-arg]

    assert evaluable.expectation == "ref"
    assert evaluable.expected_output == "ref"


def test_test_case_expected_output_none_is_a_real_expectation() -> None:
    with pytest.warns(DeprecationWarning):
        case = TestCase(expected_output=None)  # type: ignore[call-arg]

    assert case.has_expectation and case.expectation is None


def test_expected_output_and_expectation_together_are_refused() -> None:
    with (
        pytest.warns(DeprecationWarning),
        pytest.raises(ValueError, match=r"both expectation= and expected_output="),
    ):
        Evaluable(expectation="a", expected_output="b")  # type: ignore[call-arg]


def test_an_evaluable_without_expected_output_warns_nothing(
    recwarn: pytest.WarningsRecorder,
) -> None:
    assert Evaluable(expectation="ref").expectation == "ref"
    assert Evaluable().expectation is UNSET
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


# -- wrap(purpose="entry") ---------------------------------------------------------------------


def test_wrap_entry_returns_the_value_and_records_it_as_an_input() -> None:
    message = {"text": "I want to end this call"}

    with capture_traces() as handler:
        assert wrap(message, purpose="entry", name="user_message") is message

    (record,) = handler.named_values
    assert (record.name, record.purpose, record.value) == ("user_message", "input", message)


def test_wrap_entry_keeps_the_apps_own_value_in_an_evaluation_run() -> None:
    with capture_traces() as handler, eval_inputs({"user_message": "served", "order": 7}):
        assert wrap("typed by the user", purpose="entry", name="user_message") == (
            "typed by the user"
        )
        assert wrap("ignored", purpose="entry", name="not_served") == "ignored"

    assert [record.value for record in handler.named_values] == ["typed by the user", "ignored"]


def test_wrap_entry_of_a_callable_calls_it_in_an_evaluation_run() -> None:
    calls: list[str] = []

    def read_request(path: str) -> str:
        calls.append(path)
        return f"body of {path}"

    with capture_traces() as handler, eval_inputs({"request": "served"}):
        read = wrap(read_request, purpose="entry", name="request")
        assert read("/a") == "body of /a"

    assert calls == ["/a"]
    assert [record.value for record in handler.named_values] == ["body of /a"]


def test_wrap_entry_returns_the_value_when_nothing_records() -> None:
    value = ["a"]
    assert wrap(value, purpose="entry", name="idle_entry") is value
    assert wrap(value, purpose="entry", name="idle_entry") is value


def test_wrap_entry_values_are_the_runs_inputs_for_the_root_selector() -> None:
    @wrap
    def app(text: str) -> str:
        question = wrap(text, purpose="entry", name="question")
        return wrap(question.upper(), purpose="output", name="answer")

    with capture_traces() as handler:
        app("hi")

    evaluable = root(handler.trace)
    assert evaluable.input_value("question") == "hi"
    assert evaluable.output_value("answer") == "HI"


# -- the builtin exceptions pixie-qa code catches ----------------------------------------------


def test_root_of_an_empty_trace_is_caught_by_except_value_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        root([])


def test_last_llm_call_without_a_model_call_is_caught_by_except_value_error() -> None:
    @wrap
    def app() -> str:
        return "no model"

    with capture_traces() as handler:
        app()

    with pytest.raises(ValueError, match="no LLM span"):
        last_llm_call(handler.trace)


def test_a_name_missing_from_the_served_inputs_is_caught_by_except_key_error() -> None:
    with eval_inputs({"question": "q"}), pytest.raises(KeyError) as caught:
        wrap("live", purpose="input", name="order")

    # its text is the message itself, not the message quoted as KeyError does
    assert str(caught.value).startswith("wrap(purpose='input', name='order') has no value")


def test_an_unknown_evaluator_name_is_caught_by_except_value_error_and_key_error() -> None:
    with pytest.raises(ValueError, match="no evaluator is registered as 'ExactMatc'"):
        lookup_evaluator("ExactMatc")
    with pytest.raises(KeyError) as caught:
        lookup_evaluator("ExactMatc")
    assert str(caught.value).startswith("no evaluator is registered as 'ExactMatc'.")


def test_a_missing_dataset_file_is_caught_by_except_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such file"):
        load_dataset(tmp_path / "missing.json")


def test_a_dataset_naming_a_missing_runnable_file_is_caught_by_except_file_not_found_error(
    tmp_path: Path,
) -> None:
    dataset = load_dataset(write_dataset(tmp_path, runnable="app/run.py:run"))

    with pytest.raises(FileNotFoundError, match=r"runnable: no such file 'app/run\.py'"):
        resolve_dataset(dataset)


def test_a_dataset_naming_a_missing_evaluator_file_is_caught_by_except_file_not_found_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("def run(text: str) -> str:\n    return text\n")
    dataset = load_dataset(
        write_dataset(tmp_path, runnable="app.py:run", evaluators=["checks.py:polite"])
    )

    with pytest.raises(FileNotFoundError, match=r"evaluators\[0\]: no such file 'checks\.py'"):
        resolve_dataset(dataset)


def test_a_dataset_naming_a_missing_attribute_is_caught_by_except_attribute_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("def run(text: str) -> str:\n    return text\n")
    dataset = load_dataset(write_dataset(tmp_path, runnable="app.py:ran"))

    with pytest.raises(AttributeError, match=r"has no attribute 'ran'; did you mean 'run'\?"):
        resolve_dataset(dataset)


def test_a_dataset_error_without_a_missing_file_is_no_os_error(tmp_path: Path) -> None:
    path = tmp_path / "dataset.json"
    path.write_text("{}", encoding="utf-8")

    with pytest.raises(ValueError) as caught:
        load_dataset(path)

    assert not isinstance(caught.value, OSError | AttributeError)


def test_a_missing_saved_result_is_caught_by_except_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"result\.json: no such file"):
        load_result(tmp_path / "result.json")
