"""Results: the one saved result, its store, and what is built over it.

:class:`RunResult` (one :class:`EntryResult` per entry, each with its
:class:`CompletionStatus`) is the one saved, versioned result of every way of running; every
read and write of it is here (:func:`load_result`, :func:`save_result`, :class:`ResultsFolder`,
:func:`iter_entries`), and results saved by an earlier evaltrace are migrated as they are read.
A run's folder holds its ``run.json``, ``entries.jsonl``, ``traces.jsonl`` and
``result.json``. :func:`render_report` draws the text report of runs and :func:`diff_results`
compares a run with a baseline; :class:`DatasetScorecard` and :func:`save_dataset_scorecard`
make a self-contained HTML page of a run; :func:`run_result_to_csv` and
:func:`aggregate_results_to_dataframe` give tables; :class:`RunStatistics` (each
evaluator's mean and pass rate with their intervals) is computed once at the end of a run,
and :func:`compare_runs` (inside :func:`diff_results`) gives paired tests and a verdict per
evaluator against a baseline; :func:`analyze_agent_log`,
:func:`extract_task_outcomes` and :func:`collect_task_outcomes` read multi-agent task runs
from agents' logs (chat transcripts such as Mindcraft's, or stored traces).
"""

from evaltrace.errors import (
    ResultFileError,
    ResultFileNotFoundError,
    ResultsFolderError,
    ResumeError,
    RunFolderBusyError,
)
from evaltrace.results.comparison import (
    EvaluatorComparison,
    MetricComparison,
    RunComparison,
    Verdict,
    compare_runs,
)
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
    LOCK_FILE,
    RESULT_FILE,
    RESULTS_DIR,
    RUN_FILE,
    TRACES_FILE,
    DuplicateEntryError,
    EntryLines,
    ResultsFolder,
    check_writable,
    iter_entries,
    load_result,
    new_run_id,
    parse_result,
    read_run_header,
    save_result,
    scan_entries,
    write_atomically,
    write_result,
    write_result_line,
)
from evaltrace.results.merge import MergeError, merge_results
from evaltrace.results.model import (
    RECORD_COLUMNS,
    SCHEMA_VERSION,
    CompletionStatus,
    ComponentRecord,
    EntryResult,
    EntrySelection,
    FingerprintDifference,
    RunFingerprint,
    RunResult,
    entry_status,
    migrate_result,
)
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
from evaltrace.results.run_statistics import StatisticsTally, run_statistics
from evaltrace.results.scorecard import (
    SCORECARD_FILE,
    DatasetEntryResult,
    DatasetScorecard,
    ScorecardWriter,
    generate_dataset_scorecard_html,
    save_dataset_scorecard,
    scorecard_row,
    write_scorecard,
)
from evaltrace.results.uncertainty import (
    STATISTICS_COLUMNS,
    EvaluatorStatistics,
    MetricStatistics,
    RunStatistics,
)

__all__ = [
    "ENTRIES_FILE",
    "LOCK_FILE",
    "RECORD_COLUMNS",
    "RESULTS_DIR",
    "RESULT_FILE",
    "RUN_FILE",
    "SCHEMA_VERSION",
    "SCORECARD_FILE",
    "STATISTICS_COLUMNS",
    "TRACES_FILE",
    "AgentOutcome",
    "Change",
    "CompletionStatus",
    "ComponentRecord",
    "DatasetEntryResult",
    "DatasetScorecard",
    "DuplicateEntryError",
    "EntryChange",
    "EntryLines",
    "EntryResult",
    "EntrySelection",
    "EvaluationChange",
    "EvaluatorComparison",
    "EvaluatorStatistics",
    "FingerprintDifference",
    "MergeError",
    "MetricComparison",
    "MetricStatistics",
    "ResultFileError",
    "ResultFileNotFoundError",
    "ResultsFolder",
    "ResultsFolderError",
    "ResumeError",
    "RunComparison",
    "RunDiff",
    "RunFingerprint",
    "RunFolderBusyError",
    "RunProgress",
    "RunResult",
    "RunStatistics",
    "ScorecardWriter",
    "StatisticsTally",
    "TaskDefinition",
    "TaskDefinitions",
    "TaskOutcome",
    "TaskOutcomes",
    "Verdict",
    "aggregate_results_to_dataframe",
    "analyze_agent_log",
    "check_writable",
    "collect_task_outcomes",
    "combine_agent_statuses",
    "compare_runs",
    "diff_results",
    "entry_status",
    "extract_task_outcome",
    "extract_task_outcomes",
    "format_outcome_summary",
    "generate_dataset_scorecard_html",
    "iter_entries",
    "load_result",
    "load_task_definitions",
    "merge_results",
    "migrate_result",
    "new_run_id",
    "parse_result",
    "print_diff",
    "print_report",
    "read_run_header",
    "render_diff",
    "render_report",
    "run_result_to_csv",
    "run_statistics",
    "save_dataset_scorecard",
    "save_result",
    "scan_entries",
    "scorecard_row",
    "task_outcome_records",
    "task_outcomes_to_csv",
    "wants_plain_report",
    "write_atomically",
    "write_result",
    "write_result_line",
    "write_scorecard",
]
