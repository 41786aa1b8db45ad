"""What users run: ``evaltrace test`` as a whole process, its wall time and its peak memory.

Run: ``python3 dev.py bench cli_scale [--repeat N] [--small N] [--large N]``.

The dataset is bench_scale.py's (a no-I/O async app, three async evaluators, N entries).
Each figure is of a fresh process; its peak resident memory is the ``ru_maxrss`` that
``os.wait4`` reports for it (the interpreter, the imports, the loaded dataset and the run, all
counted), waited for by a small launcher that forks it: Linux keeps a process's high-water
mark across fork and exec, so a child started straight from this script (which writes the
datasets, holding the large one) would start at this script's own peak.

1. *Peak memory* — ``evaltrace test`` (with its scorecard) on ``--large`` entries against
   ``--small`` entries (default 100,000 and 10,000). Goal: at most 2x. With ``--bare``,
   ``--no-scorecard`` at ``--large`` too: what the scorecard adds.
2. *Wall time* — ``evaltrace test`` (with its scorecard) on ``--small`` entries against a
   process that loads the same dataset file and scores its entries with ``evaluate_inputs``
   (the same app and evaluators, concurrency 8, no folder). Goal: at most 1.3x. The ratio of
   their CPU seconds is printed too (steadier when the machine is busy), and ``--no-scorecard``
   on ``--small`` entries.

Each is measured ``--repeat`` times (default 3), the two sides alternating; the ratios of
each repetition are summarised as min / median / max. With ``--jsonl`` the dataset is given
to ``evaltrace test`` in its JSONL form (``*.evaltrace.jsonl``, written from the same data);
the ``evaluate_inputs`` process reads the JSON form either way.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import write_dataset

GOAL_MEMORY = 2.0
GOAL_WALL = 1.3

EVALUATE_INPUTS = """\
import sys

import anyio

sys.path.insert(0, ".")
import app
import checks

from evaltrace import evaluate_inputs
from evaltrace.datasets import load_dataset


async def call(arguments):
    return await app.run(**arguments)


async def main():
    entries = load_dataset(sys.argv[1]).entries
    await evaluate_inputs(
        call,
        [entry.entry_kwargs for entry in entries],
        [checks.exact, checks.length, checks.mentions_number],
        evaluables=[entry.to_evaluable() for entry in entries],
        concurrency=8,
        timeout=300.0,
    )


anyio.run(main)
"""


@dataclass(frozen=True)
class Measured:
    """One process: its wall time and its peak resident memory."""

    wall_s: float
    """Seconds from its start to its end."""
    peak_rss: int
    """Its peak resident memory, in bytes."""
    cpu_s: float
    """The CPU seconds it used (user and system): steadier than wall time on a busy machine."""


LAUNCHER = """\
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, usage.ru_utime + usage.ru_stime,
      file=sys.stderr)
"""
"""Forks the command and prints its exit code, ``ru_maxrss`` (KiB) and CPU seconds last."""


def measure(command: list[str], cwd: Path) -> Measured:
    """Run ``command`` to its end; its wall time, peak RSS (``ru_maxrss``) and CPU time."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *command],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # drained while it runs: progress lines fill the pipe
        env={**os.environ, "CI": "1"},
        check=False,
    )
    wall = time.perf_counter() - started
    *errors, last = done.stderr.decode(errors="replace").rstrip("\n").split("\n")
    code, peak, cpu = last.split()
    if int(code) not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {code}:\n" + "\n".join(errors))
    return Measured(wall_s=wall, peak_rss=int(peak) * 1024, cpu_s=float(cpu))  # KiB on Linux


def evaltrace_test(dataset: Path, *more: str) -> Measured:
    out = dataset.parent / "out"
    shutil.rmtree(out, ignore_errors=True)
    evaltrace = str(Path(sys.executable).with_name("evaltrace"))
    found = measure([evaltrace, "test", dataset.name, "--output-dir", "out", *more], dataset.parent)
    shutil.rmtree(out, ignore_errors=True)
    return found


def as_jsonl(dataset: Path) -> Path:
    """The same dataset in its JSONL form, beside it: a header line, then an entry a line."""
    document = json.loads(dataset.read_text())
    entries = document.pop("entries")
    path = dataset.with_name(dataset.name.removesuffix(".json") + ".jsonl")
    with path.open("w") as stream:
        stream.write(json.dumps(document) + "\n")
        for entry in entries:
            stream.write(json.dumps(entry) + "\n")
    return path


def evaluate_inputs_process(dataset: Path) -> Measured:
    return measure([sys.executable, "-c", EVALUATE_INPUTS, dataset.name], dataset.parent)


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    middle = ordered[len(ordered) // 2]
    return f"min {ordered[0]:.2f}x median {middle:.2f}x max {ordered[-1]:.2f}x"


def mib(value: float) -> str:
    return f"{value / 2**20:.0f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--small", type=int, default=10_000, help="entries (default 10,000)")
    parser.add_argument("--large", type=int, default=100_000, help="entries (default 100,000)")
    parser.add_argument(
        "--bare", action="store_true", help="also --no-scorecard on --large entries"
    )
    parser.add_argument(
        "--jsonl", action="store_true", help="give evaltrace test the dataset as JSONL"
    )
    options = parser.parse_args()
    if options.repeat < 1 or options.small < 1 or options.large < 1:
        parser.error("--repeat, --small and --large must be whole numbers >= 1")
    memory: list[float] = []
    wall: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        small_folder, large_folder = Path(scratch, "small"), Path(scratch, "large")
        small_folder.mkdir()
        large_folder.mkdir()
        small = write_dataset(small_folder, options.small)
        large = write_dataset(large_folder, options.large)
        tested_small = as_jsonl(small) if options.jsonl else small
        tested_large = as_jsonl(large) if options.jsonl else large
        print(f"dataset form given to evaltrace test: {tested_small.suffix}", flush=True)
        for repetition in range(1, options.repeat + 1):
            test_small = evaltrace_test(tested_small)
            test_large = evaltrace_test(tested_large)
            bare_small = evaltrace_test(tested_small, "--no-scorecard")
            bare_large = evaltrace_test(tested_large, "--no-scorecard") if options.bare else None
            api = evaluate_inputs_process(small)
            memory.append(test_large.peak_rss / test_small.peak_rss)
            wall.append(test_small.wall_s / api.wall_s)
            cpu.append(test_small.cpu_s / api.cpu_s)
            bare = "" if bare_large is None else f" ({mib(bare_large.peak_rss)} --no-scorecard)"
            print(
                f"#{repetition}: evaltrace test peak RSS {options.small:,} entries "
                f"{mib(test_small.peak_rss)} ({mib(bare_small.peak_rss)} --no-scorecard), "
                f"{options.large:,} entries {mib(test_large.peak_rss)}{bare}: "
                f"{memory[-1]:.2f}x; {options.small:,} entries: evaltrace test "
                f"{test_small.wall_s:.1f} s wall, {test_small.cpu_s:.1f} s CPU "
                f"(--no-scorecard {bare_small.wall_s:.1f} s, {bare_small.cpu_s:.1f} s), "
                f"evaluate_inputs process {api.wall_s:.1f} s, {api.cpu_s:.1f} s "
                f"(peak {mib(api.peak_rss)}): wall {wall[-1]:.2f}x, CPU {cpu[-1]:.2f}x",
                flush=True,
            )
    memory_ok = max(memory) <= GOAL_MEMORY
    wall_ok = sorted(wall)[len(wall) // 2] <= GOAL_WALL
    print(
        f"evaltrace test peak RSS, {options.large:,} vs {options.small:,} entries, with the "
        f"scorecard: {spread(memory)} (goal <= {GOAL_MEMORY}x) "
        f"{'ok' if memory_ok else 'OVER GOAL'}"
    )
    print(
        f"evaltrace test wall vs an evaluate_inputs process, {options.small:,} entries, with "
        f"the scorecard: {spread(wall)} (goal <= {GOAL_WALL}x) {'ok' if wall_ok else 'OVER GOAL'}"
    )
    print(f"the same in CPU seconds: {spread(cpu)}")
    return 0 if memory_ok and wall_ok else 1


if __name__ == "__main__":
    sys.exit(main())
