"""Evaluators, and running one of them on one entry with failures reported as data.

An evaluator is any sync or async callable. It takes one of two shapes, told apart once per
evaluator (when a run prepares it), never per call:

- it takes an :class:`~evaltrace.evals.context.EvaluatorContext`, the documented way: a
  subclass of :class:`Evaluator` (its ``evaluate(ctx)``), or a function whose first parameter
  is annotated ``EvaluatorContext``;
- or it takes the :class:`Evaluable` itself, ``(evaluable, *, trace=None)``, receiving
  ``trace`` only if it accepts that keyword.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

import anyio

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_timeout
from evaltrace.concurrency import (
    StrayCancellationError,
    is_async_callable,
    is_stray_cancellation,
    pending,
    run_in_worker_thread,
)
from evaltrace.errors import (
    EvaluatorSignatureError,
    EvaluatorTimeoutError,
    InvalidEvaluatorResultError,
)
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.evaluable import Evaluable, checked_model, fields_given, model_of_state
from evaltrace.evals.evaluation import Evaluation
from evaltrace.trace.tree import ObservationNode

__all__ = [
    "Evaluator",
    "EvaluatorFunction",
    "EvaluatorOutput",
    "PreparedEvaluator",
    "evaluate",
    "evaluate_prepared",
    "evaluator_name",
    "prepare_evaluator",
]

EvaluatorOutput: TypeAlias = Evaluation | float | bool | str
"""What an evaluator returns: an :class:`Evaluation`, a score in ``[0, 1]``, a bool, or a
string (a label: see :attr:`Evaluation.label`)."""

EvaluatorFunction: TypeAlias = Callable[..., Any]
"""The loose type evaluators are accepted as: an :class:`Evaluator`, a function of an
:class:`EvaluatorContext`, or a callable ``(evaluable, *, trace=None)``."""


class Evaluator(ABC):
    """Base class of evaluators: implement ``evaluate(ctx)``, sync or ``async``.

    ``ctx`` is the :class:`EvaluatorContext` of the entry: the evaluable, the trace, the
    expectation and metadata, the entry's name and the run's attributes. Return an
    :class:`Evaluation`, a float in ``[0, 1]``, a bool, or a string (a label). A sync
    ``evaluate`` runs in a worker thread. The reports name the evaluator after its ``name``
    attribute when it has one, else after its class.

    A subclass is also a plain callable ``(evaluable, *, trace=None)``, so it fits wherever
    an evaluator function does.

    Plain callables stay evaluators without subclassing this class, so
    ``isinstance(obj, Evaluator)`` is true only for subclasses (it was a structural protocol
    matching any callable before); annotate a list of any evaluators as
    :data:`EvaluatorFunction`.

    Example:
        >>> class MentionsParis(Evaluator):
        ...     def evaluate(self, ctx: EvaluatorContext) -> bool:
        ...         return "Paris" in ctx.output("answer", "")
    """

    @abstractmethod
    def evaluate(self, ctx: EvaluatorContext) -> EvaluatorOutput | Awaitable[EvaluatorOutput]:
        """Score the entry described by ``ctx``."""

    def __call__(
        self, evaluable: Evaluable, /, *, trace: Sequence[ObservationNode] | None = None
    ) -> EvaluatorOutput | Awaitable[EvaluatorOutput]:
        """Score ``evaluable`` as a plain evaluator: ``evaluate`` with a context holding it."""
        return self.evaluate(EvaluatorContext(evaluable=evaluable, trace=trace))


def evaluator_name(evaluator: object) -> str:
    """The display name of an evaluator.

    Its ``name`` attribute when that is a non-empty string, else the function's name, else the
    class name of a callable object.
    """
    try:
        name = getattr(evaluator, "name", None)
        target = evaluator.func if isinstance(evaluator, functools.partial) else evaluator
        func_name = getattr(target, "__name__", None)
    except Exception:  # a hostile __getattr__: the type still names it
        return type_name(evaluator)
    if isinstance(name, str) and name:
        return name
    if isinstance(func_name, str) and func_name != "<lambda>":
        return func_name
    if func_name == "<lambda>":
        return "lambda"
    return type_name(evaluator)


class _Takes(enum.Enum):
    """What a plain callable evaluator is called with."""

    CONTEXT = "context"
    EVALUABLE_AND_TRACE = "evaluable and trace"
    EVALUABLE = "evaluable"


def _annotated_context(annotation: object, target: Callable[..., Any], parameter: str) -> bool:
    """Whether a first parameter's annotation names :class:`EvaluatorContext`."""
    if annotation is EvaluatorContext:
        return True
    if not isinstance(annotation, str):
        return False
    if annotation.rpartition(".")[2] == "EvaluatorContext":
        return True
    hinted = target.func if isinstance(target, functools.partial) else target
    if not inspect.isroutine(hinted):  # a callable object: its __call__ holds the hints
        hinted = type(hinted).__call__
    try:  # an alias such as `Ctx` under `from __future__ import annotations`
        hints = typing.get_type_hints(hinted)
    except Exception:  # a name the hints cannot resolve: not the context then
        return False
    return hints.get(parameter) is EvaluatorContext


@functools.lru_cache(maxsize=2048)
def _call_shape(target: Callable[..., Any]) -> tuple[_Takes, bool]:
    """What ``target`` takes, and whether it is a coroutine function."""
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        takes = _Takes.EVALUABLE
    else:
        first = params[0] if params else None
        if (
            first is not None
            and first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
            and _annotated_context(first.annotation, target, first.name)
        ):
            takes = _Takes.CONTEXT
        elif any(
            p.kind is p.VAR_KEYWORD
            or (p.name == "trace" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
            for p in params
        ):
            takes = _Takes.EVALUABLE_AND_TRACE
        else:
            takes = _Takes.EVALUABLE
        _check_parameters(target, params, takes)
    return takes, is_async_callable(target)


ACCEPTED_FORMS: Final = (
    "f(evaluable)",
    "f(evaluable, *, trace=None)",
    "f(ctx: EvaluatorContext)",
    "an Evaluator subclass with evaluate(self, ctx)",
)
"""The ways an evaluator can take what it scores (sync or async alike)."""


def _check_parameters(
    target: Callable[..., Any], params: Sequence[inspect.Parameter], takes: _Takes
) -> None:
    """Raise when ``target`` cannot be called the way its shape says it is.

    An evaluator such as ``def two_args(output, expected)`` would otherwise fail with a bare
    ``TypeError`` on every entry; it is refused once, when it is prepared.
    """
    required = [
        p.name
        for p in params[1:]
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and not (takes is _Takes.EVALUABLE_AND_TRACE and p.name == "trace")
    ]
    takes_one = bool(params) and (
        params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
        or params[0].kind is params[0].VAR_POSITIONAL
    )
    if takes_one and not required:
        return
    name = evaluator_name(target)
    if not takes_one:
        problem = "takes no positional parameter for what it scores"
    else:
        problem = (
            f"also requires {', '.join(repr(p) for p in required)}, which evaluators are not given"
        )
    raise EvaluatorSignatureError(
        f"evaluator {name}{_signature_text(target)} {problem}; an evaluator is called as "
        f"{' or '.join(ACCEPTED_FORMS)}: read the output and expectation from the evaluable "
        "(evaluable.eval_output, evaluable.expectation) instead of separate parameters"
    )


def _signature_text(target: Callable[..., Any]) -> str:
    """``target``'s parameters as written, without their annotations."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return ""
    bare = [
        parameter.replace(annotation=parameter.empty) for parameter in signature.parameters.values()
    ]
    return str(signature.replace(parameters=bare, return_annotation=signature.empty))


def _shape_of(evaluator: Callable[..., Any]) -> tuple[_Takes, bool]:
    try:
        return _call_shape(evaluator)
    except TypeError:  # an unhashable callable object: inspected each time it is prepared
        return _call_shape.__wrapped__(evaluator)


@dataclass(frozen=True, slots=True)
class PreparedEvaluator:
    """An evaluator with its shape worked out once: how to call it, and what it is called."""

    evaluator: EvaluatorFunction
    """The evaluator as given."""
    name: str
    """The display name its evaluations carry."""
    call: Callable[[EvaluatorContext], Any]
    """Calls the evaluator for one entry; gives its result, or an awaitable of it."""
    is_async: bool
    """Whether ``call`` gives a coroutine (else it runs in a worker thread)."""


def prepare_evaluator(evaluator: EvaluatorFunction, name: str | None = None) -> PreparedEvaluator:
    """Work out once how to call ``evaluator``, so that scoring an entry inspects nothing.

    Args:
        evaluator: An :class:`Evaluator`, a function of an :class:`EvaluatorContext`, or a
            callable ``(evaluable, *, trace=None)``; sync or async.
        name: The display name (derived from the evaluator when omitted).

    Returns:
        The prepared evaluator.

    Raises:
        TypeError: ``evaluator`` is not callable.
    """
    if not callable(evaluator):
        raise TypeError(
            f"an evaluator must be a callable, got {type_name(evaluator)} "
            f"{safe_repr(evaluator)[:80]}"
        )
    label = name or evaluator_name(evaluator)
    if isinstance(evaluator, Evaluator):
        method = evaluator.evaluate
        return PreparedEvaluator(evaluator, label, method, is_async_callable(method))
    takes, is_async = _shape_of(evaluator)
    call: Callable[[EvaluatorContext], Any]
    if takes is _Takes.CONTEXT:
        call = evaluator
    elif takes is _Takes.EVALUABLE_AND_TRACE:

        def call(ctx: EvaluatorContext) -> Any:
            return evaluator(ctx.evaluable, trace=ctx.trace)

    else:

        def call(ctx: EvaluatorContext) -> Any:
            return evaluator(ctx.evaluable)

    return PreparedEvaluator(evaluator, label, call, is_async)


_BUILTIN_SCORES: Final = frozenset({bool, int, float, str})
"""Result types checked by exact type first: cheaper than ``isinstance`` on a model class."""

_NO_TIMEOUT: Final = contextlib.nullcontext()


def _is_pending(result: object) -> bool:
    """Whether ``result`` is an awaitable still to await (a sync call may return one)."""
    if type(result) in _BUILTIN_SCORES or isinstance(result, Evaluation):
        return False
    return inspect.isawaitable(result)


_SCORED: Final = fields_given(Evaluation, ("score", "evaluator"))
_LABELLED: Final = fields_given(Evaluation, ("label", "evaluator"))
_DEFAULTS: Final = {
    name: None if info.is_required() or info.default_factory is not None else info.default
    for name, info in Evaluation.model_fields.items()
}
_ONLY_DETAILS_MADE: Final = [
    (name, info.default_factory)
    for name, info in Evaluation.model_fields.items()
    if info.default_factory is not None
] == [("details", dict)]


def _checked(field: str, value: object, name: str) -> Evaluation:
    """A score or a label checked here, as ``Evaluation(<field>=value, evaluator=name)``.

    Made as :func:`~evaltrace.evals.evaluable.checked_model` makes it, without its general
    steps (the defaults and factories looked up, the set of fields given found): a third of
    the cost of ``checked_model``, which was a tenth of an entry's CPU in a run
    (bench_runner.py's c=50 figure, bench/README.md).
    """
    if not _ONLY_DETAILS_MADE:  # a field with a factory was added: the general way
        return checked_model(Evaluation, {field: value, "evaluator": name})
    values = _DEFAULTS.copy()  # the fields in their order
    values[field] = value
    values["evaluator"] = name
    values["details"] = {}
    return model_of_state(Evaluation, values, _SCORED if field == "score" else _LABELLED)


def _coerce(result: object, name: str) -> Evaluation:
    kind = type(result)
    if kind is bool:  # the usual results, told by their exact type at once
        return _checked("score", 1.0 if result else 0.0, name)
    if kind is float and 0.0 <= cast(float, result) <= 1.0:  # NaN and inf fail the comparison
        return _checked("score", result, name)
    if kind not in _BUILTIN_SCORES:  # subclasses too: np.float64 is a float
        if isinstance(result, Evaluation):
            # Filed under the evaluator that was called, even when it returns what an inner
            # evaluator gave it: the report's column is the outer one.
            return (
                result
                if result.evaluator == name
                else result.model_copy(update={"evaluator": name})
            )
        item = getattr(result, "item", None)
        if callable(item) and hasattr(result, "dtype"):  # a numpy scalar: np.bool_, np.float32...
            result = item()
    # Scores and labels checked here are not validated again: building the evaluation was a
    # tenth of an entry's CPU in a run (bench_runner.py's c=50 figure, bench/README.md).
    if isinstance(result, bool):
        return _checked("score", 1.0 if result else 0.0, name)
    if isinstance(result, str):
        if result and type(result) is str:
            return _checked("label", result, name)
        if result:
            return Evaluation(label=result, evaluator=name)
        raise InvalidEvaluatorResultError(
            f"evaluator {name!r} returned an empty string; a string result is a label, "
            "such as 'positive'"
        )
    if isinstance(result, (int, float)):  # a tuple: no union object made per call
        score = float(result)
        if math.isfinite(score) and 0.0 <= score <= 1.0:
            return _checked("score", score, name)
        raise InvalidEvaluatorResultError(
            f"evaluator {name!r} returned the score {safe_repr(result)}; "
            "a score must be a finite number between 0 and 1"
        )
    raise InvalidEvaluatorResultError(
        f"evaluator {name!r} returned {type_name(result)} {safe_repr(result)[:80]}; "
        "return an Evaluation, a float between 0 and 1, a bool, or a string (a label)"
    )


async def evaluate_prepared(
    prepared: PreparedEvaluator, ctx: EvaluatorContext, timeout: float | None = None
) -> Evaluation:
    """Run a prepared evaluator on one entry; never raises for the evaluator's failures.

    The work of :func:`evaluate`, for callers that prepared the evaluator and checked the
    timeout once (the runner).
    """
    label = prepared.name
    try:
        if timeout is None and prepared.is_async:
            # No cancel scope, no thread: the runner's usual evaluator (bench_runner.py's
            # c=50 figure, bench/README.md).
            result = await prepared.call(ctx)
            if _is_pending(result):
                result = await result
            return _coerce(result, label)
        with _NO_TIMEOUT if timeout is None else anyio.fail_after(timeout):
            if prepared.is_async:
                result = await prepared.call(ctx)
            else:
                result = await run_in_worker_thread(functools.partial(prepared.call, ctx))
            if _is_pending(result):
                result = await result
        return _coerce(result, label)
    except TimeoutError as exc:
        if isinstance(exc, EvaluatorTimeoutError) or timeout is None:
            return Evaluation.errored(exc, where="evaluator", evaluator=label)
        timed_out = EvaluatorTimeoutError(
            f"evaluator {label!r} did not finish within {timeout:g} s"
        )
        return Evaluation.errored(timed_out, where="evaluator", evaluator=label)
    except Exception as exc:  # the evaluator's failure is reported as data
        return Evaluation.errored(exc, where="evaluator", evaluator=label)
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        stray = StrayCancellationError(f"evaluator {label!r}")
        stray.__cause__ = exc
        return Evaluation.errored(stray, where="evaluator", evaluator=label)


@pending("evaltrace.evaluate")
async def evaluate(
    evaluator: EvaluatorFunction,
    evaluable: Evaluable | EvaluatorContext,
    *,
    trace: Sequence[ObservationNode] | None = None,
    timeout: float | None = None,
    name: str | None = None,
) -> Evaluation:
    """Run one evaluator on one evaluable; never raises for the evaluator's failures.

    Sync evaluators run in a worker thread with the caller's context copied (a daemon thread
    on asyncio, so one abandoned after its timeout never delays interpreter exit). An
    exception, a timeout, or a result that is not a valid score becomes an errored
    :class:`Evaluation` (``score=None``) saying what went wrong; so does a ``CancelledError``
    raised while the caller is not being cancelled. A real cancellation of the caller
    propagates.

    Args:
        evaluator: An :class:`Evaluator`, a function of an :class:`EvaluatorContext`, or a
            callable ``(evaluable, *, trace=None)``; sync or async.
        evaluable: What to score, or a whole :class:`EvaluatorContext` (an evaluator that
            runs others hands its own context on this way).
        trace: The captured trace tree; passed only to evaluators that accept ``trace`` or
            take the context. Give it inside the context when ``evaluable`` is one.
        timeout: Seconds after which the evaluation is errored with a timeout.
        name: The display name to report (derived from the evaluator when omitted).

    Returns:
        The evaluation, named after the evaluator.

    Raises:
        TypeError: ``evaluator`` is not callable, ``evaluable`` is neither an
            :class:`Evaluable` nor an :class:`EvaluatorContext`, or ``trace`` is given
            beside a context.
        ValueError: ``timeout`` is not a positive number.

    Example:
        >>> import anyio
        >>> anyio.run(evaluate, lambda e: 0.5, Evaluable()).score
        0.5
    """
    if not callable(evaluator):
        raise TypeError(
            f"evaluate(evaluator, evaluable): evaluator must be a callable, got "
            f"{type_name(evaluator)} {safe_repr(evaluator)[:80]}"
        )
    if isinstance(evaluable, EvaluatorContext):
        if trace is not None:
            raise TypeError(
                "evaluate(evaluator, ctx, trace=...): the context carries its own trace; "
                "give trace= only with an Evaluable, or build the context with trace=..."
            )
        ctx = evaluable
    elif isinstance(evaluable, Evaluable):
        ctx = EvaluatorContext(evaluable=evaluable, trace=trace)
    else:
        raise TypeError(
            f"evaluate(evaluator, evaluable): evaluable must be an evaltrace.Evaluable, got "
            f"{type_name(evaluable)} {safe_repr(evaluable)[:80]}; build one with "
            "Evaluable(eval_output=[NamedData(name='output', value=...)], expectation=...)"
        )
    check_timeout(timeout)
    return await evaluate_prepared(prepare_evaluator(evaluator, name), ctx, timeout)
