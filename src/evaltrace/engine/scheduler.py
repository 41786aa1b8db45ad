"""Where a run's entries are scored: the :class:`Executor` seam and :class:`LocalExecutor`.

The run (:func:`evaltrace.engine.execute`) decides what runs and keeps what comes back; an
executor scores the entries and hands back each one as it finishes. :class:`LocalExecutor`
(the default) scores them in this process, ``concurrency`` at a time in the run's event loop;
:class:`~evaltrace.datasets.RayExecutor` scores batches of a dataset's entries as Ray tasks.
Another executor implements :class:`Executor`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from evaltrace.constants import INPUTS_BETWEEN_CHECKPOINTS
from evaltrace.engine.config import RunConfig
from evaltrace.engine.entries import Entry, EntrySource
from evaltrace.engine.scoring import Scored, Scoring, failed_entry, score, scoring_run
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.llm.cache import flush_judge_caches

__all__ = [
    "Executor",
    "Finished",
    "LocalExecutor",
    "Work",
    "checkpoint_now_and_then",
    "score_entries",
]

Finished = Callable[[Scored], Awaitable[None]]
"""Receives each scored entry, in the event loop's thread; what it raises ends the run."""


@dataclass(frozen=True, kw_only=True)
class Work:
    """What an executor runs: a source's entries, with the run's settings."""

    source: EntrySource
    """Where the entries come from."""
    config: RunConfig
    """The run's settings."""
    run_id: str
    """The run's id."""
    done: Callable[[int], bool] | None = None
    """Whether the entry of an index is done already (a resumed run's); those are skipped."""

    def entries(self) -> Iterator[Entry]:
        """The entries to score, lazily, the done ones left out."""
        done = self.done
        if done is None:
            return self.source.entries()
        return (entry for entry in self.source.entries() if not done(entry.index))

    def scoring(self) -> Scoring:
        """What every entry shares when it is scored."""
        config = self.config
        return Scoring(
            runnable=self.source.runnable,
            from_trace=config.from_trace,
            timeout=config.timeout,
            threshold=config.threshold,
            run_id=self.run_id,
            attributes=config.attributes,
            epochs=config.epochs,
            reducer=config.strategy(),
            prices=config.price_table,
        )


class Executor(Protocol):
    """Scores the entries of a :class:`Work`, handing each one to ``finished`` as it ends."""

    async def execute(self, work: Work, finished: Finished) -> list[EvaluationError]:
        """Score every entry of ``work`` once, calling ``finished`` as each one ends.

        Failures of an entry are data (its result says so). The source's session (a dataset
        runnable's ``setup`` and ``teardown``) runs around the entries (per worker or batch,
        for an executor with workers): a ``setup`` that raises errors the entries it was to
        serve, which are still handed to ``finished``.

        Returns:
            What failed outside any entry (``setup``, ``teardown``).

        Raises:
            BaseException: Whatever stopped the run (Ctrl-C, a cancellation, a lost
                cluster, ``finished`` raising); the entries handed over before it stand.
        """
        ...


class LocalExecutor:
    """Scores the entries in this process, concurrently in the run's event loop (the default).

    The source's session (``setup`` before the entries, ``teardown`` after them, always)
    runs once.
    """

    async def execute(self, work: Work, finished: Finished) -> list[EvaluationError]:
        """Score the entries here; see :meth:`Executor.execute`."""
        phase = "setup"
        try:
            async with work.source.session():
                phase = "entries"
                try:
                    await score_entries(work, finished)
                finally:
                    # The judges' responses of these entries are in the cache file once they
                    # are scored: another process (a shard, a Ray worker) reuses them at once.
                    flush_judge_caches()
                phase = "teardown"
        except Exception as exc:
            if phase == "entries":  # not the app's failure (those are data)
                raise
            # The app's setup raised (every entry errors), or its teardown did (after the
            # entries finished): either is the run's error, reported with the result.
            error = EvaluationError.from_exception(exc, where=phase)
            if phase == "setup":
                threshold = work.config.threshold
                for entry in work.entries():
                    failed = failed_entry(entry, error, threshold=threshold)
                    await finished(Scored(entry=entry, result=failed))
            return [error]
        return []

    def __repr__(self) -> str:
        return "LocalExecutor()"


async def checkpoint_now_and_then(done: int) -> None:
    """Go back to the event loop after every :data:`INPUTS_BETWEEN_CHECKPOINTS`-th entry.

    For a worker that scores entries one after the other, even when nothing in them waits (a
    runnable and evaluators that never await). Without it one worker would run every entry
    in a single step of the loop, the others idle, and asyncio would never drop the timer of
    each finished timeout: cancelled, it stays scheduled, and its copy of the context holds
    the entry's spans until the run ends. Not after every entry: a step of the loop costs
    about a tenth of a no-I/O entry.

    Args:
        done: How many entries this worker has scored.
    """
    if done % INPUTS_BETWEEN_CHECKPOINTS == 0:
        await anyio.lowlevel.checkpoint()


async def score_entries(work: Work, finished: Finished) -> None:
    """Score the entries of ``work`` in this process, ``concurrency`` at a time.

    Workers share one lazy iterator of the entries, so each is taken once, when a worker is
    free: memory holds the entries in flight, not the run. A source fed while the run goes
    on (:meth:`~evaltrace.engine.EntrySource.arriving`) is scored as its entries arrive.
    ``finished`` gets each one as it ends; what it raises (or taking an entry raises) ends
    the run, the others cancelled.
    """
    scoring = work.scoring()
    arriving = work.source.arriving()
    if arriving is not None:
        await _score_arriving(arriving, scoring, finished, work.config.concurrency)
        return
    entries = work.entries()

    async def worker() -> None:
        with scoring_run(scoring):
            for done, entry in enumerate(entries, 1):  # workers share one iterator
                await finished(await score(entry, scoring))
                await checkpoint_now_and_then(done)

    workers = max(1, min(work.config.concurrency, len(work.source)))
    await _in_workers(worker, workers)


async def _score_arriving(
    arriving: AsyncIterator[Entry], scoring: Scoring, finished: Finished, concurrency: int
) -> None:
    """Score entries as they arrive, ``concurrency`` at a time, until ``arriving`` ends.

    The workers share the one async iterator, taken under a lock (an async generator may
    not be advanced by two tasks at once): a worker waits for the next entry only while
    none of the others does.
    """
    taking = anyio.Lock()

    async def worker() -> None:
        done = 0
        with scoring_run(scoring):
            while True:
                async with taking:
                    entry = await anext(arriving, None)
                if entry is None:
                    return
                await finished(await score(entry, scoring))
                done += 1
                await checkpoint_now_and_then(done)

    await _in_workers(worker, concurrency)


async def _in_workers(worker: Callable[[], Coroutine[Any, Any, None]], workers: int) -> None:
    """Run ``workers`` copies of ``worker``; what one raises ends them all, raised as it is."""
    try:
        async with anyio.create_task_group() as group:
            for _ in range(workers):
                group.start_soon(worker)
    except ExceptionGroup as failed:  # finished, or reading the entries, raised: that error
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from failed
        raise
