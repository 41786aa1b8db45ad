"""``evaltrace report``: the report of a saved run, as text, JSON, CSV or an HTML scorecard."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import TYPE_CHECKING

import click

from evaltrace.cli._options import prices_option, verbose
from evaltrace.cli._saved_runs import load_run, priced_run
from evaltrace.cli._terminal import CommandError, out, printable

if TYPE_CHECKING:
    from evaltrace.llm.prices import PriceTable

__all__ = ["report"]


@click.command("report", short_help="Print the report of a saved run, or write its scorecard.")
@click.argument("result", metavar="RESULT")
@verbose("List every entry.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "csv"]),
    default="text",
    show_default=True,
    help="text: the report; json: the result itself; csv: one row per entry and evaluator.",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write the run's scorecard (one self-contained HTML page) to FILE.",
)
@click.option(
    "--baseline",
    type=click.Path(),
    metavar="RESULT",
    help="With --html: a result.json (or run folder) each cell of the scorecard compares with.",
)
@click.option(
    "--window",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    metavar="MINUTES",
    help="For a results stream (evaltrace serve --results): the length of each window, "
    "reported as one run.",
)
@prices_option("the run's cost (instead of the table the run was given)")
def report(
    result: str,
    verbose: bool,
    output_format: str,
    html: str | None,
    baseline: str | None,
    window: float,
    prices: PriceTable | None,
) -> int:
    """Print the report of RESULT: a result.json, or the run folder holding one.

    RESULT may also be a results stream (the --results file of evaltrace serve): it is
    reported as one run per time window of --window minutes.

    Exit code 0 once printed (whatever the run's outcome), 2 when RESULT (or --baseline)
    cannot be read.
    """
    from evaltrace.results import (
        DatasetScorecard,
        ResultFileError,
        is_results_stream,
        print_report,
        run_result_to_csv,
        save_dataset_scorecard,
    )

    if baseline is not None and html is None:
        raise CommandError("--baseline compares the scorecard's cells; give --html FILE too")
    if is_results_stream(result):
        return _report_stream(result, verbose, output_format, html, timedelta(minutes=window))
    loaded = priced_run(
        load_run(result, command="report", takes="a run's folder or its result.json"), prices
    )
    try:
        card = DatasetScorecard.from_folder(result, baseline=baseline) if html is not None else None
    except ResultFileError as exc:
        raise CommandError(str(exc)) from None
    if output_format == "json":
        sys.stdout.write(printable(loaded.model_dump_json(indent=2)) + "\n")
    elif output_format == "csv":
        run_result_to_csv(loaded, sys.stdout)
    else:
        print_report([loaded], verbose=verbose)
    if card is not None and html is not None:
        page = save_dataset_scorecard(card, html)
        if output_format == "text":
            out(f"scorecard: {page}")
    return 0


def _report_stream(
    path: str, verbose: bool, output_format: str, html: str | None, window: timedelta
) -> int:
    """Report a results stream as one run per window of ``window``, the earliest first."""
    from evaltrace.results import ResultFileError, print_report, read_windows, run_result_to_csv

    if html is not None:
        raise CommandError(
            f"{path} is a results stream (evaltrace serve --results); --html takes a run's "
            "folder or its result.json"
        )
    try:
        runs = read_windows(path, window=window)
    except ResultFileError as exc:
        raise CommandError(str(exc)) from None
    if output_format == "json":
        documents = ",\n".join(run.model_dump_json(indent=2) for run in runs)
        sys.stdout.write(printable(f"[{documents}]") + "\n")
    elif output_format == "csv":
        for number, run in enumerate(runs):
            if number:
                sys.stdout.write("\n")
            run_result_to_csv(run, sys.stdout)
    else:
        print_report(runs, verbose=verbose)
    return 0
