"""``evaltrace dataset schema``: the JSON Schema of dataset files."""

from __future__ import annotations

import json
from pathlib import Path

import click

from evaltrace.cli._terminal import CommandError, err

__all__ = ["schema"]


@click.command("schema", short_help="Print the JSON Schema of dataset files.")
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    help="Write the schema to this file instead of printing it.",
)
def schema(output: str | None) -> int:
    """Print the JSON Schema of dataset files.

    Save it beside your datasets and name it in their "$schema" key: editors then complete
    keys and flag mistakes as you type.
    """
    from evaltrace.datasets import dataset_json_schema

    text = json.dumps(dataset_json_schema(), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return 0
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
    err(f"evaltrace dataset schema: written to {output}")
    return 0
