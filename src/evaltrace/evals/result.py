"""The saved result of a run: :class:`RunResult` with one :class:`EntryResult` per entry.

This is the one result format of evaltrace. The runner builds an :class:`EntryResult` for
every input it evaluates; a dataset run gathers them into a :class:`RunResult` and writes it
as ``result.json``; reports, the scorecard, baseline diffs, DataFrames and the pipeline view
all read it. It holds data only (no live capture), carries a ``schema_version``, and
round-trips through JSON exactly::

    RunResult.model_validate_json(result.model_dump_json()) == result

Each entry gets a :class:`CompletionStatus`, derived by :func:`entry_status` with one
precedence (first match wins):

====================== =====================================================================
status                 when
====================== =====================================================================
LOG_FILE_ERROR         the entry's stored trace could not be read (``where="trace_file"``)
ERROR                  the runnable raised, the selector failed, or an evaluator errored
                       (a timeout is not counted here)
TIMED_OUT              the runnable or an evaluator timed out, and nothing else failed
NO_SCORE_LOGGED        no evaluator scored the entry (none ran, or every one skipped it)
SUCCESS                every scored evaluation reached the threshold
FAILED_SCORE_ZERO      every scored evaluation is 0
FAILED_PARTIAL_SCORE   some scored evaluation is below the threshold, not all are 0
====================== =====================================================================
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr, field_validator

from evaltrace.errors import MissingExtraError
from evaltrace.evals.evaluable import UNSET, HasExpectation, NamedData, Unset
from evaltrace.evals.evaluation import Evaluation, EvaluationError

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
    "RunResult",
    "entry_status",
]

SCHEMA_VERSION: Final = 1
"""The version of the saved format; raised when a field changes meaning or is removed."""

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
    "evaluator",
    "evaluation_status",
    "score",
    "passed",
    "error_type",
    "error_where",
    "error_message",
    "reasoning",
    "duration_s",
)
"""The columns of :meth:`RunResult.to_records`, before the ``meta.*`` columns."""


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
    threshold: float = 0.5,
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
    errors = [e.error for e in evaluations if e.error is not None]
    if error is not None:
        errors.insert(0, error)
    if any(item.where == "trace_file" for item in errors):
        return CompletionStatus.LOG_FILE_ERROR
    if any(item.type not in TIMEOUT_ERROR_TYPES for item in errors):
        return CompletionStatus.ERROR
    if errors:
        return CompletionStatus.TIMED_OUT
    scores = [e.score for e in evaluations if e.score is not None]
    if not scores:
        return CompletionStatus.NO_SCORE_LOGGED
    if all(score >= threshold for score in scores):
        return CompletionStatus.SUCCESS
    if all(score == 0.0 for score in scores):
        return CompletionStatus.FAILED_SCORE_ZERO
    return CompletionStatus.FAILED_PARTIAL_SCORE


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
    expectation: JsonValue | Unset = UNSET
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

    @field_validator("evaluations")
    @classmethod
    def _plain_evaluation_details(cls, evaluations: list[Evaluation]) -> list[Evaluation]:
        return [_plain_details(evaluation) for evaluation in evaluations]

    def model_post_init(self, context: Any) -> None:
        """Derive :attr:`status` when it was not given."""
        if "status" not in self.model_fields_set:
            object.__setattr__(self, "status", entry_status(self.evaluations, self.error))

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


class RunResult(BaseModel):
    """The saved result of one run: its entries, dataset-level results, timing and settings.

    Example:
        >>> result = RunResult(name="demo", entries=[EntryResult(index=0, name="0")])
        >>> RunResult.model_validate_json(result.model_dump_json()) == result
        True
    """

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    """The version of this format."""
    run_id: str = ""
    """A sortable id unique to the run (the results folder's name)."""
    name: str
    """What was run: the dataset's name, or the runnable's."""
    source: str | None = None
    """The dataset file, when the run came from one."""
    evaluators: list[str] = Field(default_factory=list)
    """The evaluators' display names, in order."""
    entries: list[EntryResult] = Field(default_factory=list)
    """One result per entry, in entry order."""
    dataset_results: dict[str, Evaluation] = Field(default_factory=dict)
    """Dataset-level results (precision, recall, F-beta, ...), keyed ``"{evaluator}::{type}"``."""
    started_at: datetime | None = None
    """When the run started (UTC)."""
    finished_at: datetime | None = None
    """When the run finished (UTC)."""
    duration_s: float = 0.0
    """Wall time of the whole run."""
    threshold: float = 0.5
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

    @field_validator("dataset_results")
    @classmethod
    def _plain_dataset_details(cls, results: dict[str, Evaluation]) -> dict[str, Evaluation]:
        return {key: _plain_details(evaluation) for key, evaluation in results.items()}

    _tally: dict[CompletionStatus, int] | None = PrivateAttr(default=None)
    """Set on a :meth:`summarized` result: the statuses of every entry, listed or not."""

    @property
    def status_counts(self) -> dict[CompletionStatus, int]:
        """How many entries ended with each status (statuses with none are left out)."""
        if self._tally is not None:
            return dict(self._tally)
        return dict(Counter(entry.status for entry in self.entries))

    @property
    def entry_count(self) -> int:
        """How many entries the run has (of a :meth:`summarized` result, listed or not)."""
        return len(self.entries) if self._tally is None else sum(self._tally.values())

    @property
    def passed(self) -> bool:
        """Whether the run completed without errors, has entries, and every one succeeded."""
        counts = self.status_counts
        return (
            not self.interrupted
            and not self.errors
            and bool(counts)
            and all(status.passed for status in counts)
        )

    def summarized(
        self, entries: Iterable[EntryResult], *, all_up_to: int, failing_up_to: int | None
    ) -> RunResult:
        """This run holding only the entries a report lists, and the statuses of all of them.

        For runs too large to hold: ``entries`` (such as :func:`~evaltrace.results.iter_entries`
        of the run's folder) is read once. The result keeps every entry when there are at most
        ``all_up_to``, else only the ones that did not pass (the first ``failing_up_to`` of
        them in entry order; all with ``None``). Its :attr:`status_counts`, :attr:`entry_count`
        and :attr:`passed` are those of every entry; it is for reading, not for saving.

        Example:
            >>> ok = EntryResult(index=0, name="a", evaluations=[Evaluation(score=1.0)])
            >>> bad = EntryResult(index=1, name="b", evaluations=[Evaluation(score=0.0)])
            >>> small = RunResult(name="r").summarized([bad, ok], all_up_to=1, failing_up_to=5)
            >>> [entry.name for entry in small.entries], small.entry_count, small.passed
            (['b'], 2, False)
        """
        tally: Counter[CompletionStatus] = Counter()
        passing: list[EntryResult] = []
        failing: list[tuple[int, EntryResult]] = []  # a heap of the first ones by -index
        for entry in entries:
            tally[entry.status] += 1
            if entry.status.passed:
                if tally.total() <= all_up_to:
                    passing.append(entry)
            elif failing_up_to is None or len(failing) < failing_up_to:
                heapq.heappush(failing, (-entry.index, entry))
            elif failing_up_to > 0 and entry.index < -failing[0][0]:
                heapq.heapreplace(failing, (-entry.index, entry))
        kept = [entry for _, entry in failing]
        if tally.total() <= all_up_to:
            kept += passing
        kept.sort(key=lambda entry: entry.index)
        summary = self.model_copy(update={"entries": kept})
        summary._tally = dict(tally)
        return summary

    def to_records(self) -> list[dict[str, Any]]:
        """The run as flat rows: one per entry and evaluation, in entry and evaluator order.

        Each row has the :data:`RECORD_COLUMNS` (``duration_s`` is the entry's latency,
        ``passed`` whether the evaluation reached the run's threshold) and one ``meta.<key>``
        column per key of any entry's ``eval_metadata`` (nested objects flattened with dots:
        ``meta.source.page``; ``None`` where an entry lacks the key). An entry with no
        evaluation (its runnable failed before any evaluator ran) still gives one row, with
        ``evaluator=None`` and the entry's error.

        Example:
            >>> entry = EntryResult(index=0, name="a", eval_metadata={"topic": "geo"},
            ...                     evaluations=[Evaluation(score=1.0, evaluator="exact")])
            >>> row = RunResult(name="demo", entries=[entry]).to_records()[0]
            >>> row["entry"], row["evaluator"], row["score"], row["meta.topic"]
            ('a', 'exact', 1.0, 'geo')
        """
        metadata = [_flat_metadata(entry.eval_metadata or {}) for entry in self.entries]
        meta_columns = sorted({key for flat in metadata for key in flat})
        rows: list[dict[str, Any]] = []
        for entry, flat in zip(self.entries, metadata, strict=True):
            common = {
                "run_id": self.run_id,
                "run": self.name,
                "entry_index": entry.index,
                "entry": entry.name,
                "description": entry.description,
                "entry_status": entry.status.value,
            }
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
                        "passed": evaluation is not None and evaluation.passed(self.threshold),
                        "error_type": None if error is None else error.type,
                        "error_where": None if error is None else error.where,
                        "error_message": None if error is None else error.message,
                        "reasoning": None if evaluation is None else evaluation.reasoning,
                        "duration_s": entry.duration_s,
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


def _flat_metadata(metadata: Mapping[str, JsonValue], prefix: str = "meta.") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"meta.a.b": 1}``; lists and scalars are kept as they are."""
    flat: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, dict) and value:
            flat.update(_flat_metadata(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
