"""Every default of evaltrace, in one place: change one here and it changes everywhere.

The command line shows these as its defaults, and the library's functions take them as
their keyword defaults.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_DATASET_TIMEOUT",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_EPOCHS",
    "DEFAULT_EPOCH_REDUCER",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_THRESHOLD",
    "INPUTS_BETWEEN_CHECKPOINTS",
    "RESULTS_DIR",
]

DEFAULT_THRESHOLD: Final = 0.5
"""The score an evaluation must reach to pass."""

DEFAULT_CONCURRENCY: Final = 8
"""Most entries (inputs, traces) of a run in flight at once."""

DEFAULT_DATASET_TIMEOUT: Final = 300.0
"""Seconds each run of the runnable, and each evaluation, may take in a dataset run unless
told otherwise. Long enough for a judge call that retries (each request is bounded by the
judge timeout); short enough that one hung call cannot stall a CI job for hours. In-process
calls (``evaluate_inputs``, ``assert_pass``, ``evaluate_traces``) have no timeout unless
given one."""

DEFAULT_EPOCHS: Final = 1
"""How many times each entry's app is run (each run scored on its own, then reduced)."""

DEFAULT_EPOCH_REDUCER: Final = "mean"
"""How an entry's runs are reduced to one evaluation per evaluator: a name of the one
registry of reducers (:func:`evaltrace.judges.build_aggregation_strategy`)."""

DEFAULT_JUDGE_TIMEOUT: Final = 60.0
"""Seconds one judge request may take in the clients evaltrace builds, unless configured
(openai's own default is 10 minutes, per attempt)."""

DEFAULT_MAX_RETRIES: Final = 2
"""How often the clients evaltrace builds retry a 429, 5xx or timed-out request."""

DEFAULT_JUDGE_MODEL: Final = "gpt-4o-mini"
"""The judges' completion model when none is configured."""

DEFAULT_EMBEDDING_MODEL: Final = "text-embedding-3-small"
"""The judges' embedding model when none is configured."""

INPUTS_BETWEEN_CHECKPOINTS: Final = 16
"""How many entries a worker of a run scores before it goes back to the event loop (see
:func:`evaltrace.engine.scheduler` for why not after each)."""

RESULTS_DIR: Final = "evaltrace_results"
"""The folder, in the current folder, that holds one folder per run unless told otherwise."""

MAX_DATASET_BYTES: Final = 50 * 1024 * 1024
"""The largest dataset file :func:`evaltrace.datasets.load_dataset` reads (50 MiB); larger ones
are refused before reading. Pass ``max_bytes`` to allow more."""
