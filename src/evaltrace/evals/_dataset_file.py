"""A minimal reader of dataset JSON files (the format of ``evaltrace test`` datasets).

It reads only what :func:`~evaltrace.evals.runner.assert_dataset_pass` needs: the entries,
and the dataset-level ``aggregators`` declared on evaluators
(``"evaluators": [{"name": "intent", "aggregators": [{"type": "fscore", ...}]}]``). The full
dataset model (evaluator references, runnable references, validation CLI) replaces it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluable import UNSET, Evaluable, NamedData
from evaltrace.metrics.classification import AggregatorSpec

__all__ = ["DatasetFile", "DatasetFileError", "LoadedEntry", "load_dataset_file", "load_entries"]


class DatasetFileError(EvaltraceError, ValueError):
    """A dataset file could not be read; the message names the file, entry and field."""


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry_kwargs: dict[str, JsonValue]
    eval_input: list[NamedData] = Field(min_length=1)
    description: str
    expectation: JsonValue = None
    eval_metadata: dict[str, JsonValue] | None = None
    evaluators: list[str] | None = None


class _EvaluatorEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    aggregators: list[AggregatorSpec] = Field(default_factory=list)


class _File(BaseModel):
    model_config = ConfigDict(extra="allow")

    entries: list[dict[str, Any]]
    evaluators: list[Any] = Field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class LoadedEntry:
    """One dataset entry: the runnable's arguments and the test case."""

    entry_kwargs: dict[str, Any]
    """Arguments of the runnable."""
    case: Evaluable
    """Named inputs, expectation, metadata and description (no output yet)."""


@dataclass(frozen=True, kw_only=True)
class DatasetFile:
    """What a dataset file holds: its entries and the aggregators declared per evaluator."""

    entries: list[LoadedEntry]
    """The entries, in file order."""
    aggregators: dict[str, list[AggregatorSpec]]
    """Dataset-level aggregator specs by evaluator name (only evaluators that declare some)."""


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(entry)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def load_entries(path: Path) -> list[LoadedEntry]:
    """Read the entries of the dataset file at ``path``.

    Raises:
        DatasetFileError: The file is missing, is not JSON, or an entry is malformed.
    """
    return load_dataset_file(path).entries


def load_dataset_file(path: Path) -> DatasetFile:
    """Read the dataset file at ``path``: entries and declared aggregators.

    Raises:
        DatasetFileError: The file is missing, is not JSON, or an entry or evaluator entry is
            malformed (the message names the entry and the field).
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetFileError(f"dataset file {str(path)!r} does not exist") from None
    except json.JSONDecodeError as exc:
        raise DatasetFileError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    try:
        document = _File.model_validate(raw)
    except ValidationError as exc:
        raise DatasetFileError(
            f"{path}: {_describe(exc)} (a dataset is an object with an 'entries' list)"
        ) from None
    entries = []
    for index, item in enumerate(document.entries):
        try:
            entry = _Entry.model_validate(item)
        except ValidationError as exc:
            raise DatasetFileError(f"{path}: entries[{index}]: {_describe(exc)}") from None
        case = Evaluable(
            eval_input=entry.eval_input,
            expectation=entry.expectation if "expectation" in item else UNSET,
            eval_metadata=entry.eval_metadata,
            description=entry.description,
        )
        entries.append(LoadedEntry(entry_kwargs=dict(entry.entry_kwargs), case=case))
    aggregators: dict[str, list[AggregatorSpec]] = {}
    for index, item in enumerate(document.evaluators):
        if isinstance(item, str):
            continue  # a plain evaluator name declares no aggregators
        try:
            declared = _EvaluatorEntry.model_validate(item)
        except ValidationError as exc:
            raise DatasetFileError(
                f"{path}: evaluators[{index}]: {_describe(exc)} (an evaluator entry is a name, "
                'or {"name": ..., "aggregators": [...]})'
            ) from None
        if declared.aggregators:
            if declared.name in aggregators:
                raise DatasetFileError(
                    f"{path}: evaluators: {declared.name!r} is declared twice; declare each "
                    "evaluator once, with all its aggregators in one list"
                )
            aggregators[declared.name] = list(declared.aggregators)
    return DatasetFile(entries=entries, aggregators=aggregators)
