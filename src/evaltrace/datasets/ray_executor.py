"""``RayExecutor``: a dataset run's entries as Ray tasks, on one machine or a cluster.

The driver (the process running :func:`~evaltrace.datasets.run_dataset`) splits the entries
to run into batches and submits each batch as one Ray task, a few batches per worker in flight
at a time, so that the cost of a task (about a millisecond) is shared by many entries and
the driver never holds more than the batches in flight. A worker loads the dataset file
itself (once per run), resolves the runnable and evaluators the way the driver did, runs its
batch with the local executor (the runnable's ``setup`` and ``teardown`` around each batch),
and sends back each entry as JSON with its spans as lines of ``traces.jsonl``: the driver
writes them to the results folder as they come, exactly as a local run does.

When a worker process dies (an evaluator calls ``os._exit``, native code crashes, the
out-of-memory killer strikes), only the entries it had not handed back are lost, and they
run again. A batch is a streaming Ray task (a generator): the worker runs the batch in a
thread and sends back what finished, a report at most every 20 ms and at once when the
batch's last entry is in, so the driver holds every entry that came back and knows which
ones it lacks. Those run again, each alone in a task of its own on a new worker: the entry
that killed the worker is isolated, the others complete. An entry whose lone task dies too
is recorded as errored (``where="worker"``) and the run goes on; a worker that dies after
all its entries came back (in ``teardown``) is the run's error. An entry that came back
never runs twice; one that finished in the last moment before the death, its report not
yet sent, runs once more. (Ray's own retries would run the whole batch again; a task per
entry would pay a task's cost for each.) An entry whose result cannot be encoded to be sent
back errors alone, ``where="worker"`` (evaluation details, outputs and metadata are
encoded as JSON data when they are made, so that one would be a bug). Any other failure
of a task (the dataset file missing on a node, a lost cluster) ends the run with
:class:`RayExecutorError`; the entries that came back before it stand.

Judge calls in every worker wait for one rate limiter, kept in a single Ray actor: the
``rate_limiter`` given, or the one configured with ``configure_judge(rate_limiter=...)`` in the
driver. The driver's judge configuration (endpoint, model, key, timeout, retries, the judge
cache's file and limits) is sent to the workers with each batch: workers on one machine share
the driver's cache file.

Ray is an optional dependency (``pip install 'evaltrace[ray]'``), imported when a
:class:`RayExecutor` is made.
"""

from __future__ import annotations

import functools
import math
import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import anyio

from evaltrace._safe_text import exception_message, exception_text, type_name
from evaltrace.datasets.entries import DatasetEntries, PreparedDataset
from evaltrace.datasets.references import ReferenceLoader
from evaltrace.datasets.run import prepare_dataset
from evaltrace.engine import Finished, LocalExecutor, RunConfig, Scored, Work, failed_entry
from evaltrace.errors import EvaltraceError, MissingExtraError
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.llm.config import configure_judge, judge_config
from evaltrace.llm.prices import PriceTable
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
# bench_scale.py, 2,000 entries doing nothing (best of 7, loaded 2 cores): a report per entry
# 2.6-3.4 s, gathered over 20 ms 1.5-2.7 s, one report per batch (no streaming) 2.1-3.2 s.
_REPORT_EVERY: Final = 0.02
"""Seconds a batch's task gathers finished entries into one report to the driver."""

_Outgoing = tuple[str, list[str]] | list[EvaluationError] | BaseException
"""What a batch's thread hands its task: an entry (JSON, spans), the batch's end (what failed
outside the entries), or the exception that ended the batch."""


class RayExecutorError(EvaltraceError, RuntimeError):
    """Entries cannot run on Ray: a dataset not from a file, or a task failed in a worker.

    A worker that dies is not this error: its entries run again (see the module).
    """


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
    prices: dict[str, Any] | None = None
    """The run's price table, as data (for the checks that price the app's calls)."""


@dataclass(frozen=True, kw_only=True)
class _Report:
    """What a batch's task sends back each time: the entries it finished since the last one."""

    entries: list[str]
    """Each finished entry as JSON."""
    spans: list[list[str]]
    """Each entry's spans, as lines of ``traces.jsonl``."""
    errors: list[str]
    """What failed outside the entries (``setup``, ``teardown``), as JSON: in the last
    report only."""


@dataclass(kw_only=True)
class _Batch:
    """A batch's task, as the driver follows it."""

    positions: list[int]
    """The positions of its entries."""
    alone: bool
    """Whether it is an entry run again alone, after its first worker died."""
    returned: set[int] = field(default_factory=set)
    """The positions it handed back so far."""


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
            RayExecutorError: The entries are not a dataset file's, the runnable or
                evaluators were given in code, or a batch's task failed in a worker for
                another reason than the death of the worker.
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
            # The workers share the driver's judge cache (its file and limits), or none.
            "cache": config.cache if config.cache is not None else False,
        }
        return _Job(
            dataset=str(path),
            paths=[os.getcwd()],
            run_id=work.run_id,
            threshold=work.config.threshold,
            timeout=work.config.timeout,
            concurrency=work.config.concurrency,
            judge={key: value for key, value in judge.items() if value is not None},
            prices=prices.model_dump() if (prices := work.config.price_table) else None,
        )

    async def _run(
        self, ray: Any, job: _Job, work: Work, source: DatasetEntries, finished: Finished
    ) -> list[EvaluationError]:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        done = work.done  # a resumed run's entries that finished before
        positions = [p for p in source.positions if done is None or not done(p)]
        size = self.batch_size or max(
            1, min(_MAX_BATCH, math.ceil(len(positions) / (workers * _BATCHES_PER_WORKER)))
        )
        batches = deque(positions[start : start + size] for start in range(0, len(positions), size))
        limiter = self.rate_limiter
        configured = judge_config().rate_limiter
        if limiter is None and isinstance(configured, RateLimiter):
            limiter = configured
        actor = None
        if limiter is not None:
            actor = ray.remote(_RateLimitActor).remote(limiter.limits)
        task = ray.remote(_run_batch).options(num_cpus=1, max_retries=0, num_returns="streaming")
        lost = (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.OutOfMemoryError,
            ray.exceptions.NodeDiedError,
        )
        errors: dict[tuple[str, str, str | None], EvaluationError] = {}
        running: dict[Any, _Batch] = {}
        retries: deque[int] = deque()  # entries whose worker died, to run once more, each alone
        try:
            while True:
                while len(running) < 2 * workers:
                    if retries:
                        batch = _Batch(positions=[retries.popleft()], alone=True)
                    elif batches:
                        batch = _Batch(positions=batches.popleft(), alone=False)
                    else:
                        break
                    pairs = [(position, source.selected[position]) for position in batch.positions]
                    running[task.remote(asdict(job), pairs, actor)] = batch
                if not running:
                    break
                taken = await anyio.to_thread.run_sync(_take_ready, ray, list(running))
                for stream, outcome in taken:
                    batch = running[stream]
                    if isinstance(outcome, _Report):
                        for text, spans in zip(outcome.entries, outcome.spans, strict=True):
                            entry = EntryResult.model_validate_json(text)
                            batch.returned.add(entry.index)
                            await finished(Scored(entry=None, result=entry, lines=spans))
                        failures = [EvaluationError.model_validate_json(t) for t in outcome.errors]
                    elif outcome is None:
                        failures = []
                    elif isinstance(outcome, lost):
                        failures = await _after_death(
                            work, source, batch, outcome, retries, finished
                        )
                    else:
                        raise RayExecutorError(
                            f"a batch of {len(batch.positions)} entries "
                            f"(#{batch.positions[0]}...) failed in a Ray worker: "
                            f"{exception_text(outcome)}"
                        ) from None
                    if not isinstance(outcome, _Report):
                        del running[stream]
                    for error in failures:
                        errors.setdefault((error.type, error.message, error.where), error)
            if actor is not None:
                self.judge_calls = tuple(
                    await anyio.to_thread.run_sync(ray.get, actor.usage.remote())
                )
        except BaseException:
            for stream in running:
                ray.cancel(stream, force=True)
            raise
        return list(errors.values())


def _take_ready(ray: Any, streams: list[Any]) -> list[tuple[Any, _Report | BaseException | None]]:
    """Wait for some batches' tasks, and take the next report of each one that is ready.

    Returns:
        Each ready task with its report, the error that ended it, or ``None`` when it ended.
    """
    ray.wait(streams, num_returns=1)
    ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0)
    taken: list[tuple[Any, _Report | BaseException | None]] = []
    for stream in ready:
        try:
            ref = next(stream)
        except StopIteration:
            taken.append((stream, None))
            continue
        try:
            taken.append((stream, ray.get(ref)))
        except ray.exceptions.RayError as exc:
            taken.append((stream, exc))
    return taken


async def _after_death(
    work: Work,
    source: DatasetEntries,
    batch: _Batch,
    exc: BaseException,
    retries: deque[int],
    finished: Finished,
) -> list[EvaluationError]:
    """Settle a batch whose worker died.

    Its entries that did not come back run again, each alone on a new worker; an entry that
    was running alone already is errored.

    Returns:
        The run's error when the worker died after every entry had come back.
    """
    unreturned = [position for position in batch.positions if position not in batch.returned]
    if not unreturned:
        message = (
            f"a Ray worker died after the {len(batch.positions)} entries of its batch had "
            f"come back (in the runnable's teardown?). Ray: {exception_message(exc)}"
        )
        return [EvaluationError(type=type_name(exc), message=message, where="worker")]
    if not batch.alone:
        retries.extend(unreturned)
        return []
    error = EvaluationError(
        type=type_name(exc),
        message=(
            "the Ray worker process died while running this entry, and again when it ran "
            "alone on a new worker: something the entry runs ends its process (os._exit, a "
            f"crash in native code, running out of memory). Ray: {exception_message(exc)}"
        ),
        where="worker",
    )
    for position in unreturned:
        entry = source.entry(position)
        failed = failed_entry(entry, error, threshold=work.config.threshold)
        await finished(Scored(entry=entry, result=failed))
    return []


@functools.lru_cache(maxsize=2)
def _prepared(dataset: str, run_id: str) -> PreparedDataset:
    """The dataset of a run, loaded and resolved once per worker process."""
    return prepare_dataset(dataset, loader=ReferenceLoader())


def _run_batch(
    job: dict[str, Any], pairs: Sequence[tuple[int, int]], actor: Any
) -> Iterator[_Report]:
    """A Ray task: run one batch of entries in this worker, reporting them as they finish.

    The batch runs in a thread of its own, with the local executor, while this generator
    sends back what the thread finished.
    """
    spec = _Job(**job)
    for folder in spec.paths:
        if folder not in sys.path:
            sys.path.insert(0, folder)
    prepared = _prepared(spec.dataset, spec.run_id)
    positions = [position for position, _ in pairs]
    source = DatasetEntries(
        prepared, selected=[index for _, index in pairs], positions=range(len(pairs))
    )
    config = RunConfig(
        concurrency=spec.concurrency,
        timeout=spec.timeout,
        threshold=spec.threshold,
        prices=None if spec.prices is None else PriceTable.model_validate(spec.prices),
    )
    work = Work(source=source, config=config, run_id=spec.run_id)
    outbox: queue.SimpleQueue[_Outgoing] = queue.SimpleQueue()

    async def collect(scored: Scored) -> None:
        entry = scored.result.model_copy(update={"index": positions[scored.result.index]})
        spans = [span if isinstance(span, str) else span_to_json(span) for span in scored.spans()]
        scored.release()
        outbox.put((entry.model_dump_json(), spans))

    def execute() -> None:
        try:
            outbox.put(anyio.run(LocalExecutor().execute, work, collect))
        except BaseException as exc:  # the task's failure, raised again by the generator
            outbox.put(exc)

    limiter = SharedRateLimiter(actor) if actor is not None else None
    with configure_judge(**spec.judge, rate_limiter=limiter):
        thread = threading.Thread(target=execute, name="evaltrace-ray-batch", daemon=True)
        thread.start()
        unsent = len(pairs)
        ended = False
        while not ended:
            entries: list[str] = []
            spans: list[list[str]] = []
            errors: list[str] = []
            for item in _gather(outbox, unsent):
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, list):
                    errors = [error.model_dump_json() for error in item]
                    ended = True
                else:
                    entries.append(item[0])
                    spans.append(item[1])
            unsent -= len(entries)
            yield _Report(entries=entries, spans=spans, errors=errors)
        thread.join()


def _gather(outbox: queue.SimpleQueue[_Outgoing], unsent: int) -> list[_Outgoing]:
    """Wait for what the batch's thread hands over next, and what follows within a moment.

    Gathers for up to :data:`_REPORT_EVERY` seconds, so that a report carries many quick
    entries; but no longer than until the batch's last entry is in, so that the entries
    are sent before the runnable's ``teardown`` (and whatever it does to the process).
    """
    items = [outbox.get()]
    due = time.monotonic() + _REPORT_EVERY
    while len(items) < unsent and isinstance(items[-1], tuple):
        left = due - time.monotonic()
        if left <= 0:
            break
        try:
            items.append(outbox.get(timeout=left))
        except queue.Empty:
            break
    return items
