"""``evaltrace dataset``: create, list, validate, describe and extend dataset files."""

from __future__ import annotations

import click

from evaltrace.cli.dataset.convert import convert
from evaltrace.cli.dataset.create import create
from evaltrace.cli.dataset.listing import list_datasets
from evaltrace.cli.dataset.save import save
from evaltrace.cli.dataset.schema import schema
from evaltrace.cli.dataset.validate import validate

__all__ = ["dataset"]


@click.group("dataset", short_help="Create, list, validate, convert and extend dataset files.")
def dataset() -> None:
    """Create, list, validate, convert and extend dataset files.

    Dataset files are named *.evaltrace.json, *.evaltrace.yaml (.yml) or *.evaltrace.jsonl.
    """


for _command in (create, list_datasets, validate, schema, save, convert):
    dataset.add_command(_command)
