"""Judge throughput: Repeated(n=5) vs one call, and 500 Factuality judgements at concurrency 32.

Run: ``.venv/bin/python bench/bench_judges.py``. The OpenAI-compatible judge server runs in its
own process on 127.0.0.1 (so its threads do not share the benchmark's GIL) and is stopped by
process id at the end.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report
from evaltrace import Evaluable, NamedData, evaluate, evaluate_inputs
from evaltrace.judges import Factuality, Repeated, configure_judge

SERVER = """
import sys, time
from evaltrace.testing import FakeJudgeServer
server = FakeJudgeServer(latency=float(sys.argv[1])).start()
print(server.base_url, flush=True)
while True:
    time.sleep(3600)
"""


class JudgeProcess:
    """A FakeJudgeServer in a child process, with a given latency."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(latency)], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def stop(self) -> None:
        os.kill(self.process.pid, signal.SIGTERM)
        self.process.wait(10)


def case(i: int) -> Evaluable:
    return Evaluable(
        eval_input=[NamedData(name="question", value=f"What is the capital of country {i}?")],
        eval_output=[NamedData(name="answer", value=f"City {i}")],
        expectation=f"City {i}",
    )


async def repeated_vs_single() -> bool:
    server = JudgeProcess(latency=0.050)
    try:
        configure_judge(base_url=server.base_url, api_key="bench", model="gpt-4o-mini")
        single_judge = Factuality()
        repeated = Repeated(Factuality(), n=5, strategy="median")
        await evaluate(single_judge, case(0))  # warm the client and connection pool
        singles, repeats = [], []
        for i in range(5):
            started = time.perf_counter()
            one = await evaluate(single_judge, case(i))
            singles.append(time.perf_counter() - started)
            started = time.perf_counter()
            five = await evaluate(repeated, case(i))
            repeats.append(time.perf_counter() - started)
            assert one.error is None and five.error is None, (one.error, five.error)
        return report(
            "Repeated(Factuality, n=5) vs one call, 50 ms judge latency",
            min(repeats) * 1000,
            min(singles) * 1000,
            "ms",
            1.3,
        )
    finally:
        server.stop()


async def factuality_at_concurrency() -> bool:
    server = JudgeProcess(latency=0.020)
    try:
        configure_judge(base_url=server.base_url, api_key="bench", model="gpt-4o-mini")
        n, concurrency = 500, 32
        cases = [case(i) for i in range(n)]
        judge = Factuality()
        await evaluate(judge, cases[0])
        started = time.perf_counter()
        results = await evaluate_inputs(
            lambda x: x, list(range(n)), [judge], evaluables=cases, concurrency=concurrency
        )
        wall = time.perf_counter() - started
        assert all(item.evaluations[0].error is None for item in results)
        ideal = math.ceil(n / concurrency) * 0.020
        raw = await raw_client_calls(server.base_url, n, concurrency)
        print(
            f"500 x Factuality at concurrency 32: {n / wall:,.0f} requests/s "
            f"(bare openai client, same calls: {n / raw:,.0f} requests/s; "
            f"ideal with zero client cost: {n / ideal:,.0f} requests/s)"
        )
        print(f"  wall vs ideal: {wall / ideal:.2f}x (no goal set; the client's CPU dominates)")
        return report(
            "500 x Factuality, c=32, 20 ms: evaltrace vs bare openai client",
            wall * 1000,
            raw * 1000,
            "ms",
            1.3,
        )
    finally:
        server.stop()


async def raw_client_calls(base_url: str, n: int, concurrency: int) -> float:
    """The same forced tool calls made with the bare openai client: the client's own cost."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench")
    tool = {
        "type": "function",
        "function": {
            "name": "select_choice",
            "parameters": {
                "type": "object",
                "properties": {
                    "reasons": {"type": "string"},
                    "choice": {"type": "string", "enum": ["A", "B", "C", "D", "E"]},
                },
                "required": ["reasons", "choice"],
            },
        },
    }
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(i: int) -> None:
        async with limiter:
            await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": f"Compare City {i} with City {i}."}],
                tools=[tool],  # type: ignore[list-item]
                tool_choice={"type": "function", "function": {"name": "select_choice"}},
            )

    await one(0)
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for i in range(n):
            group.start_soon(one, i)
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def main() -> int:
    ok = await repeated_vs_single()
    ok &= await factuality_at_concurrency()
    return 0 if ok else 1


if __name__ == "__main__":
    parser(__doc__).parse_args()
    sys.exit(anyio.run(main))
