"""The fingerprint of a dataset run: what makes its results comparable with another run's.

A run records its :class:`~evaltrace.evals.RunFingerprint` in ``run.json``; ``evaltrace
merge`` and ``evaltrace test --resume`` compare fingerprints and refuse runs that disagree
(see :mod:`evaltrace.results.merge` and :func:`~evaltrace.datasets.run_dataset`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from evaltrace.datasets.entries import PreparedDataset
from evaltrace.datasets.model import EvaluatorSpec
from evaltrace.datasets.references import reference_file
from evaltrace.datasets.sharding import Shard
from evaltrace.evals.evaluator import evaluator_name
from evaltrace.results.model import RunFingerprint
from evaltrace.version import version

__all__ = ["run_fingerprint"]


def run_fingerprint(
    prepared: PreparedDataset,
    *,
    threshold: float,
    timeout: float | None,
    entry_filter: str | None,
    from_trace: str | None,
    shard: Shard,
    epochs: int = 1,
    reducer: str = "mean",
) -> RunFingerprint:
    """The fingerprint of a run of ``prepared`` with these settings.

    Args:
        prepared: The dataset, resolved (its evaluators given in code, if they were).
        threshold: The score each evaluation must reach.
        timeout: Seconds allowed for each run and evaluation.
        entry_filter: The entry filter, as text.
        from_trace: The selector's name.
        shard: The shard run.
        epochs: How many times each entry's app is run.
        reducer: How an entry's runs are reduced.
    """
    dataset = prepared.dataset
    entries = hashlib.sha256()
    # One pass, keeping only the distinct references: a list of each entry's evaluators made
    # a 10**6-entry run hold 64 MiB before its first entry (bench_dataset_memory.py).
    references = dict.fromkeys([dataset.runnable or "", *_references(dataset.evaluators)])
    for entry in dataset.entries:
        entries.update(entry.model_dump_json().encode("utf-8"))
        entries.update(b"\n")
        if entry.evaluators:
            references.update(dict.fromkeys(_references(entry.evaluators)))
    described = {
        "specs": [spec.model_dump(mode="json", by_alias=True) for spec in dataset.evaluators],
        "used": _evaluators_used(prepared),
    }
    return RunFingerprint(
        evaltrace=version(),
        dataset=entries.hexdigest(),
        evaluators=_digest(described),
        code=_code_files(references, dataset.path.parent if dataset.path else None),
        runnable=prepared.runnable.name,
        threshold=threshold,
        timeout=timeout,
        entry_filter=entry_filter,
        from_trace=from_trace,
        shard=f"{shard.index}/{shard.count}",
        epochs=epochs,
        reducer=reducer,
    )


def _references(specs: Iterable[EvaluatorSpec]) -> list[str]:
    """The names of ``specs`` that refer to code (a check's name is its type and value)."""
    return [spec.name for spec in specs if spec.check is None]


def _evaluators_used(prepared: PreparedDataset) -> list[str]:
    """The names of every evaluator the entries use (those given in code included)."""
    names: dict[str, None] = {}
    seen: set[int] = set()
    for checks in prepared.entry_evaluators:
        if id(checks) in seen:  # entries with the same evaluators share one list
            continue
        seen.add(id(checks))
        for check in checks:
            names.setdefault(evaluator_name(check), None)
    return list(names)


def _code_files(references: Iterable[str], base_dir: Path | None) -> dict[str, str]:
    """SHA-256 of each file of user code among ``references``, by the reference's target."""
    files: dict[str, str] = {}
    for text in dict.fromkeys(references):
        path = reference_file(text, base_dir)
        if path is None:
            continue
        target = text.rpartition(":")[0]
        try:
            files[target] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:  # gone since it was imported: nothing to compare it by
            files[target] = f"unreadable: {exc.strerror or type(exc).__name__}"
    return dict(sorted(files.items()))


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
