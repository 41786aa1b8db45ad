"""Running one evaluator on one evaluable, with failures reported as data."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias, runtime_checkable

import anyio

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_timeout
from evaltrace.errors import EvaluatorTimeoutError, InvalidEvaluatorResultError
from evaltrace.evals.cancellation import StrayCancellationError, is_stray_cancellation
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.worker_threads import run_in_worker_thread

__all__ = ["Evaluator", "EvaluatorFunction", "evaluate", "evaluator_name"]


@runtime_checkable
class Evaluator(Protocol):
    """Anything that scores an :class:`Evaluable`.

    A plain function works as well as an object with ``__call__``; it may be sync or async,
    may accept a ``trace`` keyword (it receives the captured trace tree only if it does), and
    may return an :class:`Evaluation`, a float in ``[0, 1]`` or a bool.

    Example:
        >>> def has_answer(evaluable: Evaluable) -> bool:
        ...     return evaluable.output_value() is not None
    """

    def __call__(self, evaluable: Evaluable, /) -> Any:
        """Score ``evaluable``."""


EvaluatorFunction: TypeAlias = Callable[..., Any]
"""The loose type evaluators are accepted as: any callable following :class:`Evaluator`."""


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


@functools.lru_cache(maxsize=2048)
def _call_shape(target: Callable[..., Any]) -> tuple[bool, bool]:
    """Whether ``target`` accepts a ``trace`` keyword, and whether it is a coroutine function."""
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        accepts_trace = False
    else:
        accepts_trace = any(
            p.kind is p.VAR_KEYWORD
            or (p.name == "trace" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
            for p in params
        )
    return accepts_trace, is_async_callable(target)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (functions, partials and callable objects)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn):
        return inspect.iscoroutinefunction(fn)
    return inspect.iscoroutinefunction(type(fn).__call__)


def _shape_of(evaluator: Callable[..., Any]) -> tuple[bool, bool]:
    try:
        return _call_shape(evaluator)
    except TypeError:  # unhashable callable object: inspect it every time
        return _call_shape.__wrapped__(evaluator)


async def _invoke(evaluator: Callable[..., Any], evaluable: Evaluable, trace: Any) -> Any:
    accepts_trace, is_async = _shape_of(evaluator)
    kwargs = {"trace": trace} if accepts_trace else {}
    if is_async:
        result = await evaluator(evaluable, **kwargs)
    else:
        result = await run_in_worker_thread(functools.partial(evaluator, evaluable, **kwargs))
    if inspect.isawaitable(result):
        result = await result
    return result


def _coerce(result: object, name: str) -> Evaluation:
    if isinstance(result, Evaluation):
        return result.with_evaluator(name)
    item = getattr(result, "item", None)
    if callable(item) and hasattr(result, "dtype"):  # a numpy scalar: np.bool_, np.float32...
        result = item()
    if isinstance(result, bool):
        return Evaluation(score=1.0 if result else 0.0, evaluator=name)
    if isinstance(result, int | float):
        score = float(result)
        if math.isfinite(score) and 0.0 <= score <= 1.0:
            return Evaluation(score=score, evaluator=name)
        raise InvalidEvaluatorResultError(
            f"evaluator {name!r} returned the score {safe_repr(result)}; "
            "a score must be a finite number between 0 and 1"
        )
    raise InvalidEvaluatorResultError(
        f"evaluator {name!r} returned {type_name(result)} {safe_repr(result)[:80]}; "
        "return an Evaluation, a float between 0 and 1, or a bool"
    )


async def evaluate(
    evaluator: EvaluatorFunction,
    evaluable: Evaluable,
    *,
    trace: Any = None,
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
        evaluator: A sync or async evaluator callable.
        evaluable: What to score.
        trace: The captured trace tree; passed only to evaluators that accept ``trace``.
        timeout: Seconds after which the evaluation is errored with a timeout.
        name: The display name to report (derived from the evaluator when omitted).

    Returns:
        The evaluation, named after the evaluator.

    Raises:
        TypeError: ``evaluator`` is not callable, or ``evaluable`` is not an
            :class:`Evaluable`.
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
    if not isinstance(evaluable, Evaluable):
        raise TypeError(
            f"evaluate(evaluator, evaluable): evaluable must be an evaltrace.Evaluable, got "
            f"{type_name(evaluable)} {safe_repr(evaluable)[:80]}; build one with "
            "Evaluable(eval_output=[NamedData(name='output', value=...)], expectation=...)"
        )
    label = name or evaluator_name(evaluator)
    check_timeout(timeout)
    try:
        if timeout is None:
            result = await _invoke(evaluator, evaluable, trace)
        else:
            with anyio.fail_after(timeout):
                result = await _invoke(evaluator, evaluable, trace)
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
