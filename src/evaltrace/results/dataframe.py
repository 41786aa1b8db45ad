"""Results as tables: pandas DataFrames (the ``[pandas]`` extra) and CSV files (no extra).

:meth:`RunResult.to_dataframe() <evaltrace.results.model.RunResult.to_dataframe>` gives one row
per entry and evaluator; :func:`aggregate_results_to_dataframe` one row per task outcome.
:func:`run_result_to_csv` and :func:`task_outcomes_to_csv` write the same rows as CSV with the
standard library, so ``evaltrace report --format csv`` works without pandas.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

from evaltrace.errors import MissingExtraError
from evaltrace.results.model import RECORD_COLUMNS, RunResult
from evaltrace.results.outcomes import TaskOutcome, TaskOutcomes

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "aggregate_results_to_dataframe",
    "run_result_to_csv",
    "task_outcome_records",
    "task_outcomes_to_csv",
]

_TASK_COLUMNS = (
    "task_id",
    "task_type",
    "agent_count",
    "difficulty",
    "model_name",
    "repetition",
    "overall_raw_score",
    "overall_is_successful",
    "overall_completion_status",
    "total_agent_logs_found",
    "agent_statuses",
    "agents_timed_out",
    "agent_log_errors",
    "problems",
    "parse_errors",
    "folder",
)


def task_outcome_records(
    outcomes: TaskOutcomes | Iterable[TaskOutcome],
) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns and one flat row per task outcome (see :meth:`TaskOutcome.to_record`).

    Every row has every column: a ``metric_<name>`` one of the difficulty metrics of any task
    is ``None`` where a task lacks it.
    """
    runs = outcomes.outcomes if isinstance(outcomes, TaskOutcomes) else list(outcomes)
    records = [outcome.to_record() for outcome in runs]
    metrics = sorted({key for record in records for key in record if key not in _TASK_COLUMNS})
    columns = [*_TASK_COLUMNS, *metrics]
    return columns, [{column: record.get(column) for column in columns} for record in records]


def aggregate_results_to_dataframe(outcomes: TaskOutcomes | Iterable[TaskOutcome]) -> pd.DataFrame:
    """Task outcomes as a DataFrame, one row per task run, for ``groupby`` analysis.

    Columns: task id, type, agent count, difficulty, model, repetition, best score, success,
    status, the number of agent logs, each agent's status (``;``-joined), how many agents
    timed out or had a log error, problems, the agents' parse errors, the folder, and
    ``metric_<name>`` per difficulty metric.

    Example:
        >>> frame = aggregate_results_to_dataframe(outcomes)  # doctest: +SKIP
        >>> frame.groupby("task_type")["overall_is_successful"].mean()  # doctest: +SKIP

    Raises:
        MissingExtraError: pandas is not installed (``pip install 'evaltrace[pandas]'``).
    """
    try:
        import pandas
    except ImportError:
        raise MissingExtraError("aggregate_results_to_dataframe()", "pandas", "pandas") from None
    columns, records = task_outcome_records(outcomes)
    return pandas.DataFrame.from_records(records, columns=columns)


def run_result_to_csv(result: RunResult, target: str | os.PathLike[str] | IO[str]) -> int:
    """Write the rows of :meth:`RunResult.to_records` as CSV (no pandas needed).

    Values that are not text, numbers or booleans (lists, objects) are written as JSON; a
    missing value is an empty field. ``pandas.read_csv`` reads the file back into the
    columns of :meth:`RunResult.to_dataframe`.

    Args:
        result: The run.
        target: A file path (replaced) or an open text stream.

    Returns:
        The number of rows written (the header not counted).
    """
    records = result.to_records()
    columns = list(records[0]) if records else list(RECORD_COLUMNS)
    return _write_csv(columns, records, target)


def task_outcomes_to_csv(
    outcomes: TaskOutcomes | Iterable[TaskOutcome], target: str | os.PathLike[str] | IO[str]
) -> int:
    """Write one CSV row per task outcome (the columns of :func:`aggregate_results_to_dataframe`).

    Returns:
        The number of rows written (the header not counted).
    """
    columns, records = task_outcome_records(outcomes)
    return _write_csv(columns, records, target)


def _write_csv(
    columns: Sequence[str],
    records: Sequence[dict[str, Any]],
    target: str | os.PathLike[str] | IO[str],
) -> int:
    if isinstance(target, str | os.PathLike):
        with open(target, "w", encoding="utf-8", newline="") as file:
            return _write_csv(columns, records, file)
    writer = csv.writer(target)
    writer.writerow(columns)
    for record in records:
        writer.writerow([_cell(record.get(column)) for column in columns])
    return len(records)


def _cell(value: Any) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str | int | float):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
