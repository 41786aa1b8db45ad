"""What is built over a saved run: the HTML scorecard, tables, and agent/task outcomes.

:class:`DatasetScorecard` and :func:`save_dataset_scorecard` make a self-contained HTML page
of a :class:`~evaltrace.evals.result.RunResult`; :func:`run_result_to_csv` and
:func:`aggregate_results_to_dataframe` give tables; :func:`analyze_agent_log` and
:func:`extract_task_outcome` read multi-agent task runs from stored traces.
"""

from __future__ import annotations

from evaltrace.results.dataframe import (
    aggregate_results_to_dataframe,
    run_result_to_csv,
    task_outcome_records,
    task_outcomes_to_csv,
)
from evaltrace.results.outcomes import (
    AgentOutcome,
    TaskDefinition,
    TaskOutcome,
    TaskOutcomes,
    analyze_agent_log,
    collect_task_outcomes,
    combine_agent_statuses,
    extract_task_outcome,
    format_outcome_summary,
    load_task_definitions,
)
from evaltrace.results.scorecard import (
    DatasetEntryResult,
    DatasetScorecard,
    generate_dataset_scorecard_html,
    save_dataset_scorecard,
    write_scorecard,
)

__all__ = [
    "AgentOutcome",
    "DatasetEntryResult",
    "DatasetScorecard",
    "TaskDefinition",
    "TaskOutcome",
    "TaskOutcomes",
    "aggregate_results_to_dataframe",
    "analyze_agent_log",
    "collect_task_outcomes",
    "combine_agent_statuses",
    "extract_task_outcome",
    "format_outcome_summary",
    "generate_dataset_scorecard_html",
    "load_task_definitions",
    "run_result_to_csv",
    "save_dataset_scorecard",
    "task_outcome_records",
    "task_outcomes_to_csv",
    "write_scorecard",
]
