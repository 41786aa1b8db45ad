"""Runs over stored traces: a dataset's entries that point at them, and a whole trace file.

A dataset entry with ``trace`` (and ``trace_id`` when the file holds several traces) is
scored from that trace without calling the runnable: :func:`entry_traces` finds each entry's
trace, reading each file trace by trace. :func:`run_traces` scores every trace of a file into
a results folder, as ``evaltrace test --traces FILE`` does.

A trace whose parent links go round in a loop is scored as ``LOG_FILE_ERROR`` and its spans
are not copied into the run's ``traces.jsonl``, which must read back as a sound trace file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from evaltrace._safe_text import exception_message
from evaltrace.datasets.executor import EntrySink, RunPlan
from evaltrace.datasets.model import DatasetEntry
from evaltrace.datasets.references import trace_file_path
from evaltrace.errors import NotATraceFileError, TraceFormatError
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, PreparedEvaluator, prepare_evaluator
from evaltrace.evals.result import EntryResult, RunResult
from evaltrace.evals.selectors import TraceSelector
from evaltrace.evals.stored import StoredCase, StoredScoring, evaluate_traces
from evaltrace.results.folder import ResultsFolder, ResultsFolderError
from evaltrace.results.progress import RunProgress
from evaltrace.trace import (
    SpanRecord,
    StoredTrace,
    TraceFile,
    TraceFileProblem,
    read_traces,
    walk_trace,
)

__all__ = ["StoredTraceExecutor", "entry_traces", "run_traces", "trace_path", "traces_to_score"]


def trace_path(entry: DatasetEntry, base_dir: Path | None) -> Path:
    """The file an entry's ``trace`` names, relative to the dataset's folder."""
    assert entry.trace is not None
    return trace_file_path(entry.trace, base_dir)


def entry_traces(entries: Sequence[DatasetEntry], base_dir: Path | None) -> Iterator[StoredTrace]:
    """The stored trace of each entry, in order, each read when it is due.

    A trace that cannot be had (the file cannot be read, holds no trace of that id, or holds
    several and the entry names none) is given with a problem saying why, so that its entry is
    ``LOG_FILE_ERROR``.
    """
    files: dict[Path, TraceFile | OSError | TraceFormatError] = {}
    for entry in entries:
        path = trace_path(entry, base_dir)
        opened = files.get(path)
        if opened is None:
            try:
                opened = files[path] = read_traces(path)
            except (OSError, TraceFormatError) as exc:
                opened = files[path] = exc
        yield _trace_of(entry, path, opened)


class StoredTraceExecutor:
    """Scores a dataset whose entries point at stored traces: nothing runs.

    The executor of such a dataset (``run_dataset`` picks it): each entry's trace is read when
    it is due and scored by the entry's evaluators, as a live entry's trace would be; there is
    no runnable, so no ``setup`` or ``teardown``. An entry whose trace cannot be had is
    ``LOG_FILE_ERROR``.
    """

    async def execute(self, plan: RunPlan, finished: EntrySink) -> list[EvaluationError]:
        """Score every position of ``plan`` from its entry's stored trace."""
        prepared: dict[int, PreparedEvaluator] = {}
        data = plan.prepared.dataset

        def evaluators_of(index: int) -> list[PreparedEvaluator]:
            checks = plan.prepared.entry_evaluators[index]
            for check in checks:  # each evaluator prepared once
                if id(check) not in prepared:
                    prepared[id(check)] = prepare_evaluator(check)
            return [prepared[id(check)] for check in checks]

        entries = [data.entries[plan.selected[position]] for position in plan.positions]
        base_dir = data.path.parent if data.path is not None else None
        cases = (
            StoredCase(
                trace=stored,
                index=position,
                evaluators=evaluators_of(plan.selected[position]),
                name=entry.name,
                case=entry.to_evaluable(),
            )
            for position, entry, stored in zip(
                plan.positions, entries, entry_traces(entries, base_dir), strict=True
            )
        )

        def done(entry: EntryResult, stored: StoredTrace) -> None:
            finished(entry, _spans_to_keep(stored))

        scoring = StoredScoring(
            from_trace=plan.from_trace,
            timeout=plan.timeout,
            threshold=plan.threshold,
            run_id=plan.run_id,
        )
        await scoring.score(cases, concurrency=plan.concurrency, on_entry=done, keep=False)
        return []

    def __repr__(self) -> str:
        return "StoredTraceExecutor()"


def _spans_to_keep(stored: StoredTrace) -> Iterator[SpanRecord]:
    """The spans of a scored trace to copy into the run's ``traces.jsonl``.

    None of a trace whose parent links loop: the run's file could not be read back.
    """
    if stored.cycles:
        return iter(())
    return (node.span.record for node in walk_trace(stored.roots))


def _trace_of(
    entry: DatasetEntry, path: Path, opened: TraceFile | OSError | TraceFormatError
) -> StoredTrace:
    wanted = entry.trace_id.lower() if entry.trace_id is not None else ""
    if isinstance(opened, TraceFormatError):  # its message starts with the file: said once
        rest = str(opened).removeprefix(str(path))
        return _missing(wanted, path, rest[2:] if rest[:2] in (": ", ", ") else rest.lstrip())
    if isinstance(opened, OSError):
        reason = opened.strerror or exception_message(opened)
        return _missing(wanted, path, f"cannot be read: {reason}")
    if wanted:
        found = opened.get(wanted)
        if found is None:
            return _missing(wanted, path, f"holds no trace {wanted} (it holds {len(opened)})")
        return found
    if len(opened) != 1:
        return _missing(
            "",
            path,
            f"holds {len(opened)} traces; give the entry's trace_id (one of "
            f"{', '.join(opened.trace_ids[:3])}{', ...' if len(opened) > 3 else ''})",
        )
    return next(iter(opened))


def _interrupted(file: TraceFile, run_id: str, done: list[EntryResult]) -> RunResult:
    return RunResult(
        run_id=run_id,
        name=Path(file.path).stem,
        source=file.path,
        entries=sorted(done, key=lambda entry: entry.index),
        interrupted=True,
    )


def _missing(trace_id: str, path: Path, message: str) -> StoredTrace:
    problem = TraceFileProblem(place=str(path), line=0, message=message, trace_id=trace_id or None)
    return StoredTrace(trace_id=trace_id, roots=[], problems=(problem,))


def traces_to_score(traces: str | os.PathLike[str] | TraceFile) -> TraceFile:
    """The trace file whose every trace :func:`run_traces` scores: one holding a span.

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


async def run_traces(
    traces: str | os.PathLike[str] | TraceFile,
    evaluators: Sequence[EvaluatorFunction],
    *,
    from_trace: TraceSelector | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    threshold: float = 0.5,
    output_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    run_id: str | None = None,
) -> RunResult:
    """Score every trace of a trace file, writing a results folder as a dataset run does.

    :func:`~evaltrace.evaluate_traces` with a run's folder (``<output_dir>/<run-id>/``:
    ``traces.jsonl`` with each scored trace, ``result.json``) and progress.

    Args:
        traces: The trace file, or it read (:func:`traces_to_score`).
        evaluators: The evaluators of every trace.
        from_trace: Selects what to score from each trace; default :func:`evaltrace.root`.
        concurrency: Most traces scored at once.
        timeout: Seconds allowed for each evaluation.
        threshold: The score each evaluation must reach for its entry to pass.
        output_dir: Where to write the run's folder; nothing is written by default.
        progress: Show progress on standard error.
        run_id: The run's id (and folder name).

    Raises:
        NotATraceFileError: The file holds no span (see :func:`traces_to_score`); nothing is
            written.
        TraceFormatError: The file is one document of which no span can be read.
        ResultsFolderError: ``output_dir`` cannot be written.
        OSError: The trace file cannot be read.
    """
    file = traces_to_score(traces)
    folder = ResultsFolder.create(output_dir, run_id) if output_dir is not None else None
    display = RunProgress(Path(file.path).stem, len(file)) if progress else None
    write_error: list[ResultsFolderError] = []
    done: list[EntryResult] = []

    def finished(entry: EntryResult, stored: StoredTrace) -> None:
        done.append(entry)
        if folder is not None and not write_error:
            try:
                folder.add_entry(entry, _spans_to_keep(stored))
            except ResultsFolderError as exc:
                write_error.append(exc)
        if display is not None:
            display.advance(entry)

    with contextlib.ExitStack() as stack:
        if folder is not None:
            stack.enter_context(folder)
        if display is not None:
            stack.enter_context(display)
        try:
            result = await evaluate_traces(
                file,
                evaluators,
                from_trace=from_trace,
                concurrency=concurrency,
                timeout=timeout,
                threshold=threshold,
                run_id=folder.run_id if folder is not None else run_id,
                on_entry=finished,
            )
        except BaseException:  # interrupted (Ctrl-C, cancelled): keep what finished
            if folder is not None:
                with contextlib.suppress(ResultsFolderError):  # the interruption is raised
                    folder.finish(_interrupted(file, folder.run_id, done))
            raise
        if folder is not None:
            folder.finish(result)
    if write_error:
        raise write_error[0]
    return result
