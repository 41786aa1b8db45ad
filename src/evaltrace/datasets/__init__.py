"""Datasets: the file format, loading and checking it, references to user code, runnables.

A dataset file (JSON, YAML, or JSONL: a header line, then one entry per line) names the app's
entry point, the evaluators and the entries. :func:`load_dataset` reads and validates it,
reporting every problem at once as a :class:`DatasetError`; :func:`resolve_dataset` then
imports the runnable and builds the evaluators (built-in names through the registry that
:func:`register_evaluator` extends, ``"file.py:name"`` and ``"module:name"`` references to
user code), and checks every entry's arguments against the runnable, again reporting every
problem at once. :func:`run_dataset` runs a dataset into a
:class:`~evaltrace.results.RunResult` (and its results folder), as ``evaltrace test`` does;
:func:`assert_dataset_pass` is that run with an assertion.

Example:
    >>> dataset = dataset_from_data({
    ...     "runnable": "json:dumps",
    ...     "evaluators": ["ExactMatch"],
    ...     "entries": [{"name": "one", "entry_kwargs": {"obj": 1}, "expectation": "1"}],
    ... })
    >>> resolved = resolve_dataset(dataset)
    >>> resolved.runnable.name, [e.name for e in resolved.entry_evaluators[0]]
    ('json:dumps', ['ExactMatch'])
"""

from evaltrace.constants import DEFAULT_DATASET_TIMEOUT
from evaltrace.datasets.assertions import DatasetPassResult, assert_dataset_pass
from evaltrace.datasets.convert import (
    DatasetExistsError,
    DatasetFormatError,
    convert_dataset,
    write_dataset,
)
from evaltrace.datasets.entries import DatasetEntries, PreparedDataset
from evaltrace.datasets.jsonl import JsonlEntries, load_jsonl_dataset
from evaltrace.datasets.loading import (
    MAX_DATASET_BYTES,
    dataset_from_data,
    load_dataset,
    read_document,
    validate_document,
)
from evaltrace.datasets.model import (
    INHERIT,
    CheckSpec,
    Dataset,
    DatasetEntry,
    EvaluatorSpec,
    NamedInput,
)
from evaltrace.datasets.problems import (
    DatasetAttributeError,
    DatasetError,
    DatasetFileNotFoundError,
    DatasetProblem,
)
from evaltrace.datasets.ray_executor import RayExecutor, RayExecutorError, SharedRateLimiter
from evaltrace.datasets.references import Reference, ReferenceLoader, parse_reference
from evaltrace.datasets.registry import (
    BUILTIN_EVALUATORS,
    UnknownEvaluatorError,
    lookup_evaluator,
    register_evaluator,
    registered_evaluators,
)
from evaltrace.datasets.resolution import (
    EvaluatorBuildError,
    ResolvedDataset,
    ResolvedEvaluator,
    build_evaluator,
    resolve_dataset,
    resolve_evaluator_names,
    resolve_evaluators,
)
from evaltrace.datasets.run import (
    EntryFilter,
    NoEntriesSelectedError,
    matches_filter,
    prepare_dataset,
    run_dataset,
    select_entries,
)
from evaltrace.datasets.runnable import (
    NotRunnableError,
    Runnable,
    RunnableAdapter,
    RunnableLifecycleError,
)
from evaltrace.datasets.schema import dataset_json_schema
from evaltrace.datasets.sharding import Shard, ShardSpecError, selection_digest, shard_positions
from evaltrace.engine import Executor, LocalExecutor
from evaltrace.errors import ResumeError

__all__ = [
    "BUILTIN_EVALUATORS",
    "DEFAULT_DATASET_TIMEOUT",
    "DatasetPassResult",
    "assert_dataset_pass",
    "INHERIT",
    "MAX_DATASET_BYTES",
    "CheckSpec",
    "Dataset",
    "DatasetEntry",
    "DatasetAttributeError",
    "DatasetError",
    "DatasetExistsError",
    "DatasetFileNotFoundError",
    "DatasetFormatError",
    "DatasetProblem",
    "EvaluatorBuildError",
    "EntryFilter",
    "DatasetEntries",
    "Executor",
    "LocalExecutor",
    "EvaluatorSpec",
    "JsonlEntries",
    "NamedInput",
    "NoEntriesSelectedError",
    "NotRunnableError",
    "PreparedDataset",
    "RayExecutor",
    "RayExecutorError",
    "Reference",
    "ReferenceLoader",
    "ResolvedDataset",
    "ResolvedEvaluator",
    "ResumeError",
    "Runnable",
    "RunnableAdapter",
    "RunnableLifecycleError",
    "Shard",
    "ShardSpecError",
    "SharedRateLimiter",
    "UnknownEvaluatorError",
    "build_evaluator",
    "convert_dataset",
    "dataset_from_data",
    "dataset_json_schema",
    "load_dataset",
    "load_jsonl_dataset",
    "lookup_evaluator",
    "matches_filter",
    "parse_reference",
    "prepare_dataset",
    "register_evaluator",
    "registered_evaluators",
    "resolve_dataset",
    "resolve_evaluator_names",
    "resolve_evaluators",
    "read_document",
    "validate_document",
    "run_dataset",
    "selection_digest",
    "shard_positions",
    "select_entries",
    "write_dataset",
]
