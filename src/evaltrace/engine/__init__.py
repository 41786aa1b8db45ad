"""The one run engine: every way of running evaluations goes through :func:`execute`.

A run is an :class:`EntrySource` (plain inputs, stored traces, a dataset's entries, a
pipeline's inputs) scored under a :class:`RunConfig` by an :class:`Executor` (this process,
or Ray), each finished entry streamed to the run's folder and observers, and one saved
:class:`~evaltrace.results.RunResult` built at the end. Timeouts, cancellation, the hop of
sync code to worker threads, checkpoints, fingerprints, resumption and progress are here
once. :func:`evaluate_inputs`, :func:`run_and_evaluate`, :func:`assert_pass` and
:func:`evaluate_traces` are thin adapters over it, as are
:func:`~evaltrace.datasets.run_dataset` and :func:`~evaltrace.pipeline.evaluate_runnable`.
"""

from evaltrace.engine.assertions import EvalAssertionError, assert_pass
from evaltrace.engine.config import RunConfig
from evaltrace.engine.entries import Entry, EntrySource, EvaluatorPlans, Evaluators, SourceInfo
from evaltrace.engine.inputs import InputResult, evaluate_inputs, run_and_evaluate
from evaltrace.engine.report import entries_table, results_table
from evaltrace.engine.run import Listing, Observer, Output, execute
from evaltrace.engine.runs import EntryPoint, RunOutcome, run_captured
from evaltrace.engine.scheduler import Executor, Finished, LocalExecutor, Work
from evaltrace.engine.scoring import Scored, entry_result, failed_entry
from evaltrace.engine.stored import evaluate_traces, run_traces, traces_to_score

__all__ = [
    "Entry",
    "EntrySource",
    "EvalAssertionError",
    "EvaluatorPlans",
    "Evaluators",
    "Executor",
    "Finished",
    "InputResult",
    "Listing",
    "LocalExecutor",
    "Observer",
    "Output",
    "RunConfig",
    "RunOutcome",
    "EntryPoint",
    "Scored",
    "SourceInfo",
    "Work",
    "assert_pass",
    "entries_table",
    "entry_result",
    "evaluate_inputs",
    "evaluate_traces",
    "execute",
    "failed_entry",
    "results_table",
    "run_and_evaluate",
    "run_captured",
    "run_traces",
    "traces_to_score",
]
