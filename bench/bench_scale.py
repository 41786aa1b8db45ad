"""Past one process: memory of a streamed dataset run, and the Ray executor against local.

Run: ``.venv-bench/bin/python bench/bench_scale.py`` (or ``python3 dev.py bench``; needs Ray,
``pip install 'evaltrace[ray]'``, for the second part, which is skipped without it).

1. *Memory and speed* — a dataset of N entries names a no-I/O async app and three async
   evaluators. ``run_dataset(dataset, output_dir=..., keep_entries=False)`` (each entry
   written to ``entries.jsonl`` and dropped; ``result.json`` assembled from it at the end) runs
   it with N = 10,000 and N = 100,000, each in a fresh interpreter, the dataset loaded before
   tracemalloc starts: the peak traced during the run. Goal: the peak at 100,000 at most 2x
   the peak at 10,000. Entries/s at 100,000 (without tracemalloc) vs ``evaluate_inputs`` on
   the same entries in the same process (which keeps every result, no folder), best of 3.
2. *Ray* — 80 entries whose sync runnable burns 50 ms of CPU each, on a local Ray started
   beforehand (2 CPUs; its start, about 4 s, is printed apart), ``RayExecutor()`` vs the
   local executor: the speed-up. And the per-entry overhead of the Ray path: 2,000 entries
   that do nothing, Ray minus local, per entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report
from evaltrace import evaluate_inputs
from evaltrace.datasets import load_dataset, run_dataset

GOAL_MEMORY = 2.0
SMALL, LARGE = 10_000, 100_000

APP = """\
import time

from evaltrace import wrap


async def run(question: str, number: int) -> str:
    return wrap(f"{question.upper()} {number * 2}", purpose="output", name="answer")


def burn(number: int) -> int:
    end = time.thread_time() + 0.05  # this thread's CPU: local runs use several threads
    while time.thread_time() < end:
        pass
    return number


def nothing(number: int) -> int:
    return number
"""

CHECKS = """\
async def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


async def length(evaluable):
    return min(1.0, len(evaluable.output_value("answer")) / 10)


async def mentions_number(evaluable):
    return str(evaluable.eval_metadata["double"]) in evaluable.output_value("answer")


def returned(evaluable):
    return evaluable.output_value() is not None
"""


def write_dataset(folder: Path, entries: int) -> Path:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    document = {
        "name": "bench",
        "runnable": "app.py:run",
        "evaluators": ["checks.py:exact", "checks.py:length", "checks.py:mentions_number"],
        "entries": [
            {
                "name": f"q{i}",
                "entry_kwargs": {"question": f"question {i}", "number": i},
                "expectation": f"QUESTION {i} {2 * i}",
                "eval_metadata": {"double": 2 * i},
            }
            for i in range(entries)
        ],
    }
    path = folder / f"bench{entries}.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def write_cpu_dataset(folder: Path, entries: int, runnable: str) -> Path:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    document = {
        "name": f"cpu-{runnable}",
        "runnable": f"app.py:{runnable}",
        "evaluators": ["checks.py:returned"],
        "entries": [{"name": f"e{i}", "entry_kwargs": {"number": i}} for i in range(entries)],
    }
    path = folder / f"{runnable}{entries}.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def peak_of_run(dataset: Path, out: Path) -> None:
    """In a fresh interpreter: print the peak traced while the dataset (loaded) runs."""
    loaded = load_dataset(dataset)
    tracemalloc.start()
    result = anyio.run(
        lambda: run_dataset(loaded, output_dir=out, concurrency=8, keep_entries=False)
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not result.interrupted
    print(peak)


def measured_peak(dataset: Path, out: Path) -> int:
    done = subprocess.run(
        [sys.executable, __file__, "--peak", str(dataset), str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=dataset.parent,
    )
    return int(done.stdout.split()[-1])


async def streamed(dataset: Any, out: Path) -> float:
    started = time.perf_counter()
    await run_dataset(dataset, output_dir=out, concurrency=8, keep_entries=False)
    return time.perf_counter() - started


async def baseline(dataset: Any, call: Any, evaluators: list[Any]) -> float:
    entries = dataset.entries
    started = time.perf_counter()
    await evaluate_inputs(
        call,
        [entry.entry_kwargs for entry in entries],
        evaluators,
        evaluables=[entry.to_evaluable() for entry in entries],
        concurrency=8,
        timeout=300.0,
    )
    return time.perf_counter() - started


def memory_and_speed(folder: Path) -> bool:
    small, large = write_dataset(folder, SMALL), write_dataset(folder, LARGE)
    peak_small = measured_peak(small, folder / "out-small")
    peak_large = measured_peak(large, folder / "out-large")
    print(
        f"peak traced during a streamed run: {SMALL:,} entries {peak_small / 2**20:.1f} MiB, "
        f"{LARGE:,} entries {peak_large / 2**20:.1f} MiB "
        f"({peak_large / LARGE:.0f} B per entry at {LARGE:,})"
    )
    ok = report(
        f"peak memory, {LARGE:,} vs {SMALL:,} entries", peak_large, peak_small, "B", GOAL_MEMORY
    )
    sys.path.insert(0, str(folder))
    import app  # type: ignore[import-not-found]
    import checks  # type: ignore[import-not-found]

    async def call(arguments: dict[str, Any]) -> Any:
        return await app.run(**arguments)

    evaluators = [checks.exact, checks.length, checks.mentions_number]
    loaded = load_dataset(large)
    ours = min(anyio.run(streamed, loaded, folder / "timed") for _ in range(3))
    base = min(anyio.run(baseline, loaded, call, evaluators) for _ in range(3))
    print(
        f"{LARGE:,} entries x 3 evaluators: streamed run_dataset {LARGE / ours:,.0f} entries/s "
        f"({ours:.1f} s, folder written), evaluate_inputs {LARGE / base:,.0f} entries/s "
        f"({base:.1f} s, every result kept in memory); ratio {ours / base:.2f}x"
    )
    return ok


def ray_speedup(folder: Path) -> None:
    try:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        from evaltrace.datasets import RayExecutor
    except ImportError:
        print("Ray part skipped: Ray is not installed (pip install 'evaltrace[ray]')")
        return
    started = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=os.cpu_count() or 2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    print(f"local Ray started in {time.perf_counter() - started:.1f} s (not counted below)")
    try:
        workers = int(ray.cluster_resources()["CPU"])
        burn = write_cpu_dataset(folder, 80, "burn")
        idle = write_cpu_dataset(folder, 2000, "nothing")

        async def timed(dataset: Path, executor: Any) -> float:
            began = time.perf_counter()
            result = await run_dataset(dataset, executor=executor, keep_entries=True)
            assert result.passed, result.status_counts
            return time.perf_counter() - began

        anyio.run(timed, idle, RayExecutor())  # warm the workers (imports, first dataset load)
        local_burn = min(anyio.run(timed, burn, None) for _ in range(2))
        ray_burn = min(anyio.run(timed, burn, RayExecutor()) for _ in range(2))
        print(
            f"80 entries x 50 ms CPU on {workers} CPUs: local {local_burn:.2f} s, Ray "
            f"{ray_burn:.2f} s: speed-up {local_burn / ray_burn:.2f}x "
            f"(ideal {workers}x; floor {80 * 0.05 / workers:.2f} s)"
        )
        local_idle = min(anyio.run(timed, idle, None) for _ in range(2))
        ray_idle = min(anyio.run(timed, idle, RayExecutor()) for _ in range(2))
        print(
            f"2,000 entries doing nothing: local {local_idle:.2f} s, Ray {ray_idle:.2f} s: "
            f"Ray path overhead {(ray_idle - local_idle) / 2000 * 1e3:.2f} ms per entry "
            f"(local {local_idle / 2000 * 1e3:.2f} ms per entry)"
        )
    finally:
        ray.shutdown()


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--peak":  # one side, in an interpreter of its own
        peak_of_run(Path(sys.argv[2]), Path(sys.argv[3]))
        return 0
    parser(__doc__).parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        ok = memory_and_speed(folder)
        ray_speedup(folder)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
