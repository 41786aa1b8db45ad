"""Scoring traces that were stored, without running anything: :func:`evaluate_traces`.

Production exports its spans (``EVALTRACE_TRACE_FILE``, an OTLP collector, Phoenix); later,
each stored trace is scored as the runner scores a live run: the selector picks what to
score, every evaluator scores it concurrently (each once, under the timeout, errors as data),
and the result is the one saved result, a :class:`~evaltrace.evals.RunResult` with one
:class:`~evaltrace.evals.EntryResult` per trace.

A trace file is read trace by trace (:func:`~evaltrace.trace.read_traces`): only the traces
being scored are in memory. A trace some of whose lines could not be read is not scored: its
entry is ``LOG_FILE_ERROR``, its error naming the file and lines; lines that belong to no
trace are in the result's ``errors``.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeAlias

import anyio
from pydantic import JsonValue

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.checks import check_count, check_threshold, check_timeout
from evaltrace.constants import DEFAULT_CONCURRENCY, DEFAULT_THRESHOLD
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.evaluable import UNSET, Evaluable, json_value
from evaltrace.evals.evaluation import Evaluation, EvaluationError
from evaltrace.evals.evaluator import (
    EvaluatorFunction,
    PreparedEvaluator,
    evaluator_name,
    prepare_evaluator,
)
from evaltrace.evals.result import EntryResult, RunResult, entry_status
from evaltrace.evals.runner import checkpoint_now_and_then, score_entry, with_case
from evaltrace.evals.selectors import TraceSelector, root
from evaltrace.evals.telemetry import export_evaluations
from evaltrace.trace import (
    ObservationNode,
    StoredTrace,
    TraceFile,
    TraceFileProblem,
    read_traces,
    split_traces,
)

__all__ = ["StoredCase", "StoredScoring", "TraceSource", "evaluate_traces", "stored_traces"]

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

_PROBLEMS_QUOTED: Final = 3


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


def _trace_file_error(problems: Sequence[TraceFileProblem]) -> EvaluationError:
    shown = "; ".join(str(problem) for problem in problems[:_PROBLEMS_QUOTED])
    more = len(problems) - _PROBLEMS_QUOTED
    if more > 0:
        shown += f"; and {more} more"
    return EvaluationError(type="TraceFormatError", message=shown, where="trace_file")


@dataclass(frozen=True, kw_only=True)
class StoredCase:
    """One stored trace to score, with what to score it by: a dataset entry's, or a trace's."""

    trace: StoredTrace
    """The trace."""
    index: int
    """The entry's position in the run."""
    evaluators: Sequence[PreparedEvaluator]
    """Its evaluators, prepared (:func:`~evaltrace.evals.evaluator.prepare_evaluator`)."""
    name: str | None = None
    """The entry's name; the trace id by default."""
    case: Evaluable | None = None
    """The test case whose named inputs, expectation, metadata and description are kept."""


class StoredScoring:
    """How stored traces are scored: the selector, limits and what every entry shares."""

    def __init__(
        self,
        *,
        from_trace: TraceSelector | None = None,
        timeout: float | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        run_id: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        check_timeout(timeout)
        check_threshold(threshold)
        self.from_trace = from_trace or root
        self.timeout = timeout
        self.threshold = threshold
        self.run_id = run_id if run_id is not None else uuid.uuid4().hex
        self.attributes: Mapping[str, Any] = dict(attributes) if attributes is not None else {}

    async def entry(self, item: StoredCase) -> EntryResult:
        """Score one stored trace into its entry; never raises but for a cancellation."""
        stored, roots, index = item.trace, item.trace.roots, item.index
        names = [prepared.name for prepared in item.evaluators]
        name = item.name or stored.trace_id or f"#{index}"
        fields: dict[str, Any] = {"index": index, "name": name}
        if roots:
            top = roots[0].span
            fields.update(
                description=top.name,
                input=top.input,
                output=top.output,
                started_at=top.started_at,
                duration_s=top.duration_ms / 1000,
                trace_ids=list(dict.fromkeys(f"{node.span.trace_id:032x}" for node in roots)),
            )
        elif stored.trace_id:
            fields["trace_ids"] = [stored.trace_id]
        if item.case is not None:
            fields.update(
                description=item.case.description or fields.get("description"),
                eval_input=item.case.eval_input,
                expectation=item.case.expectation,
                eval_metadata=item.case.eval_metadata,
            )
        error: EvaluationError | None = None
        evaluable: Evaluable | None = None
        if not stored.complete:
            error = _trace_file_error(stored.problems)
        else:
            try:
                evaluable = with_case(self.from_trace(roots), item.case)
            except Exception as exc:  # a selector that finds nothing is reported per trace
                error = EvaluationError.from_exception(exc, where="from_trace")
        if error is not None or evaluable is None:
            assert error is not None
            evaluations = [Evaluation.errored(error, evaluator=n) for n in names]
        else:
            ctx = EvaluatorContext(
                evaluable=evaluable,
                trace=roots,
                entry_name=name,
                entry_index=index,
                run_id=self.run_id,
                attributes=self.attributes,
                duration_s=fields.get("duration_s"),
            )
            label = f"scoring trace {name}"
            evaluations = await score_entry(item.evaluators, ctx, self.timeout, label=label)
            fields.update(
                eval_input=evaluable.eval_input,
                eval_output=evaluable.eval_output,
                expectation=evaluable.expectation,
                eval_metadata=evaluable.eval_metadata,
            )
        export_evaluations(evaluations, roots, threshold=self.threshold)
        return EntryResult(
            **fields,
            evaluations=evaluations,
            error=error,
            status=entry_status(evaluations, error, threshold=self.threshold),
        )

    async def score(
        self,
        items: Iterable[StoredCase],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        on_entry: Callable[[EntryResult, StoredTrace], object] | None = None,
        keep: bool = True,
    ) -> list[EntryResult]:
        """Score every item, ``concurrency`` at a time, taking each from ``items`` when due.

        Args:
            items: The stored traces to score, each with its evaluators.
            concurrency: Most items scored at once.
            on_entry: Called with each entry as it is scored, and its trace.
            keep: Whether to return the entries; with ``False`` each one is dropped once
                ``on_entry`` has it, so memory does not grow with the items.

        Returns:
            The entries, in the order of their ``index`` (none when not kept).

        Raises:
            Exception: What taking an item from ``items`` raised (a bad item, a trace file
                that went away), after the entries under way finished.
        """
        check_count(concurrency, "concurrency")
        entries: list[EntryResult] = []
        pending = iter(items)
        failures: list[Exception] = []

        async def worker() -> None:
            done = 0
            while not failures:
                try:  # workers share one iterator: each trace is taken once
                    item = next(pending)
                except StopIteration:
                    return
                except Exception as exc:  # a bad item, or the file went away: raised below
                    failures.append(exc)
                    return
                entry = await self.entry(item)
                if keep:
                    entries.append(entry)
                if on_entry is not None:
                    _report(on_entry, entry, item.trace)
                done += 1
                await checkpoint_now_and_then(done)

        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(worker)
        if failures:
            raise failures[0]
        entries.sort(key=lambda entry: entry.index)
        return entries


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
            loop's thread; keep it quick); e.g. to write the results folder as the run goes.

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
    check_count(concurrency, "concurrency")
    scoring = StoredScoring(
        from_trace=from_trace,
        timeout=timeout,
        threshold=threshold,
        run_id=run_id,
        attributes=attributes,
    )
    prepared = [prepare_evaluator(check) for check in _evaluators(evaluators)]
    given = _Expectations(expectations)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    items, source = stored_traces(traces)
    cases = (
        StoredCase(
            trace=stored,
            index=index,
            evaluators=prepared,
            case=_expecting(given.of(stored.trace_id, index)),
        )
        for index, stored in enumerate(items)
    )
    entries = await scoring.score(cases, concurrency=concurrency, on_entry=on_entry)
    errors = [_trace_file_error([problem]) for problem in source.problems] if source else []
    path = Path(source.path) if source is not None else None
    return RunResult(
        run_id=scoring.run_id,
        name=name or (path.stem if path is not None else "stored traces"),
        source=str(path) if path is not None else None,
        evaluators=[one.name for one in prepared],
        entries=entries,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        duration_s=time.perf_counter() - started,
        threshold=threshold,
        settings={
            "concurrency": concurrency,
            "timeout": timeout,
            "threshold": threshold,
            "from_trace": None if from_trace is None else evaluator_name(from_trace),
            "traces": str(path) if path is not None else None,
        },
        errors=[*errors, *given.unmatched()],
    )


def _expecting(expectation: Any) -> Evaluable | None:
    return None if expectation is UNSET else Evaluable(expectation=expectation)


def _report(
    on_entry: Callable[[EntryResult, StoredTrace], object], entry: EntryResult, stored: StoredTrace
) -> None:
    try:
        on_entry(entry, stored)
    except Exception:  # a broken progress display must not lose the run
        logger.warning("evaltrace: the on_entry callback raised", exc_info=True)


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
