"""``evaltrace report``: the report of a saved run."""

from __future__ import annotations

import sys

import click

from evaltrace.cli._options import output_format, verbose
from evaltrace.cli._terminal import CommandError, printable

__all__ = ["report"]


@click.command("report", short_help="Print the report of a saved run.")
@click.argument("result", metavar="RESULT")
@verbose("List every entry.")
@output_format(text="the report", json="the result itself")
def report(result: str, verbose: bool, output_format: str) -> int:
    """Print the report of RESULT: a result.json, or the run folder holding one.

    Exit code 0 once printed (whatever the run's outcome), 2 when RESULT cannot be read.
    """
    from evaltrace.results import ResultFileError, load_result, print_report

    try:
        loaded = load_result(result)
    except ResultFileError as exc:
        raise CommandError(str(exc)) from None
    if output_format == "json":
        sys.stdout.write(printable(loaded.model_dump_json(indent=2)) + "\n")
    else:
        print_report([loaded], verbose=verbose)
    return 0
