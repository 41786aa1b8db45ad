"""Scoring the chosen traces as they come, through the one engine: :class:`Scorer`.

The chosen traces are a source of entries fed while the run goes on
(:meth:`~evaltrace.engine.EntrySource.arriving`): :func:`~evaltrace.engine.execute` scores
each one as a stored trace (the selector of the evaluators file, every evaluator under its
timeout, errors as data) for as long as the gateway runs. The run goes on in a thread of its
own with its own event loop, so that nothing an evaluator does (a slow judge, a busy sync
evaluator in the loop) holds intake or forwarding: intake hands a trace over without waiting,
and a full queue drops it (counted).

Each scored trace's entry is appended to the results stream, and its evaluations go to the
forward target as ``gen_ai.evaluation.result`` spans in the trace they scored
(:func:`~evaltrace.evals.telemetry.evaluation_spans`).

The budget is checked as each trace is taken: judge calls per minute (the calls each scored
trace's judges made, as the engine records them in its entry's ``judge_usage``), traces per
minute, and cost per hour (as the evaluators report it); past any, the traces are not scored
(counted) until the budget allows again, and forwarding goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from evaltrace.engine import (
    Entry,
    EntrySource,
    EvaluatorPlans,
    Evaluators,
    RunConfig,
    Scored,
    SourceInfo,
    execute,
)
from evaltrace.errors import ResultsFolderError
from evaltrace.evals.telemetry import evaluation_spans
from evaltrace.results import EntryResult, ResultsStream, RunResult, new_run_id
from evaltrace.serve.assembly import PendingTrace
from evaltrace.serve.config import Online
from evaltrace.serve.metrics import Metrics
from evaltrace.serve.otlp import stored_trace

__all__ = ["Chosen", "Limiter", "Reason", "Scorer"]

logger = logging.getLogger("evaltrace.serve")

SendSpans = Callable[[bytes, int], None]
"""Queues an encoded export request of evaluation spans (and how many) for forwarding."""


@dataclass(slots=True, kw_only=True)
class Chosen:
    """A trace the sampler chose, on its way to be scored."""

    trace: PendingTrace
    """The trace, as assembled."""
    reason: str
    """Why it was chosen."""
    chosen_at: float
    """When (monotonic seconds)."""


class _Bucket:
    """A token bucket of ``size`` tokens, refilled continuously at ``size`` a minute.

    What is spent is taken whole, even past empty (the calls were made): the bucket then owes
    it, and allows nothing until it holds one token again.
    """

    def __init__(self, size: int, now: float) -> None:
        self.size = size
        self.tokens = float(size)
        self.refilled = now

    def level(self, now: float) -> float:
        """The tokens at ``now`` (after refilling)."""
        self.tokens = min(float(self.size), self.tokens + (now - self.refilled) * self.size / 60)
        self.refilled = now
        return self.tokens


Reason = Literal["judge_calls_per_minute", "traces_per_minute", "cost_per_hour"]
"""Why scoring is paused: the budget key that stops it."""


class Limiter:
    """The budget of scoring: judge calls per minute, traces per minute, cost per hour.

    A trace's judge calls are known once it is scored (they are what its evaluators' judges
    sent, cache hits not counted): they are taken from a bucket of ``judge_calls_per_minute``
    tokens refilled continuously, which may go below empty, and no trace is taken while it
    holds less than one call. Traces already being scored when it empties finish, so the
    calls of a minute pass the limit by at most those of ``concurrency`` traces.

    Args:
        judge_calls_per_minute: Most judge calls a minute; ``None``: no limit.
        traces_per_minute: Most traces scored a minute (a token bucket of that size,
            refilled continuously); ``None``: no limit.
        cost_per_hour: Most cost in a clock hour; ``None``: no limit.
        clock: Seconds since the epoch (tests pass their own).

    Example:
        >>> now = [0.0]
        >>> limiter = Limiter(judge_calls_per_minute=3, clock=lambda: now[0])
        >>> limiter.take(), limiter.spend(calls=4), limiter.take()
        (None, None, 'judge_calls_per_minute')
        >>> now[0] += 30  # half a minute gives 1.5 calls back: 0.5 is less than a call
        >>> limiter.take()
        'judge_calls_per_minute'
        >>> now[0] += 30
        >>> limiter.take()
    """

    def __init__(
        self,
        *,
        judge_calls_per_minute: int | None = None,
        traces_per_minute: int | None = None,
        cost_per_hour: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.judge_calls_per_minute = judge_calls_per_minute
        self.traces_per_minute = traces_per_minute
        self.cost_per_hour = cost_per_hour
        self.clock = clock
        now = clock()
        self._calls = (
            None if judge_calls_per_minute is None else _Bucket(judge_calls_per_minute, now)
        )
        self._traces = None if traces_per_minute is None else _Bucket(traces_per_minute, now)
        self._hour = math.floor(now / 3600)
        self.spent = 0.0
        """The cost reported in the current hour."""
        self.paused: Reason | None = None
        """Why scoring is paused now, or ``None``."""
        self._lock = threading.Lock()

    def take(self) -> Reason | None:
        """Take one trace to score: ``None`` when it may be scored, else why not."""
        with self._lock:
            now = self.clock()
            hour = math.floor(now / 3600)
            if hour != self._hour:
                self._hour, self.spent = hour, 0.0
            reason: Reason | None = None
            if self.cost_per_hour is not None and self.spent >= self.cost_per_hour:
                reason = "cost_per_hour"
            elif self._calls is not None and self._calls.level(now) < 1:
                reason = "judge_calls_per_minute"
            elif self._traces is not None:
                if self._traces.level(now) < 1:
                    reason = "traces_per_minute"
                else:
                    self._traces.tokens -= 1
            self._note(reason)
            return reason

    def spend(self, *, calls: int = 0, cost: float = 0.0) -> None:
        """Count a scored trace's judge calls and cost against the budget."""
        with self._lock:
            self.spent += cost
            if self._calls is not None and calls:
                self._calls.level(self.clock())
                self._calls.tokens -= calls

    def _note(self, reason: Reason | None) -> None:
        if reason == self.paused:
            return
        if reason == "cost_per_hour":
            logger.warning(
                "scoring paused: the cost budget of %g per hour is spent (%g); forwarding goes "
                "on, scoring resumes next hour",
                self.cost_per_hour,
                self.spent,
                extra={"event": "scoring_paused", "reason": reason},
            )
        elif reason == "judge_calls_per_minute":
            logger.warning(
                "scoring paused: %d judge calls per minute made already; forwarding goes on, "
                "scoring resumes as the minute passes",
                self.judge_calls_per_minute,
                extra={"event": "scoring_paused", "reason": reason},
            )
        elif reason == "traces_per_minute":
            logger.warning(
                "scoring paused: %d traces per minute scored already; forwarding goes on",
                self.traces_per_minute,
                extra={"event": "scoring_paused", "reason": reason},
            )
        else:
            logger.info("scoring resumed", extra={"event": "scoring_resumed"})
        self.paused = reason


class _LiveTraces(EntrySource):
    """The chosen traces, as entries fed while the run goes on."""

    def __init__(self, scorer: Scorer, evaluators: Evaluators) -> None:
        self._scorer = scorer
        self._evaluators = evaluators
        self._taken = 0
        self.chosen_at: dict[str, float] = {}
        """When each trace being scored was chosen, by trace id."""

    @property
    def name(self) -> str:
        return self._scorer.online.settings.name

    def __len__(self) -> int:
        return self._taken

    def entries(self) -> Iterator[Entry]:
        return iter(())

    def info(self) -> SourceInfo:
        return SourceInfo(
            source=str(self._scorer.online.file),
            evaluators=list(self._evaluators.names),
            settings={"evaluators_file": str(self._scorer.online.file)},
        )

    def arriving(self) -> AsyncIterator[Entry]:
        return self._arrivals()

    async def _arrivals(self) -> AsyncIterator[Entry]:
        scorer = self._scorer
        while True:
            chosen = await scorer.next()
            if chosen is None:
                return
            refused = scorer.limiter.take()
            if refused is not None:
                scorer.metrics.traces_not_scored.add(1, refused)
                continue
            trace = stored_trace(chosen.trace.trace_id, chosen.trace.spans)
            self.chosen_at[trace.trace_id] = chosen.chosen_at
            entry = Entry(
                index=self._taken,
                evaluators=self._evaluators,
                name=trace.trace_id,
                trace=trace,
            )
            self._taken += 1
            yield entry


class Scorer:
    """Scores chosen traces in a thread of its own, through the engine.

    Args:
        online: The evaluators file.
        metrics: Where scoring is counted.
        queue_size: Most chosen traces waiting.
        results: The results stream to append to, if any.
        send_spans: Queues evaluation spans for forwarding (``None``: none are sent); called
            from the scoring thread.
    """

    def __init__(
        self,
        online: Online,
        metrics: Metrics,
        *,
        queue_size: int,
        results: ResultsStream | None,
        send_spans: SendSpans | None,
    ) -> None:
        self.online = online
        self.metrics = metrics
        self.queue_size = queue_size
        self.results = results
        self.send_spans = send_spans
        budget = online.settings.budget
        self.limiter = Limiter(
            judge_calls_per_minute=budget.judge_calls_per_minute,
            traces_per_minute=budget.traces_per_minute,
            cost_per_hour=budget.cost_per_hour,
        )
        self.run_id = new_run_id()
        self.depth = 0
        """Chosen traces waiting."""
        self._depth_lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[Chosen | None] | None = None
        self._task: asyncio.Task[Any] | None = None
        self._source: _LiveTraces | None = None
        self._thread = threading.Thread(target=self._main, name="evaltrace-serve-scoring")
        self._results_failed = False

    def header(self) -> RunResult:
        """The results stream's header: the run as it starts."""
        settings = self.online.settings
        return RunResult(
            run_id=self.run_id,
            name=settings.name,
            source=str(self.online.file),
            evaluators=[item.name for item in self.online.evaluators],
            threshold=settings.threshold,
            settings={
                "from_trace": settings.from_trace,
                "sample": settings.sample,
                "timeout": settings.timeout,
                "concurrency": settings.concurrency,
            },
        )

    def start(self) -> None:
        """Start the scoring thread and wait until it takes traces."""
        self._thread.start()
        self._ready.wait()

    def offer(self, chosen: Chosen) -> bool:
        """Hand a chosen trace over (from any thread, never waiting); whether it was taken."""
        with self._depth_lock:
            if self.depth >= self.queue_size or self._loop is None:
                taken = False
            else:
                self.depth += 1
                taken = True
        if not taken:
            self.metrics.traces_not_scored.add(1, "queue_full")
            return False
        assert self._loop is not None and self._queue is not None
        if threading.get_ident() == self._thread.ident:
            self._queue.put_nowait(chosen)  # in order with what this thread queued already
        else:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, chosen)
        return True

    def soon(self, function: Callable[..., None], *args: Any) -> None:
        """Run ``function(*args)`` in the scoring thread, soon (from any thread, never waiting)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(function, *args)

    def call(self, function: Callable[[], None]) -> concurrent.futures.Future[None]:
        """Run ``function`` in the scoring thread (from any thread); done once it ran."""
        assert self._loop is not None
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            try:
                function()
            except BaseException as exc:  # handed to whoever waits on ``done``
                done.set_exception(exc)
            else:
                done.set_result(None)

        self._loop.call_soon_threadsafe(run)
        return done

    async def next(self) -> Chosen | None:
        """The next chosen trace (in the scoring thread); ``None`` once closed and empty."""
        assert self._queue is not None
        chosen = await self._queue.get()
        if chosen is not None:
            with self._depth_lock:
                self.depth -= 1
        return chosen

    def close(self, deadline: float) -> None:
        """Score what waits until ``deadline`` (monotonic), then stop; count what is left."""
        loop, queue = self._loop, self._queue
        if loop is None or queue is None:
            return
        loop.call_soon_threadsafe(queue.put_nowait, None)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            task = self._task
            if task is not None:
                loop.call_soon_threadsafe(task.cancel)
            self._thread.join()
        if self.depth:
            self.metrics.traces_not_scored.add(self.depth, "shutdown")
            self.depth = 0
        if self.results is not None:
            self.results.close()

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        settings = self.online.settings
        config = RunConfig(
            concurrency=settings.concurrency,
            timeout=settings.timeout,
            threshold=settings.threshold,
            from_trace=self.online.selector,
            run_id=self.run_id,
        )
        evaluators = EvaluatorPlans().of([item.evaluator for item in self.online.evaluators])
        self._source = _LiveTraces(self, evaluators)
        self._task = asyncio.current_task()
        self._ready.set()
        try:
            await execute(self._source, config, keep=False, observers=[self._scored], release=True)
        except asyncio.CancelledError:
            in_flight = len(self._source.chosen_at)
            if in_flight:
                self.metrics.traces_not_scored.add(in_flight, "shutdown")
            self._drop_queued()

    def _drop_queued(self) -> None:
        assert self._queue is not None
        while not self._queue.empty():
            if self._queue.get_nowait() is not None:
                self.metrics.traces_not_scored.add(1, "shutdown")
                with self._depth_lock:
                    self.depth -= 1

    def _scored(self, scored: Scored, done: int, total: int) -> None:
        """Take one scored trace: its results line, its evaluation spans, its counts."""
        result = scored.result
        assert self._source is not None
        chosen_at = self._source.chosen_at.pop(result.name, None)
        if chosen_at is not None:
            self.metrics.evaluation_latency.observe(time.monotonic() - chosen_at)
        self.metrics.traces_scored.add(1, result.status.value)
        calls, hits, cost = _spend(result)
        self.metrics.judge_calls.add(calls)
        self.metrics.judge_cache_hits.add(hits)
        self.limiter.spend(calls=calls, cost=cost)
        if self.results is not None and not self._results_failed:
            try:
                self.results.add(result)
            except ResultsFolderError as exc:
                self._results_failed = True
                logger.error(
                    "%s; results are no longer written (scores still go to the forward target)",
                    exc,
                    extra={"event": "results_failed"},
                )
        if self.send_spans is not None and scored.roots and scored.evaluations:
            spans = evaluation_spans(
                scored.evaluations, scored.roots[0], threshold=self.online.settings.threshold
            )
            self.send_spans(encode_spans(spans).SerializeToString(), len(spans))


def _spend(result: EntryResult) -> tuple[int, int, float]:
    """Judge calls, judge cache hits and cost of one scored trace, as its results report.

    An evaluation reports them in its details (``judge_calls``, ``cache_hits``,
    ``cost_usd``); a saved entry that records its judges' usage (``judge_usage``: requests
    and cache hits by model) is read too.
    """
    calls = hits = 0
    cost = 0.0
    usage: Mapping[str, Any] = getattr(result, "judge_usage", None) or {}
    for model in usage.values():
        calls += int(getattr(model, "requests", 0))
        hits += int(getattr(model, "cache_hits", 0))
    for evaluation in result.evaluations:
        details = evaluation.details if isinstance(evaluation.details, dict) else {}
        if not usage:
            calls += _whole(details.get("judge_calls"))
            hits += _whole(details.get("cache_hits"))
        spent = details.get("cost_usd")
        if isinstance(spent, int | float) and not isinstance(spent, bool) and spent > 0:
            cost += float(spent)
    return calls, hits, cost


def _whole(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
