"""``evaltrace diff``: compare two saved runs."""

from __future__ import annotations

import sys

import click

from evaltrace.cli._options import output_format, verbose
from evaltrace.cli._saved_runs import load_run
from evaltrace.cli._terminal import printable

__all__ = ["diff"]


@click.command("diff", short_help="Compare two saved runs.")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@verbose("Also list what did not change.")
@output_format(text="what changed", json="the whole comparison")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when something got worse.")
def diff(old: str, new: str, verbose: bool, output_format: str, fail_on_regression: bool) -> int:
    """Compare the run NEW with the run OLD (each a result.json or a run folder).

    Entries are matched by name and evaluations by evaluator: each is better, worse, same,
    new or gone, with the change of score (new minus old) and of status.

    Exit code 0, or 1 with --fail-on-regression when something got worse; 2 when a file
    cannot be read.
    """
    from evaltrace.results import diff_results, print_diff

    takes = "two runs' folders or their result.json files"
    before = load_run(old, command="diff", takes=takes)
    after = load_run(new, command="diff", takes=takes)
    comparison = diff_results(before, after)
    if output_format == "json":
        sys.stdout.write(printable(comparison.model_dump_json(indent=2)) + "\n")
    else:
        print_diff(comparison, verbose=verbose)
    return 1 if fail_on_regression and comparison.has_regressions else 0
