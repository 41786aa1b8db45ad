"""A dataset's entries as a run's entries: :class:`PreparedDataset` and :class:`DatasetEntries`.

:func:`~evaltrace.datasets.prepare_dataset` checks and resolves a dataset for a run; the run
(:func:`~evaltrace.engine.execute`) takes its entries from :class:`DatasetEntries`, which makes
each selected entry (its ``entry_kwargs`` for the runnable, its test case, its evaluators, or
the stored trace it points at) when the run takes it. An entry is named by its *position* in
the run's selection (the entries the entry filter selected, in dataset order): that position
is its :attr:`~evaltrace.results.EntryResult.index`, the same in every shard.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltrace._safe_text import exception_message
from evaltrace.datasets.model import Dataset, DatasetEntry
from evaltrace.datasets.references import trace_file_path
from evaltrace.datasets.resolution import ResolvedDataset
from evaltrace.datasets.runnable import RunnableAdapter
from evaltrace.engine import Entry, EntryPoint, EntrySource, EvaluatorPlans, SourceInfo
from evaltrace.errors import TraceFormatError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name
from evaltrace.metrics.classification import AGGREGATOR_SPEC_ADAPTER, AggregatorSpec
from evaltrace.results.model import EntrySelection, RunFingerprint
from evaltrace.trace import StoredTrace, TraceFile, TraceFileProblem, read_traces

__all__ = ["DatasetEntries", "PreparedDataset", "entry_traces", "trace_path"]


@dataclass(frozen=True, kw_only=True)
class PreparedDataset:
    """A dataset checked and resolved for a run: what each entry runs and how it is scored."""

    resolved: ResolvedDataset
    """The dataset with its runnable and evaluators."""
    entry_evaluators: Sequence[list[EvaluatorFunction]]
    """Each entry's evaluators, in the order of the dataset's entries (entries with the same
    evaluators share one list, see :class:`~evaltrace.datasets.resolution.PerEntry`)."""
    aggregators: dict[str, list[AggregatorSpec]]
    """The dataset-level metrics, by the display name of their source evaluator."""
    aggregator_sources: dict[str, EvaluatorFunction]
    """The source evaluator of each key of ``aggregators``."""
    from_code: bool = False
    """Whether the runnable or the evaluators were given in code rather than by the file
    (then only this process can run the entries)."""

    @property
    def dataset(self) -> Dataset:
        """The dataset."""
        return self.resolved.dataset

    @property
    def runnable(self) -> RunnableAdapter:
        """The runnable."""
        return self.resolved.runnable


class DatasetEntries(EntrySource):
    """The selected entries of a prepared dataset (one shard of them), as a run's entries.

    Args:
        prepared: The dataset, resolved.
        selected: The dataset index of each position of the selection.
        positions: The positions this run scores (its shard).
        selection: What the run records of the selection.
        fingerprint: The run's fingerprint.
        settings: The dataset's settings of the run (the entry filter, ...).
    """

    def __init__(
        self,
        prepared: PreparedDataset,
        *,
        selected: Sequence[int],
        positions: Sequence[int],
        selection: EntrySelection | None = None,
        fingerprint: RunFingerprint | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.prepared = prepared
        self.selected = selected
        self.positions = positions
        self.selection = selection
        self.fingerprint = fingerprint
        self.settings = settings or {}
        data = prepared.dataset
        adapter = prepared.runnable
        self.runnable = None if data.stored else EntryPoint(adapter.run, adapter.name, True)
        self._plans = EvaluatorPlans()

    @property
    def name(self) -> str:
        """The dataset's name, else its runnable's."""
        return self.prepared.dataset.name or self.prepared.runnable.name

    def __len__(self) -> int:
        return len(self.positions)

    def info(self) -> SourceInfo:
        """The dataset file, evaluators, selection, aggregators and fingerprint."""
        prepared = self.prepared
        data = prepared.dataset
        return SourceInfo(
            source=data.source if data.path is not None else None,
            evaluators=self._evaluator_names(),
            settings={"runnable": prepared.runnable.name, **self.settings},
            selection=self.selection,
            aggregators={
                source: [
                    AGGREGATOR_SPEC_ADAPTER.dump_python(spec, mode="json", by_alias=True)
                    for spec in specs
                ]
                for source, specs in prepared.aggregators.items()
            },
            fingerprint=self.fingerprint,
        )

    def _evaluator_names(self) -> list[str]:
        """The display names of every evaluator of the selection, in first-use order."""
        names: dict[str, None] = {}
        seen: set[int] = set()
        for index in self.selected:
            checks = self.prepared.entry_evaluators[index]
            if id(checks) in seen:  # entries with the same evaluators share one list
                continue
            seen.add(id(checks))
            for check in checks:
                names.setdefault(evaluator_name(check), None)
        return list(names)

    def session(self) -> AbstractAsyncContextManager[object]:
        """The runnable's ``setup`` and ``teardown`` (none for a dataset of stored traces)."""
        if self.runnable is None:
            return nullcontext()
        return self.prepared.runnable.session()

    def entries(self) -> Iterator[Entry]:
        """The entries of :attr:`positions`, each made (its trace read) when it is due."""
        data = self.prepared.dataset
        chosen = (data.entries[self.selected[position]] for position in self.positions)
        traces: Iterator[StoredTrace | None]
        if data.stored:
            base_dir = data.path.parent if data.path is not None else None
            traces = entry_traces(chosen, base_dir)
        else:
            traces = (None for _ in self.positions)
        for position, stored in zip(self.positions, traces, strict=True):
            yield self.entry(position, stored)

    def entry(self, position: int, stored: StoredTrace | None = None) -> Entry:
        """The entry at ``position`` of the selection."""
        index = self.selected[position]
        item = self.prepared.dataset.entries[index]
        return Entry(
            index=position,
            evaluators=self._plans.of(self.prepared.entry_evaluators[index]),
            input=item.entry_kwargs,
            case=item.to_evaluable(),
            name=item.name,
            trace=stored,
        )


def trace_path(entry: DatasetEntry, base_dir: Path | None) -> Path:
    """The file an entry's ``trace`` names, relative to the dataset's folder."""
    assert entry.trace is not None
    return trace_file_path(entry.trace, base_dir)


def entry_traces(entries: Iterator[DatasetEntry], base_dir: Path | None) -> Iterator[StoredTrace]:
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


def _missing(trace_id: str, path: Path, message: str) -> StoredTrace:
    problem = TraceFileProblem(place=str(path), line=0, message=message, trace_id=trace_id or None)
    return StoredTrace(trace_id=trace_id, roots=[], problems=(problem,))
