"""pydantic-evals' deterministic evaluators, with their names and meanings: Contains, IsInstance,
MaxDuration and HasMatchingSpan; run on real ``@wrap`` apps through ``run_and_evaluate``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from evaltrace import Evaluable, Evaluation, NamedData, evaluate, run_and_evaluate, wrap
from evaltrace.datasets import lookup_evaluator
from evaltrace.metrics import Contains, HasMatchingSpan, IsInstance, MaxDuration, SpanQuery

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


def scored(evaluator: Any, output: Any, **outputs: Any) -> Evaluation:
    items = [NamedData(name="output", value=output)] if not outputs else []
    items += [NamedData(name=name, value=value) for name, value in outputs.items()]
    return anyio.run(evaluate, evaluator, Evaluable(eval_output=items))


# --- Contains -----------------------------------------------------------------------------------


def test_contains_finds_a_substring_of_a_string_output() -> None:
    assert scored(Contains("Paris"), "The capital is Paris.").score == 1.0
    missed = scored(Contains("Paris"), "The capital is Lyon.")
    assert missed.score == 0.0
    assert "'The capital is Lyon.'" in missed.reasoning and "'Paris'" in missed.reasoning


def test_contains_is_case_sensitive_unless_told_otherwise() -> None:
    assert scored(Contains("paris"), "PARIS").score == 0.0
    assert scored(Contains("paris", case_sensitive=False), "PARIS").score == 1.0


def test_contains_on_a_dict_output_wants_every_key_with_its_value() -> None:
    output = {"city": "Paris", "country": "France", "population": 2100000}
    assert scored(Contains({"city": "Paris", "country": "France"}), output).score == 1.0
    wrong = scored(Contains({"city": "Lyon"}), output)
    assert wrong.score == 0.0 and "'city'" in wrong.reasoning and "'Lyon'" in wrong.reasoning
    absent = scored(Contains({"mayor": "x"}), output)
    assert absent.score == 0.0 and "no key 'mayor'" in absent.reasoning


def test_contains_on_a_dict_output_with_another_value_looks_for_a_key() -> None:
    assert scored(Contains("city"), {"city": "Paris"}).score == 1.0
    assert scored(Contains("Paris"), {"city": "Paris"}).score == 0.0


def test_contains_on_a_list_output_looks_for_a_member() -> None:
    assert scored(Contains("b"), ["a", "b"]).score == 1.0
    assert scored(Contains({"id": 2}), [{"id": 1}, {"id": 2}]).score == 1.0
    assert scored(Contains("ab"), ["a", "b"]).score == 0.0


def test_contains_as_strings_compares_the_text_of_both() -> None:
    assert scored(Contains(42, as_strings=True), {"answer": 42}).score == 1.0
    assert scored(Contains('"answer": 4', as_strings=True), {"answer": 42}).score == 1.0


def test_contains_on_a_number_output_fails_saying_why() -> None:
    result = scored(Contains(4), 42)
    assert result.score == 0.0 and "as_strings" in result.reasoning


def test_contains_may_check_one_named_output() -> None:
    result = scored(Contains("Paris", output="answer"), None, answer="Paris", status="ok")
    assert result.score == 1.0
    missing = scored(Contains("Paris", output="reply"), None, answer="Paris")
    assert missing.status == "skipped" and "'reply'" in missing.reasoning


def test_contains_skips_an_entry_without_output() -> None:
    result = anyio.run(evaluate, Contains("x"), Evaluable())
    assert result.status == "skipped"


# --- IsInstance ---------------------------------------------------------------------------------


def test_is_instance_matches_the_output_type_or_a_base_class() -> None:
    assert scored(IsInstance("str"), "Paris").score == 1.0
    assert scored(IsInstance("dict"), {"a": 1}).score == 1.0
    assert scored(IsInstance("int"), True).score == 1.0  # bool is an int, as in Python
    assert scored(IsInstance("NoneType"), None).score == 1.0
    failed = scored(IsInstance("float"), 3)
    assert failed.score == 0.0 and "int" in failed.reasoning


class Answer(BaseModel):
    city: str


@wrap
def structured(question: str) -> Answer:
    return Answer(city="Paris")


def test_is_instance_sees_an_app_object_as_the_json_data_it_was_recorded_as() -> None:
    recorded = anyio.run(run_and_evaluate, IsInstance("dict"), structured, "capital?")
    assert recorded.score == 1.0
    by_class = anyio.run(run_and_evaluate, IsInstance("Answer"), structured, "capital?")
    assert by_class.score == 0.0 and "JSON" in by_class.reasoning


# --- MaxDuration --------------------------------------------------------------------------------


@wrap
def slow(question: str) -> str:
    time.sleep(0.05)
    return "done"


def test_max_duration_compares_the_runnables_duration() -> None:
    assert anyio.run(run_and_evaluate, MaxDuration(seconds=2), slow, "q").score == 1.0
    over = anyio.run(run_and_evaluate, MaxDuration(seconds=0.01), slow, "q")
    assert over.score == 0.0 and "0.01 s" in over.reasoning


def test_max_duration_takes_a_timedelta() -> None:
    limit = MaxDuration(seconds=timedelta(milliseconds=10))
    assert anyio.run(run_and_evaluate, limit, slow, "q").score == 0.0


def test_max_duration_skips_what_did_not_run() -> None:
    result = anyio.run(evaluate, MaxDuration(1), Evaluable(eval_output=[]))
    assert result.status == "skipped"


def test_max_duration_refuses_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="seconds"):
        MaxDuration(-1)


# --- HasMatchingSpan ----------------------------------------------------------------------------


@wrap(kind="retriever")
def search(question: str) -> list[str]:
    return ["Paris is the capital of France."]


@wrap(kind="llm")
def generate(question: str, documents: list[str]) -> str:
    return "Paris"


@wrap
def rag(question: str) -> str:
    return generate(question, search(question))


def test_has_matching_span_finds_a_span_anywhere_in_the_trace() -> None:
    query = SpanQuery(has_kind="llm", some_ancestor_has=SpanQuery(name_equals="rag"))
    found = anyio.run(run_and_evaluate, HasMatchingSpan(query), rag, "capital?")
    assert found.score == 1.0 and "'generate'" in found.reasoning


def test_has_matching_span_fails_naming_the_query() -> None:
    query = {"has_kind": "tool"}
    missed = anyio.run(run_and_evaluate, HasMatchingSpan(query), rag, "capital?")
    assert missed.score == 0.0
    # the run's own span, rag, search, generate
    assert "none of the 4 spans" in missed.reasoning and '"has_kind": "tool"' in missed.reasoning


def test_has_matching_span_skips_an_entry_without_a_trace() -> None:
    result = anyio.run(evaluate, HasMatchingSpan({"name_equals": "x"}), Evaluable())
    assert result.status == "skipped"


def test_has_matching_span_refuses_a_bad_query_when_made() -> None:
    with pytest.raises(ValueError, match="name_equal"):
        HasMatchingSpan({"name_equal": "search"})


# --- by name ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Contains", "IsInstance", "MaxDuration", "HasMatchingSpan"])
def test_each_is_registered_under_its_name_for_dataset_files(name: str) -> None:
    assert lookup_evaluator(name).__name__ == name


def test_a_display_name_may_be_given() -> None:
    assert scored(Contains("a", name="mentions a"), "a").evaluator == "mentions a"


# --- from a dataset file ------------------------------------------------------------------------

RAG_APP = """\
from evaltrace import wrap


@wrap(kind="retriever")
def search(question: str) -> list[str]:
    return ["Paris is the capital of France."]


@wrap(kind="llm")
def generate(question: str, documents: list[str]) -> dict:
    return {"city": "Paris", "sources": len(documents)}


@wrap
def answer(question: str) -> dict:
    return generate(question, search(question))
"""


def test_a_dataset_file_names_them_with_their_args(tmp_path: Path) -> None:
    (tmp_path / "rag.py").write_text(RAG_APP)
    (tmp_path / "rag.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "rag.py:answer",
                "evaluators": [
                    {"name": "Contains", "args": {"value": {"city": "Paris"}}},
                    {"name": "IsInstance", "args": {"type_name": "dict"}},
                    {"name": "MaxDuration", "args": {"seconds": 30}},
                    {
                        "name": "HasMatchingSpan",
                        "args": {
                            "query": {
                                "has_kind": "llm",
                                "some_ancestor_has": {"name_equals": "answer"},
                            }
                        },
                    },
                ],
                "entries": [{"name": "capital", "entry_kwargs": {"question": "capital?"}}],
            }
        )
    )

    done = subprocess.run(
        [EVALTRACE, "test", "rag.evaltrace.json", "--no-scorecard"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "| capital | SUCCESS | 1.00 pass | 1.00 pass  | 1.00 pass   | 1.00 pass " in done.stdout


def test_a_bad_span_query_in_a_dataset_file_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "rag.py").write_text(RAG_APP)
    (tmp_path / "rag.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "rag.py:answer",
                "evaluators": [{"name": "HasMatchingSpan", "args": {"query": {"kind": "llm"}}}],
                "entries": [{"entry_kwargs": {"question": "capital?"}}],
            }
        )
    )

    done = subprocess.run(
        [EVALTRACE, "test", "rag.evaltrace.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2
    assert "evaluators[0]: " in done.stderr
    assert "query is not a valid span query: kind: unknown key" in done.stderr, done.stderr
