"""``evaltrace outcomes``: task outcomes of multi-agent experiments from the agents' logs."""

from __future__ import annotations

import click

from evaltrace.cli._terminal import CommandError, out

__all__ = ["outcomes"]


@click.command("outcomes", short_help="Success rate of agent task runs from their logs.")
@click.argument("folders", nargs=-1, required=True, metavar="FOLDER...")
@click.option(
    "--tasks",
    "tasks",
    required=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="The task definitions (JSON): type, agent count, difficulty of each task.",
)
@click.option(
    "--score-name",
    default="score",
    show_default=True,
    help="Traces: the wrap(..., name=...) under which agents recorded their score.",
)
@click.option(
    "--score-pattern",
    metavar="REGEX",
    help=(
        "Chat transcripts: the system message that gives the score, its group being the "
        "score [default: Mindcraft's 'Task ended with score : X']."
    ),
)
@click.option(
    "--timeout-marker",
    metavar="TEXT",
    help=(
        "Chat transcripts: a system message containing TEXT marks a timeout "
        "[default: Mindcraft's 'Task timeout reached']."
    ),
)
@click.option(
    "--model-from-path",
    metavar="TEMPLATE",
    help=(
        "Read the model from each task folder's path when its logs name none: '{model}/{task}' "
        "for FOLDER/<model>/<task id>; '*' is any one folder name."
    ),
)
@click.option(
    "--csv",
    "csv_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write one row per task run to FILE.",
)
def outcomes(
    folders: tuple[str, ...],
    tasks: str,
    score_name: str,
    score_pattern: str | None,
    timeout_marker: str | None,
    model_from_path: str | None,
    csv_file: str | None,
) -> int:
    """Read the task folders under each FOLDER and print the success rate.

    A task folder is named by a task id of --tasks and holds one log per agent: a chat
    transcript (a JSON list of role/content messages, or Mindcraft's memory file with its
    turns) or a trace file (JSONL or OTLP-JSON). Logs named <agent>_<n>.json are repetition
    n of the task. Other folders are searched in turn (FOLDER/<model>/<task id>). A run's
    status combines its agents' (an unreadable or missing log is LOG_FILE_ERROR unless
    another agent logged the task's success; never dropped). Prints the success rate overall,
    by task type and by model, and every log that could not be read.

    Exit code 0 once printed, 2 when a FOLDER, the task definitions or a pattern cannot be
    read.
    """
    from evaltrace.errors import ConfigurationError
    from evaltrace.results import (
        collect_task_outcomes,
        format_outcome_summary,
        task_outcomes_to_csv,
    )
    from evaltrace.results.outcomes import DEFAULT_SCORE_PATTERN, DEFAULT_TIMEOUT_MARKER

    try:
        found = collect_task_outcomes(
            folders,
            tasks,
            score_name=score_name,
            score_pattern=DEFAULT_SCORE_PATTERN if score_pattern is None else score_pattern,
            timeout_marker=DEFAULT_TIMEOUT_MARKER if timeout_marker is None else timeout_marker,
            model_from_path=model_from_path,
        )
    except ConfigurationError as exc:
        raise CommandError(str(exc)) from None
    out(format_outcome_summary(found))
    if csv_file is not None:
        rows = task_outcomes_to_csv(found, csv_file)
        out(f"csv: {csv_file} ({rows} task runs)")
    return 0
