"""Finding dataset files: the paths given, and the ``*.evaltrace.<form>`` files in folders."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from evaltrace.cli._terminal import CommandError, err
from evaltrace.constants import MAX_DATASET_BYTES, RESULTS_DIR

__all__ = ["DATASET_SUFFIXES", "dataset_files", "is_dataset_file"]

DATASET_SUFFIXES: Final = (
    ".evaltrace.json",
    ".evaltrace.yaml",
    ".evaltrace.yml",
    ".evaltrace.jsonl",
)
"""How a dataset file's name ends, for it to be found in a folder."""

_SKIPPED_FOLDERS: Final = frozenset({"__pycache__", "node_modules", RESULTS_DIR})
_OTHER_DATA: Final = (".json", ".yaml", ".yml", ".jsonl")


def is_dataset_file(path: Path) -> bool:
    """Whether a folder search picks up ``path``: its name ends with a dataset suffix."""
    return path.name.lower().endswith(DATASET_SUFFIXES)


def dataset_files(paths: Sequence[str], *, note: Callable[[str], None] = err) -> list[Path]:
    """The dataset files named by ``paths``: files as given, folders searched recursively.

    Hidden folders, ``__pycache__``, ``node_modules`` and ``evaltrace_results`` are not
    searched. Each file is listed once, in the order given (a folder's files sorted). A file
    given by its path is a dataset whatever its name; a folder's JSON or YAML file that is a
    dataset but not named as one is skipped, and ``note`` is told so.

    Raises:
        CommandError: A path does not exist, or a folder holds no dataset file (the JSON and
            YAML files it holds are named, the datasets among them first).
    """
    found: dict[Path, None] = {}
    for given in paths or ["."]:
        path = Path(given)
        if path.is_dir():
            inside, others = _search(path)
            if not inside:
                raise CommandError(_nothing_found(path, others))
            for other in others:
                if _is_dataset_document(other):
                    note(f"evaltrace: {_named_otherwise(other)}")
            found.update(dict.fromkeys(inside))
        elif path.exists() or path.is_symlink():
            found[path] = None
        else:
            raise CommandError(f"{given}: no such file or folder")
    return list(found)


def _search(folder: Path) -> tuple[list[Path], list[Path]]:
    """The dataset files under ``folder``, and the other JSON and YAML files."""
    datasets: list[Path] = []
    others: list[Path] = []
    for root, folders, names in os.walk(folder):
        folders[:] = sorted(
            name for name in folders if not name.startswith(".") and name not in _SKIPPED_FOLDERS
        )
        for name in sorted(names):
            path = Path(root) / name
            if is_dataset_file(path):
                datasets.append(path)
            elif path.suffix.lower() in _OTHER_DATA:
                others.append(path)
    return datasets, others


def _is_dataset_document(path: Path) -> bool:
    """Whether ``path`` holds a dataset's shape: a mapping with a list of ``entries``, no run id.

    A saved run (``result.json``) has entries too, and a ``run_id``. Files over the dataset size
    limit, unreadable or not JSON/YAML are not datasets here: the search only points at what
    it skipped, and a file given by its path is read, and its problems reported, in full.
    """
    if path.suffix.lower() == ".jsonl":
        return _is_jsonl_dataset(path)
    try:
        if path.stat().st_size > MAX_DATASET_BYTES:
            return False
        text = path.read_text(encoding="utf-8-sig")
        document: Any = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError):
        return False
    return (
        isinstance(document, dict)
        and isinstance(document.get("entries"), list)
        and "run_id" not in document
    )


def _is_jsonl_dataset(path: Path) -> bool:
    """Whether a JSONL file's first line is a dataset header and its second an entry.

    Trace files (``traces.jsonl``) and run folders' ``entries.jsonl`` hold spans and results.
    """
    try:
        with path.open(encoding="utf-8-sig") as stream:
            lines = [stream.readline(MAX_DATASET_BYTES) for _ in range(2)]
        header, first = (json.loads(line) for line in lines)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return (
        isinstance(header, dict)
        and isinstance(first, dict)
        and not header.keys() & {"entry_kwargs", "trace_id", "span_id", "run_id", "status"}
        and bool(first.keys() & {"entry_kwargs", "trace"})
    )


def _named_otherwise(path: Path) -> str:
    renamed = f"{path.stem}.evaltrace{path.suffix}"
    return (
        f"{path} is a dataset file not named *.evaltrace.json|yaml|yml|jsonl, so the folder search "
        f"skipped it: rename it ({renamed}) or give its path"
    )


def _nothing_found(folder: Path, others: list[Path]) -> str:
    message = (
        f"{folder}: no dataset file found (a folder is searched for files named "
        f"*{', *'.join(DATASET_SUFFIXES)})"
    )
    datasets = [path for path in others if _is_dataset_document(path)]
    if datasets:
        return f"{message}; {'; '.join(_named_otherwise(path) for path in datasets)}"
    if others:
        shown = ", ".join(str(path) for path in others[:5])
        message += (
            f"; it holds {shown}{' ...' if len(others) > 5 else ''}: if one of them is a "
            "dataset, rename it (name.evaltrace.json) or give its path"
        )
    return message
