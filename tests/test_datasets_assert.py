"""assert_dataset_pass: a dataset file's entries through an app, checked by evaluators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaltrace import EvalAssertionError, Evaluable, Evaluation, wrap
from evaltrace.datasets import DatasetError as DatasetFileError
from evaltrace.datasets import assert_dataset_pass


def upper_ok(evaluable: Evaluable) -> bool:
    return str(evaluable.output_value()).isupper()


@pytest.mark.anyio
async def test_entry_inputs_are_injected_and_the_provider_is_not_called(tmp_path: Path) -> None:
    calls = {"fetch": 0}

    def fetch_profile(user_id: str) -> dict[str, str]:
        calls["fetch"] += 1
        return {"name": "live user"}

    get_profile = wrap(fetch_profile, purpose="input", name="profile")

    @wrap
    def greet(kwargs: dict[str, str]) -> str:
        profile = get_profile(kwargs["user_id"])
        return wrap(f"Hello {profile['name']}", purpose="output", name="greeting")

    dataset = tmp_path / "greetings.json"
    dataset.write_text(
        json.dumps(
            {
                "name": "greetings",
                "entries": [
                    {
                        "entry_kwargs": {"user_id": "u1"},
                        "description": "greets by name",
                        "eval_input": [{"name": "profile", "value": {"name": "Ada"}}],
                        "expectation": "Hello Ada",
                    }
                ],
            }
        )
    )

    def greeting_ok(evaluable: Evaluable) -> bool:
        return evaluable.output_value("greeting") == evaluable.expected_output

    outcome = await assert_dataset_pass(greet, dataset, [greeting_ok])
    assert outcome.results[0][0].score == 1.0
    assert outcome.dataset_results == {}
    assert calls["fetch"] == 0


@pytest.mark.anyio
async def test_dataset_file_errors_name_the_file_and_entry(tmp_path: Path) -> None:
    def shout(text: str) -> str:
        return text.upper()

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"entries": [{"entry_kwargs": {"text": "a"}, "eval_input": "x"}]}))
    with pytest.raises(DatasetFileError, match=r"bad.json:1:60: entries\[0\]\.eval_input: "):
        await assert_dataset_pass(shout, bad, [upper_ok])
    with pytest.raises(DatasetFileError, match=r"missing\.json: no such file"):
        await assert_dataset_pass(shout, tmp_path / "missing.json", [upper_ok])


@pytest.mark.anyio
async def test_entry_kwargs_that_do_not_fit_the_runnable_are_refused_before_running(
    tmp_path: Path,
) -> None:
    calls: list[str] = []

    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    dataset = tmp_path / "shout.json"
    dataset.write_text(json.dumps({"entries": [{"entry_kwargs": {"txt": "a"}}]}))
    with pytest.raises(DatasetFileError, match=r"entries\[0\]\.entry_kwargs") as info:
        await assert_dataset_pass(shout, dataset, [upper_ok])
    assert "text" in str(info.value)
    assert calls == []


def intent_dataset(tmp_path: Path, aggregators: list[dict[str, Any]], name: str) -> Path:
    # expected -> predicted by the app below: book->book, book->cancel, cancel->cancel,
    # cancel->cancel, reschedule->book
    rows = [("book a table", "book"), ("cancel it, no book", "book"), ("cancel", "cancel"),
            ("please cancel", "cancel"), ("move to friday", "reschedule")]  # fmt: skip
    dataset = tmp_path / "intents.json"
    dataset.write_text(
        json.dumps(
            {
                "evaluators": [{"name": name, "aggregators": aggregators}],
                "entries": [
                    {
                        "entry_kwargs": {"text": text},
                        "description": text,
                        "eval_input": [{"name": "text", "value": text}],
                        "expectation": intent,
                    }
                    for text, intent in rows
                ],
            }
        )
    )
    return dataset


@wrap
def classify(kwargs: dict[str, str]) -> str:
    text = kwargs["text"]
    intent = "cancel" if "cancel" in text else "book"
    return wrap(intent, purpose="output", name="intent")


def intent_match(evaluable: Evaluable) -> Evaluation:
    actual, expected = evaluable.output_value("intent"), evaluable.expected_output
    return Evaluation(
        score=1.0 if actual == expected else 0.0,
        details={"expected": expected, "actual": actual},
    )


@pytest.mark.anyio
async def test_dataset_file_aggregators_are_reported_at_run_level(tmp_path: Path) -> None:
    classes = ["book", "cancel", "reschedule"]
    dataset = intent_dataset(
        tmp_path,
        [
            {"type": "precision", "classes": classes, "averaging": "macro"},
            {"type": "fscore", "classes": classes, "averaging": "micro", "fValue": 2.0},
        ],
        "intent_match",
    )
    with pytest.raises(EvalAssertionError) as info:
        await assert_dataset_pass(classify, dataset, [intent_match])
    results = info.value.dataset_results
    # per class: book tp=1 fp=1 (reschedule->book) fn=1 (book->cancel): P=1/2
    #            cancel tp=2 fp=1 (book->cancel) fn=0: P=2/3; reschedule tp=0 fp=0: P=0
    # macro precision = (1/2 + 2/3 + 0) / 3 = 7/18
    assert results["intent_match::precision"].score == pytest.approx(7 / 18)
    # micro: tp=3, fp=2, fn=2 -> P=R=3/5, F2 = 3/5
    assert results["intent_match::fscore"].score == pytest.approx(3 / 5)
    assert "dataset-level results:" in str(info.value)
    assert "intent_match::precision: 0.3889" in str(info.value)


@pytest.mark.anyio
async def test_aggregators_for_an_unknown_evaluator_name_the_evaluators_given(
    tmp_path: Path,
) -> None:

    dataset = intent_dataset(
        tmp_path, [{"type": "recall", "classes": ["book", "cancel"]}], "intent_classifier"
    )
    with pytest.raises(DatasetFileError, match=r"declared for \['intent_classifier'\]"):
        await assert_dataset_pass(classify, dataset, [intent_match])


@pytest.mark.anyio
async def test_invalid_aggregator_in_a_dataset_file_names_the_field(tmp_path: Path) -> None:

    dataset = intent_dataset(
        tmp_path, [{"type": "fscore", "classes": ["book"], "fValue": 0}], "intent_match"
    )
    with pytest.raises(DatasetFileError, match=r"evaluators\[0\]\.aggregators\[0\]\.fValue"):
        await assert_dataset_pass(classify, dataset, [intent_match])


def test_dataset_runs_have_a_documented_default_timeout() -> None:
    import inspect

    from evaltrace.datasets import DEFAULT_DATASET_TIMEOUT

    assert DEFAULT_DATASET_TIMEOUT == 300.0
    default = inspect.signature(assert_dataset_pass).parameters["timeout"].default
    assert default == DEFAULT_DATASET_TIMEOUT
