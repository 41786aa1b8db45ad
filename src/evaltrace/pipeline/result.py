"""A pipeline evaluation, Haystack-style: a view over the one saved result, ``RunResult``.

:class:`EvaluationResult` holds the :class:`~evaltrace.results.model.RunResult` that
:func:`~evaltrace.pipeline.evaluate_runnable` builds: one
:class:`~evaltrace.results.model.EntryResult` per input, with the input, the final output, the
expected output (the entry's ``expectation``; none for a blind evaluation) and, for every span
of the run, a :class:`~evaltrace.results.model.ComponentRecord` with the span's input and output,
grouped by span (component) name. Metrics are computed afterwards, as often as wanted, with
:meth:`EvaluationResult.calculate_metrics`. :meth:`EvaluationResult.save` writes the
``RunResult`` as JSON (the same format as a dataset run's ``result.json``, with its
``schema_version``), and :meth:`EvaluationResult.load` reads it back without running anything.

Which values a metric compares (see :meth:`EvaluationResult.output_pairs`):

* ``component=None``: the final output of the run against the expected output. When the
  expected output is component-qualified (a mapping whose keys are all names of components of
  that run), the entry named after the runnable is used.
* ``component="retriever"``: the output of the last call of the span called ``retriever``
  against ``expected_outputs[i]["retriever"]``.
* ``output_key="documents"``: picks that field from each side that is a mapping.

An input without a comparable pair (no expected output, the run or the component raised, the
component did not run) gets no score (``None``) and a reason; values of the wrong shape (a
retriever output that is not a list, an answer that is not text) raise
:class:`~evaltrace.metrics.MetricInputError`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaltrace._safe_text import type_name
from evaltrace.concurrency.callables import is_async_callable
from evaltrace.concurrency.sync import run
from evaltrace.errors import ResultFileError
from evaltrace.metrics.registry import Metric, MetricInputError, PairMetric, registered_metric
from evaltrace.pipeline.calculators import PairScoring
from evaltrace.pipeline.metrics_result import (
    MetricResultTypeError,
    MetricScoreCountError,
    MetricsResult,
    OutputPair,
)
from evaltrace.results.folder import load_result, save_result
from evaltrace.results.model import ComponentRecord, EntryResult, RunResult

if TYPE_CHECKING:
    import pandas

__all__ = ["EvaluationResult", "ResultFileError"]


def _last_call(entry: EntryResult, component: str) -> ComponentRecord | None:
    """The last call of ``component`` in the run of ``entry``, or ``None`` when it did not run."""
    calls = entry.components.get(component)
    return calls[-1] if calls else None


def _expected_output(entry: EntryResult) -> Any:
    """The expected output of ``entry``; ``None`` for a blind evaluation."""
    return entry.expectation if entry.has_expectation else None


@dataclass(frozen=True)
class EvaluationResult:
    """The outcome of :func:`~evaltrace.pipeline.evaluate_runnable`, over a saved RunResult.

    Example:
        >>> result = await evaluate_runnable(rag, inputs, expected)  # doctest: +SKIP
        >>> result.calculate_metrics(Metric.MRR, component="search").score  # doctest: +SKIP
        0.75
        >>> result.run.entries[0].status  # doctest: +SKIP
        <CompletionStatus.NO_SCORE_LOGGED: 'NO_SCORE_LOGGED'>
    """

    run: RunResult
    """The saved result: one entry per input, in input order, with its components."""

    @property
    def runnable(self) -> str:
        """The runnable's name; its root span is also a component of that name."""
        return self.run.name

    @property
    def entries(self) -> list[EntryResult]:
        """One entry per input, in input order."""
        return self.run.entries

    def output_pairs(
        self, component: str | None = None, output_key: str | None = None
    ) -> list[OutputPair]:
        """What a metric compares for each input (see the module documentation).

        Args:
            component: A component (span) name, or ``None`` for the final output.
            output_key: A field picked from each side that is a mapping.

        Returns:
            One pair per input; ``missing`` says why an input cannot be scored.

        Raises:
            MetricInputError: ``output_key`` is absent from an output or expected mapping.

        Example:
            >>> pairs = result.output_pairs("search", output_key="documents")  # doctest: +SKIP
        """
        return [self._pair(entry, component, output_key) for entry in self.entries]

    def _pair(
        self, entry: EntryResult, component: str | None, output_key: str | None
    ) -> OutputPair:
        index = entry.index
        found = self._actual(entry, component)
        if isinstance(found, str):
            return OutputPair(index=index, missing=found)
        where = "the pipeline" if component is None else f"component {component!r}"
        actual = found[0]
        if output_key is not None:
            actual = _pick(actual, output_key, f"input #{index}: the output of {where}")
        expected = self._expected(entry, component)
        if isinstance(expected, str):
            return OutputPair(index=index, actual=actual, missing=expected)
        value = expected[0]
        if output_key is not None:
            value = _pick(value, output_key, f"input #{index}: the expected output")
        return OutputPair(index=index, actual=actual, expected=value)

    @staticmethod
    def _actual(entry: EntryResult, component: str | None) -> tuple[Any] | str:
        """The output to score, or why there is none."""
        if component is None:
            if entry.error is not None:
                return f"the run raised {entry.error.type}: {entry.error.message}"
            return (entry.output,)
        call = _last_call(entry, component)
        if call is None:
            names = ", ".join(repr(name) for name in entry.components) or "none"
            return f"component {component!r} did not run (components: {names})"
        if call.status == "error":
            return f"component {component!r} raised: {call.error}"
        return (call.output,)

    def _expected(self, entry: EntryResult, component: str | None) -> tuple[Any] | str:
        """The expected value to compare with, or why there is none."""
        expected = _expected_output(entry)
        if expected is None:
            return "no expected output (blind evaluation)"
        if component is not None:
            if isinstance(expected, dict) and component in expected:
                return (expected[component],)
            return f"the expected output has no entry for component {component!r}"
        qualified = (
            isinstance(expected, dict) and expected and set(expected) <= set(entry.components)
        )
        if not qualified:
            return (expected,)
        assert isinstance(expected, dict)
        if self.runnable in expected:
            return (expected[self.runnable],)
        return (
            "the expected output is component-qualified but has no entry for the pipeline "
            f"itself ({self.runnable!r}); pass component= or add that entry"
        )

    def calculate_metrics(
        self,
        metric: Metric | str | Callable[..., Any],
        *,
        component: str | None = None,
        output_key: str | None = None,
        **kwargs: Any,
    ) -> MetricsResult:
        """Compute a metric over the inputs.

        Args:
            metric: A :class:`~evaltrace.metrics.Metric`, a registered metric name (see
                :func:`~evaltrace.metrics.register_metric`), or a callable
                ``(result, **kwargs) -> MetricsResult`` (``component`` and ``output_key`` are
                passed on when given).
            component: A component (span) name, or ``None`` for the pipeline's final output.
            output_key: A field picked from each side that is a mapping, e.g. ``"documents"``.
            **kwargs: The metric's options (see :class:`~evaltrace.metrics.Metric`).

        Returns:
            The mean score and the per-input scores.

        Raises:
            MetricInputError: A compared value has the wrong shape.
            MetricResultTypeError: The metric returned something other than a
                :class:`MetricsResult` (a ``TypeError``).
            MetricScoreCountError: Its ``per_input`` does not have one entry per input (a
                ``ValueError``).
            RunningLoopError: The metric is async (``SAS``) and an event loop is running: use
                ``await result.acalculate_metrics(...)`` there.

        Example:
            >>> result.calculate_metrics(Metric.F1).score  # doctest: +SKIP
            0.8
        """
        work = self._prepare(metric, component, output_key, kwargs)
        if isinstance(work, PairScoring):
            if is_async_callable(work.scoring.score):
                return work.result(run(_scores, work))
            scores = work.scoring.score(work.comparisons)
            if inspect.isawaitable(scores):
                scores = run(_await(scores))
            return work.result(scores)
        if is_async_callable(work.func):
            return self._checked(run(work), work.func)
        outcome = work()
        if inspect.isawaitable(outcome):
            outcome = run(_await(outcome))
        return self._checked(outcome, work.func)

    async def acalculate_metrics(
        self,
        metric: Metric | str | Callable[..., Any],
        *,
        component: str | None = None,
        output_key: str | None = None,
        **kwargs: Any,
    ) -> MetricsResult:
        """Compute a metric over the inputs (async form of :meth:`calculate_metrics`).

        Example:
            >>> await result.acalculate_metrics(Metric.SAS, embed=embed)  # doctest: +SKIP
        """
        work = self._prepare(metric, component, output_key, kwargs)
        if isinstance(work, PairScoring):
            return work.result(await _scores(work))
        outcome = work()
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return self._checked(outcome, work.func)

    def _prepare(
        self,
        metric: Metric | str | Callable[..., Any],
        component: str | None,
        output_key: str | None,
        options: dict[str, Any],
    ) -> PairScoring | functools.partial[Any]:
        """What computing ``metric`` takes: its pairs to score, or the custom call to make."""
        given = {"component": component, "output_key": output_key}
        if isinstance(metric, str):
            name = str(metric)
            found = registered_metric(name)
            if isinstance(found, PairMetric):
                scoring = found.build(**options)
                return PairScoring.prepare(
                    name,
                    found.compares,
                    scoring,
                    self.output_pairs(component, output_key),
                    component=component,
                    output_key=output_key,
                )
            return functools.partial(found, self, **given, **options)
        if not callable(metric):
            raise TypeError(
                f"metric must be a Metric, a registered name or a callable, got {metric!r}"
            )
        passed = {key: value for key, value in given.items() if value is not None}
        return functools.partial(metric, self, **passed, **options)

    def _checked(self, outcome: Any, calculator: Callable[..., Any]) -> MetricsResult:
        """``outcome`` when it is a :class:`MetricsResult` with one score per input."""
        name = getattr(calculator, "__name__", type_name(calculator))
        if not isinstance(outcome, MetricsResult):
            raise MetricResultTypeError(
                f"the metric {name!r} returned {type_name(outcome)}; a metric must return a "
                "MetricsResult (build one with MetricsResult.from_scores)"
            )
        given, wanted = len(outcome.per_input), len(self.entries)
        if given != wanted:
            scores = "score" if given == 1 else "scores"
            raise MetricScoreCountError(
                f"the metric {name!r} returned {given} {scores} for {wanted} inputs; "
                "per_input needs one entry per input, in input order, with None for an input "
                "it cannot score"
            )
        return outcome

    def save(self, path: str | Path) -> None:
        """Write the :class:`~evaltrace.results.RunResult` as JSON (no pickle), atomically.

        :meth:`load` reads it back, and so does :func:`~evaltrace.results.load_result`.

        Example:
            >>> result.save("eval.json")  # doctest: +SKIP
        """
        save_result(path, self.run)

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        """Read a result written by :meth:`save` (or a dataset run's ``result.json``).

        Only JSON is parsed; nothing is executed. A result an earlier evaltrace saved is
        migrated forward as it is read.

        Raises:
            ResultFileError: The file cannot be read, is not a saved result (or is in the
                format pipeline evaluations had before they were saved as results), or is
                damaged.

        Example:
            >>> result = EvaluationResult.load("eval.json")  # doctest: +SKIP
        """
        return cls(load_result(path))

    def to_dataframe(self) -> pandas.DataFrame:
        """The run as a pandas table: :meth:`RunResult.to_dataframe`, one row per input.

        A pipeline evaluation scores nothing while it runs, so each input has one row: its
        ``input``, ``output``, ``expectation``, error and ``duration_s``, then
        ``{component}.input`` and ``{component}.output`` (its last call) for every
        component, in order of first appearance.

        Raises:
            MissingExtraError: pandas is not installed (``pip install evaltrace[pandas]``).

        Example:
            >>> result.to_dataframe()["search.output"]  # doctest: +SKIP
        """
        return self.run.to_dataframe()


def _pick(value: Any, key: str, what: str) -> Any:
    if not isinstance(value, dict):
        return value
    if key not in value:
        keys = ", ".join(repr(k) for k in value) or "none"
        raise MetricInputError(f"{what} has no key {key!r} (its keys: {keys}); check output_key")
    return value[key]


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _scores(work: PairScoring) -> list[float]:
    scores = work.scoring.score(work.comparisons)
    if inspect.isawaitable(scores):
        scores = await scores
    return scores
