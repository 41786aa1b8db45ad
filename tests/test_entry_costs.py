"""The engine's cheaper ways of doing per-entry work give what the plain ways give."""

from __future__ import annotations

import anyio
import pytest

from evaltrace.engine import evaluate_inputs
from evaltrace.evals import Evaluable, Evaluation, NamedData, evaluate
from evaltrace.evals.evaluable import checked_model
from evaltrace.llm.calls import ModelUsage, add_model_usage
from evaltrace.llm.usage import (
    JudgeUsage,
    add_judge_usage,
    collect_judge_usage,
    current_usage_collector,
)
from evaltrace.results.model import EntryResult
from evaltrace.results.usage import UsageTally


def test_models_made_without_validation_share_one_set_of_fields_per_kind() -> None:
    first = checked_model(NamedData, {"name": "answer", "value": 4})
    second = checked_model(NamedData, {"name": "question", "value": "2+2?"})

    assert first.model_fields_set is second.model_fields_set
    assert first.model_fields_set == NamedData(name="answer", value=4).model_fields_set


def test_copying_a_model_made_without_validation_leaves_the_others_fields_set_alone() -> None:
    first = checked_model(Evaluation, {"score": 1.0, "evaluator": "exact"})
    second = checked_model(Evaluation, {"score": 0.0, "evaluator": "exact"})

    copied = first.model_copy(update={"reasoning": "why"})

    assert copied.model_fields_set == {"score", "evaluator", "reasoning"}
    assert first.model_fields_set == second.model_fields_set == {"score", "evaluator"}
    assert second.model_dump(exclude_unset=True) == {"score": 0.0, "evaluator": "exact"}


def test_entries_and_evaluations_made_without_validation_share_the_same_sets() -> None:
    async def check(evaluable: Evaluable) -> bool:
        return True

    made = anyio.run(evaluate, check, Evaluable())
    general = checked_model(Evaluation, {"score": 0.5, "evaluator": "other"})
    first = EntryResult.from_checked(index=0, name="0", evaluations=[made])
    second = EntryResult.from_checked(index=1, name="1", evaluations=[general])

    assert made.model_fields_set is general.model_fields_set
    assert first.model_fields_set is second.model_fields_set
    assert first.model_fields_set == {"index", "name", "evaluations"}


def test_a_usage_tally_adds_up_each_model_as_adding_the_usages_does() -> None:
    entries = [
        ({"a": ModelUsage(calls=1, input_tokens=10, output_tokens=2)}, {}),
        (
            {"b": ModelUsage(calls=2, calls_without_tokens=2)},
            {"j": JudgeUsage(requests=1, input_tokens=5, cache_misses=1)},
        ),
        (
            {"a": ModelUsage(calls=1, cached_tokens=4, input_tokens=8)},
            {"j": JudgeUsage(cache_hits=1, saved_input_tokens=5), "k": JudgeUsage(requests=1)},
        ),
    ]
    tally = UsageTally()
    usage: dict[str, ModelUsage] = {}
    judge_usage: dict[str, JudgeUsage] = {}
    for app, judges in entries:
        tally.add(app, judges, 0.5)
        usage = add_model_usage(usage, app)
        judge_usage = add_judge_usage(judge_usage, judges)

    fields = tally.fields(None)

    assert fields["usage"] == usage and list(fields["usage"]) == ["a", "b"]
    assert fields["judge_usage"] == judge_usage
    assert tally.usage == usage and tally.judge_usage == judge_usage


def test_a_usage_tally_of_no_model_call_has_empty_totals() -> None:
    tally = UsageTally()
    tally.add({}, {}, 0.0)

    assert tally.usage == {} and tally.judge_usage == {}
    assert tally.fields(None)["latency"] is None


def test_nested_judge_usage_blocks_count_apart_and_restore_the_outer_one() -> None:
    with collect_judge_usage() as outer:
        outer.sent("m", input_tokens=3, output_tokens=1, cached_tokens=0, missed=False)
        with collect_judge_usage() as inner:
            assert current_usage_collector() is inner
            inner.hit("m", input_tokens=3, output_tokens=1)
        assert current_usage_collector() is outer

    assert current_usage_collector() is None
    assert outer.usage() == {"m": JudgeUsage(requests=1, input_tokens=3, output_tokens=1)}
    assert inner.usage() == {
        "m": JudgeUsage(cache_hits=1, saved_input_tokens=3, saved_output_tokens=1)
    }


def test_a_judge_usage_block_counts_the_calls_of_a_worker_thread_it_starts() -> None:
    def judge() -> None:
        collector = current_usage_collector()
        assert collector is not None
        collector.sent("m", input_tokens=1, output_tokens=1, cached_tokens=0, missed=True)

    with collect_judge_usage() as collector:
        anyio.run(anyio.to_thread.run_sync, judge)  # the context copied, as the engine does

    assert collector.usage() == {
        "m": JudgeUsage(requests=1, input_tokens=1, output_tokens=1, cache_misses=1)
    }


def test_a_judge_usage_block_of_no_judge_call_gathers_nothing() -> None:
    with collect_judge_usage() as collector:
        pass

    assert collector.usage() == {}


@pytest.mark.anyio
async def test_a_scored_entry_status_and_its_saved_status_agree() -> None:
    async def half(evaluable: Evaluable) -> float:
        return 0.5

    async def full(evaluable: Evaluable) -> bool:
        return True

    rows = await evaluate_inputs(lambda x: x, [1, 2], [half, full], threshold=0.6)

    for row in rows:
        assert row.entry.status.value == "FAILED_PARTIAL_SCORE"
        assert row.entry == row.entry.model_validate_json(row.entry.model_dump_json())


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (True, {"score": 1.0}),
        (False, {"score": 0.0}),
        (0.25, {"score": 0.25}),
        (1, {"score": 1.0}),
        ("positive", {"label": "positive"}),
    ],
)
def test_a_plain_result_gives_the_evaluation_validation_would_make(
    returned: object, expected: dict[str, object]
) -> None:
    async def check(evaluable: Evaluable) -> object:
        return returned

    made = anyio.run(evaluate, check, Evaluable())
    validated = Evaluation(**expected, evaluator="check")  # type: ignore[arg-type]

    assert made == validated and repr(made) == repr(validated)
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_dump_json() == validated.model_dump_json()
    assert type(made.score) is type(validated.score)


@pytest.mark.parametrize("returned", [float("nan"), float("inf"), 1.5, -0.1])
def test_a_score_out_of_range_is_still_an_errored_evaluation(returned: float) -> None:
    async def check(evaluable: Evaluable) -> float:
        return returned

    made = anyio.run(evaluate, check, Evaluable())

    assert made.error is not None and made.error.type == "InvalidEvaluatorResultError"


@pytest.mark.parametrize("kind", [ModelUsage, JudgeUsage])
def test_adding_two_usages_adds_each_field_and_keeps_the_kind(
    kind: type[ModelUsage] | type[JudgeUsage],
) -> None:
    names = list(kind.model_fields)
    one = kind(**{name: position + 1 for position, name in enumerate(names)})
    other = kind(**{name: 10 * (position + 1) for position, name in enumerate(names)})

    summed = one + other

    assert type(summed) is kind
    assert summed == kind(**{name: 11 * (position + 1) for position, name in enumerate(names)})
    assert kind.from_counts(summed.counts()) == summed
