"""Runner overhead and latency hiding of evaluate_inputs / assert_pass.

Run: ``.venv-bench/bin/python bench/bench_runner.py`` (pydantic-evals installed only in the
benchmark environment; see bench/README.md). Figures are ratios measured in the same run.
"""

from __future__ import annotations

import gc
import math
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, parser, report
from evaltrace import Evaluable, Evaluator, EvaluatorContext, evaluate_inputs, root
from evaltrace.engine import EntryPoint, run_captured
from evaltrace.evals import EvaluatorFunction

N = 1_000


async def task(x: int) -> int:
    return x * 2


async def doubled(evaluable: Evaluable) -> float:
    return 1.0 if evaluable.output_value() == 2 * evaluable.input_value() else 0.0


async def positive(evaluable: Evaluable) -> bool:
    return evaluable.output_value() >= 0


async def even(evaluable: Evaluable) -> bool:
    return evaluable.output_value() % 2 == 0


class Doubled(Evaluator):
    async def evaluate(self, ctx: EvaluatorContext) -> float:
        return 1.0 if ctx.output() == 2 * ctx.input() else 0.0


class Positive(Evaluator):
    async def evaluate(self, ctx: EvaluatorContext) -> bool:
        return bool(ctx.output() >= 0)


class Even(Evaluator):
    async def evaluate(self, ctx: EvaluatorContext) -> bool:
        return bool(ctx.output() % 2 == 0)


FUNCTIONS: list[EvaluatorFunction] = [doubled, positive, even]
"""Evaluators as plain functions of the evaluable."""
CLASSES: list[EvaluatorFunction] = [Doubled(), Positive(), Even()]
"""The same evaluators written the documented way, reading an EvaluatorContext."""


async def ours_overhead(evaluators: list[EvaluatorFunction] = FUNCTIONS) -> float:
    started = time.perf_counter()
    results = await evaluate_inputs(task, list(range(N)), evaluators, concurrency=100)
    elapsed = time.perf_counter() - started
    assert all(e.score == 1.0 for item in results for e in item.evaluations)
    return elapsed


async def pydantic_evals_overhead() -> float:
    from dataclasses import dataclass

    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import Evaluator as PydanticEvaluator
    from pydantic_evals.evaluators import EvaluatorContext as PydanticContext

    @dataclass
    class PydanticDoubled(PydanticEvaluator[int, int]):
        async def evaluate(self, ctx: PydanticContext[int, int]) -> float:
            return 1.0 if ctx.output == 2 * ctx.inputs else 0.0

    @dataclass
    class PydanticPositive(PydanticEvaluator[int, int]):
        async def evaluate(self, ctx: PydanticContext[int, int]) -> bool:
            return ctx.output >= 0

    @dataclass
    class PydanticEven(PydanticEvaluator[int, int]):
        async def evaluate(self, ctx: PydanticContext[int, int]) -> bool:
            return ctx.output % 2 == 0

    dataset = Dataset(
        name="bench",
        cases=[Case(name=f"c{i}", inputs=i) for i in range(N)],
        evaluators=[PydanticDoubled(), PydanticPositive(), PydanticEven()],
    )
    started = time.perf_counter()
    report_ = await dataset.evaluate(task, max_concurrency=100, progress=False)
    elapsed = time.perf_counter() - started
    assert len(report_.cases) == N
    return elapsed


async def ours_latency(concurrency: int) -> float:
    async def slow_task(x: int) -> int:
        await anyio.sleep(0.010)
        return x

    async def slow_evaluator(evaluable: Evaluable) -> float:
        await anyio.sleep(0.020)
        return 1.0

    async def slow_evaluator_2(evaluable: Evaluable) -> float:
        await anyio.sleep(0.020)
        return 1.0

    async def slow_evaluator_3(evaluable: Evaluable) -> float:
        await anyio.sleep(0.020)
        return 1.0

    started = time.perf_counter()
    await evaluate_inputs(
        slow_task,
        list(range(N)),
        [slow_evaluator, slow_evaluator_2, slow_evaluator_3],
        concurrency=concurrency,
    )
    return time.perf_counter() - started


async def bare_asyncio_latency(concurrency: int) -> float:
    """The same sleeps scheduled by hand with no evaluation library: the achievable floor."""
    import asyncio

    pending = iter(range(N))

    async def worker() -> None:
        for _ in pending:
            await anyio.sleep(0.010)
            await asyncio.gather(anyio.sleep(0.020), anyio.sleep(0.020), anyio.sleep(0.020))

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return time.perf_counter() - started


SLEEP_S = 0.010
"""What each evaluator of the concurrency figure waits, as for a model's answer."""


async def ours_sleeping_evaluators(concurrency: int) -> float:
    """evaluate_inputs: a no-I/O app, three evaluators each waiting 10 ms.

    They wait with ``asyncio.sleep``, as the hand-written side's do: both sides run the same
    evaluator bodies, so the figure is the runner's cost and not ``anyio.sleep``'s over
    ``asyncio.sleep`` (about 5% of this side's CPU).
    """
    import asyncio

    async def waits(evaluable: Evaluable) -> float:
        await asyncio.sleep(SLEEP_S)
        return 1.0

    async def waits_2(evaluable: Evaluable) -> float:
        await asyncio.sleep(SLEEP_S)
        return 1.0

    async def waits_3(evaluable: Evaluable) -> float:
        await asyncio.sleep(SLEEP_S)
        return 1.0

    started = time.perf_counter()
    results = await evaluate_inputs(
        task, list(range(N)), [waits, waits_2, waits_3], concurrency=concurrency
    )
    elapsed = time.perf_counter() - started
    assert all(e.score == 1.0 for item in results for e in item.evaluations)
    return elapsed


async def gather_sleeping_evaluators(concurrency: int) -> float:
    """The same by hand: ``asyncio.gather`` of every input under an ``asyncio.Semaphore``."""
    import asyncio

    semaphore = asyncio.Semaphore(concurrency)

    async def waits() -> float:
        await asyncio.sleep(SLEEP_S)
        return 1.0

    async def one(x: int) -> list[float]:
        async with semaphore:
            await task(x)
            return list(await asyncio.gather(waits(), waits(), waits()))

    started = time.perf_counter()
    results = await asyncio.gather(*(one(x) for x in range(N)))
    elapsed = time.perf_counter() - started
    assert all(score == 1.0 for row in results for score in row)
    return elapsed


async def captured_gather_sleeping_evaluators(concurrency: int) -> float:
    """By hand as :func:`gather_sleeping_evaluators`, each input run under evaltrace's capture.

    Each input runs in ``run_captured`` (its root span and capture) and its evaluable is read
    by the ``root`` selector, as ``evaluate_inputs`` does, before the same gathered
    evaluators: what ``evaluate_inputs`` would cost with a scheduler, evaluator calls and
    bookkeeping that cost nothing. It splits the gap to ``gather``: capture and selector
    against the engine's own work.
    """
    import asyncio

    semaphore = asyncio.Semaphore(concurrency)
    app = EntryPoint.of(task)

    async def waits(evaluable: Evaluable) -> float:
        await asyncio.sleep(SLEEP_S)
        return 1.0

    async def one(x: int) -> list[float]:
        async with semaphore:
            run = await run_captured(app, x)
            evaluable = root(run.trace)
            return list(await asyncio.gather(waits(evaluable), waits(evaluable), waits(evaluable)))

    started = time.perf_counter()
    results = await asyncio.gather(*(one(x) for x in range(N)))
    elapsed = time.perf_counter() - started
    assert all(score == 1.0 for row in results for score in row)
    return elapsed


async def main() -> int:
    ok = True
    rounds = 5
    try:
        import pydantic_evals  # noqa: F401
    except ImportError:
        print(
            "pydantic-evals is not installed here: run this with .venv-bench (see bench/README.md)"
        )
        ours = min([await ours_overhead() for _ in range(rounds)])
        print(
            f"evaltrace: {N} inputs x 3 evaluators in {ours * 1000:.0f} ms "
            f"({N / ours:,.0f} entries/s)"
        )
    else:
        ours_times, classes_times, theirs_times = [], [], []
        for _ in range(rounds):  # interleaved, so machine noise hits every side alike
            # Each side starts from a collected heap, so that no side pays for a full
            # collection of the garbage the side before it left.
            gc.collect()
            ours_times.append(await ours_overhead(FUNCTIONS))
            gc.collect()
            classes_times.append(await ours_overhead(CLASSES))
            gc.collect()
            theirs_times.append(await pydantic_evals_overhead())
        ours, classes, theirs = min(ours_times), min(classes_times), min(theirs_times)
        print(
            f"evaltrace: {N} inputs x 3 evaluators in {ours * 1000:.0f} ms "
            f"({N / ours:,.0f} entries/s); as Evaluator classes {classes * 1000:.0f} ms"
        )
        print(
            f"pydantic-evals: {N} cases x 3 evaluators in {theirs * 1000:.0f} ms "
            f"({N / theirs:,.0f} entries/s)"
        )
        ok &= report(
            "runner overhead, 1000 x 3, no I/O: evaltrace vs pydantic-evals",
            ours * 1000,
            theirs * 1000,
            "ms",
            0.5,
        )
        ok &= report(
            "  the same with Evaluator classes reading the context",
            classes * 1000,
            theirs * 1000,
            "ms",
            0.5,
        )
    concurrency = 100
    ideal = math.ceil(N / concurrency) * 0.030
    walls, floors, wall_cpus = [], [], []
    for _ in range(3):
        gc.collect()
        cpu = time.process_time()
        walls.append(await ours_latency(concurrency))
        wall_cpus.append(time.process_time() - cpu)
        gc.collect()
        floors.append(await bare_asyncio_latency(concurrency))
    wall, floor = min(walls), min(floors)
    ok &= report(
        "latency 10 ms run + 20 ms evaluators, c=100: wall vs ideal",
        wall * 1000,
        ideal * 1000,
        "ms",
        1.25,
    )
    print(
        f"  (bare asyncio doing only the sleeps takes {floor * 1000:.0f} ms = "
        f"{floor / ideal:.2f}x ideal; evaltrace is {wall / floor:.2f}x that floor; its process "
        f"CPU {min(wall_cpus) * 1000:.0f} ms, best round)"
    )
    ours_times, base_times, ours_cpus, base_cpus, captured_cpus = [], [], [], [], []
    for _ in range(5):  # in alternation, best of each
        gc.collect()
        cpu = time.process_time()
        ours_times.append(await ours_sleeping_evaluators(50))
        ours_cpus.append(time.process_time() - cpu)
        gc.collect()
        cpu = time.process_time()
        base_times.append(await gather_sleeping_evaluators(50))
        base_cpus.append(time.process_time() - cpu)
        gc.collect()
        cpu = time.process_time()
        await captured_gather_sleeping_evaluators(50)
        captured_cpus.append(time.process_time() - cpu)
    ok &= report(
        "3 evaluators waiting 10 ms, c=50: evaluate_inputs vs gather + Semaphore",
        min(ours_times) * 1000,
        min(base_times) * 1000,
        "ms",
        1.05,
    )
    rounds_ = sorted(o / b for o, b in zip(ours_times, base_times, strict=True))
    print(
        f"  (round by round {rounds_[0]:.2f}-{rounds_[-1]:.2f}x, median {median(rounds_):.2f}x; "
        f"ideal ceil({N}/50) x 10 ms = {math.ceil(N / 50) * SLEEP_S * 1000:.0f} ms; process "
        f"CPU, best round: evaluate_inputs {min(ours_cpus) * 1000:.0f} ms, gather "
        f"{min(base_cpus) * 1000:.0f} ms: a run whose CPU nears the ideal is bound by it)",
        flush=True,
    )
    ours_cpu, base_cpu, captured_cpu = min(ours_cpus), min(base_cpus), min(captured_cpus)
    print(
        f"  (the same by hand with each input under evaltrace's run capture and root selector: "
        f"process CPU {captured_cpu * 1000:.0f} ms; of evaluate_inputs' CPU over gather's, "
        f"{(captured_cpu - base_cpu) / (ours_cpu - base_cpu):.0%} is the capture and "
        f"selector, the rest the engine's scheduling, evaluator calls and bookkeeping)",
        flush=True,
    )
    print(
        f"  (objects the garbage collector tracks per row evaluate_inputs returns: "
        f"{await tracked_per_row():.1f}; each costs every collection that reaches it)",
        flush=True,
    )
    print("  what one captured run costs (us of CPU per entry, collector off, best of 7):")
    for label, cost in capture_pieces().items():
        print(f"    {label:<66}{cost:8.1f} us", flush=True)
    return 0 if ok else 1


def capture_pieces(count: int = 2_000, rounds: int = 7) -> dict[str, float]:
    """CPU per entry of a run's capture, piece by piece, in alternating rounds.

    Each piece adds one step to the one before: an empty ``capture_traces()`` block; the
    whole ``run_captured`` of the no-I/O ``task`` (its coroutine driven by hand, without an
    event loop); then its trace tree; then ``root`` of it.
    """
    from evaltrace import capture_traces

    app = EntryPoint.of(task)

    def drive(argument: int) -> Any:
        coroutine = run_captured(app, argument)
        try:
            coroutine.send(None)
        except StopIteration as stop:
            return stop.value
        raise RuntimeError("run_captured of a no-I/O task suspended")

    def block() -> list[Any]:
        kept = []
        for _ in range(count):
            with capture_traces() as handler:
                kept.append(handler)
        return kept

    def run() -> list[Any]:
        return [drive(i) for i in range(count)]

    def run_trace() -> list[Any]:
        kept = []
        for i in range(count):
            outcome = drive(i)
            kept.append((outcome, outcome.trace))
        return kept

    def run_root() -> list[Any]:
        kept = []
        for i in range(count):
            outcome = drive(i)
            kept.append((outcome, root(outcome.trace)))
        return kept

    pieces = {
        "an empty capture_traces() block": block,
        "run_captured(EntryPoint.of(task), x)": run,
        "  + its trace tree (run.trace)": run_trace,
        "  + root(run.trace)": run_root,
    }
    best = dict.fromkeys(pieces, math.inf)
    for piece in pieces.values():
        piece()
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for label, piece in pieces.items():
                started = time.process_time()
                kept = piece()
                best[label] = min(best[label], (time.process_time() - started) / count * 1e6)
                del kept
                gc.collect()
    finally:
        gc.enable()
    return best


async def tracked_per_row() -> float:
    """How many more objects the collector tracks per row of the c=50 run's result."""
    import asyncio

    async def waits(evaluable: Evaluable) -> float:
        await asyncio.sleep(0)
        return 1.0

    async def waits_2(evaluable: Evaluable) -> float:
        await asyncio.sleep(0)
        return 1.0

    async def waits_3(evaluable: Evaluable) -> float:
        await asyncio.sleep(0)
        return 1.0

    gc.collect()
    before = len(gc.get_objects())
    results = await evaluate_inputs(task, list(range(N)), [waits, waits_2, waits_3], concurrency=50)
    gc.collect()
    after = len(gc.get_objects())
    assert len(results) == N
    return (after - before) / N


if __name__ == "__main__":
    parser(__doc__).parse_args()
    sys.exit(anyio.run(main))
