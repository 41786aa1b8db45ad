"""Dataset files that load: the seed-004 format, YAML, defaults, and every problem at once."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from evaltrace.datasets import (
    Dataset,
    DatasetError,
    EvaluatorSpec,
    dataset_from_data,
    dataset_json_schema,
    load_dataset,
)
from evaltrace.evals import UNSET, Evaluable

FIXTURES = Path(__file__).parent / "fixtures" / "datasets"
SEED_004 = FIXTURES / "seed004" / "customer_faq.json"

YAML_TWIN = """\
name: customer-faq
runnable: pixie_qa/scripts/run_app.py:AppRunnable
evaluators: [Factuality]
entries:
  - entry_kwargs: {question: Hello}
    description: Basic greeting
    eval_input: [{name: input, value: Hello}]
    expectation: A friendly greeting that offers to help
    evaluators: ["...", ClosedQA]
  - entry_kwargs: {user_message: I want to end this call}
    description: User requests call end after failed verification
    eval_input: [{name: user_input, value: I want to end this call}]
    expectation: Agent should call endCall tool
    eval_metadata: {expected_tool: endCall, expected_call_ended: true}
    evaluators: ["...", "pixie_qa/evaluators.py:tool_call_check"]
"""


def write(tmp_path: Path, name: str, content: str | dict[str, object]) -> Path:
    path = tmp_path / name
    text = content if isinstance(content, str) else json.dumps(content)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_seed_004_file_loads_unchanged() -> None:
    dataset = load_dataset(SEED_004)

    assert dataset.name == "customer-faq"
    assert dataset.runnable == "pixie_qa/scripts/run_app.py:AppRunnable"
    assert dataset.path == SEED_004.absolute()
    assert dataset.source == str(SEED_004)
    first, second = dataset.entries
    assert first.entry_kwargs == {"question": "Hello"}
    assert first.description == "Basic greeting"
    assert [(item.name, item.value) for item in first.eval_input] == [("input", "Hello")]
    assert first.expectation == "A friendly greeting that offers to help"
    assert second.eval_metadata == {"expected_tool": "endCall", "expected_call_ended": True}


def test_dots_expand_to_the_dataset_evaluators_and_a_list_without_them_replaces() -> None:
    dataset = dataset_from_data(
        {
            "evaluators": ["Factuality", "ExactMatch"],
            "entries": [
                {"entry_kwargs": {}},
                {"entry_kwargs": {}, "evaluators": ["...", "ClosedQA"]},
                {"entry_kwargs": {}, "evaluators": ["ClosedQA"]},
            ],
        }
    )

    names = [[s.name for s in dataset.evaluators_for(e)] for e in dataset.entries]
    assert names == [
        ["Factuality", "ExactMatch"],
        ["Factuality", "ExactMatch", "ClosedQA"],
        ["ClosedQA"],
    ]


def test_yaml_holds_the_same_dataset_as_json(tmp_path: Path) -> None:
    from_yaml = load_dataset(write(tmp_path, "faq.yaml", YAML_TWIN))

    assert from_yaml.model_dump() == load_dataset(SEED_004).model_dump()


def test_yaml_scalars_follow_json_not_yaml_1_1(tmp_path: Path) -> None:
    text = (
        "entries:\n  - entry_kwargs: {answer: no, code: 010, time: 1:20, day: 2024-01-01,"
        " ok: true, big: .inf}\n"
    )
    entry = load_dataset(write(tmp_path, "scalars.yml", text)).entries[0]

    assert entry.entry_kwargs == {
        "answer": "no",
        "code": 10,
        "time": "1:20",
        "day": "2024-01-01",
        "ok": True,
        "big": ".inf",
    }


def test_yaml_aliases_within_the_limit_are_expanded(tmp_path: Path) -> None:
    text = "entries:\n  - entry_kwargs: &args {q: hi}\n  - entry_kwargs: *args\n"
    dataset = load_dataset(write(tmp_path, "aliases.yaml", text))

    assert [e.entry_kwargs for e in dataset.entries] == [{"q": "hi"}, {"q": "hi"}]


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"entries": [{"entry_kwargs": {}}]}).encode())

    assert len(load_dataset(path).entries) == 1


def test_an_absent_expectation_is_unset_and_null_is_a_real_expectation() -> None:
    dataset = dataset_from_data(
        {"entries": [{"entry_kwargs": {}}, {"entry_kwargs": {}, "expectation": None}]}
    )

    absent, null = dataset.entries
    assert absent.expectation is UNSET
    assert null.expectation is None
    assert not absent.to_evaluable().has_expectation
    assert null.to_evaluable().has_expectation


def test_entries_are_named_by_position_and_described_by_name_when_not_given() -> None:
    dataset = dataset_from_data(
        {
            "entries": [
                {"entry_kwargs": {}},
                {"name": "refund", "entry_kwargs": {}},
                {"name": "greeting", "description": "Says hello", "entry_kwargs": {}},
            ]
        }
    )

    assert [(e.name, e.description) for e in dataset.entries] == [
        ("0", "0"),
        ("refund", "refund"),
        ("greeting", "Says hello"),
    ]


def test_a_dataset_is_named_after_its_file_when_it_has_no_name(tmp_path: Path) -> None:
    path = write(tmp_path, "refunds.evaltrace.json", {"entries": [{"entry_kwargs": {}}]})

    assert load_dataset(path).name == "refunds"


def test_a_schema_key_is_allowed_at_the_top_level(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "with_schema.json",
        {"$schema": "./dataset.schema.json", "entries": [{"entry_kwargs": {}}]},
    )

    assert load_dataset(path).schema_ == "./dataset.schema.json"


def test_an_entry_becomes_an_evaluable_without_output() -> None:
    entry = dataset_from_data(
        {
            "entries": [
                {
                    "entry_kwargs": {"q": "hi"},
                    "eval_input": [{"name": "q", "value": "hi"}],
                    "expectation": "hello",
                    "eval_metadata": {"k": 1},
                }
            ]
        }
    ).entries[0]

    evaluable = entry.to_evaluable()
    assert type(evaluable) is Evaluable
    assert evaluable.input_value("q") == "hi"
    assert (evaluable.expectation, evaluable.eval_metadata, evaluable.eval_output) == (
        "hello",
        {"k": 1},
        None,
    )


def test_a_dataset_written_back_without_defaults_is_the_file_it_came_from() -> None:
    dataset = load_dataset(SEED_004)

    written = dataset.model_dump(mode="json", exclude_unset=True)

    assert written == json.loads(SEED_004.read_text(encoding="utf-8"))
    assert dataset_from_data(written).model_dump() == dataset.model_dump()


def test_an_evaluator_with_args_and_aggregators_is_an_object() -> None:
    spec = EvaluatorSpec.model_validate(
        {
            "name": "intent.py:label",
            "args": {"strict": True},
            "aggregators": [{"type": "fscore", "classes": ["buy", "sell"], "fValue": 2}],
        }
    )

    assert spec.args == {"strict": True}
    assert spec.aggregators[0].type == "fscore"
    assert spec.model_dump(mode="json")["name"] == "intent.py:label"


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "many.json",
        {
            "nmae": "many",
            "evaluators": ["..."],
            "entries": [
                {"name": "a", "entry_kwargs": {"q": 1}, "eval_input": [{"name": "q", "value": 2}]},
                {"name": "a", "entry_kwargs": []},
                {"entry_kwargs": {}, "descripton": "typo"},
                {"entry_kwargs": {}, "eval_input": [{"value": 1}]},
            ],
        },
    )

    with pytest.raises(DatasetError) as caught:
        load_dataset(path)

    locations = {problem.location for problem in caught.value.problems}
    assert locations == {
        "nmae",
        "evaluators[0]",
        "entries[0].eval_input[0].value",
        "entries[1].entry_kwargs",
        "entries[1].name",
        "entries[2].descripton",
        "entries[3].eval_input[0].name",
    }
    assert str(caught.value).startswith(f"7 problems in dataset {path}:\n")


def test_a_long_list_of_problems_is_cut_in_the_message_but_kept_whole() -> None:
    data = {"entries": [{"entry_kwargs": {}, "typo": i} for i in range(80)]}

    with pytest.raises(DatasetError) as caught:
        dataset_from_data(data, file="big.json")

    assert len(caught.value.problems) == 80
    assert str(caught.value).endswith("... and 30 more (see .problems)")


def test_building_a_dataset_in_python_checks_it_as_a_whole() -> None:
    with pytest.raises(ValidationError, match="duplicate entry name 'a'"):
        Dataset.model_validate(
            {"entries": [{"name": "a", "entry_kwargs": {}}, {"name": "a", "entry_kwargs": {}}]}
        )


def test_max_bytes_must_be_a_positive_whole_number(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        load_dataset(SEED_004, max_bytes=0)


def test_the_schema_accepts_a_seed_004_file_and_rejects_an_unknown_key() -> None:
    schema = dataset_json_schema()
    document = json.loads(SEED_004.read_text(encoding="utf-8"))
    jsonschema = pytest.importorskip("jsonschema")

    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(document)) == []
    document["entries"][0]["expectaton"] = "typo"
    assert [error.validator for error in validator.iter_errors(document)] == [
        "additionalProperties"
    ]


def test_the_schema_describes_every_field_of_the_models() -> None:
    schema = dataset_json_schema()

    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]) == {
        "$schema",
        "name",
        "runnable",
        "evaluators",
        "epochs",
        "reducer",
        "entries",
    }
    assert all(schema["properties"][key].get("description") for key in ("epochs", "reducer"))
    assert schema["required"] == ["entries"]
    entry = schema["$defs"]["DatasetEntry"]
    assert entry["additionalProperties"] is False
    assert set(entry["properties"]) == {
        "name",
        "entry_kwargs",
        "trace",
        "trace_id",
        "eval_input",
        "description",
        "expectation",
        "eval_metadata",
        "evaluators",
    }
    assert all(field.get("description") for field in entry["properties"].values())
    spec = schema["$defs"]["EvaluatorSpec"]
    assert [option.get("type") for option in spec["anyOf"]] == ["string", "object", None]
    assert spec["anyOf"][2] == {"$ref": "#/$defs/CheckSpec"}
    check = schema["$defs"]["CheckSpec"]
    assert set(check["properties"]) == {"type", "value", "name", "output"}
    assert check["required"] == ["type"] and check["additionalProperties"] is False


def test_importing_evaltrace_does_not_import_datasets_or_yaml() -> None:
    code = (
        "import sys, evaltrace\n"
        "print([m for m in ('evaltrace.datasets', 'yaml') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- large JSON datasets ----------------------------------------------------------------------


def _entries(count: int) -> list[dict[str, object]]:
    return [
        {"name": f"e{i}", "entry_kwargs": {"question": f"question {i}"}, "expectation": f"Q{i}"}
        for i in range(count)
    ]


def test_a_valid_json_dataset_holds_about_its_entries_text_not_their_models(
    tmp_path: Path,
) -> None:
    count = 5_000
    document = {"runnable": "app.py:run", "evaluators": ["ExactMatch"], "entries": _entries(count)}
    path = write(tmp_path, "big.evaltrace.json", document)
    size = path.stat().st_size

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        dataset = load_dataset(path)
        kept, peak = (memory - base for memory in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()

    assert len(dataset.entries) == count
    assert dataset.entries[count - 1].entry_kwargs == {"question": f"question {count - 1}"}
    assert kept <= 1.5 * size, (kept / count, size / count)  # the entries' models: about 15x
    assert peak <= 4 * size, (peak / count, size / count)


@pytest.mark.parametrize("entries_first", [False, True], ids=["entries-last", "entries-first"])
def test_a_json_dataset_read_entry_by_entry_equals_it_validated_whole(
    tmp_path: Path, entries_first: bool
) -> None:
    entries: list[dict[str, object]] = [
        {"entry_kwargs": {"q": "Grüße, 東京 \u2028"}, "expectation": 1.5},
        {"name": "b", "description": "second", "entry_kwargs": {"n": 10**20, "x": [1, None]}},
        {"entry_kwargs": {}, "evaluators": ["...", "ClosedQA"], "eval_metadata": {"k": True}},
    ]
    header: dict[str, object] = {"name": "mixed", "evaluators": ["Factuality"], "epochs": 2}
    document = {"entries": entries, **header} if entries_first else {**header, "entries": entries}
    path = write(tmp_path, "mixed.evaltrace.json", json.dumps(document, indent=2))

    loaded = load_dataset(path)
    whole = dataset_from_data(json.loads(path.read_text()))

    assert list(loaded.entries) == list(whole.entries)
    assert [entry.name for entry in loaded.entries] == ["0", "b", "2"]
    assert loaded.entries[-1].description == "2"
    assert loaded.model_dump(exclude={"entries"}) == whole.model_dump(exclude={"entries"})


def test_a_json_dataset_repeating_a_key_after_its_entries_is_still_refused(
    tmp_path: Path,
) -> None:
    text = '{"evaluators": ["Factuality"], "entries": [{"entry_kwargs": {}}], "evaluators": []}'
    path = write(tmp_path, "twice.evaltrace.json", text)

    with pytest.raises(DatasetError, match="the key 'evaluators' appears twice"):
        load_dataset(path)
