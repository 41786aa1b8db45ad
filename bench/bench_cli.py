"""Whole processes, as users run them: `evaltrace test` on a dataset and on a stored trace file.

Run: ``.venv-bench/bin/python bench/bench_cli.py [ENTRIES]`` (or ``python3 dev.py bench cli``).
Each side is a fresh process, timed from its start to its exit (wall time), with its peak
resident memory (``VmHWM`` of ``/proc/self/status``, read as the process exits by a
``sitecustomize`` hook on its path: ``ru_maxrss`` would count the memory of the benchmark
itself, which the child inherits at ``fork``). Both sides read bytecode from one private
cache, filled by a first run that is not timed, as an installed wheel does (this checkout's
environment sets ``PYTHONDONTWRITEBYTECODE``). The two sides alternate, ``--rounds`` times (3):
the best time of each, each round's ratio (min, median, max), the largest peak of each.

* ``evaltrace test DATASET`` over the dataset of ``bench_dataset_run.py`` (ENTRIES entries,
  10,000 by default: a no-I/O async app, three async evaluators), writing its results folder,
  scorecard and report, vs a fresh interpreter that imports evaltrace and runs
  ``evaluate_inputs`` on the same entries (no file, no folder, no report).
* ``evaltrace test --traces FILE --evaluator checks.py:says_paris`` over a JSON-lines file
  of ENTRIES traces of 10 spans (``bench_stored.py``'s), vs a fresh interpreter reading the
  file with ``json.loads``, line by line.
* For context: the start-up of ``evaltrace --help`` and of ``python -c "import evaltrace"``.

Goal: ``evaltrace test DATASET`` at most 1.3x ``evaluate_inputs``, best time against best time
(the script exits 1 when it is missed); the other figures are context.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive
from bench_dataset_run import write_dataset
from bench_stored import write_file

ROUNDS = 3
ENTRIES = 10_000
EVALTRACE = Path(sys.executable).parent / "evaltrace"

SAYS_PARIS = """\
def says_paris(evaluable):
    return 1.0 if "Paris" in str(evaluable.output_value("answer")) else 0.0
"""

EVALUATE_INPUTS = """\
import sys
import anyio
sys.path.insert(0, ".")
import app, checks
from evaltrace import evaluate_inputs
from evaltrace.datasets import load_dataset

dataset = load_dataset(sys.argv[1])
async def call(arguments):
    return await app.run(**arguments)
results = anyio.run(lambda: evaluate_inputs(
    call,
    [entry.entry_kwargs for entry in dataset.entries],
    [checks.exact, checks.length, checks.mentions_number],
    evaluables=[entry.to_evaluable() for entry in dataset.entries],
    concurrency=8,
    timeout=300.0,
))
assert all(e.score == 1.0 for item in results for e in item.evaluations)
"""

JSON_LINES = """\
import json, sys
with open(sys.argv[1], "rb") as file:
    for line in file:
        json.loads(line)
"""


PEAK_HOOK = """\
import atexit, os

def _peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(os.environ["EVALTRACE_BENCH_PEAK"], "w") as out:
                    out.write(line.split()[1])

atexit.register(_peak)
"""
"""Written as ``sitecustomize.py``: the peak resident memory of the process, in kB, at exit."""


def environment(folder: Path) -> dict[str, str]:
    """The children's environment: bytecode cached privately, the peak hook on the path."""
    hook = folder / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(PEAK_HOOK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), env.get("PYTHONPATH")]))
    env["EVALTRACE_BENCH_PEAK"] = str(folder / "peak")
    return env


def measure(command: list[str], folder: Path, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds from start to exit, and the peak resident bytes, of one process."""
    started = time.perf_counter()
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(
            f"bench_cli.py: {' '.join(command)} exited {result.returncode}:\n"
            + result.stderr.decode(errors="replace")[-2000:]
        )
    return elapsed, int((folder / "peak").read_text()) * 1024


def compare(
    label: str, ours: list[str], baseline: list[str], folder: Path, goal: float | None = None
) -> bool:
    """Both sides in alternation: best wall time of each, and the largest peak of each.

    Returns whether the ratio of the best times meets ``goal`` (true when there is none).
    """
    env = environment(folder)
    measure(ours, folder, env)  # fills the bytecode cache
    measure(baseline, folder, env)
    ours_s = base_s = float("inf")
    ours_peak = base_peak = 0
    ratios = []
    for _ in range(ROUNDS):
        ours_round, peak = measure(ours, folder, env)
        ours_s, ours_peak = min(ours_s, ours_round), max(ours_peak, peak)
        base_round, peak = measure(baseline, folder, env)
        base_s, base_peak = min(base_s, base_round), max(base_peak, peak)
        ratios.append(ours_round / base_round)
    ratio = ours_s / base_s
    verdict = "" if goal is None else f" (goal <= {goal}x) {'ok' if ratio <= goal else 'OVER GOAL'}"
    print(
        f"{label}: {ours_s:.2f} s vs {base_s:.2f} s, ratio {ratio:.2f}x{verdict}; each round: "
        f"min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, "
        f"max {max(ratios):.2f}x; peak memory {ours_peak / 1e6:,.0f} MB vs "
        f"{base_peak / 1e6:,.0f} MB, ratio {ours_peak / base_peak:.2f}x",
        flush=True,
    )
    return goal is None or ratio <= goal


def main() -> int:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="evaltrace-bench-") as scratch:
        folder = Path(scratch)
        dataset = write_dataset(folder, ENTRIES)
        (folder / "inputs.py").write_text(EVALUATE_INPUTS)
        (folder / "says.py").write_text(SAYS_PARIS)
        spans = folder / "spans.jsonl"
        write_file(spans, ENTRIES)
        (folder / "lines.py").write_text(JSON_LINES)
        print(
            f"{ENTRIES:,} entries; a trace file of {ENTRIES * 10:,} spans "
            f"({spans.stat().st_size / 1e6:,.0f} MB)",
            flush=True,
        )
        compare(
            "import evaltrace vs a bare interpreter (start-up)",
            [python, "-c", "import evaltrace"],
            [python, "-c", "pass"],
            folder,
        )
        compare(
            "evaltrace --help vs import evaltrace",
            [str(EVALTRACE), "--help"],
            [python, "-c", "import evaltrace"],
            folder,
        )
        ok = compare(
            f"evaltrace test DATASET ({ENTRIES:,} entries x 3 evaluators, folder, scorecard, "
            "report) vs evaluate_inputs in a fresh interpreter",
            [str(EVALTRACE), "test", dataset.name, "--output-dir", "out", "--exit-zero"],
            [python, "inputs.py", dataset.name],
            folder,
            goal=1.3,
        )
        compare(
            f"evaltrace test --traces FILE ({ENTRIES:,} traces of 10 spans, one sync "
            "evaluator) vs json.loads of its lines in a fresh interpreter",
            [
                str(EVALTRACE),
                "test",
                "--traces",
                spans.name,
                "--evaluator",
                "says.py:says_paris",
                "--output-dir",
                "out",
                "--exit-zero",
            ],
            [python, "lines.py", spans.name],
            folder,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    command = parser(__doc__)
    command.add_argument(
        "entries", nargs="?", type=positive, default=ENTRIES, help="entries (10,000)"
    )
    command.add_argument(
        "--rounds", type=positive, default=ROUNDS, help="rounds in alternation (3)"
    )
    arguments = command.parse_args()
    ENTRIES, ROUNDS = arguments.entries, arguments.rounds
    sys.exit(main())
