"""Scoring traces that were stored, without running anything: :func:`evaluate_traces`.

Production exports its spans (``EVALTRACE_TRACE_FILE``, an OTLP collector, Phoenix); later,
each stored trace is scored as a live run is: through the one run
(:func:`~evaltrace.engine.execute`), each trace an entry whose selector picks what to score
and whose evaluators score it concurrently (each once, under the timeout, errors as data).
The result is the one saved result, a :class:`~evaltrace.results.RunResult` with one
:class:`~evaltrace.results.EntryResult` per trace.

A trace file is read trace by trace (:func:`~evaltrace.trace.read_traces`): only the traces
being scored are in memory. A trace some of whose lines could not be read is not scored: its
entry is ``LOG_FILE_ERROR``, its error naming the file and lines; lines that belong to no
trace are in the result's ``errors``.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import JsonValue

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.concurrency import pending
from evaltrace.constants import (
    DEFAULT_CONCURRENCY,
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_STATISTICS_SEED,
    DEFAULT_THRESHOLD,
)
from evaltrace.engine.config import RunConfig
from evaltrace.engine.entries import Entry, EntrySource, EvaluatorPlans, Evaluators, SourceInfo
from evaltrace.engine.run import Listing, Observer, Output, execute
from evaltrace.engine.scoring import Scored, trace_file_error
from evaltrace.errors import NotATraceFileError
from evaltrace.evals.evaluable import UNSET, Evaluable, json_value
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction
from evaltrace.evals.selectors import TraceSelector
from evaltrace.llm.prices import PriceTable
from evaltrace.results.model import EntryResult, RunResult
from evaltrace.trace import (
    ObservationNode,
    StoredTrace,
    TraceFile,
    read_traces,
    split_traces,
)

__all__ = [
    "StoredTraces",
    "TraceSource",
    "evaluate_traces",
    "run_traces",
    "stored_traces",
    "traces_to_score",
]

TraceSource: TypeAlias = (
    str
    | os.PathLike[str]
    | TraceFile
    | Iterable[Sequence[ObservationNode]]
    | Sequence[ObservationNode]
)
"""What :func:`evaluate_traces` scores: a trace file's path, a :class:`TraceFile`, trace
trees (each the roots of one trace, as :func:`~evaltrace.trace.split_traces` gives them), or
the roots of a file as :func:`~evaltrace.load_traces` returns them (split by trace id)."""

logger = logging.getLogger("evaltrace")


def stored_traces(traces: TraceSource) -> tuple[Iterable[StoredTrace], TraceFile | None]:
    """The traces of ``traces`` as :class:`StoredTrace` items, and the file they come from.

    Raises:
        TypeError: ``traces`` is none of the accepted shapes.
        OSError: The file cannot be read.
    """
    if isinstance(traces, str | os.PathLike):
        traces = read_traces(traces)
    if isinstance(traces, TraceFile):
        return traces, traces
    if isinstance(traces, bytes | bytearray) or not isinstance(traces, Iterable):
        raise TypeError(
            "traces must be a trace file's path, a TraceFile, or trace trees (e.g. "
            f"split_traces(load_traces(path))), got {type_name(traces)} {safe_repr(traces)[:60]}"
        )
    items = iter(traces)
    first = next(items, None)
    if first is None:
        return (), None
    if isinstance(first, ObservationNode):  # the roots of a whole file: one trace per id
        roots = _as_stored([first, *items], 0).roots
        return (_as_stored(trace, index) for index, trace in enumerate(split_traces(roots))), None
    return (
        _as_stored(trace, index) for index, trace in enumerate(itertools.chain([first], items))
    ), None


def _as_stored(trace: object, index: int) -> StoredTrace:
    if isinstance(trace, StoredTrace):
        return trace
    if isinstance(trace, str | bytes) or not isinstance(trace, Iterable):
        raise TypeError(
            f"traces[{index}] must be a trace (a list of its root ObservationNodes), got "
            f"{type_name(trace)}"
        )
    roots: list[ObservationNode] = []
    for position, node in enumerate(trace):
        if not isinstance(node, ObservationNode):
            raise TypeError(
                f"traces[{index}][{position}] is {type_name(node)}, not an ObservationNode; "
                "give each trace as the list of its roots (split_traces(load_traces(path)))"
            )
        roots.append(node)
    trace_id = f"{roots[0].span.trace_id:032x}" if roots else ""
    return StoredTrace(trace_id=trace_id, roots=roots)


class _Expectations:
    """The expectations given, by trace id or position, and which of them were used."""

    def __init__(self, given: Mapping[str | int, Any] | None) -> None:
        self.by_id: dict[str, JsonValue] = {}
        self.by_position: dict[int, JsonValue] = {}
        self.unused: set[str | int] = set()
        if given is None:
            return
        if not isinstance(given, Mapping):
            raise TypeError(
                "expectations must map trace ids (32 hex digits) or positions to expectations, "
                f"got {type_name(given)}"
            )
        for key, value in given.items():
            if isinstance(key, bool) or not isinstance(key, str | int):
                raise TypeError(
                    f"expectations keys must be trace ids (str) or positions (int), got "
                    f"{type_name(key)} {safe_repr(key)[:60]}"
                )
            if isinstance(key, int):
                if key < 0:
                    raise ValueError(f"expectations key {key} is not a position (0 or more)")
                self.by_position[key] = json_value(value)
            else:
                trace_id = key.strip().lower()
                if len(trace_id) != 32 or any(c not in "0123456789abcdef" for c in trace_id):
                    raise ValueError(
                        f"expectations key {key!r} is not a trace id (32 hex digits, as "
                        "EntryResult.trace_ids and the trace file write them)"
                    )
                self.by_id[trace_id] = json_value(value)
        self.unused = {*self.by_id, *self.by_position}

    def of(self, trace_id: str, position: int) -> JsonValue | Any:
        if trace_id in self.by_id:
            self.unused.discard(trace_id)
            return self.by_id[trace_id]
        if position in self.by_position:
            self.unused.discard(position)
            return self.by_position[position]
        return UNSET

    def unmatched(self) -> list[EvaluationError]:
        return [
            EvaluationError(
                type="UnmatchedExpectationError",
                message=f"expectations key {key!r} matches no trace: its expectation was not used",
                where="expectations",
            )
            for key in sorted(self.unused, key=str)
        ]


class StoredTraces(EntrySource):
    """Stored traces as a run's entries: each trace scored by the same evaluators."""

    def __init__(
        self,
        traces: TraceSource,
        evaluators: Evaluators,
        *,
        expectations: Mapping[str | int, Any] | None = None,
        name: str | None = None,
    ) -> None:
        self._traces, self._file = stored_traces(traces)
        self._evaluators = evaluators
        self._expectations = _Expectations(expectations)
        path = Path(self._file.path) if self._file is not None else None
        self._path = path
        self._name = name or (path.stem if path is not None else "stored traces")
        self._count = len(self._file) if self._file is not None else None
        self._taken = 0

    @property
    def name(self) -> str:
        """The run's name: the file's, without its suffix, unless given."""
        return self._name

    def __len__(self) -> int:
        return self._count if self._count is not None else self._taken

    def info(self) -> SourceInfo:
        """The trace file, and the evaluators' names."""
        path = str(self._path) if self._path is not None else None
        return SourceInfo(
            source=path,
            evaluators=list(self._evaluators.names),
            settings={"traces": path},
        )

    def entries(self) -> Iterator[Entry]:
        """One entry per trace, in the order of the file, each read when it is due."""
        for index, stored in enumerate(self._traces):
            self._taken = index + 1
            expectation = self._expectations.of(stored.trace_id, index)
            yield Entry(
                index=index,
                evaluators=self._evaluators,
                case=None if expectation is UNSET else Evaluable(expectation=expectation),
                name=stored.trace_id or f"#{index}",
                trace=stored,
            )

    def errors(self) -> Iterable[EvaluationError]:
        """Lines of the file that belong to no trace, and expectations matching no trace."""
        found = self._file.problems if self._file is not None else ()
        unmatched = self._expectations.unmatched()
        return [*(trace_file_error([problem]) for problem in found), *unmatched]


@pending("evaltrace.evaluate_traces")
async def evaluate_traces(
    traces: TraceSource,
    evaluators: Sequence[EvaluatorFunction],
    *,
    from_trace: TraceSelector | None = None,
    expectations: Mapping[str | int, Any] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    name: str | None = None,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    on_entry: Callable[[EntryResult, StoredTrace], object] | None = None,
    prices: PriceTable | str | os.PathLike[str] | None = None,
) -> RunResult:
    """Score stored traces with ``evaluators``, without running anything.

    Each trace is one entry: the selector picks what to score from it (the run as a whole by
    default), every evaluator scores that, concurrently, as for a live run (each under the
    timeout; an evaluator that raises, hangs or returns nonsense gives an errored evaluation,
    and no entry ends with fewer evaluations than evaluators). Evaluators that take the trace
    (``trace=`` or an :class:`~evaltrace.EvaluatorContext`) get the stored trace.

    A trace file is read trace by trace, so a file of millions of spans is never in memory
    at once. A trace with lines that could not be read is not scored: its entry is
    ``LOG_FILE_ERROR`` (``error.where == "trace_file"``, the message naming the lines), and
    the other traces are scored; lines that belong to no trace are in ``result.errors``.

    With ``init(export_evaluations=True)`` each evaluation is also emitted as a
    ``gen_ai.evaluation.result`` event in the trace it scored (see
    :mod:`evaltrace.evals.telemetry`).

    Args:
        traces: A trace file's path (evaltrace's JSON lines, OTLP-JSON, Phoenix span JSON), a
            :class:`~evaltrace.trace.TraceFile`, trace trees (``split_traces(...)``, or any
            iterable of them, read as it is scored), or the roots ``load_traces`` returns.
        evaluators: Sync or async evaluators, as for :func:`~evaltrace.assert_pass`.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        expectations: Expected outputs, by trace id (32 hex digits) or by position (the
            order of the file's traces); a key that matches no trace is reported in
            ``result.errors``.
        concurrency: Most traces scored at once.
        timeout: Seconds allowed for each evaluation.
        threshold: The score each evaluation must reach for its entry to pass.
        name: The run's name; the file's name without its suffix by default.
        run_id: The run's id; a random one by default.
        attributes: Attributes of the whole run, given to evaluators as
            :attr:`EvaluatorContext.attributes`.
        on_entry: Called as each trace is scored, with its entry and the trace (in the event
            loop's thread; keep it quick). An exception it raises is logged, not propagated.
        prices: The price table the cost of the traces' model calls is computed by (a
            :class:`~evaltrace.llm.prices.PriceTable` or a price file's path); ``None``: the
            file ``EVALTRACE_PRICES`` names, else none (the cost is unknown).

    Returns:
        The saved result: one entry per trace, in the order of the traces (its ``name`` and
        ``trace_ids`` the trace id, ``description`` the root span's name, ``input`` and
        ``output`` the root span's), the file's problems in ``errors``.

    Raises:
        TypeError: ``traces``, an evaluator or the expectations have the wrong type.
        ValueError: No evaluators, a bad expectations key, ``concurrency``, ``timeout`` or
            ``threshold``.
        OSError: The trace file cannot be read.

    Example:
        >>> result = evaltrace.run(  # doctest: +SKIP
        ...     evaluate_traces("spans.jsonl", [ExactMatch()], expectations={0: "Paris"})
        ... )
        >>> result.entries[0].status  # doctest: +SKIP
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """
    return await run_traces(
        traces,
        evaluators,
        from_trace=from_trace,
        expectations=expectations,
        concurrency=concurrency,
        timeout=timeout,
        threshold=threshold,
        name=name,
        run_id=run_id,
        attributes=attributes,
        on_entry=on_entry,
        prices=prices,
    )


async def run_traces(
    traces: TraceSource,
    evaluators: Sequence[EvaluatorFunction],
    *,
    from_trace: TraceSelector | None = None,
    expectations: Mapping[str | int, Any] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    name: str | None = None,
    run_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    on_entry: Callable[[EntryResult, StoredTrace], object] | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    keep_entries: bool | Listing = True,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    statistics_seed: int = DEFAULT_STATISTICS_SEED,
    prices: PriceTable | str | os.PathLike[str] | None = None,
    observers: Sequence[Observer] = (),
) -> RunResult:
    """:func:`evaluate_traces`, writing a results folder as a dataset run does.

    ``evaltrace test --traces FILE`` runs this: the run's folder
    (``<output_dir>/<run-id>/``: ``traces.jsonl`` with each scored trace, ``entries.jsonl``,
    ``result.json``) is written as the traces are scored, with progress on standard error.

    Args:
        traces: As for :func:`evaluate_traces`, and the arguments it takes.
        evaluators: The evaluators of every trace.
        from_trace: Selects what to score from each trace.
        expectations: Expected outputs, by trace id or position.
        concurrency: Most traces scored at once.
        timeout: Seconds allowed for each evaluation.
        threshold: The score each evaluation must reach for its entry to pass.
        name: The run's name.
        run_id: The run's id (and folder name).
        attributes: Attributes of the whole run, given to evaluators.
        on_entry: Called as each trace is scored, with its entry and the trace.
        output_dir: Where to write the run's folder; nothing is written by default.
        progress: Show progress on standard error.
        keep_entries: Whether the result returned holds every entry (or, with a
            :class:`~evaltrace.engine.Listing`, those a report lists).
        confidence: The confidence level of the run's intervals.
        resamples: The bootstrap's resamples for them; 0 computes no statistics.
        statistics_seed: The seed of those resamples.
        prices: The price table the run's cost is computed by (a
            :class:`~evaltrace.llm.prices.PriceTable` or a price file's path); ``None``: the
            file ``EVALTRACE_PRICES`` names, else none (tokens are counted, the cost is
            unknown).
        observers: Called with each scored entry as it finishes, with its live trace (see
            :data:`~evaltrace.engine.run.Observer`): ``evaltrace test`` writes its
            scorecard so.

    Raises:
        ResultsFolderError: ``output_dir`` cannot be written.
        OSError: The trace file cannot be read.
    """
    config = RunConfig(
        concurrency=concurrency,
        timeout=timeout,
        threshold=threshold,
        from_trace=from_trace,
        run_id=run_id,
        attributes=attributes if attributes is not None else {},
        confidence=confidence,
        resamples=resamples,
        statistics_seed=statistics_seed,
        prices=prices,
    )
    plan = EvaluatorPlans().of(_evaluators(evaluators))
    source = StoredTraces(traces, plan, expectations=expectations, name=name)
    observers = list(observers)
    if on_entry is not None:
        callback = on_entry

        def observe(scored: Scored, done: int, total: int) -> None:
            assert scored.entry is not None and scored.entry.trace is not None
            try:
                callback(scored.result, scored.entry.trace)
            except Exception:  # a broken progress display must not lose the run
                logger.warning("evaltrace: the on_entry callback raised", exc_info=True)

        observers.append(observe)
    output = Output(parent=Path(output_dir)) if output_dir is not None else None
    return await execute(
        source,
        config,
        output=output,
        keep=keep_entries,
        observers=observers,
        progress=progress,
        release=True,
    )


def traces_to_score(traces: str | os.PathLike[str] | TraceFile) -> TraceFile:
    """The trace file whose every trace ``evaltrace test --traces`` scores: one holding a span.

    Raises:
        NotATraceFileError: ``traces`` holds no span (it is empty, no line of it is a span, or
            it is not a regular file); nothing would be scored.
        TraceFormatError: ``traces`` is one document of which no span can be read.
        OSError: The file cannot be read.
    """
    file = traces if isinstance(traces, TraceFile) else read_traces(traces)
    if not len(file):
        raise NotATraceFileError(f"{file.path} holds no span, so there is nothing to score")
    return file


def _evaluators(evaluators: object) -> list[EvaluatorFunction]:
    if isinstance(evaluators, str | bytes) or callable(evaluators):
        raise TypeError(
            f"evaluators must be a list (e.g. [ExactMatch()]), got {type_name(evaluators)}; to "
            "use a single evaluator, wrap it in a list"
        )
    if not isinstance(evaluators, Iterable):
        raise TypeError(
            f"evaluators must be a list (e.g. [ExactMatch()]), got {type_name(evaluators)}"
        )
    checks = list(evaluators)
    if not checks:
        raise ValueError("at least one evaluator is needed")
    for position, check in enumerate(checks):
        if not callable(check):
            raise TypeError(f"evaluators[{position}] is {type_name(check)}, not callable")
    return checks
