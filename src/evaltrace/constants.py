"""Every default of evaltrace, in one place: change one here and it changes everywhere.

The command line shows these as its defaults, and the library's functions take them as
their keyword defaults.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DATASET_TIMEOUT",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_EPOCHS",
    "DEFAULT_EPOCH_REDUCER",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_POWER",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SIGNIFICANCE",
    "DEFAULT_STATISTICS_SEED",
    "DEFAULT_THRESHOLD",
    "INPUTS_BETWEEN_CHECKPOINTS",
    "JUDGE_CACHE_FILE",
    "JUDGE_CACHE_MAX_BYTES",
    "RESULTS_DIR",
    "SERVE_DRAIN_TIMEOUT",
    "SERVE_EVALUATION_QUEUE",
    "SERVE_FORWARD_BATCH_BYTES",
    "SERVE_FORWARD_QUEUE_BYTES",
    "SERVE_FORWARD_RETRY_SECONDS",
    "SERVE_LISTEN",
    "SERVE_MAX_PENDING_BYTES",
    "SERVE_MAX_PENDING_TRACES",
    "SERVE_MAX_REQUEST_BYTES",
    "SERVE_QUIET_PERIOD",
    "SERVE_REQUEST_TIMEOUT",
    "SERVE_TRACE_TIMEOUT",
    "SCORECARD_CHUNK_ENTRIES",
    "SCORECARD_INLINE_ENTRIES",
    "SCORECARD_TRACE_SPANS",
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

DEFAULT_CONFIDENCE: Final = 0.95
"""The confidence level of a run's intervals (and of a comparison's)."""

DEFAULT_RESAMPLES: Final = 1000
"""How often the bootstrap resamples a run's entries. The endpoints of a 95% percentile
interval then move by about a tenth of a standard error from one seed to another; the cost
is about 0.8 s per evaluator with continuous scores at 100,000 entries (bench/README.md,
``bench_statistics.py``), and next to nothing for scores of a few distinct values."""

DEFAULT_STATISTICS_SEED: Final = 0
"""The seed of the bootstrap's resamples: the same entries give the same intervals."""

DEFAULT_SIGNIFICANCE: Final = 0.05
"""The significance level at which a comparison with a baseline calls a change better or
worse (after Holm's correction across the comparisons)."""

DEFAULT_POWER: Final = 0.8
"""The power at which a comparison states the smallest difference it could have detected."""
JUDGE_CACHE_FILE: Final = "judge-cache.sqlite3"
"""The judge cache's file name in evaltrace's folder of the user's cache directory
(``~/.cache/evaltrace/`` on Linux, ``~/Library/Caches/evaltrace/`` on macOS,
``%LOCALAPPDATA%/evaltrace/`` on Windows), unless another file is configured."""

JUDGE_CACHE_MAX_BYTES: Final = 512 * 1024 * 1024
"""The judge cache's size limit (bytes of stored responses): past it, the responses used
longest ago are evicted. A judge response is one to a few KB, so this holds a few hundred
thousand."""

INPUTS_BETWEEN_CHECKPOINTS: Final = 16
"""How many entries a worker of a run scores before it goes back to the event loop (see
:func:`evaltrace.engine.scheduler` for why not after each)."""

RESULTS_DIR: Final = "evaltrace_results"
"""The folder, in the current folder, that holds one folder per run unless told otherwise."""

SCORECARD_INLINE_ENTRIES: Final = 2_000
"""Up to this many entries, a scorecard page holds every entry whole in its one data element;
a larger run's page holds the grid's columns of each entry there, and each entry whole in
chunks of :data:`SCORECARD_CHUNK_ENTRIES` that the page parses when it needs them (still one
self-contained file)."""

SCORECARD_CHUNK_ENTRIES: Final = 500
"""Entries per chunk of a large run's scorecard page (see :data:`SCORECARD_INLINE_ENTRIES`)."""

SCORECARD_TRACE_SPANS: Final = 200
"""An entry's trace of more spans than this is drawn on the scorecard page when asked for
(a button), not as its detail view opens."""

MAX_DATASET_BYTES: Final = 50 * 1024 * 1024
"""The largest dataset file :func:`evaltrace.datasets.load_dataset` reads (50 MiB); larger ones
are refused before reading. Pass ``max_bytes`` to allow more."""

SERVE_LISTEN: Final = "127.0.0.1:4318"
"""Where ``evaltrace serve`` listens: loopback, on OTLP/HTTP's port. Any other address must
be asked for (``--listen 0.0.0.0:4318``)."""

SERVE_QUIET_PERIOD: Final = 2.0
"""Seconds without a new span after which a trace whose root span arrived is complete."""

SERVE_TRACE_TIMEOUT: Final = 60.0
"""Seconds after which a trace whose root span never arrived is taken as it is."""

SERVE_MAX_PENDING_TRACES: Final = 10_000
"""Most traces ``evaltrace serve`` holds while they are assembled; beyond, the oldest is
evicted (not scored; its spans were forwarded) and counted."""

SERVE_MAX_PENDING_BYTES: Final = 64 * 1024 * 1024
"""Most bytes of spans (as received) held while traces are assembled (64 MiB)."""

SERVE_EVALUATION_QUEUE: Final = 1000
"""Most chosen traces waiting to be scored; beyond, a chosen trace is dropped and counted
(intake never waits for scoring)."""

SERVE_FORWARD_QUEUE_BYTES: Final = 64 * 1024 * 1024
"""Most bytes of requests waiting to be forwarded (64 MiB); beyond, intake answers 503 with
``Retry-After`` (the exporter sends again later) and nothing it accepted is lost."""

SERVE_FORWARD_BATCH_BYTES: Final = 4 * 1024 * 1024
"""Most bytes forwarded in one request (queued requests are merged up to this)."""

SERVE_FORWARD_RETRY_SECONDS: Final = 60.0
"""How long a forward that fails (429, 5xx, unreachable) is retried, with backoff, before it
is dropped and counted."""

SERVE_MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024
"""The largest request body ``evaltrace serve`` takes (16 MiB, decompressed); larger: 413."""

SERVE_REQUEST_TIMEOUT: Final = 10.0
"""Seconds a client may take to send a request's headers, and again its body; a slower one
is cut off (slow clients must not hold connections)."""

SERVE_DRAIN_TIMEOUT: Final = 10.0
"""Seconds ``evaltrace serve`` takes, on SIGTERM, to score what it holds and forward what it
queued; what is left then is dropped and counted."""
