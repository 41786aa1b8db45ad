"""Writing a dataset in any of its forms: :func:`convert_dataset`, :func:`write_dataset`.

A dataset is written as JSON (``.json``), YAML (``.yaml``, ``.yml``) or JSONL (``.jsonl``: a
header line, then one entry per line), by the suffix of the file written. Every key the source
gives is kept, in its order, and nothing is added: a name, description or position the loader
filled in is not written, so JSON to JSONL to YAML to JSON gives the file's data back. A JSONL
file is written entry by entry, from entries read one at a time.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from evaltrace.datasets.jsonl import jsonl_lines
from evaltrace.datasets.loading import load_dataset
from evaltrace.datasets.model import Dataset
from evaltrace.errors import EvaltraceError

__all__ = [
    "DatasetExistsError",
    "DatasetFormatError",
    "convert_dataset",
    "dataset_form",
    "write_dataset",
]

_FORMS: Final[dict[str, Literal["json", "yaml", "jsonl"]]] = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".jsonl": "jsonl",
}


class DatasetExistsError(EvaltraceError, FileExistsError):
    """The file a dataset would be written to exists, and overwriting was not asked for."""


class DatasetFormatError(EvaltraceError, ValueError):
    """A dataset file's name gives no form to write it in (``.json``, ``.yaml``, ``.jsonl``)."""


def dataset_form(path: str | os.PathLike[str]) -> Literal["json", "yaml", "jsonl"]:
    """The form a dataset file is written in, by its suffix.

    Raises:
        DatasetFormatError: The suffix is none of ``.json``, ``.yaml``, ``.yml``, ``.jsonl``.

    Example:
        >>> dataset_form("faq.evaltrace.jsonl")
        'jsonl'
    """
    form = _FORMS.get(Path(path).suffix.lower())
    if form is None:
        raise DatasetFormatError(
            f"{os.fspath(path)}: a dataset file ends with .json, .yaml, .yml or .jsonl (such "
            "as faq.evaltrace.jsonl); the suffix says which form is written"
        )
    return form


def convert_dataset(
    source: str | os.PathLike[str], target: str | os.PathLike[str], *, force: bool = False
) -> Path:
    """Write the dataset file ``source`` as ``target``, in the form ``target``'s suffix names.

    The source is checked as :func:`~evaltrace.datasets.load_dataset` checks it; entries of a
    JSONL source are read one at a time.

    Args:
        source: A dataset file (JSON, YAML or JSONL).
        target: The file to write: ``.json``, ``.yaml``, ``.yml`` or ``.jsonl``.
        force: Replace ``target`` if it exists.

    Returns:
        ``target``, as a path.

    Raises:
        DatasetError: ``source`` is not a valid dataset.
        DatasetExistsError: ``target`` exists and ``force`` is false.
        DatasetFormatError: ``target``'s suffix names no form.
        OSError: ``target`` cannot be written.

    Example:
        >>> convert_dataset("faq.evaltrace.json", "faq.evaltrace.jsonl")  # doctest: +SKIP
        PosixPath('faq.evaltrace.jsonl')
    """
    path = Path(target)
    dataset_form(path)
    if path.exists() and not force:
        raise DatasetExistsError(
            f"{path} exists; pass --force (force=True) to replace it, or name another file"
        )
    dataset = load_dataset(source)
    write_dataset(path, dataset_header(dataset), entry_data(dataset))
    return path


def dataset_header(dataset: Dataset) -> dict[str, Any]:
    """The keys of ``dataset`` its file gave, but ``entries``, in their order."""
    return dataset.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude={"entries"})


def entry_data(dataset: Dataset) -> Iterable[dict[str, Any]]:
    """Each entry's keys as its file gave them, one entry at a time."""
    for entry in dataset.entries:
        yield entry.model_dump(mode="json", exclude_unset=True, by_alias=True)


def write_dataset(
    path: str | os.PathLike[str], header: dict[str, Any], entries: Iterable[dict[str, Any]]
) -> None:
    """Write a dataset's data to ``path`` in the form its suffix names, replacing it atomically.

    Args:
        path: The file: ``.json``, ``.yaml``, ``.yml`` or ``.jsonl``.
        header: Every key but ``entries``.
        entries: Each entry's data (consumed one at a time for JSONL).

    Raises:
        DatasetFormatError: The suffix names no form.
        OSError: The file cannot be written.
    """
    target = Path(path)
    form = dataset_form(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as stream:
            if form == "jsonl":
                stream.writelines(jsonl_lines(header, entries))
            else:
                document = {**header, "entries": list(entries)}
                if form == "json":
                    stream.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
                else:
                    yaml.safe_dump(document, stream, sort_keys=False, allow_unicode=True)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
