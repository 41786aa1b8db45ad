"""Checks written in dataset files without Python, as promptfoo's users write them:
``{"type": "contains", "value": "Paris"}`` in a file's or an entry's ``evaluators`` list.

Each check type is tested on its own through :class:`Check` (what passes, what fails, and the
reason given); then whole dataset files are run with ``evaltrace test`` in a subprocess, and a
bad value (a regular expression that does not compile, a schema that is not a JSON schema) is
a problem of the file, reported with its line and column, and the exit code 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from evaltrace import Evaluable, Evaluation, NamedData, evaluate, run_and_evaluate, wrap
from evaltrace.datasets import (
    DatasetError,
    dataset_json_schema,
    load_dataset,
    resolve_dataset,
)
from evaltrace.metrics import (
    Check,
    CheckOutcome,
    CheckType,
    CheckValueError,
    UnknownCheckTypeError,
    register_check,
)

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


def check(type_: str, value: Any, output: Any) -> Evaluation:
    case = Evaluable(eval_output=[NamedData(name="output", value=output)])
    return anyio.run(evaluate, Check(type_, value), case)


def passes(type_: str, value: Any, output: Any) -> bool:
    result = check(type_, value, output)
    assert result.status == "scored", result
    return result.score == 1.0


# --- each check type ----------------------------------------------------------------------------


def test_contains_and_icontains() -> None:
    assert passes("contains", "Paris", "The capital is Paris.")
    assert not passes("contains", "paris", "The capital is Paris.")
    assert passes("icontains", "paris", "The capital is PARIS.")
    failed = check("contains", "Paris", "The capital is Lyon.")
    assert failed.reasoning == "the output 'The capital is Lyon.' does not contain 'Paris'"


def test_contains_any_and_contains_all() -> None:
    assert passes("contains-any", ["Paris", "Lyon"], "Lyon it is")
    assert not passes("contains-any", ["Paris", "Lyon"], "Nice it is")
    assert passes("contains-all", ["Paris", "France"], "Paris, France")
    failed = check("contains-all", ["Paris", "France", "Europe"], "Paris, France")
    assert failed.score == 0.0 and "lacks ['Europe']" in failed.reasoning.replace('"', "'")
    assert passes("icontains-any", ["PARIS"], "paris")
    assert passes("icontains-all", ["PARIS", "france"], "Paris, FRANCE")


def test_starts_with() -> None:
    assert passes("starts-with", "Yes", "Yes, Paris.")
    assert not passes("starts-with", "Yes", "No. Yes.")


def test_regex_searches_the_whole_text() -> None:
    assert passes("regex", r"\d{4}-\d{2}-\d{2}", "on 2024-05-01, sunny")
    failed = check("regex", r"^\d+$", "forty-two")
    assert failed.score == 0.0 and "does not match /^\\d+$/" in failed.reasoning


def test_equals_compares_text_or_data() -> None:
    assert passes("equals", "Paris", "Paris")
    assert not passes("equals", "Paris", "Paris.")
    assert passes("equals", {"city": "Paris"}, {"city": "Paris"})
    assert passes("equals", {"city": "Paris"}, '{"city": "Paris"}')  # text read as JSON
    assert not passes("equals", 1, True)  # JSON's true is not 1


def test_is_json_with_and_without_a_schema() -> None:
    assert anyio.run(evaluate, Check("is-json"), _case('{"a": 1}')).score == 1.0
    assert anyio.run(evaluate, Check("is-json"), _case({"a": 1})).score == 1.0
    failed = anyio.run(evaluate, Check("is-json"), _case("not json"))
    assert failed.score == 0.0 and "is not JSON" in failed.reasoning
    schema = {"type": "object", "required": ["city"]}
    assert passes("is-json", schema, '{"city": "Paris"}')
    wrong = check("json-schema", schema, '{"town": "Paris"}')
    assert wrong.score == 0.0 and "'city' is a required property" in wrong.reasoning


def _case(output: Any) -> Evaluable:
    return Evaluable(eval_output=[NamedData(name="output", value=output)])


def test_max_length_counts_characters_of_the_text() -> None:
    assert passes("max-length", 5, "Paris")
    failed = check("max-length", 4, "Paris")
    assert failed.reasoning == "the output is 5 characters long, more than 4"


@wrap
def slow(question: str) -> str:
    import time

    time.sleep(0.05)
    return "done"


def test_max_duration_reads_the_runnables_duration() -> None:
    assert anyio.run(run_and_evaluate, Check("max-duration", 5), slow, "q").score == 1.0
    assert anyio.run(run_and_evaluate, Check("max-duration", 0.01), slow, "q").score == 0.0
    assert anyio.run(run_and_evaluate, Check("not-max-duration", 0.01), slow, "q").score == 1.0


def test_every_type_has_a_not_form_that_passes_when_it_fails() -> None:
    assert passes("not-contains", "sorry", "Here you go")
    failed = check("not-icontains", "sorry", "I am SORRY")
    assert failed.score == 0.0 and "contains 'sorry' (ignoring case)" in failed.reasoning
    assert passes("not-regex", r"\bERROR\b", "all fine")
    assert anyio.run(evaluate, Check("not-is-json"), _case("plain words")).score == 1.0
    assert not passes("not-equals", "Paris", "Paris")


def test_a_check_is_named_after_its_type_and_value() -> None:
    assert Check("contains", "Paris").name == 'contains "Paris"'
    assert Check("is-json").name == "is-json"
    assert Check("regex", "x", name="has an x").name == "has an x"


def test_a_check_may_look_at_one_named_output() -> None:
    case = Evaluable(
        eval_output=[NamedData(name="answer", value="Paris"), NamedData(name="log", value="x")]
    )
    result = anyio.run(evaluate, Check("equals", "Paris", output="answer"), case)
    assert result.score == 1.0


def test_an_entry_without_output_is_skipped() -> None:
    result = anyio.run(evaluate, Check("contains", "x"), Evaluable())
    assert result.status == "skipped"


# --- bad values ---------------------------------------------------------------------------------


def test_a_bad_regex_is_refused_when_the_check_is_made() -> None:
    with pytest.raises(CheckValueError, match="not a regular expression"):
        Check("regex", "(unclosed")


def test_a_bad_schema_is_refused_when_the_check_is_made() -> None:
    with pytest.raises(CheckValueError, match="not a valid JSON schema"):
        Check("json-schema", {"type": "objekt"})


@pytest.mark.parametrize(
    ("type_", "value", "fragment"),
    [
        ("contains", ["Paris"], "expected a string, found array"),
        ("contains-any", "Paris", "expected a non-empty list of strings"),
        ("contains-all", [], "expected a non-empty list of strings"),
        ("max-length", 2.5, "expected a whole number of characters >= 0"),
        ("max-duration", -1, "expected a number of seconds >= 0"),
        ("json-schema", "object", "expected a JSON schema object"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_saying_what_is_expected(
    type_: str, value: Any, fragment: str
) -> None:
    with pytest.raises(CheckValueError, match=fragment):
        Check(type_, value)


def test_a_missing_value_is_refused() -> None:
    with pytest.raises(CheckValueError, match="needs a value"):
        Check("contains")


def test_an_unknown_type_suggests_the_closest() -> None:
    with pytest.raises(UnknownCheckTypeError, match="did you mean 'contains'"):
        Check("contians", "x")


# --- extending ----------------------------------------------------------------------------------


def test_a_registered_type_works_in_code_and_with_its_not_form() -> None:
    register_check(
        CheckType(
            name="all-caps",
            value="none",
            summary="the output's text is in capitals",
            prepare=lambda value: None,
            run=lambda _, ctx, output: CheckOutcome(
                holds=str(output).isupper(), reason=f"the output is {output!r}"
            ),
        ),
        replace=True,
    )
    assert anyio.run(evaluate, Check("all-caps"), _case("PARIS")).score == 1.0
    assert anyio.run(evaluate, Check("not-all-caps"), _case("Paris")).score == 1.0


def test_a_type_named_not_something_is_refused() -> None:
    with pytest.raises(ValueError, match="not-"):
        register_check(
            CheckType(
                name="not-thing",
                value="none",
                summary="",
                prepare=lambda value: None,
                run=lambda _, ctx, output: CheckOutcome(holds=True, reason=""),
            )
        )


# --- dataset files ------------------------------------------------------------------------------

APP = """\
def answer(question: str) -> str:
    answers = {
        "capital": "The capital of France is Paris.",
        "json": '{"city": "Paris", "country": "France"}',
        "apology": "Sorry, I cannot help with that.",
    }
    return answers[question]
"""


def run_evaltrace(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_dataset(folder: Path, document: str, name: str = "faq.evaltrace.json") -> Path:
    (folder / "app.py").write_text(APP)
    path = folder / name
    path.write_text(textwrap.dedent(document).lstrip())
    return path


GOOD = """
{
  "runnable": "app.py:answer",
  "evaluators": [
    {"type": "not-icontains", "value": "sorry"},
    {"type": "max-length", "value": 200}
  ],
  "entries": [
    {
      "name": "capital",
      "entry_kwargs": {"question": "capital"},
      "evaluators": ["...", {"type": "contains", "value": "Paris"}]
    },
    {
      "name": "json",
      "entry_kwargs": {"question": "json"},
      "evaluators": [
        {"type": "json-schema", "value": {"type": "object", "required": ["city", "country"]}},
        {"type": "regex", "value": "\\\\bParis\\\\b", "name": "mentions Paris"}
      ]
    },
    {"name": "apology", "entry_kwargs": {"question": "apology"}}
  ]
}
"""


def test_a_dataset_file_runs_its_checks_and_reports_why_one_failed(tmp_path: Path) -> None:
    write_dataset(tmp_path, GOOD)

    done = run_evaltrace(tmp_path, "test", "faq.evaltrace.json", "--no-scorecard")

    assert done.returncode == 1, done.stderr
    report = done.stdout
    for column in ('not-icontains "sorry"', "max-length 200", 'contains "Paris"', "mentions Paris"):
        assert column in report
    assert "| capital | SUCCESS" in report
    assert "| json    | SUCCESS" in report
    assert "apology  FAILED_PARTIAL_SCORE" in report
    assert (
        "not-icontains \"sorry\": 0.00: the output contains 'sorry' (ignoring case), at "
        "character 0" in report
    )


def test_checks_are_written_back_as_the_file_has_them(tmp_path: Path) -> None:
    path = write_dataset(tmp_path, GOOD)

    dataset = load_dataset(path)

    written = json.loads(dataset.model_dump_json(exclude_unset=True, by_alias=True))
    assert written["evaluators"] == json.loads(path.read_text())["evaluators"]
    assert written["entries"][1]["evaluators"][1] == {
        "type": "regex",
        "value": "\\bParis\\b",
        "name": "mentions Paris",
    }


def test_a_bad_regex_is_a_problem_of_the_file_with_line_and_column(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        {
          "runnable": "app.py:answer",
          "evaluators": [
            {"type": "contains", "value": "Paris"},
            {"type": "regex", "value": "(Paris"}
          ],
          "entries": [{"entry_kwargs": {"question": "capital"}}]
        }
        """,
    )

    done = run_evaltrace(tmp_path, "test", "faq.evaltrace.json")

    assert done.returncode == 2
    assert (
        "faq.evaltrace.json:5:32: evaluators[1].value: not a regular expression: "
        "missing ), unterminated subpattern at position 0" in done.stderr
    ), done.stderr
    assert not (tmp_path / "evaltrace_results").exists()


def test_a_bad_json_schema_is_a_problem_of_the_file_with_line_and_column(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        {
          "runnable": "app.py:answer",
          "entries": [
            {
              "entry_kwargs": {"question": "json"},
              "evaluators": [
                {
                  "type": "json-schema",
                  "value": {"type": "object", "required": "city"}
                }
              ]
            }
          ]
        }
        """,
    )

    done = run_evaltrace(tmp_path, "test", "faq.evaltrace.json")

    assert done.returncode == 2
    assert (
        "faq.evaltrace.json:9:20: entries[0].evaluators[0].value: not a valid JSON schema: "
        "'city' is not of type 'array' (at schema['required'])" in done.stderr
    ), done.stderr


def test_a_bad_check_in_a_yaml_file_has_its_line_and_column(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        runnable: app.py:answer
        evaluators:
          - type: contains-any
            value: Paris
        entries:
          - entry_kwargs: {question: capital}
        """,
        name="faq.evaltrace.yaml",
    )

    done = run_evaltrace(tmp_path, "dataset", "validate", "faq.evaltrace.yaml")

    assert done.returncode == 2
    assert (
        "faq.evaltrace.yaml:4:12: evaluators[0].value: not a value for a 'contains-any' check"
        in (done.stderr)
    ), done.stderr
    assert "expected a non-empty list of strings" in done.stderr


def test_a_check_without_its_value_is_located_at_the_check(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        {
          "runnable": "app.py:answer",
          "evaluators": [{"type": "starts-with"}],
          "entries": [{"entry_kwargs": {"question": "capital"}}]
        }
        """,
    )

    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path / "faq.evaltrace.json")

    problem = caught.value.problems[0]
    assert (problem.location, problem.line, problem.column) == ("evaluators[0]", 3, 18)
    assert "a 'starts-with' check needs a value" in problem.message


def test_an_unknown_key_of_a_check_suggests_the_right_one(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        {
          "runnable": "app.py:answer",
          "evaluators": [{"type": "contains", "vaule": "Paris"}],
          "entries": [{"entry_kwargs": {"question": "capital"}}]
        }
        """,
    )

    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path / "faq.evaltrace.json")

    messages = [str(problem) for problem in caught.value.problems]
    assert any(
        "evaluators[0].vaule: unknown key 'vaule'; did you mean 'value'?" in m for m in messages
    )


def test_an_unknown_check_type_is_reported_with_the_closest(tmp_path: Path) -> None:
    write_dataset(
        tmp_path,
        """
        {
          "runnable": "app.py:answer",
          "evaluators": [{"type": "icontain", "value": "Paris"}],
          "entries": [{"entry_kwargs": {"question": "capital"}}]
        }
        """,
    )

    done = run_evaltrace(tmp_path, "test", "faq.evaltrace.json")

    assert done.returncode == 2
    assert "evaluators[0].type: unknown check type 'icontain'" in done.stderr
    assert "did you mean 'icontains'?" in done.stderr


def test_a_type_the_runnables_module_registers_can_be_named(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        APP
        + textwrap.dedent(
            """
            from evaltrace.metrics import CheckOutcome, CheckType, register_check

            register_check(CheckType(
                name="ends-with-period", value="none", summary="the text ends with a period",
                prepare=lambda value: None,
                run=lambda _, ctx, output: CheckOutcome(
                    holds=str(output).endswith("."), reason=f"the output is {output!r}"),
            ), replace=True)
            """
        )
    )
    (tmp_path / "faq.evaltrace.json").write_text(
        json.dumps(
            {
                "runnable": "app.py:answer",
                "evaluators": [{"type": "ends-with-period"}],
                "entries": [{"entry_kwargs": {"question": "capital"}}],
            }
        )
    )

    dataset = load_dataset(tmp_path / "faq.evaltrace.json")
    resolved = resolve_dataset(dataset)

    assert [item.name for item in resolved.evaluators] == ["ends-with-period"]


def test_the_json_schema_of_dataset_files_takes_checks() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(dataset_json_schema())
    good = {
        "evaluators": [{"type": "contains", "value": "Paris"}],
        "entries": [{"entry_kwargs": {}}],
    }
    assert list(validator.iter_errors(good)) == []
    bad = {"evaluators": [{"type": "contains", "vaule": "x"}], "entries": [{"entry_kwargs": {}}]}
    assert list(validator.iter_errors(bad)) != []
