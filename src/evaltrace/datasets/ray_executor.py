"""``RayExecutor``: a dataset run's entries as Ray tasks, on one machine or a cluster.

The driver (the process running :func:`~evaltrace.datasets.run_dataset`) splits the entries
to run into batches and submits each batch as one Ray task, a few batches per worker in flight
at a time, so that the cost of a task (about a millisecond) is shared by many entries and
the driver never holds more than the batches in flight. A worker loads the dataset file
itself (once per run), resolves the runnable and evaluators the way the driver did, runs its
batch with the local executor (the runnable's ``setup`` and ``teardown`` around each batch),
and sends back each entry as JSON with its spans as lines of ``traces.jsonl``: the driver
writes them to the results folder as they come, exactly as a local run does.

Judge calls in every worker wait for one rate limiter, kept in a single Ray actor: the
``rate_limiter`` given, or the one configured with ``configure_judge(rate_limiter=...)`` in the
driver. The driver's judge configuration (endpoint, model, key, timeout, retries) is sent to
the workers with each batch.

Ray is an optional dependency (``pip install 'evaltrace[ray]'``), imported when a
:class:`RayExecutor` is made.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import anyio

from evaltrace._safe_text import exception_text
from evaltrace.datasets.entries import DatasetEntries, PreparedDataset
from evaltrace.datasets.references import ReferenceLoader
from evaltrace.datasets.run import prepare_dataset
from evaltrace.engine import Finished, LocalExecutor, RunConfig, Scored, Work
from evaltrace.errors import EvaltraceError, MissingExtraError
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.llm.config import configure_judge, judge_config
from evaltrace.llm.rate_limit import RateLimiter
from evaltrace.results.model import EntryResult
from evaltrace.trace import span_to_json

__all__ = ["RayExecutor", "RayExecutorError", "SharedRateLimiter"]

_LOOPBACK_ONLY: Final = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch that keeps a node on the loopback address (its default on macOS/Windows)."""
_BATCHES_PER_WORKER: Final = 8
"""Batches per worker when the batch size is chosen: enough to even out uneven entries."""
_MAX_BATCH: Final = 1000
"""The largest batch chosen by default."""


class RayExecutorError(EvaltraceError, RuntimeError):
    """Entries cannot run on Ray: a dataset not from a file, or a batch failed in a worker."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("RayExecutor", "ray", "ray") from None
    return ray


class SharedRateLimiter:
    """A rate limiter whose windows live in one Ray actor, shared by every worker of a run.

    Given to ``configure_judge(rate_limiter=...)`` in each worker by :class:`RayExecutor`;
    each ``acquire`` waits for the actor's :class:`~evaltrace.llm.RateLimiter`.
    """

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    async def acquire(self, tokens: int = 1) -> None:
        """Wait until the shared limiter admits a call of ``tokens`` tokens."""
        await self._actor.acquire.remote(tokens)

    def __repr__(self) -> str:
        return "SharedRateLimiter()"


class _RateLimitActor:
    """The Ray actor holding a run's one :class:`RateLimiter`, and what it admitted."""

    def __init__(self, limits: dict[str, float]) -> None:
        self._limiter = RateLimiter(
            requests_per_second=limits.get("requests_per_second"),
            requests_per_minute=limits.get("requests_per_minute"),
            tokens_per_second=limits.get("tokens_per_second"),
            tokens_per_minute=limits.get("tokens_per_minute"),
        )
        self._calls = 0
        self._tokens = 0

    async def acquire(self, tokens: int) -> None:
        await self._limiter.acquire(tokens)
        self._calls += 1
        self._tokens += tokens

    def usage(self) -> tuple[int, int]:
        return self._calls, self._tokens


@dataclass(frozen=True, kw_only=True)
class _Job:
    """What every batch of a run needs, sent to the workers as plain data."""

    dataset: str
    """The dataset file's absolute path."""
    paths: list[str]
    """Folders to put on the worker's ``sys.path`` (the driver's current folder)."""
    run_id: str
    threshold: float
    timeout: float | None
    concurrency: int
    judge: dict[str, Any]
    """``configure_judge`` arguments: the driver's judge configuration."""


@dataclass(frozen=True, kw_only=True)
class _BatchResult:
    entries: list[str]
    """Each finished entry as JSON."""
    spans: list[list[str]]
    """Each entry's spans, as lines of ``traces.jsonl``."""
    errors: list[str]
    """What failed outside the entries (``setup``, ``teardown``), as JSON."""


class RayExecutor:
    """Runs a dataset run's entries as Ray tasks, in batches; see the module documentation.

    Args:
        address: The Ray cluster to use (``"ray://head:10001"``, ``"auto"``, ``"host:6379"``).
            Without it, a Ray already initialised in this process is used as it is; else a
            local Ray is started on the loopback address for the run (and shut down after).
        batch_size: Entries per Ray task; by default about eight batches per worker CPU, at
            most 1,000 entries each.
        rate_limiter: The limits every worker's judge calls share; by default the
            :class:`~evaltrace.llm.RateLimiter` configured in this process with
            ``configure_judge``, if any.
        num_cpus: CPUs of the local Ray started without ``address`` (all by default).

    Raises:
        MissingExtraError: Ray is not installed (``pip install 'evaltrace[ray]'``).

    Example:
        >>> result = anyio.run(functools.partial(
        ...     run_dataset, "big.evaltrace.json", executor=RayExecutor(),
        ...     output_dir="evaltrace_results", keep_entries=False,
        ... ))  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        batch_size: int | None = None,
        rate_limiter: RateLimiter | None = None,
        num_cpus: int | None = None,
    ) -> None:
        if address is None and "ray" not in sys.modules:
            # A node started here listens on the loopback address only, as local servers must.
            os.environ.setdefault(_LOOPBACK_ONLY, "0")
        self._ray = _import_ray()
        if batch_size is not None and (isinstance(batch_size, bool) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.address = address
        """The cluster's address, if one was given."""
        self.batch_size = batch_size
        """Entries per task (``None``: chosen per run)."""
        self.rate_limiter = rate_limiter
        """The limits the workers share (``None``: the one configured with configure_judge)."""
        self.num_cpus = num_cpus
        """CPUs of a local Ray started for a run."""
        self.judge_calls: tuple[int, int] | None = None
        """After a run with a rate limiter: the calls and tokens its actor admitted."""

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, batch_size={self.batch_size!r})"

    async def execute(self, work: Work, finished: Finished) -> list[EvaluationError]:
        """Run the entries as Ray tasks; see :meth:`evaltrace.engine.Executor.execute`.

        Raises:
            RayExecutorError: The dataset was not loaded from a file, the runnable or
                evaluators were given in code, or a batch failed in a worker.
        """
        source = work.source
        if not isinstance(source, DatasetEntries):
            raise RayExecutorError(
                "RayExecutor runs the entries of a dataset file (run_dataset, evaltrace test); "
                f"this run's entries come from {type(source).__name__}: run it locally"
            )
        job = self._job(work, source)
        ray = self._ray
        started_here = False
        if not ray.is_initialized():
            # In this thread: Ray installs its signal handlers in the main thread only.
            self._init()
            started_here = True
        try:
            return await self._run(ray, job, work, source, finished)
        finally:
            if started_here:
                ray.shutdown()

    def _init(self) -> None:
        ray = self._ray
        common: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        if self.address is not None:
            ray.init(address=self.address, **common)
            return
        ray.init(
            address="local",
            num_cpus=self.num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            **common,
        )

    def _job(self, work: Work, source: DatasetEntries) -> _Job:
        prepared = source.prepared
        path = prepared.dataset.path
        if path is None or prepared.from_code:
            raise RayExecutorError(
                "RayExecutor runs a dataset loaded from a file, with the runnable and "
                "evaluators the file names: workers load the file themselves. Save the "
                "dataset to a file (and register evaluators given in code), or run locally"
            )
        if work.config.from_trace is not None:
            raise RayExecutorError(
                "RayExecutor cannot send from_trace= (code) to its workers; score the root "
                "span, or run locally"
            )
        config = judge_config()
        judge = {
            "base_url": config.base_url,
            "api_key": config.api_key,
            "model": config.model,
            "embedding_model": config.embedding_model,
            "timeout": config.timeout,
            "max_retries": config.max_retries,
            "trace_judge_calls": config.trace_judge_calls,
        }
        return _Job(
            dataset=str(path),
            paths=[os.getcwd()],
            run_id=work.run_id,
            threshold=work.config.threshold,
            timeout=work.config.timeout,
            concurrency=work.config.concurrency,
            judge={key: value for key, value in judge.items() if value is not None},
        )

    async def _run(
        self, ray: Any, job: _Job, work: Work, source: DatasetEntries, finished: Finished
    ) -> list[EvaluationError]:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        done = work.done
        positions = [p for p in source.positions if done is None or not done(p)]
        size = self.batch_size or max(
            1, min(_MAX_BATCH, math.ceil(len(positions) / (workers * _BATCHES_PER_WORKER)))
        )
        batches = [positions[start : start + size] for start in range(0, len(positions), size)]
        limiter = self.rate_limiter
        configured = judge_config().rate_limiter
        if limiter is None and isinstance(configured, RateLimiter):
            limiter = configured
        actor = None
        if limiter is not None:
            actor = ray.remote(_RateLimitActor).remote(limiter.limits)
        task = ray.remote(_run_batch).options(num_cpus=1, max_retries=0)
        errors: dict[tuple[str, str, str | None], EvaluationError] = {}
        pending: list[Any] = []
        batch_of: dict[Any, list[int]] = {}
        upcoming = iter(batches)
        try:
            while True:
                while len(pending) < 2 * workers:
                    batch = next(upcoming, None)
                    if batch is None:
                        break
                    pairs = [(position, source.selected[position]) for position in batch]
                    ref = task.remote(asdict(job), pairs, actor)
                    pending.append(ref)
                    batch_of[ref] = batch
                if not pending:
                    break
                ready, pending = await anyio.to_thread.run_sync(
                    functools.partial(ray.wait, pending, num_returns=1)
                )
                for ref in ready:
                    batch = batch_of.pop(ref)
                    try:
                        outcome: _BatchResult = await anyio.to_thread.run_sync(ray.get, ref)
                    except ray.exceptions.RayError as exc:
                        raise RayExecutorError(
                            f"a batch of {len(batch)} entries (#{batch[0]}...) failed in a Ray "
                            f"worker: {exception_text(exc)}"
                        ) from None
                    for text, spans in zip(outcome.entries, outcome.spans, strict=True):
                        result = EntryResult.model_validate_json(text)
                        await finished(Scored(entry=None, result=result, lines=spans))
                    for text in outcome.errors:
                        error = EvaluationError.model_validate_json(text)
                        errors.setdefault((error.type, error.message, error.where), error)
            if actor is not None:
                self.judge_calls = tuple(
                    await anyio.to_thread.run_sync(ray.get, actor.usage.remote())
                )
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return list(errors.values())


@functools.lru_cache(maxsize=2)
def _prepared(dataset: str, run_id: str) -> PreparedDataset:
    """The dataset of a run, loaded and resolved once per worker process."""
    return prepare_dataset(dataset, loader=ReferenceLoader())


def _run_batch(job: dict[str, Any], pairs: Sequence[tuple[int, int]], actor: Any) -> _BatchResult:
    """A Ray task: run one batch of entries in this worker; their results as JSON."""
    spec = _Job(**job)
    for folder in spec.paths:
        if folder not in sys.path:
            sys.path.insert(0, folder)
    prepared = _prepared(spec.dataset, spec.run_id)
    positions = [position for position, _ in pairs]
    source = DatasetEntries(
        prepared, selected=[index for _, index in pairs], positions=range(len(pairs))
    )
    config = RunConfig(concurrency=spec.concurrency, timeout=spec.timeout, threshold=spec.threshold)
    work = Work(source=source, config=config, run_id=spec.run_id)
    entries: list[str] = []
    spans: list[list[str]] = []

    async def collect(scored: Scored) -> None:
        entry = scored.result
        entries.append(entry.model_copy(update={"index": positions[entry.index]}).model_dump_json())
        spans.append([s if isinstance(s, str) else span_to_json(s) for s in scored.spans()])
        scored.release()

    limiter = SharedRateLimiter(actor) if actor is not None else None
    with configure_judge(**spec.judge, rate_limiter=limiter):
        errors = anyio.run(LocalExecutor().execute, work, collect)
    return _BatchResult(
        entries=entries, spans=spans, errors=[error.model_dump_json() for error in errors]
    )
