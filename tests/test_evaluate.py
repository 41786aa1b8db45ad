"""evaluate(): every kind of evaluator, and every way one can fail, gives a defined result."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from evaltrace import (
    Evaluable,
    Evaluation,
    Evaluator,
    EvaluatorContext,
    NamedData,
    evaluate,
    evaluate_inputs,
)
from evaltrace.evals import evaluator_name

CASE = Evaluable(
    eval_input=[NamedData(name="question", value="2+2?")],
    eval_output=[NamedData(name="answer", value="4")],
)


def sync_exact(evaluable: Evaluable) -> Evaluation:
    return Evaluation(score=1.0 if evaluable.output_value("answer") == "4" else 0.0, reasoning="ok")


async def async_exact(evaluable: Evaluable) -> float:
    await anyio.sleep(0)
    return 1.0


def with_trace(evaluable: Evaluable, *, trace: Any = None) -> float:
    return 1.0 if trace == ["the trace"] else 0.0


class CallableObject:
    name = "custom-name"

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> bool:
        return trace is None


@pytest.mark.anyio
async def test_sync_evaluator_returning_evaluation_gets_its_name() -> None:
    result = await evaluate(sync_exact, CASE)
    assert (result.score, result.reasoning, result.evaluator) == (1.0, "ok", "sync_exact")


@pytest.mark.anyio
async def test_async_evaluator_returning_float_is_wrapped() -> None:
    result = await evaluate(async_exact, CASE)
    assert result.status == "scored" and result.score == 1.0


@pytest.mark.anyio
async def test_trace_is_passed_only_to_evaluators_that_accept_it() -> None:
    assert (await evaluate(with_trace, CASE, trace=["the trace"])).score == 1.0
    assert (await evaluate(sync_exact, CASE, trace=["the trace"])).score == 1.0
    result = await evaluate(CallableObject(), CASE)
    assert (result.score, result.evaluator) == (1.0, "custom-name")


@pytest.mark.anyio
async def test_bool_results_become_one_and_zero() -> None:
    assert (await evaluate(lambda e: True, CASE)).score == 1.0
    assert (await evaluate(lambda e: False, CASE)).score == 0.0


@pytest.mark.anyio
async def test_raising_evaluator_is_an_errored_evaluation_not_a_zero() -> None:
    def broken(evaluable: Evaluable) -> float:
        raise KeyError("missing field")

    result = await evaluate(broken, CASE)
    assert result.status == "errored" and result.score is None
    assert result.error is not None
    assert (result.error.type, result.error.where) == ("KeyError", "evaluator")
    assert "missing field" in result.error.message
    assert not result.passed(0.0)


@pytest.mark.parametrize(
    ("returned", "fragment"),
    [
        (float("nan"), "returned the score nan"),
        (1.5, "returned the score 1.5"),
        (-0.1, "returned the score -0.1"),
        ("", "returned an empty string"),
        (b"great", "returned bytes b'great'"),
        (None, "returned NoneType None"),
    ],
)
@pytest.mark.anyio
async def test_invalid_results_are_errored_with_a_clear_message(
    returned: object, fragment: str
) -> None:
    result = await evaluate(lambda e: returned, CASE, name="judge")
    assert result.error is not None
    assert result.error.type == "InvalidEvaluatorResultError"
    assert fragment in result.error.message
    assert "'judge'" in result.error.message


@pytest.mark.anyio
async def test_async_evaluator_hanging_past_timeout_is_errored() -> None:
    async def hangs(evaluable: Evaluable) -> float:
        await anyio.sleep(30)
        return 1.0

    started = time.perf_counter()
    result = await evaluate(hangs, CASE, timeout=0.05)
    assert time.perf_counter() - started < 5
    assert result.error is not None and result.error.type == "EvaluatorTimeoutError"
    assert "did not finish within 0.05 s" in result.error.message


@pytest.mark.anyio
async def test_sync_evaluator_hanging_past_timeout_is_errored_without_waiting() -> None:
    import threading

    release, finished = threading.Event(), threading.Event()

    def hangs(evaluable: Evaluable) -> float:
        release.wait(10)
        finished.set()
        return 1.0

    result = await evaluate(hangs, CASE, timeout=0.05)
    assert not finished.is_set()  # evaluate returned while the evaluator was still blocked
    assert result.error is not None and result.error.type == "EvaluatorTimeoutError"
    release.set()


@pytest.mark.anyio
async def test_sync_evaluators_run_in_a_worker_thread_with_context() -> None:
    import contextvars
    import threading

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    marker.set("from caller")
    seen: dict[str, object] = {}

    def probe(evaluable: Evaluable) -> float:
        seen["thread"] = threading.current_thread() is threading.main_thread()
        seen["marker"] = marker.get()
        return 1.0

    await evaluate(probe, CASE)
    assert seen == {"thread": False, "marker": "from caller"}


@pytest.mark.anyio
async def test_invalid_timeout_is_rejected() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        await evaluate(sync_exact, CASE, timeout=0)


def test_evaluator_names_are_derived_from_name_function_or_class() -> None:
    import functools

    assert evaluator_name(sync_exact) == "sync_exact"
    assert evaluator_name(CallableObject()) == "custom-name"
    assert evaluator_name(functools.partial(with_trace)) == "with_trace"
    assert evaluator_name(lambda e: 1.0) == "lambda"

    class Judge:
        def __call__(self, evaluable: Evaluable) -> float:
            return 1.0

    assert evaluator_name(Judge()) == "Judge"


def test_evaluation_rejects_scores_out_of_range_at_construction() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=r"score must be in \[0, 1\]"):
        Evaluation(score=1.5)
    with pytest.raises(ValidationError, match="errored or skipped Evaluation must have score=None"):
        Evaluation(score=0.5, skipped=True)
    assert Evaluation.skip("no reference").status == "skipped"


def test_evaluable_round_trips_through_json_keeping_unset_distinct_from_none() -> None:
    from evaltrace import UNSET

    unset = Evaluable(eval_input=[NamedData(name="q", value=[1, {"a": None}])])
    none = Evaluable(expectation=None, eval_output=[])
    assert Evaluable.model_validate_json(unset.model_dump_json()).expectation is UNSET
    assert Evaluable.model_validate_json(none.model_dump_json()).expectation is None
    assert Evaluable.model_validate_json(unset.model_dump_json()) == unset
    assert none.expected_output is None and unset.expected_output is UNSET


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "score"),
    [
        (lambda np: np.bool_(True), 1.0),
        (lambda np: np.bool_(False), 0.0),
        (lambda np: np.float32(0.25), 0.25),
        (lambda np: np.float64(0.75), 0.75),
        (lambda np: np.int64(1), 1.0),
    ],
    ids=["bool_true", "bool_false", "float32", "float64", "int64"],
)
async def test_numpy_results_are_scores(make: Any, score: float) -> None:
    np = pytest.importorskip("numpy")
    result = await evaluate(lambda e: make(np), CASE)
    assert (result.status, result.score) == ("scored", score)


@pytest.mark.anyio
async def test_a_numpy_score_out_of_range_is_errored() -> None:
    np = pytest.importorskip("numpy")
    result = await evaluate(lambda e: np.float64(1.5), CASE)
    assert result.error is not None and "returned the score 1.5" in result.error.message


@pytest.mark.anyio
async def test_evaluate_refuses_an_evaluable_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match=r"evaluable must be an evaltrace\.Evaluable, got str 'x'"):
        await evaluate(sync_exact, "x")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_evaluate_refuses_an_evaluator_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="evaluator must be a callable, got str"):
        await evaluate("ExactMatch", CASE)


@pytest.mark.anyio
async def test_a_result_whose_repr_raises_is_errored_with_a_safe_message() -> None:
    class NoRepr:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    result = await evaluate(lambda e: NoRepr(), CASE)
    assert result.error is not None
    assert "returned NoRepr <unprintable NoRepr>" in result.error.message


def test_an_evaluation_error_from_an_unprintable_exception_is_safe() -> None:
    from evaltrace.evals import EvaluationError

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    error = EvaluationError.from_exception(Unprintable(), where="evaluator")
    assert (error.type, error.message) == ("Unprintable", "<unprintable Unprintable>")


def test_evaluable_values_accept_objects_by_encoding_them() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Document:  # the shape of a Haystack 2 Document: a dataclass
        content: str
        meta: dict[str, Any] = dataclasses.field(default_factory=dict)
        score: float | None = None
        embedding: list[float] | None = None

    paris = Document("Paris", {"rank": 1}, score=0.9)
    case = Evaluable(
        eval_input=[NamedData(name="query", value=("capital", "France"))],
        eval_output=[NamedData(name="documents", value=[paris])],
        expectation=Document("Paris"),
        eval_metadata={"retrieved": Document("Lyon")},
    )
    assert case.input_value() == ["capital", "France"]
    assert case.output_value() == [
        {"content": "Paris", "meta": {"rank": 1}, "score": 0.9, "embedding": None}
    ]
    assert case.expectation == {"content": "Paris", "meta": {}, "score": None, "embedding": None}
    assert case.eval_metadata is not None
    assert case.eval_metadata["retrieved"] == {
        "content": "Lyon",
        "meta": {},
        "score": None,
        "embedding": None,
    }
    assert Evaluable.model_validate_json(case.model_dump_json()) == case


def test_evaluable_json_values_are_kept_as_they_are() -> None:
    value = {"api_key": "kept", "items": [1, 2.5, None, True]}
    case = Evaluable(expectation=value, eval_output=[NamedData(name="v", value=value)])
    assert case.expectation == value and case.output_value() == value


class MatchesExpectation(Evaluator):
    """A class-based evaluator reading everything from its context."""

    def __init__(self) -> None:
        self.seen: list[EvaluatorContext] = []

    def evaluate(self, ctx: EvaluatorContext) -> bool:
        self.seen.append(ctx)
        return bool(ctx.output("answer") == ctx.expectation)


EXPECTING_4 = Evaluable(
    eval_input=[NamedData(name="question", value="2+2?")],
    eval_output=[NamedData(name="answer", value="4")],
    expectation="4",
    eval_metadata={"topic": "arithmetic"},
)


@pytest.mark.anyio
async def test_a_subclass_of_evaluator_is_given_the_context() -> None:
    judge = MatchesExpectation()
    result = await evaluate(judge, EXPECTING_4, trace=["the trace"])  # type: ignore[list-item]
    assert (result.score, result.evaluator) == (1.0, "MatchesExpectation")
    (ctx,) = judge.seen
    assert ctx.evaluable is EXPECTING_4 and ctx.trace == ["the trace"]


@pytest.mark.anyio
async def test_an_async_subclass_of_evaluator_is_awaited_in_the_event_loop() -> None:
    import threading

    class Async(Evaluator):
        name = "async-judge"

        async def evaluate(self, ctx: EvaluatorContext) -> float:
            await anyio.sleep(0)
            return 1.0 if threading.current_thread() is threading.main_thread() else 0.0

    result = await evaluate(Async(), EXPECTING_4)
    assert (result.score, result.evaluator) == (1.0, "async-judge")


@pytest.mark.anyio
async def test_a_sync_subclass_of_evaluator_runs_in_a_worker_thread() -> None:
    import threading

    class Sync(Evaluator):
        def evaluate(self, ctx: EvaluatorContext) -> bool:
            return threading.current_thread() is not threading.main_thread()

    assert (await evaluate(Sync(), EXPECTING_4)).score == 1.0


def test_a_subclass_of_evaluator_is_also_a_plain_evaluator_callable() -> None:
    judge = MatchesExpectation()
    assert judge(EXPECTING_4) is True
    assert judge(EXPECTING_4, trace=[]) is True
    assert judge.seen[1].trace == []


def test_an_evaluator_subclass_must_implement_evaluate() -> None:
    class Unfinished(Evaluator):
        pass

    with pytest.raises(TypeError, match=r"abstract method '?evaluate"):
        Unfinished()  # type: ignore[abstract]


def test_plain_callables_are_evaluators_without_being_evaluator_instances() -> None:
    assert isinstance(MatchesExpectation(), Evaluator)
    assert not isinstance(sync_exact, Evaluator)


def takes_the_context(ctx: EvaluatorContext) -> bool:
    return bool(ctx.input("question") == "2+2?" and ctx.metadata["topic"] == "arithmetic")


async def takes_the_context_async(ctx: EvaluatorContext, *, strict: bool = True) -> bool:
    return bool(ctx.has_expectation and ctx.output() == "4")


def takes_the_context_unannotated_string(ctx):  # type: ignore[no-untyped-def]
    return ctx.output("answer") == "4"


takes_the_context_unannotated_string.__annotations__["ctx"] = EvaluatorContext


@pytest.mark.parametrize(
    "function",
    [takes_the_context, takes_the_context_async, takes_the_context_unannotated_string],
    ids=["string annotation", "async", "class annotation"],
)
@pytest.mark.anyio
async def test_a_function_annotated_with_the_context_is_given_the_context(function: Any) -> None:
    result = await evaluate(function, EXPECTING_4)
    assert (result.status, result.score) == ("scored", 1.0)


@pytest.mark.anyio
async def test_a_context_annotation_under_an_alias_is_recognised() -> None:
    namespace: dict[str, Any] = {}
    exec(
        "from __future__ import annotations\n"
        "from evaltrace import EvaluatorContext as Ctx\n"
        "def judge(ctx: Ctx) -> bool:\n"
        "    return ctx.output('answer') == '4'\n"
        "class Judge:\n"
        "    async def __call__(self, ctx: Ctx) -> bool:\n"
        "        return ctx.output('answer') == '4'\n",
        namespace,
    )
    assert (await evaluate(namespace["judge"], EXPECTING_4)).score == 1.0
    assert (await evaluate(namespace["Judge"](), EXPECTING_4)).score == 1.0


@pytest.mark.anyio
async def test_evaluate_hands_a_whole_context_on() -> None:
    judge = MatchesExpectation()
    ctx = EvaluatorContext(evaluable=EXPECTING_4, entry_name="sum", run_id="r1")
    assert (await evaluate(judge, ctx)).score == 1.0
    assert judge.seen == [ctx]
    assert (
        await evaluate(with_trace, EvaluatorContext(evaluable=CASE, trace=["the trace"]))
    ).score == 1.0  # type: ignore[list-item]
    with pytest.raises(TypeError, match="the context carries its own trace"):
        await evaluate(judge, ctx, trace=[])


def test_the_context_reads_the_evaluable() -> None:
    from evaltrace import UNSET

    ctx = EvaluatorContext(evaluable=EXPECTING_4)
    assert (ctx.input(), ctx.input("question"), ctx.input("missing", "-")) == ("2+2?", "2+2?", "-")
    assert (ctx.output(), ctx.output("answer"), ctx.output("missing")) == ("4", "4", None)
    assert (ctx.expectation, ctx.has_expectation) == ("4", True)
    assert dict(ctx.metadata) == {"topic": "arithmetic"}
    bare = EvaluatorContext(evaluable=Evaluable())
    assert (bare.expectation, bare.has_expectation, dict(bare.metadata)) == (UNSET, False, {})
    assert (bare.trace, bare.entry_name, bare.entry_index, bare.run_id) == (None,) * 4
    assert (dict(bare.attributes), bare.duration_s) == ({}, None)


def test_the_context_is_frozen() -> None:
    import dataclasses

    ctx = EvaluatorContext(evaluable=EXPECTING_4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.entry_name = "changed"  # type: ignore[misc]


def test_the_context_is_exported_from_the_root_and_evals() -> None:
    import evaltrace
    import evaltrace.evals

    assert evaltrace.EvaluatorContext is evaltrace.evals.EvaluatorContext is EvaluatorContext
    assert "EvaluatorContext" in evaltrace.__all__ and "EvaluatorContext" in evaltrace.evals.__all__


@pytest.mark.anyio
async def test_an_evaluator_that_returns_an_inner_evaluation_is_filed_under_its_own_name() -> None:
    def inner(evaluable: Evaluable) -> float:
        return 1.0

    async def outer(evaluable: Evaluable) -> Evaluation:
        return await evaluate(inner, evaluable)

    (item,) = await evaluate_inputs(str.upper, ["a"], [outer])
    assert [e.evaluator for e in item.evaluations] == ["outer"]
