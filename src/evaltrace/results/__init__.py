"""What is built over a saved run result: the folder, reports, diffs, the scorecard, outcomes.

A run's folder (:class:`ResultsFolder`, :func:`load_result`) holds its ``result.json`` and
``traces.jsonl``; :func:`render_report` draws the text report of runs and :func:`diff_results`
compares a run with a baseline; :class:`DatasetScorecard` and :func:`save_dataset_scorecard`
make a self-contained HTML page of a run; :func:`run_result_to_csv` and
:func:`aggregate_results_to_dataframe` give tables; :func:`analyze_agent_log`,
:func:`extract_task_outcomes` and :func:`collect_task_outcomes` read multi-agent task runs
from agents' logs (chat transcripts such as Mindcraft's, or stored traces).
"""

from evaltrace.results.dataframe import (
    aggregate_results_to_dataframe,
    run_result_to_csv,
    task_outcome_records,
    task_outcomes_to_csv,
)
from evaltrace.results.diff import (
    Change,
    EntryChange,
    EvaluationChange,
    RunDiff,
    diff_results,
    print_diff,
    render_diff,
)
from evaltrace.results.folder import (
    ENTRIES_FILE,
    RESULT_FILE,
    RESULTS_DIR,
    RUN_FILE,
    TRACES_FILE,
    DuplicateEntryError,
    EntryLines,
    ResultFileError,
    ResultsFolder,
    ResultsFolderError,
    check_writable,
    iter_entries,
    load_result,
    new_run_id,
    read_run_header,
    scan_entries,
    write_atomically,
    write_result,
)
from evaltrace.results.merge import MergeError, merge_results
from evaltrace.results.outcomes import (
    AgentOutcome,
    TaskDefinition,
    TaskDefinitions,
    TaskOutcome,
    TaskOutcomes,
    analyze_agent_log,
    collect_task_outcomes,
    combine_agent_statuses,
    extract_task_outcome,
    extract_task_outcomes,
    format_outcome_summary,
    load_task_definitions,
)
from evaltrace.results.progress import RunProgress
from evaltrace.results.report import print_report, render_report, wants_plain_report
from evaltrace.results.scorecard import (
    DatasetEntryResult,
    DatasetScorecard,
    generate_dataset_scorecard_html,
    save_dataset_scorecard,
    write_scorecard,
)

__all__ = [
    "ENTRIES_FILE",
    "RESULTS_DIR",
    "RESULT_FILE",
    "RUN_FILE",
    "TRACES_FILE",
    "AgentOutcome",
    "Change",
    "DatasetEntryResult",
    "DatasetScorecard",
    "DuplicateEntryError",
    "EntryLines",
    "EntryChange",
    "EvaluationChange",
    "MergeError",
    "ResultFileError",
    "ResultsFolder",
    "ResultsFolderError",
    "RunDiff",
    "RunProgress",
    "TaskDefinition",
    "TaskDefinitions",
    "TaskOutcome",
    "TaskOutcomes",
    "aggregate_results_to_dataframe",
    "analyze_agent_log",
    "check_writable",
    "collect_task_outcomes",
    "combine_agent_statuses",
    "diff_results",
    "extract_task_outcome",
    "extract_task_outcomes",
    "format_outcome_summary",
    "generate_dataset_scorecard_html",
    "iter_entries",
    "load_result",
    "load_task_definitions",
    "merge_results",
    "new_run_id",
    "print_diff",
    "print_report",
    "read_run_header",
    "render_diff",
    "render_report",
    "run_result_to_csv",
    "save_dataset_scorecard",
    "scan_entries",
    "task_outcome_records",
    "task_outcomes_to_csv",
    "wants_plain_report",
    "write_atomically",
    "write_result",
    "write_scorecard",
]
