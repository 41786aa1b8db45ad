"""``evaltrace dataset validate``: load and resolve dataset files, reporting every problem."""

from __future__ import annotations

from collections.abc import Sequence

import click

from evaltrace.cli._discovery import dataset_files
from evaltrace.cli._terminal import CommandError, out

__all__ = ["validate"]


@click.command("validate", short_help="Check dataset files without running them.")
@click.argument("paths", nargs=-1, metavar="[PATHS]...")
def validate(paths: Sequence[str]) -> int:
    """Check the dataset files in PATHS (default: the current folder) as a run would.

    Each file is loaded, its runnable imported, its evaluators built and every entry's
    arguments checked against the runnable; nothing runs. Every problem of every file is
    reported, with the file and the place in it. Exit code 0 when all are valid, 2 otherwise.
    """
    from evaltrace.datasets import DatasetError, ReferenceLoader, prepare_dataset

    loader = ReferenceLoader()
    problems = []
    for path in dataset_files(paths):
        try:
            prepared = prepare_dataset(path, loader=loader)
        except DatasetError as exc:
            problems += exc.problems
            continue
        count = len(prepared.dataset.entries)
        out(f"ok  {path}  ({count} {'entry' if count == 1 else 'entries'})")
    if problems:
        raise CommandError(str(DatasetError(problems)))
    return 0
