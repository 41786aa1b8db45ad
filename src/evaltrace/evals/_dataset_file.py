"""A minimal reader of dataset JSON files (the format of ``evaltrace test`` datasets).

It reads only what :func:`~evaltrace.evals.runner.assert_dataset_pass` needs; the full
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

__all__ = ["DatasetFileError", "LoadedEntry", "load_entries"]


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


class _File(BaseModel):
    model_config = ConfigDict(extra="allow")

    entries: list[dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class LoadedEntry:
    """One dataset entry: the runnable's arguments and the test case."""

    entry_kwargs: dict[str, Any]
    """Arguments of the runnable."""
    case: Evaluable
    """Named inputs, expectation, metadata and description (no output yet)."""


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
            f"{path}: expected an object with an 'entries' list: {_describe(exc)}"
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
    return entries
