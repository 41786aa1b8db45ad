"""``evaltrace diff``: compare two saved runs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from evaltrace.cli._options import (
    Gate,
    GatedCommand,
    gate_fails,
    gate_level,
    output_format,
    prices_option,
    regression_gate,
    statistics_options,
    verbose,
)
from evaltrace.cli._saved_runs import load_run, priced_run
from evaltrace.cli._terminal import CommandError, printable

if TYPE_CHECKING:
    from evaltrace.llm.prices import PriceTable

__all__ = ["diff"]


@click.command("diff", short_help="Compare two saved runs.", cls=GatedCommand)
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@verbose("Also list what did not change.")
@output_format(text="what changed", json="the whole comparison")
@regression_gate("OLD")
@statistics_options("the paired intervals")
@prices_option("both runs' costs")
def diff(
    old: str,
    new: str,
    verbose: bool,
    output_format: str,
    fail_on_regression: Gate | None,
    confidence: float,
    resamples: int,
    statistics_seed: int,
    prices: PriceTable | None,
) -> int:
    """Compare the run NEW with the run OLD (each a result.json or a run folder).

    Entries are matched by name and evaluations by evaluator: each is better, worse, same,
    new or gone, with the change of score (new minus old) and of status; the entries that now
    pass or now fail are shown with their old and new outputs side by side.

    Then, per evaluator, over the entries in both runs: the mean difference with its paired
    bootstrap interval, the exact McNemar test of pass/fail and the Wilcoxon signed-rank test
    of the scores, and a verdict (better, worse or no significant change) after Holm's
    correction across evaluators; dataset-level results are compared by a paired bootstrap.
    The app's cost (by one price table for both runs: --prices, else NEW's, else OLD's, else
    EVALTRACE_PRICES's) and latency per entry are compared the same way, as figures.

    Exit code 0, or 1 with --fail-on-regression when something got significantly worse (any
    worse entry or result with --fail-on-regression=any); 2 when a file cannot be read.
    """
    from evaltrace.results import diff_results, print_diff

    if fail_on_regression is not None and fail_on_regression != "any" and not resamples:
        raise CommandError(
            "--fail-on-regression decides by the paired tests, which need --resamples >= 1; "
            "use --fail-on-regression=any to fail on any regression without them"
        )
    takes = "two runs' folders or their result.json files"
    before = load_run(old, command="diff", takes=takes)
    after = load_run(new, command="diff", takes=takes)
    table = prices or after.prices or before.prices or priced_run(after, None).prices
    comparison = diff_results(
        before,
        after,
        level=gate_level(fail_on_regression),
        confidence=confidence,
        resamples=resamples,
        seed=statistics_seed,
        prices=table,
    )
    if output_format == "json":
        sys.stdout.write(printable(comparison.model_dump_json(indent=2)) + "\n")
    else:
        print_diff(comparison, verbose=verbose)
    return 1 if gate_fails(comparison, fail_on_regression) else 0
