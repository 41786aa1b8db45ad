"""The engine scores a source fed while the run goes on (``EntrySource.arriving``): each entry
as it arrives, the run ending when the source does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from evaltrace.engine import Entry, EntrySource, EvaluatorPlans, Evaluators, RunConfig, execute
from evaltrace.evals import Evaluable, Evaluation, NamedData
from evaltrace.results import EntryResult


def says_paris(evaluable: Evaluable) -> Evaluation:
    return Evaluation(score=1.0 if "Paris" in str(evaluable.eval_output) else 0.0)


class Arriving(EntrySource):
    """Entries handed over one by one through a memory stream."""

    def __init__(self, receive: anyio.abc.ObjectReceiveStream[str], evaluators: Evaluators):
        self.receive = receive
        self.evaluators = evaluators
        self.taken = 0

    @property
    def name(self) -> str:
        return "arriving"

    def entries(self) -> Iterator[Entry]:
        return iter(())

    def __len__(self) -> int:
        return self.taken

    def arriving(self) -> AsyncIterator[Entry]:
        return self._entries()

    async def _entries(self) -> AsyncIterator[Entry]:
        async for answer in self.receive:
            case = Evaluable(
                eval_input=[NamedData(name="question", value="capital?")],
                eval_output=[NamedData(name="answer", value=answer)],
            )
            yield Entry(index=self.taken, evaluators=self.evaluators, case=case, name=answer)
            self.taken += 1


@pytest.mark.anyio
async def test_entries_that_arrive_during_the_run_are_scored_as_they_come() -> None:
    send, receive = anyio.create_memory_object_stream[str](10)
    source = Arriving(receive, EvaluatorPlans().of([says_paris]))
    scored: list[str] = []

    def observe(result: object, done: int, total: int) -> None:
        entry: EntryResult = result.result  # type: ignore[attr-defined]
        scored.append(entry.name or "")

    async with anyio.create_task_group() as group:
        outcome: list[object] = []

        async def run() -> None:
            outcome.append(await execute(source, RunConfig(concurrency=2), observers=[observe]))

        group.start_soon(run)
        await send.send("Paris")
        with anyio.fail_after(10):
            while scored != ["Paris"]:
                await anyio.sleep(0.01)  # scored before the next one is even sent
        await send.send("Rome")
        await send.aclose()
    (result,) = outcome
    assert scored == ["Paris", "Rome"]
    assert [entry.evaluations[0].score for entry in result.entries] == [1.0, 0.0]  # type: ignore[attr-defined]
