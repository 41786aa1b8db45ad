"""Running an app over plain inputs: :func:`evaluate_inputs`, :func:`run_and_evaluate`.

Both are adapters over the one run (:func:`~evaltrace.engine.execute`): the inputs become a
source of entries, each run once under its own capture and scored by its evaluators, and the
rows come back live (with each run's capture) in input order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.concurrency import is_stray_cancellation, pending
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EPOCH_REDUCER,
    DEFAULT_EPOCHS,
    DEFAULT_THRESHOLD,
)
from evaltrace.engine.config import RunConfig
from evaltrace.engine.entries import Entry, EntrySource, EvaluatorPlans, Evaluators, SourceInfo
from evaltrace.engine.run import execute
from evaltrace.engine.runs import EntryPoint, RunOutcome
from evaltrace.engine.scoring import Scored
from evaltrace.evals.evaluable import UNSET, Evaluable, json_value
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import EvaluatorFunction
from evaltrace.evals.selectors import TraceSelector
from evaltrace.judges.strategies import BaseJudgeAggregator
from evaltrace.results.model import EntryResult, entry_status

__all__ = ["InputResult", "Inputs", "evaluate_inputs", "run_and_evaluate"]

logger = logging.getLogger("evaltrace")


class InputResult:
    """Everything about one input of :func:`assert_pass`: the run, what was scored, results."""

    __slots__ = ("_scored", "eval_input", "evaluable", "index", "run")

    def __init__(self, scored: Scored) -> None:
        entry = scored.entry
        assert entry is not None
        self._scored = scored
        self.index: int = entry.index
        """Position of the input."""
        self.eval_input: Any = entry.input
        """The input given to the runnable."""
        self.evaluable: Evaluable | None = scored.evaluable
        """What the evaluators scored (``None`` when it could not be built)."""
        self.run: RunOutcome | None = scored.run
        """The run, or ``None`` when the evaluable already carried its output."""

    @property
    def evaluations(self) -> list[Evaluation]:
        """One result per evaluator, in evaluator order."""
        return self._scored.evaluations

    @property
    def entry(self) -> EntryResult:
        """The input as saved data (built on first use; see :meth:`to_entry`)."""
        return self._scored.result

    def to_entry(self, *, name: str | None = None, threshold: float | None = None) -> EntryResult:
        """This input as saved data: no live capture, only what a report or a diff needs.

        Args:
            name: The entry's name (a dataset entry's ``name``); its position by default.
            threshold: The score an evaluation must reach to pass, for the status; the
                run's by default.
        """
        entry = self.entry
        updates: dict[str, Any] = {}
        if name is not None:
            updates["name"] = name
        if threshold is not None:
            updates["status"] = entry_status(entry.evaluations, entry.error, threshold=threshold)
        return entry.model_copy(update=updates) if updates else entry

    def __repr__(self) -> str:
        return f"InputResult(index={self.index}, evaluations={self.evaluations!r})"


class Inputs(EntrySource):
    """Plain inputs as a run's entries: each an argument, its evaluators, its test case."""

    def __init__(
        self,
        runnable: Callable[..., Any],
        items: Sequence[Any],
        evaluators: Sequence[Evaluators],
        *,
        cases: Sequence[Evaluable | None] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> None:
        self.runnable = EntryPoint.of(runnable)
        self._items = items
        self._evaluators = evaluators
        self._cases = cases
        self._names = names

    @property
    def name(self) -> str:
        """The runnable's name."""
        assert self.runnable is not None
        return self.runnable.name

    def __len__(self) -> int:
        return len(self._items)

    def info(self) -> SourceInfo:
        """The evaluators' names, in first-use order."""
        names = dict.fromkeys(name for plan in self._evaluators for name in plan.names)
        return SourceInfo(evaluators=list(names))

    def entries(self) -> Iterator[Entry]:
        """One entry per input, in order."""
        cases, names = self._cases, self._names
        for index, item in enumerate(self._items):
            case = cases[index] if cases is not None else None
            name = names[index] if names is not None else None
            if name is None and case is not None:
                name = case.description
            yield Entry(
                index=index,
                evaluators=self._evaluators[index],
                input=item,
                case=case,
                name=name,
            )


@pending("evaltrace.evaluate_inputs")
async def evaluate_inputs(
    runnable: Callable[..., Any],
    eval_inputs: Sequence[Any],
    evaluators: Sequence[EvaluatorFunction],
    *,
    evaluables: Sequence[Evaluable] | None = None,
    from_trace: TraceSelector | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    on_progress: Callable[[InputResult, int, int], object] | None = None,
    per_input_evaluators: Sequence[Sequence[EvaluatorFunction] | None] | None = None,
    entry_names: Sequence[str | None] | None = None,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    epochs: int = DEFAULT_EPOCHS,
    reducer: str | BaseJudgeAggregator = DEFAULT_EPOCH_REDUCER,
) -> list[InputResult]:
    """Run each input once and score it with every evaluator; never raises for failures.

    The same work as :func:`assert_pass` without the pass criteria: it returns, per input,
    the run (with its trace), what was scored, and one evaluation per evaluator.

    Args:
        runnable: The app entry point, sync or async, called with one input.
        eval_inputs: One argument per run.
        evaluators: Sync or async evaluators.
        evaluables: Optional test cases, one per input.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most inputs in flight at once.
        timeout: Seconds allowed for each run and for each evaluation.
        on_progress: Called as each input finishes, with its result, the number done and the
            total (in the event loop's thread; keep it quick). An exception it raises is
            logged, not propagated.
        per_input_evaluators: One list per input that replaces ``evaluators`` for that input
            (``None`` keeps ``evaluators``): dataset entries may each declare their own.
        entry_names: One name per input (or ``None``), given to evaluators as
            :attr:`EvaluatorContext.entry_name` and quoted in errors; by default the
            evaluable's ``description``.
        run_id: The run's id, given to evaluators as :attr:`EvaluatorContext.run_id`.
        attributes: Attributes of the whole run (e.g. ``{"dataset": "qa"}``), given to
            evaluators as :attr:`EvaluatorContext.attributes`.
        threshold: The score that passes, for the statuses and the ``pass``/``fail`` label of
            the evaluations emitted as telemetry (``init(export_evaluations=True)``).
        epochs: Run the app this many times per input, each run captured and scored on its
            own; each evaluator's evaluations of the runs are reduced to one by ``reducer``
            (the runs are in ``to_entry().epochs``; ``run`` is the first).
        reducer: ``"mean"``, ``"median"``, ``"mode"``, ``"min"``, ``"max"``, or a strategy
            such as ``AtLeastKAggregationStrategy(k=2)``.

    Raises:
        TypeError: ``eval_inputs`` is a string or not a sequence, or ``runnable``, an
            evaluator, an evaluable, an entry name or the attributes have the wrong type.
        ValueError: Mismatched lengths, no evaluators, or a bad ``concurrency``/``timeout``.
    """
    config = RunConfig(
        concurrency=concurrency,
        timeout=timeout,
        threshold=threshold,
        from_trace=from_trace,
        run_id=run_id,
        attributes=attributes if attributes is not None else {},
        epochs=epochs,
        reducer=reducer,
    )
    items = _as_list(eval_inputs, "eval_inputs", "one argument per run, e.g. ['q1', 'q2']")
    cases = _cases(evaluables, len(items))
    plans = _plans(
        _as_list(evaluators, "evaluators", "e.g. [ExactMatch()]"), per_input_evaluators, len(items)
    )
    source = Inputs(runnable, items, plans, cases=cases, names=_names(entry_names, len(items)))
    rows: list[InputResult | None] = [None] * len(items)

    def collect(scored: Scored, done: int, total: int) -> None:
        row = _row(scored)
        rows[row.index] = row
        if on_progress is not None:
            _report_progress(on_progress, row, done, total)

    await execute(source, config, keep=False, observers=[collect])
    return [row for row in rows if row is not None]


def _row(scored: Scored) -> InputResult:
    return InputResult(scored)


@pending("evaltrace.run_and_evaluate")
async def run_and_evaluate(
    evaluator: EvaluatorFunction,
    runnable: Callable[..., Any],
    eval_input: Any,
    *,
    expected_output: Any = UNSET,
    from_trace: TraceSelector | None = None,
    timeout: float | None = None,
    evaluable: Evaluable | None = None,
) -> Evaluation:
    """Run ``runnable(eval_input)`` once under capture, then score it with ``evaluator``.

    Args:
        evaluator: A sync or async evaluator.
        runnable: The app entry point (decorated or not), sync or async.
        eval_input: The single argument given to ``runnable``.
        expected_output: The expectation merged into the evaluable.
        from_trace: Selects what to score from the trace; default :func:`evaltrace.root`.
        timeout: Seconds allowed for the run, and again for the evaluator.
        evaluable: A test case whose named inputs are served to ``wrap(..., purpose="input")``
            during the run and whose expectation and metadata are kept.

    Returns:
        The evaluation. If the runnable raised or timed out, it is errored with that error.

    Example:
        >>> import anyio
        >>> def app(question: str) -> str:
        ...     return "4"
        >>> anyio.run(run_and_evaluate, lambda e: e.output_value() == "4", app, "2+2").score
        1.0
    """
    if evaluable is not None and not isinstance(evaluable, Evaluable):
        raise TypeError(f"evaluable must be an evaltrace.Evaluable, got {type_name(evaluable)}")
    case = evaluable
    if expected_output is not UNSET:
        case = (case or Evaluable()).model_copy(update={"expectation": json_value(expected_output)})
    (row,) = await evaluate_inputs(
        runnable,
        [eval_input],
        [evaluator],
        evaluables=[case] if case is not None else None,
        from_trace=from_trace,
        timeout=timeout,
        entry_names=[case.description if case is not None else None],
    )
    return row.evaluations[0]


def _plans(
    evaluators: list[EvaluatorFunction],
    per_input: Sequence[Sequence[EvaluatorFunction] | None] | None,
    count: int,
) -> list[Evaluators]:
    """The evaluators of each input, each prepared once; inputs sharing a list share a plan."""
    plans = EvaluatorPlans()
    if per_input is None:
        if not evaluators:
            raise ValueError("at least one evaluator is needed")
        return [plans.of(evaluators)] * count
    given = _as_list(per_input, "per_input_evaluators", "one list of evaluators per input")
    if len(given) != count:
        raise ValueError(
            f"per_input_evaluators has {len(given)} items but eval_inputs has {count}; "
            "give one list (or None) per input"
        )
    result: list[Evaluators] = []
    for position, own in enumerate(given):
        if own is None:
            if not evaluators:
                raise ValueError(
                    f"per_input_evaluators[{position}] is None but no evaluators are given; "
                    "give evaluators, or a list for every input"
                )
            result.append(plans.of(evaluators))
            continue
        where = f"per_input_evaluators[{position}]"
        listed = (
            own if isinstance(own, list | tuple) else _as_list(own, where, "e.g. [ExactMatch()]")
        )
        if not listed:
            raise ValueError(f"{where} is empty; give one or more")
        result.append(plans.of(listed, where))
    return result


def _cases(evaluables: object, count: int) -> list[Evaluable | None] | None:
    if evaluables is None:
        return None
    cases = _as_list(evaluables, "evaluables", "one per input")
    if len(cases) != count:
        raise ValueError(
            f"evaluables has {len(cases)} items but eval_inputs has {count}; "
            "give one evaluable per input"
        )
    for position, case in enumerate(cases):
        if case is not None and not isinstance(case, Evaluable):
            raise TypeError(
                f"evaluables[{position}] is {type_name(case)}, not an evaltrace.Evaluable"
            )
    return cases


def _names(given: object, count: int) -> list[str | None] | None:
    if given is None:
        return None
    names = _as_list(given, "entry_names", "one name (or None) per input")
    if len(names) != count:
        raise ValueError(
            f"entry_names has {len(names)} items but eval_inputs has {count}; "
            "give one name (or None) per input"
        )
    for position, name in enumerate(names):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"entry_names[{position}] is {type_name(name)}, not a str or None")
    return names


def _as_list(value: object, argument: str, example: str) -> list[Any]:
    if isinstance(value, str | bytes | bytearray) or callable(value):
        raise TypeError(
            f"{argument} must be a list ({example}), got {type_name(value)} "
            f"{safe_repr(value)[:60]}; to run a single item, wrap it in a list"
        )
    if not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be a list ({example}), got {type_name(value)}")
    return list(value)


def _report_progress(
    callback: Callable[[InputResult, int, int], object], item: InputResult, done: int, total: int
) -> None:
    try:
        callback(item, done, total)
    except Exception:  # a broken progress display must not lose the run
        logger.warning("evaltrace: the on_progress callback raised", exc_info=True)
    except BaseException as exc:
        if not is_stray_cancellation(exc):
            raise
        logger.warning("evaltrace: the on_progress callback raised CancelledError", exc_info=True)
