"""What a pipeline evaluation keeps, and the metrics computed from it.

:class:`EvaluationResult` holds one :class:`RunRecord` per input: the input, the final output,
the expected output (if any) and, for every span of the run, a :class:`ComponentRecord` with
the span's input and output, grouped by span (component) name. Metrics are computed afterwards,
as often as wanted, with :meth:`EvaluationResult.calculate_metrics`; a result can be saved to
JSON and loaded back without running anything again.

Which values a metric compares (see :meth:`EvaluationResult.output_pairs`):

* ``component=None``: the final output of the run against the expected output. When the
  expected output is component-qualified (a mapping whose keys are all names of components of
  that run), the entry named after the runnable is used.
* ``component="retriever"``: the output of the last call of the span called ``retriever``
  against ``expected_outputs[i]["retriever"]``.
* ``output_key="documents"``: picks that field from each side that is a mapping.

An input without a comparable pair (no expected output, the run or the component raised, the
component did not run) gets no score (``None``) and a reason; values of the wrong shape (a
retriever output that is not a list, an answer that is not text) raise :class:`MetricInputError`.
"""

from __future__ import annotations

import csv
import importlib
import inspect
import json
import math
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from evaltrace._safe_text import type_name
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.evals.evaluator import is_async_callable

if TYPE_CHECKING:
    import pandas

    from evaltrace.pipeline.calculators import Metric

__all__ = [
    "ComponentRecord",
    "EvaluationResult",
    "InvalidMetricResultError",
    "MetricInputError",
    "MetricsResult",
    "OutputPair",
    "ResultFileError",
    "RunRecord",
]

_FORMAT: Final = "evaltrace.pipeline-evaluation"
_SUFFIXES: Final = (".json", ".csv")


class MetricInputError(EvaltraceError, ValueError):
    """A value compared by a metric has the wrong shape (names the input and the component)."""


class ResultFileError(EvaltraceError, ValueError):
    """A saved evaluation result could not be read."""


class InvalidMetricResultError(EvaltraceError, TypeError):
    """A metric returned something other than a :class:`MetricsResult` with a score per input."""


# --- records ------------------------------------------------------------------------------------


class ComponentRecord(BaseModel):
    """One call of one component (one span) during a run.

    Example:
        >>> ComponentRecord(name="search", kind="retriever", output=["doc"]).output
        ['doc']
    """

    model_config = ConfigDict(frozen=True)

    name: str
    """The span name: the function name of a ``@wrap`` component."""
    kind: str = "unknown"
    """The OpenInference kind in lower case (``retriever``, ``llm``, ``chain``, ...)."""
    input: JsonValue = None
    """The span's input: the bound arguments of a decorated function (``{name: value}``)."""
    output: JsonValue = None
    """The span's output; for a span that recorded none but carries OpenInference
    ``retrieval.documents`` attributes, those documents."""
    status: Literal["ok", "error", "unset"] = "unset"
    """The span status."""
    error: str | None = None
    """``"Type: message"`` when the span ended in error."""
    duration_ms: float = 0.0
    """How long the call took."""


class RunRecord(BaseModel):
    """Everything kept about one input of a pipeline evaluation.

    Example:
        >>> RunRecord(index=0, input={"query": "q"}, output="a").has_expected_output
        False
    """

    model_config = ConfigDict(frozen=True)

    index: int
    """The position of the input."""
    input: JsonValue
    """The input given to the runnable, as JSON data (capture codec)."""
    output: JsonValue = None
    """What the runnable returned, as JSON data (``None`` when it raised)."""
    expected_output: JsonValue = None
    """The expected output; ``None`` when there is none (blind evaluation)."""
    error: EvaluationError | None = None
    """What the runnable raised, if it did (a timeout included)."""
    duration_s: float = 0.0
    """Wall time of the run."""
    components: dict[str, list[ComponentRecord]] = Field(default_factory=dict)
    """Every span of the run by name, each name's calls in the order they started."""

    @property
    def has_expected_output(self) -> bool:
        """Whether an expected output was given for this input."""
        return self.expected_output is not None

    def component(self, name: str) -> ComponentRecord | None:
        """The last call of the component ``name``, or ``None`` when it did not run."""
        calls = self.components.get(name)
        return calls[-1] if calls else None


@dataclass(kw_only=True, frozen=True)
class OutputPair:
    """What a metric compares for one input, or why there is nothing to compare."""

    index: int
    """The position of the input."""
    actual: Any = None
    """The output (of the pipeline or of the component), after ``output_key``; kept when
    only the expected value is missing, so that blind metrics can use it."""
    expected: Any = None
    """The expected value, after ``output_key``."""
    missing: str | None = None
    """Why the input cannot be scored (no expected output, ...); ``None`` when it can."""


# --- metrics result -----------------------------------------------------------------------------


class MetricsResult(BaseModel):
    """One metric over the inputs of a pipeline evaluation: the mean and every input's score.

    Example:
        >>> result = MetricsResult.from_scores("f1", [1.0, None, 0.5])
        >>> result.score, result.n_scored
        (0.75, 2)
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    """The metric's name (``"recall"``, ``"mrr"``, ..., or a custom metric's name)."""
    component: str | None = None
    """The component whose output was scored; ``None`` for the pipeline's final output."""
    output_key: str | None = None
    """The field of the outputs that was compared, if one was picked."""
    score: float | None
    """The mean of the per-input scores that could be computed; ``None`` when none could."""
    per_input: list[float | None]
    """One score per input, in input order; ``None`` when it could not be computed."""
    n_scored: int
    """How many inputs have a score."""
    reasons: list[str | None] = Field(default_factory=list)
    """Per input, why it has no score (``None`` when it has one); empty when not recorded."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """The metric's options (``mode``, ``key``, ``normalize``, ...)."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.reasons and len(self.reasons) != len(self.per_input):
            raise ValueError(
                f"reasons has {len(self.reasons)} items but per_input has {len(self.per_input)}"
            )
        scored = [value for value in self.per_input if value is not None]
        if any(not math.isfinite(value) for value in scored):
            raise ValueError("per-input scores must be finite numbers or None")
        if self.n_scored != len(scored):
            raise ValueError(f"n_scored is {self.n_scored} but {len(scored)} inputs have scores")
        return self

    @classmethod
    def from_scores(
        cls,
        metric: str,
        per_input: Sequence[float | None],
        *,
        component: str | None = None,
        output_key: str | None = None,
        reasons: Sequence[str | None] | None = None,
        parameters: Mapping[str, JsonValue] | None = None,
    ) -> MetricsResult:
        """Build a result from per-input scores; the score is the mean of those not ``None``.

        Example:
            >>> MetricsResult.from_scores("custom", [None, None]).score is None
            True
        """
        scores = [None if value is None else float(value) for value in per_input]
        scored = [value for value in scores if value is not None]
        return cls(
            metric=metric,
            component=component,
            output_key=output_key,
            score=statistics.fmean(scored) if scored else None,
            per_input=scores,
            n_scored=len(scored),
            reasons=list(reasons) if reasons is not None else [],
            parameters=dict(parameters or {}),
        )

    def save(self, path: str | Path) -> None:
        """Write the result as JSON (``.json``) or CSV (``.csv``), chosen by the suffix.

        The CSV has the columns ``metric, component, output_key, input_index, score, reason``:
        one row per input, then a last row without ``input_index`` holding the mean.

        Raises:
            ValueError: The suffix is neither ``.json`` nor ``.csv``.

        Example:
            >>> MetricsResult.from_scores("f1", [0.5]).save("f1.csv")  # doctest: +SKIP
        """
        target = Path(path)
        suffix = target.suffix.lower()
        if suffix == ".json":
            target.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
            return
        if suffix != ".csv":
            raise ValueError(
                f"cannot save metrics to {target.name!r}: the suffix must be one of "
                f"{', '.join(_SUFFIXES)}"
            )
        with target.open("w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow(["metric", "component", "output_key", "input_index", "score", "reason"])
            common = [self.metric, self.component or "", self.output_key or ""]
            for index, score in enumerate(self.per_input):
                reason = self.reasons[index] if self.reasons else None
                writer.writerow([*common, index, _csv_number(score), reason or ""])
            summary = f"mean of {self.n_scored} scored inputs of {len(self.per_input)}"
            writer.writerow([*common, "", _csv_number(self.score), summary])


def _csv_number(value: float | None) -> str:
    return "" if value is None else repr(value)


# --- the evaluation result ----------------------------------------------------------------------


class EvaluationResult(BaseModel):
    """The outcome of :func:`~evaltrace.pipeline.evaluate_runnable`: one record per input.

    Example:
        >>> result = await evaluate_runnable(rag, inputs, expected)  # doctest: +SKIP
        >>> result.calculate_metrics(Metric.MRR, component="search").score  # doctest: +SKIP
        0.75
    """

    model_config = ConfigDict(frozen=True)

    format: Literal["evaltrace.pipeline-evaluation"] = _FORMAT
    """Marks a saved pipeline evaluation."""
    version: Literal[1] = 1
    """The file format version."""
    runnable: str
    """The runnable's name; its root span is also a component of that name."""
    records: list[RunRecord]
    """One record per input, in input order."""

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
        return [self._pair(record, component, output_key) for record in self.records]

    def _pair(self, record: RunRecord, component: str | None, output_key: str | None) -> OutputPair:
        index = record.index
        found = self._actual(record, component)
        if isinstance(found, str):
            return OutputPair(index=index, missing=found)
        where = "the pipeline" if component is None else f"component {component!r}"
        actual = found[0]
        if output_key is not None:
            actual = _pick(actual, output_key, f"input #{index}: the output of {where}")
        expected = self._expected(record, component)
        if isinstance(expected, str):
            return OutputPair(index=index, actual=actual, missing=expected)
        value = expected[0]
        if output_key is not None:
            value = _pick(value, output_key, f"input #{index}: the expected output")
        return OutputPair(index=index, actual=actual, expected=value)

    @staticmethod
    def _actual(record: RunRecord, component: str | None) -> tuple[Any] | str:
        """The output to score, or why there is none."""
        if component is None:
            if record.error is not None:
                return f"the run raised {record.error.type}: {record.error.message}"
            return (record.output,)
        call = record.component(component)
        if call is None:
            names = ", ".join(repr(name) for name in record.components) or "none"
            return f"component {component!r} did not run (components: {names})"
        if call.status == "error":
            return f"component {component!r} raised: {call.error}"
        return (call.output,)

    def _expected(self, record: RunRecord, component: str | None) -> tuple[Any] | str:
        """The expected value to compare with, or why there is none."""
        expected = record.expected_output
        if expected is None:
            return "no expected output (blind evaluation)"
        if component is not None:
            if isinstance(expected, dict) and component in expected:
                return (expected[component],)
            return f"the expected output has no entry for component {component!r}"
        qualified = (
            isinstance(expected, dict) and expected and set(expected) <= set(record.components)
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
            metric: A :class:`Metric`, a registered metric name, or a callable
                ``(result, **kwargs) -> MetricsResult`` (``component`` and ``output_key`` are
                passed on when given).
            component: A component (span) name, or ``None`` for the pipeline's final output.
            output_key: A field picked from each side that is a mapping, e.g. ``"documents"``.
            **kwargs: The metric's options (see :class:`Metric`).

        Returns:
            The mean score and the per-input scores.

        Raises:
            MetricInputError: A compared value has the wrong shape.
            InvalidMetricResultError: The metric returned something other than a
                :class:`MetricsResult` with one entry of ``per_input`` per input.
            RunningLoopError: The metric is async (``SAS``) and an event loop is running: use
                ``await result.acalculate_metrics(...)`` there.

        Example:
            >>> result.calculate_metrics(Metric.F1).score  # doctest: +SKIP
            0.8
        """
        calculator, call_kwargs = self._resolve(metric, component, output_key, kwargs)
        if is_async_callable(calculator):
            from evaltrace.evals.sync import run

            return run(
                self.acalculate_metrics(
                    metric, component=component, output_key=output_key, **kwargs
                )
            )
        outcome = calculator(self, **call_kwargs)
        if inspect.isawaitable(outcome):
            from evaltrace.evals.sync import run

            return self._checked(run(_await(outcome)), calculator)
        return self._checked(outcome, calculator)

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
        calculator, call_kwargs = self._resolve(metric, component, output_key, kwargs)
        outcome = calculator(self, **call_kwargs)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return self._checked(outcome, calculator)

    def _checked(self, outcome: Any, calculator: Callable[..., Any]) -> MetricsResult:
        """``outcome`` when it is a :class:`MetricsResult` with one score per input."""
        name = getattr(calculator, "__name__", type_name(calculator))
        if not isinstance(outcome, MetricsResult):
            raise InvalidMetricResultError(
                f"the metric {name!r} returned {type_name(outcome)}; a metric must return a "
                "MetricsResult (build one with MetricsResult.from_scores)"
            )
        given, wanted = len(outcome.per_input), len(self.records)
        if given != wanted:
            scores = "score" if given == 1 else "scores"
            raise InvalidMetricResultError(
                f"the metric {name!r} returned {given} {scores} for {wanted} inputs; "
                "per_input needs one entry per input, in input order, with None for an input "
                "it cannot score"
            )
        return outcome

    def _resolve(
        self,
        metric: Metric | str | Callable[..., Any],
        component: str | None,
        output_key: str | None,
        kwargs: dict[str, Any],
    ) -> tuple[Callable[..., Any], dict[str, Any]]:
        if isinstance(metric, str):
            from evaltrace.pipeline.calculators import metric_calculator

            return metric_calculator(str(metric)), {
                "component": component,
                "output_key": output_key,
                **kwargs,
            }
        if not callable(metric):
            raise TypeError(
                f"metric must be a Metric, a registered name or a callable, got {metric!r}"
            )
        given = {"component": component, "output_key": output_key}
        return metric, {**{k: v for k, v in given.items() if v is not None}, **kwargs}

    def save(self, path: str | Path) -> None:
        """Write the result as JSON (no pickle); :meth:`load` reads it back.

        Example:
            >>> result.save("eval.json")  # doctest: +SKIP
        """
        Path(path).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> EvaluationResult:
        """Read a result written by :meth:`save`. Only JSON is parsed; nothing is executed.

        Raises:
            ResultFileError: The file is not a saved pipeline evaluation, or is damaged.

        Example:
            >>> result = EvaluationResult.load("eval.json")  # doctest: +SKIP
        """
        source = Path(path)
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ResultFileError(f"cannot read {source}: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ResultFileError(
                f"{source} is not a saved pipeline evaluation (expected a JSON object with "
                f'"format": "{_FORMAT}"); write one with EvaluationResult.save()'
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ResultFileError(f"{source} is a damaged pipeline evaluation: {exc}") from exc

    def to_dataframe(self) -> pandas.DataFrame:
        """The records as a pandas table, one row per input.

        The columns are ``index``, ``input``, ``output``, ``expected_output``, ``error``,
        ``duration_s``, then ``{component}.input`` and ``{component}.output`` (its last call)
        for every component, in order of first appearance.

        Raises:
            ImportError: pandas is not installed (``pip install evaltrace[pandas]``).

        Example:
            >>> result.to_dataframe()["search.output"]  # doctest: +SKIP
        """
        try:
            pd = importlib.import_module("pandas")
        except ImportError as exc:
            raise ImportError(
                "EvaluationResult.to_dataframe() needs pandas: pip install evaltrace[pandas]"
            ) from exc
        names: dict[str, None] = {}
        for record in self.records:
            names.update(dict.fromkeys(record.components))
        rows: list[dict[str, Any]] = []
        for record in self.records:
            row: dict[str, Any] = {
                "index": record.index,
                "input": record.input,
                "output": record.output,
                "expected_output": record.expected_output,
                "error": _error_text(record.error),
                "duration_s": record.duration_s,
            }
            for name in names:
                call = record.component(name)
                row[f"{name}.input"] = call.input if call is not None else None
                row[f"{name}.output"] = call.output if call is not None else None
            rows.append(row)
        columns = ["index", "input", "output", "expected_output", "error", "duration_s"]
        columns += [f"{name}.{part}" for name in names for part in ("input", "output")]
        frame: pandas.DataFrame = pd.DataFrame(rows, columns=columns)
        return frame


def _error_text(error: EvaluationError | None) -> str | None:
    return None if error is None else f"{error.type}: {error.message}"


def _pick(value: Any, key: str, what: str) -> Any:
    if not isinstance(value, dict):
        return value
    if key not in value:
        keys = ", ".join(repr(k) for k in value) or "none"
        raise MetricInputError(f"{what} has no key {key!r} (its keys: {keys}); check output_key")
    return value[key]


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
