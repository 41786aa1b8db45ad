"""``evaltrace outcomes``: task outcomes of a multi-agent experiment from stored traces."""

from __future__ import annotations

import click

from evaltrace.cli._terminal import CommandError, out

__all__ = ["outcomes"]


@click.command("outcomes", short_help="Success rate of agent task runs from their traces.")
@click.argument("folder", metavar="FOLDER")
@click.option(
    "--tasks",
    "tasks",
    required=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The task definitions (JSON): id, type, agent count, difficulty of each task.",
)
@click.option(
    "--score-name",
    default="score",
    show_default=True,
    help="The wrap(..., name=...) under which agents recorded their score.",
)
@click.option(
    "--csv",
    "csv_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write one row per task run to FILE.",
)
def outcomes(folder: str, tasks: str, score_name: str, csv_file: str | None) -> int:
    """Read FOLDER/<task id>/<one trace file per agent> and print the success rate.

    Each agent's trace file (JSONL or OTLP-JSON) gives its score, status and final message; a
    task run's status combines its agents' (an unreadable, empty or missing file is
    LOG_FILE_ERROR, never dropped). Prints the success rate overall and by task type.

    Exit code 0 once printed, 2 when FOLDER or the task definitions cannot be read.
    """
    from evaltrace.errors import ConfigurationError
    from evaltrace.results import (
        collect_task_outcomes,
        format_outcome_summary,
        task_outcomes_to_csv,
    )

    try:
        found = collect_task_outcomes(folder, tasks, score_name=score_name)
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    out(format_outcome_summary(found))
    if csv_file is not None:
        rows = task_outcomes_to_csv(found, csv_file)
        out(f"csv: {csv_file} ({rows} task runs)")
    return 0
