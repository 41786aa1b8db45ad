"""Merging the result folders of shards into one run: ``evaltrace merge``.

The shards of one run (``evaltrace test --shard K/N``, each on its own machine) each write a
results folder; :func:`merge_results` puts them back together as the folder of one run:
``result.json`` with every entry in entry order, ``entries.jsonl`` and ``traces.jsonl``
concatenated, and the dataset-level metrics (precision, recall, F-beta, confusion matrix)
computed again over every entry's evaluation, never averaged from the shards' own. It
streams: memory does not grow with the entries (about 30 bytes each, to order them).

It refuses, naming the folders: shards of different datasets or entry selections, a shard
given twice or entries in two shards, a missing shard, a shard whose run was interrupted
(resume it first, with ``evaltrace test --resume``), a shard without its ``traces.jsonl``, and
shards whose fingerprints differ (:class:`~evaltrace.evals.RunFingerprint`: the dataset's
entries, the evaluators, the code files, threshold, timeout, ... — the field is named).
``force=True`` (``--force``) merges shards whose fingerprints differ or that lack their
traces all the same, and records what differed in the merged run's ``settings["forced"]``.

Example:
    >>> merged = merge_results(["shard-1/run", "shard-2/run"], "merged")  # doctest: +SKIP
    >>> merged.name  # doctest: +SKIP
    '20261123T104107.123456Z'
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from evaltrace.errors import EvaltraceError
from evaltrace.metrics.classification import DatasetResultsTally
from evaltrace.results.folder import (
    ENTRIES_FILE,
    RESULT_FILE,
    RUN_FILE,
    TRACES_FILE,
    DuplicateEntryError,
    ResultsFolderError,
    check_writable,
    load_result,
    new_run_id,
    scan_entries,
    write_atomically,
    write_result,
)
from evaltrace.results.model import CompletionStatus, EntryResult, EntrySelection, RunResult
from evaltrace.results.run_statistics import StatisticsTally
from evaltrace.results.usage import UsageTally

__all__ = ["MergeError", "merge_results"]


class MergeError(EvaltraceError, ValueError):
    """The folders given cannot be merged into one run; the message says which and why."""


def merge_results(
    folders: Sequence[str | os.PathLike[str]],
    output_dir: str | os.PathLike[str],
    *,
    run_id: str | None = None,
    force: bool = False,
) -> Path:
    """Merge the result folders of every shard of one run into one run's folder.

    Args:
        folders: The shards' run folders (each with ``result.json`` and ``entries.jsonl``),
            in any order.
        output_dir: Where the merged run's folder (``<output_dir>/<run-id>/``) is created.
        run_id: The merged run's id; a new one by default.
        force: Merge shards whose fingerprints differ, or that lack their traces.

    Returns:
        The merged run's folder: ``run.json``, ``entries.jsonl``, ``traces.jsonl`` and
        ``result.json`` (write its scorecard with :func:`~evaltrace.results.write_scorecard`).

    Raises:
        MergeError: The folders are not the complete, non-overlapping shards of one run, or
            (without ``force``) their fingerprints differ or a shard lacks its traces.
        ResultFileError: A folder is not a finished run's folder.
        ResultsFolderError: The merged folder cannot be written.
    """
    if not folders:
        raise MergeError("give the folders of the shards to merge (one per shard)")
    paths = [Path(folder) for folder in folders]
    shards = [(path, load_result(path)) for path in paths]
    first = shards[0][1]
    selection = _check_shards(shards)
    forced = _differences(shards, force=force)
    for path, _ in shards:
        if not (path / ENTRIES_FILE).is_file():
            raise MergeError(
                f"{path} has no {ENTRIES_FILE}: it was written by an evaltrace older than "
                "sharding; run the shard again"
            )
        if not (path / TRACES_FILE).is_file():
            if not force:
                raise MergeError(
                    f"{path} has no {TRACES_FILE}: the merged run would lack its traces; put "
                    "the file back, run the shard again, or merge with --force (force=True) "
                    "to do without them"
                )
            forced.append(f"{TRACES_FILE} of {path}")
    tally = DatasetResultsTally(first.aggregators)
    settings = first.statistics  # computed again over every shard's entries, as they were
    scores = (
        StatisticsTally(threshold=first.threshold, evaluators=first.evaluators)
        if settings is not None
        else None
    )

    spent = UsageTally()

    def count(line: bytes) -> None:
        entry = EntryResult.model_validate_json(line)
        spent.add(entry.usage, entry.judge_usage, entry.duration_s)
        tally.add(entry.evaluations)
        if scores is not None:
            scores.add(entry)

    try:
        entries = scan_entries(
            [path / ENTRIES_FILE for path in paths],
            count,
        )
    except DuplicateEntryError as exc:
        raise MergeError(
            f"entry #{exc.index} is in two shards ({exc.files[0].parent} and "
            f"{exc.files[1].parent}): the folders overlap; give each shard's folder once"
        ) from None
    if len(entries) != selection.entries:
        raise MergeError(
            f"the shards hold {len(entries)} entries, but the run selected "
            f"{selection.entries}: a shard's entries.jsonl is incomplete"
        )
    started = [result.started_at for _, result in shards if result.started_at is not None]
    finished = [result.finished_at for _, result in shards if result.finished_at is not None]
    folder = _new_folder(output_dir, run_id or new_run_id(max(finished, default=None)))
    fields = {name: getattr(first, name) for name in RunResult.model_fields}
    dataset_results = tally.results()
    statistics = (
        None
        if scores is None or settings is None
        else scores.statistics(
            confidence=settings.confidence,
            resamples=settings.resamples,
            seed=settings.seed,
            dataset=tally,
            dataset_results=dataset_results,
        )
    )
    merged = RunResult(  # validated: the dataset-level details are saved as JSON data
        **{
            **fields,
            "run_id": folder.name,
            "entries": [],
            "counts": _summed_counts(result for _, result in shards),
            "label_counts": _summed_label_counts(result for _, result in shards),
            "dataset_results": dataset_results,
            "statistics": statistics,
            "started_at": min(started, default=None),
            "finished_at": max(finished, default=None),
            "duration_s": max(result.duration_s for _, result in shards),
            "errors": [error for _, result in shards for error in result.errors],
            "settings": {
                **first.settings,
                "merged_from": [r.run_id for _, r in shards],
                **({"forced": forced} if forced else {}),
            },
            "selection": selection.model_copy(update={"shard": 1, "shards": 1}),
            # Every entry's calls and wall time, read again: the latency percentiles are
            # the merged run's, not a mix of the shards'.
            **spent.fields(first.prices),
        }
    )
    try:
        write_atomically(folder / RUN_FILE, merged.model_dump_json(indent=2) + "\n")
        _concatenate([path / ENTRIES_FILE for path in paths], folder / ENTRIES_FILE)
        _concatenate([path / TRACES_FILE for path in paths], folder / TRACES_FILE)
        write_result(folder / RESULT_FILE, merged, scan_entries([folder / ENTRIES_FILE]))
    except OSError as exc:
        raise ResultsFolderError(f"cannot write the merged run to {folder}: {exc}") from None
    return folder


def _check_shards(shards: list[tuple[Path, RunResult]]) -> EntrySelection:
    """The selection the shards share, or why they are not the shards of one run."""
    first_path, first = shards[0]
    selection = first.selection
    if selection is None:
        raise MergeError(
            f"{first_path} records no entry selection: it is not the result of a dataset run "
            "by this evaltrace"
        )
    seen: dict[int, Path] = {}
    for path, result in shards:
        own = result.selection
        if result.name != first.name or own is None or own.digest != selection.digest:
            raise MergeError(
                f"{path} is a run of {result.name!r} ({own.label if own else 'no selection'}) "
                f"and {first_path} of {first.name!r} ({selection.label}): only the shards of "
                "one dataset, with the same entry filter, can be merged"
            )
        if own.shards != selection.shards:
            raise MergeError(
                f"{path} is shard {own.shard}/{own.shards} and {first_path} shard "
                f"{selection.shard}/{selection.shards}: merge the shards of one split"
            )
        if own.shard in seen:
            raise MergeError(
                f"shard {own.shard}/{own.shards} is given twice: {seen[own.shard]} and {path}; "
                "give each shard's folder once"
            )
        seen[own.shard] = path
        if result.interrupted:
            raise MergeError(
                f"{path} (shard {own.shard}/{own.shards}) was interrupted before every entry "
                f"ran: finish it with `evaltrace test --resume {path}`, then merge"
            )
    missing = sorted(set(range(1, selection.shards + 1)) - set(seen))
    if missing:
        listed = ", ".join(f"{k}/{selection.shards}" for k in missing)
        raise MergeError(
            f"shard{'s' if len(missing) > 1 else ''} {listed} of {first.name!r} "
            f"{'are' if len(missing) > 1 else 'is'} missing: give the folder of every shard "
            f"({selection.shards} in all)"
        )
    return selection


def _differences(shards: list[tuple[Path, RunResult]], *, force: bool) -> list[str]:
    """The fingerprint fields the shards disagree on (with ``force``), or why they cannot merge."""
    first = shards[0][1]
    fingerprints = [(path, result.fingerprint) for path, result in shards]
    unknown = [path for path, fingerprint in fingerprints if fingerprint is None]
    if len(unknown) == len(shards):
        return []  # written before runs had fingerprints: nothing to compare
    problems: list[str] = []
    fields: dict[str, None] = {}
    if unknown:
        problems.append(
            f"{', '.join(map(str, unknown))} record{'s' if len(unknown) == 1 else ''} no "
            "fingerprint (written by an older evaltrace than the other shards)"
        )
        fields["fingerprint"] = None
    reference = next((path, fp) for path, fp in fingerprints if fp is not None)
    for path, fingerprint in fingerprints:
        if fingerprint is None or path == reference[0]:
            continue
        assert reference[1] is not None
        for difference in reference[1].differences(fingerprint, ignore={"shard"}):
            problems.append(difference.describe(str(reference[0]), str(path)))
            fields[difference.field] = None
    if problems and not force:
        raise MergeError(
            f"the shards of {first.name!r} were not made alike: "
            + "; ".join(problems)
            + ". Their entries would mix under one header; run the shards again alike, or "
            "merge with --force (force=True) if you know they are comparable"
        )
    return list(fields)


def _new_folder(parent: str | os.PathLike[str], run_id: str) -> Path:
    where = check_writable(parent) / run_id
    try:
        where.mkdir()
    except FileExistsError:
        raise ResultsFolderError(
            f"{where} exists already; choose another output directory or run id"
        ) from None
    return where


def _concatenate(sources: list[Path], target: Path) -> None:
    with open(target, "xb") as out:
        for source in sources:
            if source.exists():
                with open(source, "rb") as stream:
                    shutil.copyfileobj(stream, out)


def _summed_counts(results: Iterable[RunResult]) -> dict[CompletionStatus, int]:
    """How many entries of all the shards ended with each status."""
    summed: Counter[CompletionStatus] = Counter()
    for result in results:
        summed.update(result.counts)
    return {status: summed[status] for status in CompletionStatus if summed[status]}


def _summed_label_counts(results: Iterable[RunResult]) -> dict[str, dict[str, int]]:
    """Each evaluator's label counts over the shards, most frequent label first."""
    summed: dict[str, Counter[str]] = {}
    for result in results:
        for name, labels in result.label_counts.items():
            summed.setdefault(name, Counter()).update(labels)
    return {name: dict(counter.most_common()) for name, counter in summed.items()}
