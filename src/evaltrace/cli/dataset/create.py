"""``evaltrace dataset create``: a new dataset file to fill in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import click

from evaltrace.cli._discovery import DATASET_SUFFIXES
from evaltrace.cli._terminal import CommandError, out

__all__ = ["SCHEMA_FILE", "create", "document_text", "write_schema_beside"]

SCHEMA_FILE: Final = "dataset.schema.json"
"""The schema file a new dataset names in ``$schema``, written beside it when absent."""


@click.command("create", short_help="Write a new dataset file to fill in.")
@click.argument("name")
@click.option(
    "--runnable",
    default="app.py:run",
    show_default=True,
    metavar="REF",
    help="The app's entry point: 'path/to/app.py:name' (beside the file) or 'module:name'.",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["json", "yaml", "jsonl"]),
    default="json",
    show_default=True,
)
def create(name: str, runnable: str, file_format: str) -> int:
    """Write a new dataset file NAME.evaltrace.json (or .yaml, .jsonl), with one example entry.

    NAME may include a folder (datasets/faq). The file names its JSON Schema in "$schema";
    dataset.schema.json is written beside it when absent. An existing file is never
    overwritten.
    """
    given = Path(name)
    path = (
        given
        if given.name.lower().endswith(DATASET_SUFFIXES)
        else given.with_name(f"{given.name}.evaltrace.{file_format}")
    )
    title = path.name
    for suffix in DATASET_SUFFIXES:
        title = title.removesuffix(suffix)
    if not title:
        raise CommandError(f"{name!r} is not a dataset name; give a name such as 'faq'")
    data: dict[str, Any] = {
        "$schema": f"./{SCHEMA_FILE}",
        "name": title,
        "runnable": runnable,
        "evaluators": ["ExactMatch"],
        "entries": [
            {
                "name": "example",
                "entry_kwargs": {"question": "What is the capital of France?"},
                "expectation": "Paris",
            }
        ],
    }
    text = document_text(path, data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as stream:
            stream.write(text)
        write_schema_beside(path)
    except FileExistsError:
        raise CommandError(f"{path} exists already; choose another name") from None
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    out(f"created {path}: set its runnable and evaluators, and replace the example entry")
    return 0


def document_text(path: Path, data: dict[str, Any]) -> str:
    """A dataset's data as the text of its file: JSON, JSONL (``.jsonl``) or YAML, by suffix."""
    if path.suffix.lower() == ".json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if path.suffix.lower() == ".jsonl":
        from evaltrace.datasets.jsonl import jsonl_lines

        header = {key: value for key, value in data.items() if key != "entries"}
        return "".join(jsonl_lines(header, data.get("entries", [])))
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def write_schema_beside(path: Path) -> None:
    """Write :data:`SCHEMA_FILE` beside the dataset file ``path`` unless it is there.

    Raises:
        OSError: It cannot be written.
    """
    from evaltrace.datasets import dataset_json_schema

    schema_path = path.parent / SCHEMA_FILE
    if not schema_path.exists():
        schema_path.write_text(json.dumps(dataset_json_schema(), indent=2) + "\n")
