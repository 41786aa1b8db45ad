"""What is built over a saved run result: the results folder, progress, reports and diffs.

A run's folder (:class:`ResultsFolder`, :func:`load_result`) holds its ``result.json`` and
``traces.jsonl``; :func:`render_report` draws the text report of runs, :func:`diff_results`
compares a run with a baseline.
"""

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
    RESULT_FILE,
    RESULTS_DIR,
    TRACES_FILE,
    ResultFileError,
    ResultsFolder,
    ResultsFolderError,
    check_writable,
    load_result,
    new_run_id,
    write_atomically,
)
from evaltrace.results.progress import RunProgress
from evaltrace.results.report import print_report, render_report, wants_plain_report

__all__ = [
    "RESULTS_DIR",
    "RESULT_FILE",
    "TRACES_FILE",
    "Change",
    "EntryChange",
    "EvaluationChange",
    "ResultFileError",
    "ResultsFolder",
    "ResultsFolderError",
    "RunDiff",
    "RunProgress",
    "check_writable",
    "diff_results",
    "load_result",
    "new_run_id",
    "print_diff",
    "print_report",
    "render_diff",
    "render_report",
    "wants_plain_report",
    "write_atomically",
]
