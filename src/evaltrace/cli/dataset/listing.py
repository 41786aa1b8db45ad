"""``evaltrace dataset list``: the dataset files found, with their entry counts."""

from __future__ import annotations

from collections.abc import Sequence

import click

from evaltrace.cli._discovery import dataset_files
from evaltrace.cli._terminal import out

__all__ = ["list_datasets"]


@click.command("list", short_help="List dataset files with their entry counts.")
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
def list_datasets(paths: Sequence[str]) -> int:
    """List the dataset files in PATHS (default: the current folder), with their entries.

    A file that does not load is listed as invalid; `evaltrace dataset validate` says why.
    """
    from evaltrace.datasets import DatasetError, load_dataset

    rows = [("dataset", "entries", "runnable", "file")]
    for path in dataset_files(paths):
        try:
            loaded = load_dataset(path)
        except DatasetError as exc:
            count = len(exc.problems)
            rows.append(
                ("-", "-", f"invalid: {count} problem{'s' if count > 1 else ''}", str(path))
            )
            continue
        rows.append(
            (loaded.name or "-", str(len(loaded.entries)), loaded.runnable or "-", str(path))
        )
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out("  ".join([*cells, row[3]]))
    return 0
