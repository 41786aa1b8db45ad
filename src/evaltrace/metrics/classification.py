"""Dataset-level classification metrics over a classifier evaluator's per-entry results.

A per-entry classification evaluator records, for every dataset entry, the expected label and
the label the app produced. The aggregators declared on it (an :data:`AggregatorSpec` each) turn
all of those results into one run-level :class:`~evaltrace.evals.evaluation.Evaluation`:
precision, recall, F-beta or a confusion matrix, with every count in a
:class:`ClassificationDetails`.

Counting rules:

* Labels match the declared classes case-insensitively, ignoring surrounding white space; the
  details always use the declared spelling.
* An item whose *expected* label is not a declared class is skipped (and counted in
  ``n_skipped``): there is no class to score it against.
* An item whose *predicted* label is not a declared class is a false negative of its expected
  class. It is a false positive of no class and adds nothing to the confusion matrix (whose rows
  are declared classes only); ``n_unknown_predicted`` counts such items.
* Malformed items (not an ``(expected, actual)`` pair, details without both keys, non-string
  labels) and errored or skipped evaluations are skipped and counted.
* A ratio whose denominator is zero is ``0.0``. Macro averages are the unweighted means over
  *all* declared classes, including classes that never occur.

Example:
    >>> spec = FScoreAggregatorSpec(classes=["spam", "ham"])
    >>> result = build_dataset_evaluator(spec, "intent").evaluate(
    ...     [("spam", "spam"), ("ham", "spam"), ("ham", "ham")]
    ... )
    >>> round(result.score, 4)
    0.6667
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Final, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)
from pydantic_core import InitErrorDetails

from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.statistics import bootstrap_counts

__all__ = [
    "AGGREGATOR_SPEC_ADAPTER",
    "AggregatorSpec",
    "AveragedMetrics",
    "ClassificationDatasetEvaluator",
    "ClassificationDetails",
    "ClassificationItem",
    "ClassificationTally",
    "ConfusionMatrixAggregatorSpec",
    "DatasetResultsTally",
    "FScoreAggregatorSpec",
    "PerClassMetrics",
    "PrecisionAggregatorSpec",
    "RecallAggregatorSpec",
    "build_dataset_evaluator",
    "compute_dataset_evaluator_results",
    "plan_dataset_evaluators",
]

_MAX_F_VALUE: Final = 1000.0
"""The largest accepted ``f_value`` (UiPath's bound)."""

Averaging: TypeAlias = Literal["macro", "micro"]
AggregatorType: TypeAlias = Literal["precision", "recall", "fscore", "confusion_matrix"]


def _fold(label: str) -> str:
    """The form in which labels are compared: trimmed and case-folded."""
    return label.strip().casefold()


# ----------------------------------------------------------------------------------------------
# Specs


class _AggregatorSpecBase(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True
    )

    classes: list[str] = Field(min_length=1)
    """The declared classes, in the order used by the confusion matrix."""

    @field_validator("classes")
    @classmethod
    def _classes_are_distinct(cls, classes: list[str]) -> list[str]:
        blank = [i for i, name in enumerate(classes) if not name.strip()]
        if blank:
            raise ValueError(f"class names must not be blank (positions {blank})")
        seen: dict[str, str] = {}
        duplicates: list[str] = []
        for name in classes:
            folded = _fold(name)
            if folded in seen:
                duplicates.append(f"{name!r} (same as {seen[folded]!r})")
            else:
                seen[folded] = name
        if duplicates:
            raise ValueError(
                "classes must be distinct, compared case-insensitively; duplicated: "
                + ", ".join(duplicates)
            )
        return classes


class _AveragedSpecBase(_AggregatorSpecBase):
    averaging: Averaging = "macro"
    """``"macro"``: the mean over the declared classes; ``"micro"``: from the summed counts."""


class PrecisionAggregatorSpec(_AveragedSpecBase):
    """Precision over the declared classes: ``TP / (TP + FP)``.

    Example:
        >>> PrecisionAggregatorSpec(classes=["yes", "no"], averaging="micro").type
        'precision'
    """

    type: Literal["precision"] = "precision"
    """The discriminator."""


class RecallAggregatorSpec(_AveragedSpecBase):
    """Recall over the declared classes: ``TP / (TP + FN)``.

    Example:
        >>> RecallAggregatorSpec(classes=["yes", "no"]).averaging
        'macro'
    """

    type: Literal["recall"] = "recall"
    """The discriminator."""


class FScoreAggregatorSpec(_AveragedSpecBase):
    """F-beta over the declared classes: ``(1 + β²)·P·R / (β²·P + R)`` with ``β = f_value``.

    In JSON the field is spelled ``fValue``; ``f_value`` is accepted too. β is bounded to
    ``0 < β ≤ 1000``, as in UiPath: at β = 1000 F-beta already equals recall to about six
    decimal places, and larger values only invite overflow.

    Example:
        >>> FScoreAggregatorSpec.model_validate({"classes": ["a", "b"], "fValue": 2}).f_value
        2.0
    """

    type: Literal["fscore"] = "fscore"
    """The discriminator."""
    f_value: float = Field(default=1.0, alias="fValue", gt=0, le=_MAX_F_VALUE)
    """β: recall counts β times as much as precision (1.0 gives F1); ``0 < β ≤ 1000``."""


class ConfusionMatrixAggregatorSpec(_AggregatorSpecBase):
    """The confusion matrix; its headline score is the accuracy (no averaging).

    Example:
        >>> ConfusionMatrixAggregatorSpec(classes=["a", "b"]).type
        'confusion_matrix'
    """

    type: Literal["confusion_matrix"] = "confusion_matrix"
    """The discriminator."""


_SPEC_TYPES: Final[tuple[str, ...]] = ("precision", "recall", "fscore", "confusion_matrix")


def _name_the_type_field(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Report an unknown or missing ``type`` as an error located at the ``type`` field.

    Pydantic reports a bad discriminator at the location of the whole spec; pointing at the
    field tells the reader which key of the JSON to fix.
    """
    try:
        return handler(value)
    except ValidationError as exc:
        errors = exc.errors()
        if len(errors) != 1 or errors[0]["type"] not in (
            "union_tag_invalid",
            "union_tag_not_found",
        ):
            raise
        if errors[0]["type"] == "union_tag_not_found":
            line = InitErrorDetails(type="missing", loc=("type",), input=value)
        else:
            line = InitErrorDetails(
                type="literal_error",
                loc=("type",),
                input=value.get("type") if isinstance(value, Mapping) else value,
                ctx={"expected": ", ".join(repr(t) for t in _SPEC_TYPES)},
            )
        raise ValidationError.from_exception_data(exc.title, [line]) from None


AggregatorSpec: TypeAlias = Annotated[
    PrecisionAggregatorSpec
    | RecallAggregatorSpec
    | FScoreAggregatorSpec
    | ConfusionMatrixAggregatorSpec,
    Field(discriminator="type"),
    WrapValidator(_name_the_type_field),
]
"""One aggregator declared on a classification evaluator, chosen by its ``type`` key."""

AGGREGATOR_SPEC_ADAPTER: Final[TypeAdapter[AggregatorSpec]] = TypeAdapter(AggregatorSpec)
"""Parses an :data:`AggregatorSpec` from Python data (``validate_python``) or JSON."""


# ----------------------------------------------------------------------------------------------
# Results


class PerClassMetrics(BaseModel):
    """The counts and ratios of one declared class (one-vs-rest)."""

    model_config = ConfigDict(frozen=True)

    tp: int
    """Items expected and predicted as this class."""
    fp: int
    """Items predicted as this class but expected as another declared class."""
    fn: int
    """Items expected as this class but predicted as another class (declared or not)."""
    tn: int
    """Scored items neither expected nor predicted as this class."""
    support: int
    """Scored items expected as this class (``tp + fn``)."""
    precision: float
    """``tp / (tp + fp)``, 0.0 when nothing was predicted as this class."""
    recall: float
    """``tp / (tp + fn)``, 0.0 when the class never occurs."""
    f_score: float
    """F-beta of this class with the details' ``f_value``, 0.0 when ``tp == 0``."""


class AveragedMetrics(BaseModel):
    """Precision, recall and F-beta averaged over the classes one way (micro or macro)."""

    model_config = ConfigDict(frozen=True)

    precision: float
    """The averaged precision."""
    recall: float
    """The averaged recall."""
    f_score: float
    """The averaged F-beta (macro: the mean of the per-class F-beta values)."""


_MATRIX_DESCRIPTION: Final = (
    "confusion_matrix[predicted_index][expected_index], indices into `classes`: rows are "
    "predicted classes, columns expected classes. This is the transpose of scikit-learn's "
    "confusion_matrix, which is [true][predicted]. Items predicted outside the classes are not "
    "in the matrix (see n_unknown_predicted)."
)


class ClassificationDetails(BaseModel):
    """Every count behind a dataset-level classification result."""

    model_config = ConfigDict(frozen=True)

    metric: AggregatorType
    """The aggregator type that produced the headline score."""
    averaging: Averaging | None
    """The averaging of the headline score; ``None`` for the confusion matrix (accuracy)."""
    classes: list[str]
    """The declared classes, with their declared spelling, in matrix order."""
    confusion_matrix: list[list[int]] = Field(description=_MATRIX_DESCRIPTION)
    """``confusion_matrix[predicted_index][expected_index]``: rows are *predicted* classes,
    columns *expected* classes (the transpose of scikit-learn's ``[true][predicted]``).
    Predictions outside the declared classes are not in the matrix."""
    per_class: dict[str, PerClassMetrics]
    """The metrics of each declared class, keyed by its declared name."""
    micro: AveragedMetrics
    """Ratios of the counts summed over the classes."""
    macro: AveragedMetrics
    """Unweighted means of the per-class ratios over all declared classes."""
    accuracy: float
    """The matrix trace over ``n_scored`` (0.0 when nothing was scored)."""
    n_total: int
    """Items given to the aggregator."""
    n_scored: int
    """Items counted (``n_total - n_skipped``)."""
    n_skipped: int
    """Items left out: unknown expected label, malformed, errored or skipped."""
    n_unknown_predicted: int
    """Scored items whose predicted label is not a declared class (each a false negative)."""
    skip_reasons: dict[str, int]
    """Skipped items by reason: ``unknown_expected_label``, ``malformed``, ``errored``,
    ``skipped``; reasons that did not occur are left out."""
    f_value: float
    """The β used for every ``f_score`` here (the spec's ``f_value``; 1.0 for other specs)."""


ClassificationItem: TypeAlias = Evaluation | tuple[object, object]
"""One per-entry result: an :class:`Evaluation` with ``expected``/``actual`` details, or a pair
``(expected, actual)``."""


class _Skip(Enum):
    """Why an item is left out of the counts (the value is the ``skip_reasons`` key)."""

    UNKNOWN_EXPECTED = "unknown_expected_label"
    MALFORMED = "malformed"
    ERRORED = "errored"
    SKIPPED = "skipped"


_MISSING: Final = object()


def _item_key(item: object) -> tuple[str, str] | _Skip:
    """Reduce one item to its ``(expected, actual)`` labels, or to the reason it is skipped."""
    if isinstance(item, _Skip):
        return item
    if isinstance(item, tuple | list):
        if len(item) != 2:
            return _Skip.MALFORMED
        expected, actual = item
    elif isinstance(item, Evaluation):
        if item.error is not None:
            return _Skip.ERRORED
        if item.skipped:
            return _Skip.SKIPPED
        details = item.details
        if isinstance(details, Mapping):
            expected = details.get("expected", _MISSING)
            actual = details.get("actual", _MISSING)
        else:
            expected = getattr(details, "expected", _MISSING)
            actual = getattr(details, "actual", _MISSING)
    else:
        return _Skip.MALFORMED
    if isinstance(expected, str) and isinstance(actual, str):
        return (expected, actual)
    return _Skip.MALFORMED


def _count_items(items: Sequence[object]) -> Counter[Hashable]:
    """Count equal items; only distinct items are inspected afterwards.

    Counting the raw items first keeps the per-item work in C (hashing): a million
    ``(expected, actual)`` tuples over a handful of labels reduce to a few hundred distinct
    pairs. Items that cannot be hashed (evaluations with dict details, lists) are reduced to
    their labels first.
    """
    try:
        return Counter(items)
    except TypeError:
        return Counter(map(_item_key, items))


class ClassificationTally:
    """A source evaluator's per-entry results, reduced to counts as they arrive.

    For runs too large to keep every evaluation in memory: :meth:`add` each result as its entry
    finishes, then give the tally wherever a list of results goes
    (:meth:`ClassificationDatasetEvaluator.evaluate`,
    :func:`compute_dataset_evaluator_results`); the metrics are those of the list. It holds one
    count per distinct ``(expected, actual)`` pair, whatever the number of entries.

    Example:
        >>> tally = ClassificationTally()
        >>> for pair in [("a", "a"), ("b", "a"), ("a", "a")]:
        ...     tally.add(pair)
        >>> len(tally), build_dataset_evaluator(
        ...     PrecisionAggregatorSpec(classes=["a", "b"], averaging="micro"), "src"
        ... ).evaluate(tally).score
        (3, 0.6666666666666666)
    """

    __slots__ = ("_counts", "_total")

    def __init__(self) -> None:
        self._counts: Counter[Hashable] = Counter()
        self._total = 0

    def add(self, item: ClassificationItem) -> None:
        """Count one per-entry result (an evaluation or an ``(expected, actual)`` pair)."""
        self._counts[_item_key(item)] += 1
        self._total += 1

    def __len__(self) -> int:
        return self._total

    def __repr__(self) -> str:
        return f"ClassificationTally({self._total} items, {len(self._counts)} distinct)"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _ratios(
    numerator: NDArray[np.float64], denominator: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``numerator / denominator`` elementwise, 0.0 where the denominator is 0."""
    safe = np.where(denominator == 0, 1.0, denominator)
    return np.where(denominator == 0, 0.0, numerator / safe)


@dataclass(frozen=True, kw_only=True)
class _FWeights:
    """F-beta as a weighted harmonic mean: ``F = TP / (r·(TP + FN) + p·(TP + FP))``.

    Dividing ``(1 + β²)·TP / (β²·(TP + FN) + (TP + FP))`` through by ``1 + β²`` gives weights in
    ``[0, 1]`` that sum to 1, so no intermediate grows with β: a huge β gives ``r = 1, p = 0``
    (F is recall) and a tiny one ``r = 0, p = 1`` (F is precision) instead of overflowing.
    """

    recall: float
    """``β² / (1 + β²)``, computed as ``1 / (1 + (1/β)²)``."""
    precision: float
    """``1 / (1 + β²)``."""

    @classmethod
    def of(cls, beta: float) -> _FWeights:
        inverse = 1.0 / beta
        # products, not ** 2: float ** raises OverflowError where a product gives inf
        return cls(recall=1.0 / (1.0 + inverse * inverse), precision=1.0 / (1.0 + beta * beta))

    def f_beta(self, tp: int, support: int, predicted: int) -> float:
        """F-beta from counts; 0 when ``TP == 0``.

        A perfect class can round one ulp above 1.0 (the weights sum to 1 only to within
        rounding), hence the clamp.
        """
        return min(1.0, _ratio(tp, self.recall * support + self.precision * predicted))


def _averaged(details: ClassificationDetails) -> AveragedMetrics:
    return details.micro if details.averaging == "micro" else details.macro


_HEADLINE: Final[dict[str, Callable[[ClassificationDetails], float]]] = {
    "precision": lambda details: _averaged(details).precision,
    "recall": lambda details: _averaged(details).recall,
    "fscore": lambda details: _averaged(details).f_score,
    "confusion_matrix": lambda details: details.accuracy,
}
"""The headline score of each aggregator type, read from the computed details."""


class ClassificationDatasetEvaluator:
    """Computes one :data:`AggregatorSpec` over the per-entry results of a source evaluator.

    Build it with :func:`build_dataset_evaluator`. :meth:`evaluate` is synchronous and pure.

    Example:
        >>> evaluator = build_dataset_evaluator(
        ...     PrecisionAggregatorSpec(classes=["cat", "dog"]), "animal"
        ... )
        >>> evaluator.name
        'animal::precision'
    """

    __slots__ = ("_index_of", "_source", "_spec")

    def __init__(self, spec: AggregatorSpec, source_evaluator_name: str) -> None:
        """Prepare the evaluator.

        Args:
            spec: The aggregator to compute.
            source_evaluator_name: The per-entry evaluator whose results it reads.
        """
        self._spec = spec
        self._source = source_evaluator_name
        self._index_of = {_fold(name): index for index, name in enumerate(spec.classes)}

    @property
    def spec(self) -> AggregatorSpec:
        """The aggregator this evaluator computes."""
        return self._spec

    @property
    def source_evaluator_name(self) -> str:
        """The per-entry evaluator whose results this evaluator reads."""
        return self._source

    @property
    def name(self) -> str:
        """``"{source}::{type}"``, the base of its key in the run results."""
        return f"{self._source}::{self._spec.type}"

    def __repr__(self) -> str:
        return f"ClassificationDatasetEvaluator({self._spec!r}, {self._source!r})"

    def evaluate(self, items: Iterable[ClassificationItem] | ClassificationTally) -> Evaluation:
        """Compute the metric over the source evaluator's per-entry results.

        Args:
            items: One result per dataset entry: an :class:`Evaluation` whose ``details`` (a
                mapping or a pydantic model) hold ``expected`` and ``actual`` labels, or a plain
                ``(expected, actual)`` pair; or a :class:`ClassificationTally` of them.

        Returns:
            A scored :class:`Evaluation` whose ``score`` is the headline metric (precision,
            recall or F-beta with the spec's averaging; accuracy for the confusion matrix) and
            whose ``details`` is a :class:`ClassificationDetails`. When no item could be
            scored, the evaluation is skipped (``score=None``) and still carries the details.

        Example:
            >>> spec = RecallAggregatorSpec(classes=["a", "b"], averaging="micro")
            >>> build_dataset_evaluator(spec, "src").evaluate([("a", "a"), ("b", "a")]).score
            0.5
        """
        if isinstance(items, str | bytes | Mapping):
            raise TypeError(
                f"items must be a list of per-entry results, got a {type(items).__name__}"
            )
        if isinstance(items, ClassificationTally):
            details = self._details(items._counts, len(items))
        else:
            materialised = items if isinstance(items, Sequence) else list(items)
            details = self._details(_count_items(materialised), len(materialised))
        if details.n_total and details.skip_reasons.get(_Skip.MALFORMED.value) == details.n_total:
            return Evaluation.errored(
                EvaluationError(
                    type="UnlabelledResultsError",
                    message=(
                        f"none of the {details.n_total} results of {self._source!r} holds "
                        "labels to count: a classification metric needs an evaluator whose "
                        "evaluations record details={'expected': <label>, 'actual': <label>} "
                        "(strings); this one records none (a score alone is not a label)"
                    ),
                    where="dataset_results",
                ),
                details=details.model_dump(),
                evaluator=self.name,
            )
        if details.n_scored == 0:
            return Evaluation.skip(
                f"no item could be scored ({self._describe_skips(details)})",
                details=details,
                evaluator=self.name,
            )
        score = _HEADLINE[self._spec.type](details)
        return Evaluation(
            score=score,
            reasoning=(
                f"{self._headline_label()} = {score:.4f} over {details.n_scored} of "
                f"{details.n_total} items ({self._describe_skips(details)})"
            ),
            details=details,
            evaluator=self.name,
        )

    def _headline_label(self) -> str:
        spec = self._spec
        if isinstance(spec, ConfusionMatrixAggregatorSpec):
            return "accuracy"
        name = f"F{spec.f_value:g}" if isinstance(spec, FScoreAggregatorSpec) else spec.type
        return f"{spec.averaging} {name}"

    @staticmethod
    def _describe_skips(details: ClassificationDetails) -> str:
        if not details.skip_reasons:
            return "none skipped"
        reasons = ", ".join(f"{n} {reason}" for reason, n in details.skip_reasons.items())
        return f"{details.n_skipped} skipped: {reasons}"

    def _details(self, counts: Counter[Hashable], n_total: int) -> ClassificationDetails:
        classes = self._spec.classes
        n = len(classes)
        index_of = self._index_of
        matrix = [0] * (n * n)
        unknown_predicted = [0] * n
        skips: Counter[str] = Counter()
        folded: dict[str, int | None] = {}

        for item, count in counts.items():
            labels = _item_key(item)
            if isinstance(labels, _Skip):
                skips[labels.value] += count
                continue
            expected, actual = labels
            if expected not in folded:
                folded[expected] = index_of.get(_fold(expected))
            if actual not in folded:
                folded[actual] = index_of.get(_fold(actual))
            expected_index, predicted_index = folded[expected], folded[actual]
            if expected_index is None:
                skips[_Skip.UNKNOWN_EXPECTED.value] += count
            elif predicted_index is None:
                unknown_predicted[expected_index] += count
            else:
                matrix[predicted_index * n + expected_index] += count

        n_skipped = sum(skips.values())
        n_scored = n_total - n_skipped
        weights = _FWeights.of(self._f_value())
        rows = [matrix[p * n : (p + 1) * n] for p in range(n)]
        per_class: dict[str, PerClassMetrics] = {}
        sum_tp = sum_support = sum_predicted = 0
        for c, name in enumerate(classes):
            tp = rows[c][c]
            predicted = sum(rows[c])
            support = sum(matrix[c::n]) + unknown_predicted[c]
            sum_tp += tp
            sum_support += support
            sum_predicted += predicted
            per_class[name] = PerClassMetrics(
                tp=tp,
                fp=predicted - tp,
                fn=support - tp,
                tn=n_scored - support - predicted + tp,
                support=support,
                precision=_ratio(tp, predicted),
                recall=_ratio(tp, support),
                f_score=weights.f_beta(tp, support, predicted),
            )
        metrics = per_class.values()
        macro = AveragedMetrics(
            precision=math.fsum(m.precision for m in metrics) / n,
            recall=math.fsum(m.recall for m in metrics) / n,
            f_score=math.fsum(m.f_score for m in metrics) / n,
        )
        micro = AveragedMetrics(
            precision=_ratio(sum_tp, sum_predicted),
            recall=_ratio(sum_tp, sum_support),
            f_score=weights.f_beta(sum_tp, sum_support, sum_predicted),
        )
        spec = self._spec
        return ClassificationDetails(
            metric=spec.type,
            averaging=None if isinstance(spec, ConfusionMatrixAggregatorSpec) else spec.averaging,
            classes=list(classes),
            confusion_matrix=rows,
            per_class=per_class,
            micro=micro,
            macro=macro,
            accuracy=_ratio(sum_tp, n_scored),
            n_total=n_total,
            n_scored=n_scored,
            n_skipped=n_skipped,
            n_unknown_predicted=sum(unknown_predicted),
            skip_reasons={
                reason.value: skips[reason.value] for reason in _Skip if skips[reason.value]
            },
            f_value=self._f_value(),
        )

    def _f_value(self) -> float:
        return self._spec.f_value if isinstance(self._spec, FScoreAggregatorSpec) else 1.0

    # -- intervals over entries (vectorised: every resample of a bootstrap at once) --------

    @property
    def code_count(self) -> int:
        """How many item codes there are (see :meth:`codes`).

        One per (expected, predicted or unknown) pair of declared classes, and one for every
        skipped item.
        """
        n = len(self._spec.classes)
        return n * (n + 1) + 1

    def codes(self, items: Iterable[ClassificationItem] | ClassificationTally) -> NDArray[np.int64]:
        """One code per item, in order: what the metrics need to know of it.

        ``expected · (n + 1) + predicted`` for ``n`` declared classes (``predicted = n`` for a
        label that is not a declared class), or ``n · (n + 1)`` for an item that is skipped.
        The counts of the codes hold everything the metrics are computed from. A
        :class:`ClassificationTally` gives its items' codes grouped, not in any order.

        Example:
            >>> evaluator = build_dataset_evaluator(RecallAggregatorSpec(classes=["a", "b"]), "s")
            >>> evaluator.codes([("a", "a"), ("b", "zzz"), ("zzz", "a")]).tolist()
            [0, 5, 6]
        """
        if isinstance(items, ClassificationTally):  # counted: the codes come grouped
            distinct = list(items._counts)
            codes = np.array([self._code(item) for item in distinct], dtype=np.int64)
            return np.repeat(codes, [items._counts[item] for item in distinct])
        known: dict[Any, int] = {}
        coded = []
        for item in items:
            try:
                code = known.get(item)
            except TypeError:  # unhashable (an evaluation with dict details): coded each time
                code = None
            if code is None:
                code = self._code(item)
                with contextlib.suppress(TypeError):
                    known[item] = code
            coded.append(code)
        return np.array(coded, dtype=np.int64)

    def _code(self, item: object) -> int:
        n = len(self._spec.classes)
        labels = _item_key(item)
        if isinstance(labels, _Skip):
            return n * (n + 1)
        expected = self._index_of.get(_fold(labels[0]))
        if expected is None:
            return n * (n + 1)
        predicted = self._index_of.get(_fold(labels[1]), n)
        return expected * (n + 1) + predicted

    def headline_of_counts(
        self, counts: NDArray[np.float64], codes: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        """The headline score of each row of ``counts`` (how often each of ``codes`` occurs).

        The same score :meth:`evaluate` gives for the items those counts stand for (0.0 for a
        row with no scored item), for many rows at once.
        """
        n = len(self._spec.classes)
        expected, predicted = np.divmod(np.asarray(codes), n + 1)
        scored = expected < n
        rows = np.arange(len(codes))

        def by_class(classes: NDArray[np.int64], where: NDArray[np.bool_]) -> NDArray[np.float64]:
            one_hot = np.zeros((len(codes), n))
            one_hot[rows[where], classes[where]] = 1.0
            return counts @ one_hot

        support = by_class(expected, scored)
        predicted_as = by_class(predicted, scored & (predicted < n))
        tp = by_class(expected, scored & (expected == predicted))
        n_scored = counts @ scored.astype(np.float64)
        spec = self._spec
        if isinstance(spec, ConfusionMatrixAggregatorSpec):
            return _ratios(tp.sum(axis=1), n_scored)
        if spec.averaging == "micro":
            tp, support, predicted_as = (
                tp.sum(axis=1, keepdims=True),
                support.sum(axis=1, keepdims=True),
                predicted_as.sum(axis=1, keepdims=True),
            )
        if isinstance(spec, PrecisionAggregatorSpec):
            ratio = _ratios(tp, predicted_as)
        elif isinstance(spec, RecallAggregatorSpec):
            ratio = _ratios(tp, support)
        else:
            weights = _FWeights.of(spec.f_value)
            ratio = np.minimum(
                1.0, _ratios(tp, weights.recall * support + weights.precision * predicted_as)
            )
        averaged: NDArray[np.float64] = ratio.mean(axis=1)
        return averaged

    def bootstrap(
        self,
        items: Iterable[ClassificationItem] | ClassificationTally,
        *,
        clusters: Sequence[int] | None = None,
        resamples: int,
        seed: int | Sequence[int],
    ) -> NDArray[np.float64] | None:
        """The bootstrap distribution of the headline score over the items' entries.

        Each resample draws as many entries as there are (whole clusters with ``clusters``,
        one id per item), with replacement. ``None`` when no item can be scored.

        Example:
            >>> evaluator = build_dataset_evaluator(RecallAggregatorSpec(classes=["a"]), "s")
            >>> samples = evaluator.bootstrap([("a", "a")] * 9 + [("a", "b")], resamples=500,
            ...                               seed=0)
            >>> 0.5 < float(samples.mean()) < 1.0
            True
        """
        codes = self.codes(items)
        if codes.size == 0 or not (codes < self.code_count - 1).any():
            return None
        distinct = np.unique(codes)
        return bootstrap_counts(
            codes,
            lambda counts: self.headline_of_counts(counts, distinct),
            clusters=clusters,
            resamples=resamples,
            seed=seed,
        )

    def paired_bootstrap(
        self,
        old: Sequence[ClassificationItem],
        new: Sequence[ClassificationItem],
        *,
        resamples: int,
        seed: int | Sequence[int],
    ) -> NDArray[np.float64] | None:
        """The bootstrap distribution of ``headline(new) - headline(old)`` over paired entries.

        ``old[i]`` and ``new[i]`` are one entry's results in two runs; each resample draws
        entries, both of its results together. ``None`` when either side scores no item.
        """
        if len(old) != len(new):
            raise ValueError(
                f"paired results must pair up: got {len(old)} old and {len(new)} new items"
            )
        skip = self.code_count - 1
        before = np.array([self._code(item) for item in old], dtype=np.int64)
        after = np.array([self._code(item) for item in new], dtype=np.int64)
        if before.size == 0 or (before == skip).all() or (after == skip).all():
            return None
        joint = before * self.code_count + after
        distinct = np.unique(joint)
        old_codes, new_codes = np.divmod(distinct, self.code_count)

        def difference(counts: NDArray[np.float64]) -> NDArray[np.float64]:
            return self.headline_of_counts(counts, new_codes) - self.headline_of_counts(
                counts, old_codes
            )

        return bootstrap_counts(joint, difference, resamples=resamples, seed=seed)


def _as_spec(spec: AggregatorSpec | Mapping[str, Any]) -> AggregatorSpec:
    if isinstance(spec, Mapping):
        return AGGREGATOR_SPEC_ADAPTER.validate_python(spec)
    return spec


def build_dataset_evaluator(
    spec: AggregatorSpec | Mapping[str, Any], source_evaluator_name: str
) -> ClassificationDatasetEvaluator:
    """Build the dataset evaluator for one aggregator declared on a source evaluator.

    Args:
        spec: The aggregator, as a spec model or as its JSON-shaped mapping (parsed with
            :data:`AGGREGATOR_SPEC_ADAPTER`).
        source_evaluator_name: The name of the per-entry evaluator whose results it reads.

    Returns:
        The evaluator; call :meth:`ClassificationDatasetEvaluator.evaluate` with the results.

    Raises:
        pydantic.ValidationError: ``spec`` is a mapping that is not a valid spec.

    Example:
        >>> build_dataset_evaluator({"type": "fscore", "classes": ["a"], "fValue": 2}, "x").name
        'x::fscore'
    """
    return ClassificationDatasetEvaluator(_as_spec(spec), source_evaluator_name)


_CONFIGS_ADAPTER: Final[TypeAdapter[dict[str, list[AggregatorSpec]]]] = TypeAdapter(
    dict[str, list[AggregatorSpec]]
)
"""Parses every source's aggregators at once, so that errors name the source and position."""


def _suffix(spec: AggregatorSpec) -> str:
    """What tells apart aggregators of one type on one source."""
    if isinstance(spec, ConfusionMatrixAggregatorSpec):
        return ""
    if isinstance(spec, FScoreAggregatorSpec):
        return f".{spec.averaging}.fb{spec.f_value:g}"
    return f".{spec.averaging}"


def compute_dataset_evaluator_results(
    results_by_evaluator: Mapping[str, Sequence[ClassificationItem] | ClassificationTally],
    evaluator_configs: Mapping[str, Sequence[AggregatorSpec | Mapping[str, Any]]],
) -> dict[str, Evaluation]:
    """Run every aggregator declared on every evaluator over that evaluator's results.

    Results are keyed ``"{source}::{type}"``. When one source declares several aggregators of
    the same type, each of those keys gets ``".{averaging}"`` appended, and fscore keys also
    ``".fb{f_value}"`` (e.g. ``"intent::fscore.macro.fb2"``); a type declared once keeps the
    short key.

    Args:
        results_by_evaluator: The per-entry results of each source evaluator, by its name
            (a list, or a :class:`ClassificationTally` of them).
        evaluator_configs: The aggregators declared on each source evaluator, by its name.

    Returns:
        One evaluation per aggregator, in declaration order. A source whose result list is
        empty (a run over no entries) gets exactly what
        :meth:`ClassificationDatasetEvaluator.evaluate` gives for no items: a skipped
        evaluation with zeroed details. A source absent from ``results_by_evaluator`` (most
        likely a misspelt name) gets an errored evaluation under its keys rather than an
        exception.

    Raises:
        ValueError: Two aggregators of one source still share a key after the suffixes (they
            are duplicates, or two confusion matrices).
        pydantic.ValidationError: A spec given as a mapping is invalid; the error location
            names the source, the position in its list and the field.

    Example:
        >>> results = compute_dataset_evaluator_results(
        ...     {"intent": [("a", "a"), ("b", "a")]},
        ...     {"intent": [{"type": "precision", "classes": ["a", "b"]}]},
        ... )
        >>> results["intent::precision"].score
        0.25
    """
    planned = plan_dataset_evaluators(evaluator_configs)
    results: dict[str, Evaluation] = {}
    for key, evaluator in planned.items():
        source = evaluator.source_evaluator_name
        items = results_by_evaluator.get(source)
        if items is None:
            available = ", ".join(repr(name) for name in results_by_evaluator) or "none"
            results[key] = Evaluation.errored(
                EvaluationError(
                    type="NoSourceResults",
                    message=(
                        f"evaluator {source!r} has no results, so its aggregator cannot be "
                        f"computed; check that it ran and that the name matches (results exist "
                        f"for: {available})"
                    ),
                    where="dataset_evaluator",
                ),
                evaluator=key,
            )
            continue
        results[key] = evaluator.evaluate(items).model_copy(update={"evaluator": key})
    return results


def plan_dataset_evaluators(
    evaluator_configs: Mapping[str, Sequence[AggregatorSpec | Mapping[str, Any]]],
) -> dict[str, ClassificationDatasetEvaluator]:
    """Every aggregator declared on every source evaluator, by the key of its result.

    The keys are those of :func:`compute_dataset_evaluator_results`, in declaration order.

    Raises:
        ValueError: Two aggregators of one source would be reported under one key.
        pydantic.ValidationError: A spec given as a mapping is invalid.

    Example:
        >>> list(plan_dataset_evaluators({"intent": [{"type": "recall", "classes": ["a"]}]}))
        ['intent::recall']
    """
    configs = _CONFIGS_ADAPTER.validate_python(evaluator_configs)
    planned: dict[str, ClassificationDatasetEvaluator] = {}
    for source, specs in configs.items():
        type_counts = Counter(spec.type for spec in specs)
        for spec in specs:
            evaluator = ClassificationDatasetEvaluator(spec, source)
            key = evaluator.name + (_suffix(spec) if type_counts[spec.type] > 1 else "")
            if key in planned:
                raise ValueError(
                    f"two aggregators on evaluator {source!r} would both be reported as {key!r}: "
                    f"aggregators of one type on one evaluator must differ in averaging (and, "
                    f"for fscore, in fValue), and a confusion_matrix may be declared only once; "
                    f"remove the duplicate"
                )
            planned[key] = evaluator
    return planned


class DatasetResultsTally:
    """The dataset-level results of a run, computed as its entries finish.

    Each entry's evaluations are given to :meth:`add` as it finishes; only the evaluation by
    each source evaluator (the first of that display name) is counted, in a
    :class:`ClassificationTally`, so memory does not grow with the entries. :meth:`results`
    gives what :func:`compute_dataset_evaluator_results` gives over every entry's evaluation,
    in whatever order and from however many runs (shards) the entries came.

    Args:
        aggregators: The aggregators declared on each source evaluator, by its display name.

    Raises:
        ValueError: Two aggregators of one source would be reported under one key.
        pydantic.ValidationError: A spec given as a mapping is invalid.

    Example:
        >>> tally = DatasetResultsTally({"intent": [{"type": "recall", "classes": ["a", "b"]}]})
        >>> tally.add([Evaluation(score=1.0, evaluator="intent",
        ...                       details={"expected": "a", "actual": "a"})])
        >>> tally.results()["intent::recall"].score
        0.5
    """

    __slots__ = ("_configs", "_tallies")

    def __init__(self, aggregators: Mapping[str, Sequence[AggregatorSpec | Mapping[str, Any]]]):
        self._configs = _CONFIGS_ADAPTER.validate_python(aggregators)
        compute_dataset_evaluator_results({name: [] for name in self._configs}, self._configs)
        self._tallies = {name: ClassificationTally() for name in self._configs}

    def add(self, evaluations: Iterable[Evaluation]) -> None:
        """Count one entry's evaluations (those of its source evaluators)."""
        if not self._tallies:
            return
        seen: set[str] = set()
        for evaluation in evaluations:
            name = evaluation.evaluator
            if name is not None and name not in seen and name in self._tallies:
                seen.add(name)
                self._tallies[name].add(evaluation)

    def results(self) -> dict[str, Evaluation]:
        """Every aggregator over the entries added so far, keyed ``"{source}::{type}"``."""
        if not self._configs:
            return {}
        return compute_dataset_evaluator_results(self._tallies, self._configs)

    def bootstrap(
        self, *, resamples: int, seed: Callable[[str], int | Sequence[int]]
    ) -> dict[str, NDArray[np.float64] | None]:
        """The bootstrap distribution of each result's score over the entries added so far.

        Args:
            resamples: Resamples of the entries.
            seed: The seed of each result's resamples, from its key.

        Returns:
            By key (as :meth:`results`), the score of each resample; ``None`` for a result
            with no scored item.
        """
        if not self._configs:
            return {}
        return {
            key: evaluator.bootstrap(
                self._tallies[evaluator.source_evaluator_name],
                resamples=resamples,
                seed=seed(key),
            )
            for key, evaluator in plan_dataset_evaluators(self._configs).items()
        }
