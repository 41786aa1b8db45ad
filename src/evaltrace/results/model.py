"""The saved result of a run: :class:`RunResult` with one :class:`EntryResult` per entry.

This is the one result format of evaltrace. The runner builds an :class:`EntryResult` for
every input it evaluates; a dataset run gathers them into a :class:`RunResult` and writes it
as ``result.json``; reports, the scorecard, baseline diffs, DataFrames and the pipeline view
all read it. It holds data only (no live capture), carries a ``schema_version``, and
round-trips through JSON exactly::

    RunResult.model_validate_json(result.model_dump_json()) == result

Each entry gets a :class:`CompletionStatus`, derived by :func:`entry_status` with one
precedence (first match wins). A skipped evaluation, and one that gave only a label, is
neither a pass nor a failure: it is left out.

====================== =====================================================================
status                 when
====================== =====================================================================
LOG_FILE_ERROR         the entry's stored trace could not be read (``where="trace_file"``)
ERROR                  the runnable raised, the selector failed, or an evaluator errored
                       (a timeout is not counted here)
TIMED_OUT              the runnable or an evaluator timed out, and nothing else failed
NO_SCORE_LOGGED        no evaluator scored the entry (none ran, or every one skipped it or gave
                       only a label)
SUCCESS                every scored evaluation reached the threshold
FAILED_SCORE_ZERO      every scored evaluation is 0
FAILED_PARTIAL_SCORE   some scored evaluation is below the threshold, not all are 0
====================== =====================================================================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.errors import MissingExtraError
from evaltrace.evals.evaluable import (
    HasExpectation,
    NamedData,
    Unset,
    checked_model,
    encode_unless_json,
    expectation_field,
)
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.llm.calls import ModelUsage, total_usage
from evaltrace.llm.prices import PriceTable
from evaltrace.llm.usage import JudgeUsage
from evaltrace.results.uncertainty import STATISTICS_COLUMNS, RunStatistics
from evaltrace.results.usage import LatencySummary, RunCost, run_cost

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "RECORD_COLUMNS",
    "SCHEMA_VERSION",
    "TIMEOUT_ERROR_TYPES",
    "ComponentRecord",
    "CompletionStatus",
    "EntryResult",
    "EntrySelection",
    "EpochResult",
    "FingerprintDifference",
    "LabelTally",
    "RunFingerprint",
    "RunResult",
    "entry_status",
    "migrate_result",
]

SCHEMA_VERSION: Final = 3
"""The version of the saved format; raised when a field is added, changes meaning or is
removed. Results saved with an earlier version are migrated forward when read
(:func:`migrate_result`), never refused.

* 1: evaltrace 0.1.0.
* 2: ``counts`` (the statuses of every entry) and ``fingerprint``.
* 3: the run's ``statistics``, ``label_counts``, ``judge_usage``, ``usage``, ``latency``,
  ``prices`` and ``cost``; each entry's ``epochs``, ``judge_usage`` and ``usage``; each
  evaluation's ``label``. Every one has a default that says "not recorded", so a result of
  version 2 reads as it was.
"""

TIMEOUT_ERROR_TYPES: Final = frozenset(
    {
        "RunnableTimeoutError",
        "EvaluatorTimeoutError",
        "TimeoutError",
        "APITimeoutError",
        "ReadTimeout",
    }
)
"""Error types that mean "took too long" rather than "failed"."""

RECORD_COLUMNS: Final = (
    "run_id",
    "run",
    "entry_index",
    "entry",
    "description",
    "entry_status",
    "input",
    "output",
    "expectation",
    "evaluator",
    "evaluation_status",
    "score",
    "label",
    "passed",
    "error_type",
    "error_where",
    "error_message",
    "reasoning",
    "duration_s",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost",
)
"""The columns of :meth:`RunResult.to_records`, before the component and ``meta.*`` ones."""


class CompletionStatus(StrEnum):
    """How one entry ended; see the module documentation for the precedence."""

    SUCCESS = "SUCCESS"
    FAILED_PARTIAL_SCORE = "FAILED_PARTIAL_SCORE"
    FAILED_SCORE_ZERO = "FAILED_SCORE_ZERO"
    TIMED_OUT = "TIMED_OUT"
    NO_SCORE_LOGGED = "NO_SCORE_LOGGED"
    LOG_FILE_ERROR = "LOG_FILE_ERROR"
    ERROR = "ERROR"

    @property
    def passed(self) -> bool:
        """Whether this status counts as a pass."""
        return self is CompletionStatus.SUCCESS


def entry_status(
    evaluations: Sequence[Evaluation],
    error: EvaluationError | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> CompletionStatus:
    """The status of one entry from its evaluations and its run's error.

    Args:
        evaluations: One evaluation per evaluator.
        error: What failed before any evaluator ran (the runnable, the selector, reading the
            stored trace), if anything.
        threshold: The score an evaluation must reach to pass.

    Returns:
        The first status of the precedence table (module documentation) that applies.

    Example:
        >>> entry_status([Evaluation(score=1.0), Evaluation(score=0.0)])
        <CompletionStatus.FAILED_PARTIAL_SCORE: 'FAILED_PARTIAL_SCORE'>
    """
    # One pass over the scores while nothing errored (the usual entry): the status is worked
    # out for every entry of a run (bench_runner.py's c=50 figure, bench/README.md).
    errored = error is not None
    any_score, passing, zero = False, True, True
    if not errored:
        for evaluation in evaluations:
            if evaluation.error is not None:
                errored = True
                break
            score = evaluation.score
            if score is not None:
                any_score = True
                passing = passing and score >= threshold
                zero = zero and score == 0.0
    if errored:
        errors = [e.error for e in evaluations if e.error is not None]
        if error is not None:
            errors.insert(0, error)
        if any(item.where == "trace_file" for item in errors):
            return CompletionStatus.LOG_FILE_ERROR
        if any(item.type not in TIMEOUT_ERROR_TYPES for item in errors):
            return CompletionStatus.ERROR
        return CompletionStatus.TIMED_OUT
    if not any_score:
        return CompletionStatus.NO_SCORE_LOGGED
    if passing:
        return CompletionStatus.SUCCESS
    if zero:
        return CompletionStatus.FAILED_SCORE_ZERO
    return CompletionStatus.FAILED_PARTIAL_SCORE


class LabelTally:
    """Counts the labels each evaluator gives, entry by entry, as a run's entries finish.

    Example:
        >>> tally = LabelTally()
        >>> tally.add([Evaluation(label="positive", evaluator="tone")])
        >>> tally.counts()
        {'tone': {'positive': 1}}
    """

    def __init__(self) -> None:
        self._counts: dict[str, Counter[str]] = {}

    def add(self, evaluations: Iterable[Evaluation]) -> None:
        """Count the labels of one entry's evaluations."""
        for evaluation in evaluations:
            if evaluation.label is not None:
                name = evaluation.evaluator or "?"
                self._counts.setdefault(name, Counter())[evaluation.label] += 1

    def counts(self) -> dict[str, dict[str, int]]:
        """Each evaluator's labels with how many entries got each, most frequent first."""
        return {name: dict(counter.most_common()) for name, counter in self._counts.items()}


def _plain_details(evaluation: Evaluation) -> Evaluation:
    """The evaluation with model details as JSON data, so that it saves and loads the same."""
    if isinstance(evaluation.details, BaseModel):
        return evaluation.model_copy(update={"details": evaluation.details.model_dump(mode="json")})
    return evaluation


class ComponentRecord(BaseModel):
    """One call of one component (one span) during the run of an entry.

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


class EpochResult(BaseModel):
    """One run of the app for an entry run several times (one epoch), scored on its own.

    Example:
        >>> evaluations = [Evaluation(score=1.0)]
        >>> EpochResult(epoch=1, evaluations=evaluations, status=entry_status(evaluations)).status
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """

    model_config = ConfigDict(frozen=True)

    epoch: int = Field(ge=0)
    """Which run of the entry (from 0)."""
    output: JsonValue = None
    """What the runnable returned this time."""
    evaluations: list[Evaluation] = Field(default_factory=list)
    """One evaluation per evaluator, of this run."""
    error: EvaluationError | None = None
    """What failed before the evaluators ran this time, if anything."""
    status: CompletionStatus = CompletionStatus.NO_SCORE_LOGGED
    """How this run ended."""
    duration_s: float = 0.0
    """Wall time of this run of the runnable."""
    trace_ids: list[str] = Field(default_factory=list)
    """This run's traces."""

    @field_validator("output", mode="wrap")
    @classmethod
    def _encode_output(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return encode_unless_json(value, handler)


class EntryResult(HasExpectation):
    """Everything kept about one entry (one input) of a run.

    Example:
        >>> entry = EntryResult(index=0, name="0", evaluations=[Evaluation(score=1.0)])
        >>> entry.status
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    index: int = Field(ge=0)
    """The position of the entry in the run."""
    name: str
    """The entry's name (a dataset entry's ``name``, else its position)."""
    description: str | None = None
    """A human-readable label of the entry."""
    input: JsonValue = None
    """What the runnable was given (encoded as JSON data)."""
    eval_input: list[NamedData] = Field(default_factory=list)
    """The named inputs served to ``wrap(..., purpose="input")``."""
    output: JsonValue = None
    """What the runnable returned (``None`` when it raised or was not run)."""
    eval_output: list[NamedData] | None = None
    """What the evaluators scored (``None`` when nothing could be selected)."""
    expectation: JsonValue | Unset = expectation_field()
    """The expectation; :data:`~evaltrace.UNSET` (left out of the JSON) when there was none."""
    eval_metadata: dict[str, JsonValue] | None = None
    """Extra data the entry gave its evaluators."""
    evaluations: list[Evaluation] = Field(default_factory=list)
    """One evaluation per evaluator, in the run's evaluator order."""
    error: EvaluationError | None = None
    """What failed before the evaluators ran: the runnable, the selector, the stored trace."""
    status: CompletionStatus = CompletionStatus.NO_SCORE_LOGGED
    """How the entry ended (derived from the evaluations unless given)."""
    started_at: datetime | None = None
    """When the entry started (UTC)."""
    duration_s: float = 0.0
    """Wall time of the run of the runnable (0 when it was not run)."""
    trace_ids: list[str] = Field(default_factory=list)
    """The entry's traces (32 hex digits), as stored in the run's ``traces.jsonl``."""
    components: dict[str, list[ComponentRecord]] = Field(default_factory=dict)
    """Every span of the run by name, each name's calls in the order they started (kept by
    pipeline evaluation, for per-component metrics; empty otherwise)."""
    epochs: list[EpochResult] = Field(default_factory=list)
    """Each run of the app, scored on its own, when the entry ran several times (``epochs``);
    then :attr:`evaluations` are their reductions, :attr:`output` the first run's. Empty for
    an entry run once."""
    judge_usage: dict[str, JudgeUsage] = Field(default_factory=dict)
    """What the entry's judge calls spent, by model: requests and tokens (input, output,
    from the provider's prompt cache), and the requests the judge cache answered."""
    usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """The app's own model calls, by model: how many, and their input, output and cached
    tokens, read from the captured model-call spans (every epoch's, for an entry run
    several times). The judges' calls are in :attr:`judge_usage`, never here."""

    @field_validator("evaluations")
    @classmethod
    def _plain_evaluation_details(cls, evaluations: list[Evaluation]) -> list[Evaluation]:
        return [_plain_details(evaluation) for evaluation in evaluations]

    @field_validator("input", "output", "expectation", "eval_metadata", mode="wrap")
    @classmethod
    def _encode_values(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return encode_unless_json(value, handler)

    def model_post_init(self, context: Any) -> None:
        """Derive :attr:`status` when it was not given."""
        if "status" not in self.model_fields_set:
            object.__setattr__(self, "status", entry_status(self.evaluations, self.error))

    @classmethod
    def from_checked(cls, **fields: Any) -> EntryResult:
        """An entry of values that are valid already, made without validating them again.

        For the engine, whose values are JSON data read from spans (or checked where they
        came from) and models made by their own validation: the entry equals the one
        ``EntryResult(**fields)`` makes of them, for a fifth of the cost. Details of an
        evaluation that are a model become data, and the status is derived when not given,
        as validation does.

        Example:
            >>> scored = [Evaluation(score=1.0)]
            >>> EntryResult.from_checked(index=0, name="0", evaluations=scored) == EntryResult(
            ...     index=0, name="0", evaluations=scored
            ... )
            True
        """
        given = tuple(fields)
        if "evaluations" in fields:
            fields["evaluations"] = [_plain_details(item) for item in fields["evaluations"]]
        if "status" not in fields:
            fields["status"] = entry_status(fields.get("evaluations", ()), fields.get("error"))
        # Validation is a quarter of scoring a stored trace (bench_stored.py, bench/README.md).
        return checked_model(cls, fields, given=given)

    def evaluation(self, evaluator: str) -> Evaluation | None:
        """The evaluation by the evaluator called ``evaluator``, if the entry has one."""
        for evaluation in self.evaluations:
            if evaluation.evaluator == evaluator:
                return evaluation
        return None


class EntrySelection(BaseModel):
    """Which of a dataset's entries a run was given: its entry filter and its shard.

    Recorded so that the results of shards can be merged (they must come from the same
    selection, and together cover it) and an interrupted run resumed (on the same selection).

    Example:
        >>> EntrySelection(entries=10, digest="ab" * 32, shard=2, shards=3).label
        'shard 2/3 of 10 entries'
    """

    model_config = ConfigDict(frozen=True)

    entries: int = Field(ge=0)
    """How many entries the dataset's entry filter selected, across every shard."""
    digest: str
    """SHA-256 (hex) of those entries' names in dataset order: the same selection of the same
    dataset gives the same digest on every machine."""
    shard: int = Field(default=1, ge=1)
    """This run's shard, from 1 to :attr:`shards`."""
    shards: int = Field(default=1, ge=1)
    """How many shards the selection was split into (1: not sharded)."""
    entry_filter: str | None = None
    """The text entry filter (``-k``), if one was given as text."""

    @property
    def label(self) -> str:
        """How messages name it: ``"shard 2/3 of 10 entries"`` or ``"10 entries"``."""
        whole = f"{self.entries} entr{'y' if self.entries == 1 else 'ies'}"
        return f"shard {self.shard}/{self.shards} of {whole}" if self.shards > 1 else whole


class FingerprintDifference(BaseModel):
    """One thing two runs' fingerprints disagree on (:meth:`RunFingerprint.differences`)."""

    model_config = ConfigDict(frozen=True)

    field: str
    """The fingerprint's field: ``"threshold"``, ``"evaluators"``, ``"code"``, ..."""
    mine: JsonValue
    """Its value in the fingerprint asked."""
    theirs: JsonValue
    """Its value in the other fingerprint."""

    def describe(self, mine: str, theirs: str) -> str:
        """Say what differs, naming where each value is from.

        Args:
            mine: What holds :attr:`mine` (a folder, "this run").
            theirs: What holds :attr:`theirs`.

        Example:
            >>> FingerprintDifference(field="threshold", mine=0.5, theirs=0.9).describe("a", "b")
            'threshold differs: 0.5 in a and 0.9 in b'
        """
        if self.field == "code":
            changed = sorted(
                name
                for name in {*_names(self.mine), *_names(self.theirs)}
                if _get(self.mine, name) != _get(self.theirs, name)
            )
            return f"code differs: {', '.join(changed)} changed between {mine} and {theirs}"
        if self.field in _HASHED_FIELDS:
            return (
                f"{self.field} differ{'' if self.field.endswith('s') else 's'}: "
                f"{_HASHED_FIELDS[self.field]} between {mine} and {theirs}"
            )
        return f"{self.field} differs: {self.mine} in {mine} and {self.theirs} in {theirs}"


def _names(value: JsonValue) -> list[str]:
    return list(value) if isinstance(value, dict) else []


def _get(value: JsonValue, name: str) -> JsonValue:
    return value.get(name) if isinstance(value, dict) else None


_HASHED_FIELDS: Final = {
    "dataset": "its entries were edited",
    "evaluators": "the evaluators or their arguments were edited",
}
"""The fields that hold a hash, and what a different hash means."""


class RunFingerprint(BaseModel):
    """What makes the results of two runs comparable, recorded in ``run.json``.

    Shards merge only when their fingerprints agree (but for the shard), and a run resumes
    only when its fingerprint agrees with the interrupted one's: entries scored by other
    evaluators, another threshold or another version of the dataset would mix under one
    header. The hashes are SHA-256 of canonical JSON, so they are the same on every machine.

    Example:
        >>> a = RunFingerprint(evaltrace="0.1.0", dataset="d", evaluators="e", threshold=0.5)
        >>> [d.field for d in a.differences(a.model_copy(update={"threshold": 0.9}))]
        ['threshold']
    """

    model_config = ConfigDict(frozen=True)

    evaltrace: str
    """The version of evaltrace that made the run."""
    dataset: str
    """SHA-256 of the dataset's entries (every entry, as loaded)."""
    evaluators: str
    """SHA-256 of the evaluators: the dataset's evaluator specs (names, arguments, aggregators),
    or the names of the evaluators given in code."""
    code: dict[str, str] = Field(default_factory=dict)
    """SHA-256 of each file of the user's code the dataset names (its runnable and
    evaluators), by the reference's file or module."""
    runnable: str | None = None
    """The runnable's name."""
    threshold: float
    """The score each evaluation had to reach."""
    timeout: float | None = None
    """Seconds allowed for each run and each evaluation."""
    entry_filter: str | None = None
    """The entry filter, as text."""
    from_trace: str | None = None
    """The selector of what was scored, by name."""
    shard: str = "1/1"
    """The shard, ``"K/N"``."""
    epochs: int = 1
    """How many times each entry's app was run."""
    reducer: str = "mean"
    """How an entry's runs were reduced to one evaluation per evaluator."""

    def differences(
        self, other: RunFingerprint, *, ignore: Iterable[str] = ()
    ) -> list[FingerprintDifference]:
        """The fields whose values differ between this fingerprint and ``other``.

        Args:
            other: The fingerprint to compare with.
            ignore: Fields not compared (``"shard"`` between the shards of one run).
        """
        skipped = set(ignore)
        return [
            FingerprintDifference(field=name, mine=getattr(self, name), theirs=getattr(other, name))
            for name in type(self).model_fields
            if name not in skipped and getattr(self, name) != getattr(other, name)
        ]


class RunResult(BaseModel):
    """The saved result of one run: its entries, dataset-level results, timing and settings.

    Example:
        >>> result = RunResult(name="demo", entries=[EntryResult(index=0, name="0")])
        >>> RunResult.model_validate_json(result.model_dump_json()) == result
        True
    """

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[3] = SCHEMA_VERSION
    """The version of this format (older ones are migrated when read)."""
    run_id: str = ""
    """A sortable id unique to the run (the results folder's name)."""
    name: str
    """What was run: the dataset's name, or the runnable's."""
    source: str | None = None
    """The dataset file, when the run came from one."""
    evaluators: list[str] = Field(default_factory=list)
    """The evaluators' display names, in order."""
    entries: list[EntryResult] = Field(default_factory=list)
    """One result per entry, in entry order. A result returned by a run that streamed its
    entries to its folder (``keep_entries=False``) holds none, or only those a report lists;
    :attr:`counts` always tells of every entry."""
    counts: dict[CompletionStatus, int] = Field(default_factory=dict)
    """How many entries ended with each status (statuses with none are left out); derived
    from :attr:`entries` when not given."""
    label_counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    """How many entries each evaluator (by display name) gave each label, over every entry
    like :attr:`counts` (evaluators that gave no label are left out); derived from
    :attr:`entries` when not given."""
    dataset_results: dict[str, Evaluation] = Field(default_factory=dict)
    """Dataset-level results (precision, recall, F-beta, ...), keyed ``"{evaluator}::{type}"``."""
    started_at: datetime | None = None
    """When the run started (UTC)."""
    finished_at: datetime | None = None
    """When the run finished (UTC)."""
    duration_s: float = 0.0
    """Wall time of the whole run."""
    threshold: float = DEFAULT_THRESHOLD
    """The score an evaluation had to reach to pass."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """How the run was made (concurrency, timeout, judge model, ...)."""
    errors: list[EvaluationError] = Field(default_factory=list)
    """What failed outside any entry: the runnable's ``setup`` or ``teardown``."""
    interrupted: bool = False
    """Whether the run was stopped (Ctrl-C, cancelled) before every entry finished; then
    ``entries`` holds the ones that finished."""
    selection: EntrySelection | None = None
    """Which of the dataset's entries the run was given (its shard among them); ``None`` for
    a run that did not come from a dataset."""
    aggregators: dict[str, list[dict[str, JsonValue]]] = Field(default_factory=dict)
    """The dataset-level aggregators declared on each evaluator (by its display name), as a
    dataset file writes them: what :attr:`dataset_results` was computed from, kept so that
    merging shards can compute them again over every entry."""
    fingerprint: RunFingerprint | None = None
    """What makes the run comparable with another (dataset, evaluators, code, settings);
    ``None`` for a run that did not come from a dataset, or one saved before fingerprints."""
    statistics: RunStatistics | None = None
    """Each evaluator's mean score and pass rate with their intervals, standard error and
    ``n``, and each dataset-level result's interval (:mod:`evaltrace.results.uncertainty`);
    ``None`` for a run saved before statistics, or made with ``resamples=0``."""
    judge_usage: dict[str, JudgeUsage] = Field(default_factory=dict)
    """What the judge calls of every entry spent, by model (the entries' ``judge_usage``
    added up, those not kept in :attr:`entries` included): requests, tokens, and the judge
    cache's hits, misses and the tokens its hits saved."""
    usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """The app's model calls of every entry, by model (the entries' ``usage`` added up,
    those not kept in :attr:`entries` included)."""
    latency: LatencySummary | None = None
    """The app's wall time over the entries that ran it: mean, p50, p95, p99 and max;
    ``None`` when no entry ran the app (or for a run saved before latencies)."""
    prices: PriceTable | None = None
    """The price table the run was given (``--prices``, ``EVALTRACE_PRICES``, ``prices=``);
    ``None`` without one."""
    cost: RunCost | None = None
    """What the app's and the judges' calls cost by :attr:`prices`; ``None`` (unknown,
    never zero) without a price table."""

    @field_validator("dataset_results")
    @classmethod
    def _plain_dataset_details(cls, results: dict[str, Evaluation]) -> dict[str, Evaluation]:
        return {key: _plain_details(evaluation) for key, evaluation in results.items()}

    def model_post_init(self, context: Any) -> None:
        """Derive :attr:`counts` and :attr:`label_counts` from the entries when not given."""
        if "counts" not in self.model_fields_set and self.entries:
            counts = dict(Counter(entry.status for entry in self.entries))
            object.__setattr__(self, "counts", counts)  # frozen: set once, as it is made
        if "label_counts" not in self.model_fields_set and self.entries:
            tally = LabelTally()
            for entry in self.entries:
                tally.add(entry.evaluations)
            object.__setattr__(self, "label_counts", tally.counts())

    @property
    def status_counts(self) -> dict[CompletionStatus, int]:
        """How many entries ended with each status (statuses with none are left out)."""
        return dict(self.counts)

    @property
    def entry_count(self) -> int:
        """How many entries the run has, held in :attr:`entries` or not."""
        return sum(self.counts.values())

    @property
    def passed(self) -> bool:
        """Whether the run completed without errors and every entry and dataset-level result did.

        A dataset-level result that errored is a metric that could not be computed.
        """
        counts = self.counts
        return (
            not self.interrupted
            and not self.errors
            and bool(counts)
            and all(status.passed for status in counts)
            and not any(result.error is not None for result in self.dataset_results.values())
        )

    def priced(self, prices: PriceTable) -> RunResult:
        """This run with its cost computed again by ``prices`` (``--prices`` of a report).

        Example:
            >>> from evaltrace.llm.prices import ModelPrice
            >>> table = PriceTable(models={"m": ModelPrice(input=1.0, output=1.0)})
            >>> run = RunResult(name="demo", usage={"m": ModelUsage(calls=1, input_tokens=10**6)})
            >>> run.priced(table).cost.total
            1.0
        """
        cost = run_cost(prices, self.usage, self.judge_usage)
        return self.model_copy(update={"prices": prices, "cost": cost})

    def to_records(self) -> list[dict[str, Any]]:
        """The run as flat rows: one per entry and evaluation, in entry and evaluator order.

        Each row has the :data:`RECORD_COLUMNS` (``input``, ``output`` and ``expectation``
        as saved, ``None`` for an absent expectation; ``duration_s`` the entry's latency;
        ``passed`` whether the evaluation reached the run's threshold; ``model_calls`` and
        ``input_tokens``/``output_tokens``/``cached_tokens`` the app's model calls;
        ``cost`` what they cost by the run's price table, ``None`` when that is unknown);
        then, for a run that
        kept its components (a pipeline evaluation), ``<component>.input`` and
        ``<component>.output`` of each component's last call; then one ``meta.<key>`` column
        per key of any entry's ``eval_metadata`` (nested objects flattened with dots:
        ``meta.source.page``). A column an entry lacks is ``None`` in its rows. An entry with
        no evaluation (its runnable failed before any evaluator ran, or nothing scores it)
        still gives one row, with ``evaluator=None`` and the entry's error.

        Example:
            >>> entry = EntryResult(index=0, name="a", eval_metadata={"topic": "geo"},
            ...                     evaluations=[Evaluation(score=1.0, evaluator="exact")])
            >>> row = RunResult(name="demo", entries=[entry]).to_records()[0]
            >>> row["entry"], row["evaluator"], row["score"], row["meta.topic"]
            ('a', 'exact', 1.0, 'geo')
        """
        metadata = [_flat_metadata(entry.eval_metadata or {}) for entry in self.entries]
        meta_columns = sorted({key for flat in metadata for key in flat})
        components = list(
            dict.fromkeys(name for entry in self.entries for name in entry.components)
        )
        rows: list[dict[str, Any]] = []
        prices = self.prices
        for entry, flat in zip(self.entries, metadata, strict=True):
            calls_made = total_usage(entry.usage)
            spent = {
                "model_calls": calls_made.calls,
                "input_tokens": calls_made.input_tokens,
                "output_tokens": calls_made.output_tokens,
                "cached_tokens": calls_made.cached_tokens,
                "cost": None if prices is None else prices.total(entry.usage),
            }
            common = {
                "run_id": self.run_id,
                "run": self.name,
                "entry_index": entry.index,
                "entry": entry.name,
                "description": entry.description,
                "entry_status": entry.status.value,
                "input": entry.input,
                "output": entry.output,
                "expectation": entry.expectation if entry.has_expectation else None,
            }
            calls: dict[str, Any] = {}
            for name in components:
                last = entry.components.get(name)
                call = last[-1] if last else None
                calls[f"{name}.input"] = call.input if call is not None else None
                calls[f"{name}.output"] = call.output if call is not None else None
            meta = {column: flat.get(column) for column in meta_columns}
            evaluations: Sequence[Evaluation | None] = entry.evaluations or [None]
            for evaluation in evaluations:
                error = entry.error if evaluation is None else evaluation.error
                rows.append(
                    {
                        **common,
                        "evaluator": None if evaluation is None else evaluation.evaluator,
                        "evaluation_status": None if evaluation is None else evaluation.status,
                        "score": None if evaluation is None else evaluation.score,
                        "label": None if evaluation is None else evaluation.label,
                        "passed": evaluation is not None and evaluation.passed(self.threshold),
                        "error_type": None if error is None else error.type,
                        "error_where": None if error is None else error.where,
                        "error_message": None if error is None else error.message,
                        "reasoning": None if evaluation is None else evaluation.reasoning,
                        "duration_s": entry.duration_s,
                        **spent,
                        **calls,
                        **meta,
                    }
                )
        return rows

    def to_dataframe(self) -> pd.DataFrame:
        """The rows of :meth:`to_records` as a pandas DataFrame (needs ``evaltrace[pandas]``).

        Example:
            >>> frame = result.to_dataframe()  # doctest: +SKIP
            >>> frame.groupby("meta.topic")["score"].mean()  # doctest: +SKIP

        Raises:
            MissingExtraError: pandas is not installed.
        """
        try:
            import pandas
        except ImportError:
            raise MissingExtraError("RunResult.to_dataframe()", "pandas", "pandas") from None
        records = self.to_records()
        columns = list(records[0]) if records else list(RECORD_COLUMNS)
        return pandas.DataFrame.from_records(records, columns=columns)

    def statistics_dataframe(self) -> pd.DataFrame:
        """The run's statistics as a pandas DataFrame (needs ``evaltrace[pandas]``).

        One row per evaluator and per dataset-level result. The columns are ``run_id``,
        ``run`` and the :data:`~evaltrace.results.uncertainty.STATISTICS_COLUMNS` (``mean`` with
        ``mean_low``/``mean_high``, ``pass_rate`` with its bounds, ``n``, ...); no rows for
        a run without statistics. The figures are the run's, not the entries' rows of
        :meth:`to_dataframe`: join the two on ``run_id`` and ``evaluator``/``name``.

        Example:
            >>> frame = result.statistics_dataframe()  # doctest: +SKIP
            >>> frame.set_index("name")[["n", "mean", "mean_low", "mean_high"]]  # doctest: +SKIP

        Raises:
            MissingExtraError: pandas is not installed.
        """
        try:
            import pandas
        except ImportError:
            raise MissingExtraError(
                "RunResult.statistics_dataframe()", "pandas", "pandas"
            ) from None
        records = self.statistics.records() if self.statistics is not None else []
        rows = [{"run_id": self.run_id, "run": self.name, **record} for record in records]
        return pandas.DataFrame.from_records(rows, columns=["run_id", "run", *STATISTICS_COLUMNS])


def _flat_metadata(metadata: Mapping[str, JsonValue], prefix: str = "meta.") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"meta.a.b": 1}``; lists and scalars are kept as they are."""
    flat: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, dict) and value:
            flat.update(_flat_metadata(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def migrate_result(data: dict[str, Any]) -> dict[str, Any]:
    """A saved result's data (``result.json``, ``run.json``), migrated to :data:`SCHEMA_VERSION`.

    Each version's step is applied in turn; a result of this version is returned as it is.

    Raises:
        ValueError: The version is newer than this evaltrace knows, or not a version.

    Example:
        >>> migrate_result({"schema_version": 1, "name": "old"})["schema_version"]
        3
    """
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"schema_version {version!r} is not a version of the saved format")
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"it was saved with schema_version {version}, by a newer evaltrace (this one reads "
            f"up to {SCHEMA_VERSION}): upgrade evaltrace to read it"
        )
    if version == 1:  # 0.1.0: counts are derived from the entries, no fingerprint was made
        data, version = {**data, "schema_version": 2}, 2
    if version == 2:  # no statistics, usage or labels were recorded: the defaults say so
        data, version = {**data, "schema_version": 3}, 3
    return data
