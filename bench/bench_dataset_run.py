"""A dataset run with its results folder, against evaluate_inputs on the same entries.

Run: ``.venv-bench/bin/python bench/bench_dataset_run.py [ENTRIES]`` (or ``python3 dev.py
bench``). A dataset file of 10,000 entries (by default) names a no-I/O async app and three
async evaluators; ``run_dataset`` runs it as ``evaltrace test`` does (loading, checking and
resolving the file, the app's setup and teardown, progress lines, each entry's spans appended
to ``traces.jsonl`` and its capture released, ``result.json`` at the end). The baseline is
``evaluate_inputs`` on the same entries, app and evaluators, in the same process, with no
file, no folder and no progress; both sides are timed in alternation, best of five each (wall
time; the CPU time of the process is printed too, as it moves less with the machine's load).

Memory is measured apart (tracemalloc slows everything down): the peak traced while each side
runs the dataset loaded beforehand, divided by the number of entries.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive, report
from evaltrace import evaluate_inputs
from evaltrace.datasets import (
    Dataset,
    ReferenceLoader,
    load_dataset,
    prepare_dataset,
    run_dataset,
)

GOAL = 1.3
ROUNDS = 5
ENTRIES = 10_000

APP = """\
from evaltrace import wrap


async def run(question: str, number: int) -> str:
    return wrap(f"{question.upper()} {number * 2}", purpose="output", name="answer")
"""

CHECKS = """\
async def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


async def length(evaluable):
    return min(1.0, len(evaluable.output_value("answer")) / 10)


async def mentions_number(evaluable):
    return str(evaluable.eval_metadata["double"]) in evaluable.output_value("answer")
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
    path = folder / "bench.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


def baseline_parts(folder: Path) -> tuple[Callable[..., Any], list[Any]]:
    """The same app and evaluators, imported as the dataset run imports them."""
    sys.path.insert(0, str(folder))
    import app  # type: ignore[import-not-found]
    import checks  # type: ignore[import-not-found]

    async def call(arguments: dict[str, Any]) -> Any:
        return await app.run(**arguments)

    return call, [checks.exact, checks.length, checks.mentions_number]


Timing = tuple[float, float]
"""Wall seconds and CPU seconds of one run."""


async def ours(dataset: Path | Dataset, out: Path) -> Timing:
    started, cpu = time.perf_counter(), time.process_time()
    with redirect_stderr(io.StringIO()):  # the progress lines, as CI shows them
        result = await run_dataset(dataset, output_dir=out, concurrency=8, progress=True)
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    assert result.passed and len(result.entries) == ENTRIES
    return elapsed


async def baseline(
    dataset: Path | Dataset, call: Callable[..., Any], evaluators: list[Any]
) -> Timing:
    loaded = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    entries = loaded.entries
    started, cpu = time.perf_counter(), time.process_time()
    results = await evaluate_inputs(
        call,
        [entry.entry_kwargs for entry in entries],
        evaluators,
        evaluables=[entry.to_evaluable() for entry in entries],
        concurrency=8,
        timeout=300.0,
    )
    elapsed = time.perf_counter() - started, time.process_time() - cpu
    assert all(e.score == 1.0 for item in results for e in item.evaluations)
    return elapsed


def _prepare_time(dataset: Path) -> float:
    started = time.perf_counter()
    prepare_dataset(dataset, loader=ReferenceLoader())
    return time.perf_counter() - started


def peak_per_entry(run: Callable[[], Awaitable[object]]) -> float:
    tracemalloc.start()
    try:
        anyio.run(run)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / ENTRIES


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dataset = write_dataset(folder, ENTRIES)
        call, evaluators = baseline_parts(folder)
        ours_times, base_times = [], []
        for _ in range(ROUNDS):  # in alternation, so machine noise hits both sides alike
            base_times.append(anyio.run(baseline, dataset, call, evaluators))
            ours_times.append(anyio.run(ours, dataset, folder / "results"))
        best_ours = min(wall for wall, _ in ours_times)
        best_base = min(wall for wall, _ in base_times)
        cpu_ours = min(cpu for _, cpu in ours_times)
        cpu_base = min(cpu for _, cpu in base_times)
        run_folder = sorted((folder / "results").iterdir())[-1]
        sizes = {path.name: path.stat().st_size for path in run_folder.iterdir()}
        print(
            f"run_dataset with results folder: {ENTRIES:,} entries x 3 evaluators in "
            f"{best_ours:.2f} s ({ENTRIES / best_ours:,.0f} entries/s); "
            f"evaluate_inputs: {best_base:.2f} s ({ENTRIES / best_base:,.0f} entries/s)"
        )
        loading = min(_prepare_time(dataset) for _ in range(3))
        print(
            f"of which loading, checking and resolving the dataset file: {loading:.2f} s "
            f"({loading / best_base:.0%} of the baseline)"
        )
        print(
            f"CPU time: run_dataset {cpu_ours:.2f} s, evaluate_inputs {cpu_base:.2f} s "
            f"(ratio {cpu_ours / cpu_base:.2f}x; less sensitive to other processes)"
        )
        print(
            f"results folder: result.json {sizes['result.json'] / 1e6:.1f} MB, "
            f"traces.jsonl {sizes['traces.jsonl'] / 1e6:.1f} MB"
        )
        ok = report(
            f"run_dataset + folder vs evaluate_inputs, {ENTRIES:,} entries",
            best_ours,
            best_base,
            "s",
            GOAL,
        )
        loaded = load_dataset(dataset)  # before tracing: both sides are measured running it
        ours_peak = peak_per_entry(lambda: ours(loaded, folder / "memory"))
        base_peak = peak_per_entry(lambda: baseline(loaded, call, evaluators))
        print(
            f"peak memory per entry (tracemalloc): run_dataset {ours_peak / 1024:.1f} KiB, "
            f"evaluate_inputs {base_peak / 1024:.1f} KiB (which keeps every capture)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    command = parser(__doc__)
    command.add_argument(
        "entries", nargs="?", type=positive, default=ENTRIES, help="entries (10,000)"
    )
    ENTRIES = command.parse_args().entries
    sys.exit(main())
