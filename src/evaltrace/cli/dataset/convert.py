"""``evaltrace dataset convert``: write a dataset file in another form (JSON, YAML, JSONL)."""

from __future__ import annotations

import click

from evaltrace.cli._terminal import CommandError, out

__all__ = ["convert"]


@click.command("convert", short_help="Write a dataset file as JSON, YAML or JSONL.")
@click.argument("source", metavar="SRC")
@click.argument("target", metavar="DEST")
@click.option("--force", is_flag=True, help="Replace DEST if it exists.")
def convert(source: str, target: str, force: bool) -> int:
    """Write the dataset SRC as DEST, in the form DEST's suffix names.

    .json is JSON, .yaml or .yml is YAML, .jsonl is JSONL (a header line with every key but
    the entries, then one entry per line, read one at a time when it runs). Every key, the
    entries' order and "$schema" are kept, and nothing is added. SRC is checked first; DEST
    is never replaced without --force. Exit code 0 when written, 2 otherwise.
    """
    from evaltrace.datasets import (
        DatasetError,
        DatasetExistsError,
        DatasetFormatError,
        convert_dataset,
    )

    try:
        path = convert_dataset(source, target, force=force)
    except (DatasetError, DatasetExistsError, DatasetFormatError) as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror or exc}") from None
    out(f"written {path} (from {source})")
    return 0
