"""``evaltrace history``: every saved run over time, as tables and one HTML page."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evaltrace.cli._options import output_format, statistics_options
from evaltrace.cli._terminal import CommandError, err, out, printable
from evaltrace.constants import DEFAULT_SIGNIFICANCE, RESULTS_DIR

__all__ = ["history"]


@click.command("history", short_help="Every saved run over time: tables and one HTML page.")
@click.argument("folders", nargs=-1, metavar="[DIR]...")
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help=(
        "Where to write the page (default: history.html in the first DIR, or in the folder "
        "holding it when it is a run's folder)."
    ),
)
@click.option("--no-html", is_flag=True, help="Print the tables only; write no page.")
@output_format(text="one table per dataset", json="the whole history")
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_SIGNIFICANCE,
    show_default=True,
    help="The significance level of the verdicts against the run before (after Holm's).",
)
@statistics_options("the paired tests against the run before")
def history(
    folders: tuple[str, ...],
    html: str | None,
    no_html: bool,
    output_format: str,
    level: float,
    confidence: float,
    resamples: int,
    statistics_seed: int,
) -> int:
    """Show every run under each DIR (default: evaltrace_results) over time.

    Each DIR is a folder of runs, searched at every depth, or a run's folder. Runs are grouped
    by dataset (the run's name) and ordered by when they started; the runs of one shard or
    of one -k entry filter are a series of their own. Per run: its entries and
    how many succeeded, each evaluator's mean with its interval and n, the app's p95 latency
    when its entries timed it, and its verdicts against the run before it (paired tests,
    Holm's correction). The page draws each figure over time with its interval band; each dot
    links to its run's scorecard.html, and a significant change is marked.

    Exit code 0 (a run that did not end, or whose result.json cannot be read, is left out and
    named on standard error), or 2 when a DIR is not a folder of runs nor a run's folder.
    """
    from evaltrace.errors import ResultFileError, ResultsFolderError
    from evaltrace.results.folder import RESULT_FILE
    from evaltrace.results.history import (
        HISTORY_FILE,
        print_history,
        run_history,
        save_history_page,
    )

    given = list(folders) or [RESULTS_DIR]
    if html is not None and no_html:
        raise CommandError("--html FILE writes the page and --no-html writes none: give one")
    try:
        found = run_history(
            given, level=level, confidence=confidence, resamples=resamples, seed=statistics_seed
        )
    except ResultFileError as exc:
        hint = (
            "; run `evaltrace test` first (it saves each run under evaltrace_results/), or give "
            "the folders of runs"
            if not folders and not Path(RESULTS_DIR).exists()
            else ""
        )
        raise CommandError(f"{exc}{hint}") from None
    for folder in found.unfinished:
        err(f"evaltrace history: left out {folder}: its run did not end (no result.json)")
    for problem in found.unreadable:
        err(f"evaltrace history: left out {problem}")
    page = None
    if not no_html:
        first = Path(given[0])
        run_folder = first.parent if first.is_file() else first
        home = run_folder.parent if (run_folder / RESULT_FILE).is_file() else run_folder
        target = Path(html) if html is not None else home / HISTORY_FILE
        try:
            page = save_history_page(found, target)
        except ResultsFolderError as exc:
            raise CommandError(str(exc)) from None
    if output_format == "json":
        sys.stdout.write(printable(found.model_dump_json(indent=2)) + "\n")
    else:
        print_history(found)
        if page is not None:
            out(f"history: {page}")
    return 0
