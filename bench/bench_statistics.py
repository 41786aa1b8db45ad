"""What a run's statistics and a comparison with a baseline cost: 100,000 entries x 3 evaluators.

Run: ``.venv/bin/python bench/bench_statistics.py [ENTRIES]`` (or ``python3 dev.py bench``).

A dataset of N entries (100,000 by default) names a no-I/O async app and three evaluators of
the usual kinds: a pass/fail check (scores 0 or 1), a grade on a five-point scale (0, 0.25,
..., 1), and a judge whose score is continuous (every entry a different number: the costly
case for the bootstrap, which draws every entry of every resample).

1. *Whole run* -- ``run_dataset(..., output_dir=..., keep_entries=False)`` as ``evaltrace
   test`` runs it, with statistics (``resamples=1000``, the default) and without
   (``resamples=0``), in alternation, best of 2 each: the ratio of the process's CPU times
   (and of wall times, printed: on a shared machine they move by 2x between two runs of the
   same code, far more than what is measured).
2. *The statistics alone* -- what they add to such a run, timed apart from the run's noise
   (CPU time): the tally fed N entries' evaluations as they finish plus the statistics
   computed at the end, and ``compare_runs`` of two runs of N entries (what ``--baseline``
   and ``evaltrace diff`` add: pairing, McNemar, Wilcoxon, the paired bootstrap, Holm), over
   the CPU time of the run without statistics. Goal: at most 5%.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report
from evaltrace.datasets import load_dataset, run_dataset
from evaltrace.evals import Evaluation
from evaltrace.results import EntryResult, RunResult, StatisticsTally, compare_runs

GOAL = 1.05
ENTRIES = 100_000  # the first argument sets it

APP = """\
from evaltrace import wrap


async def run(question: str, number: int) -> str:
    return wrap(f"{question.upper()} {number * 2}", purpose="output", name="answer")
"""

CHECKS = """\
import zlib


async def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


async def graded(evaluable):
    return (zlib.crc32(evaluable.output_value("answer").encode()) % 5) / 4


async def judge(evaluable):
    return (zlib.crc32(evaluable.output_value("answer").encode()[::-1]) % 100_003) / 100_002
"""


def write_dataset(folder: Path, entries: int) -> Path:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    document = {
        "name": "bench",
        "runnable": "app.py:run",
        "evaluators": ["checks.py:exact", "checks.py:graded", "checks.py:judge"],
        "entries": [
            {
                "name": f"q{i}",
                "entry_kwargs": {"question": f"question {i}", "number": i},
                "expectation": f"QUESTION {i} {2 * i}" if i % 10 else "wrong",
            }
            for i in range(entries)
        ],
    }
    path = folder / "bench.evaltrace.json"
    path.write_text(json.dumps(document))
    return path


async def timed_run(dataset: object, out: Path, resamples: int) -> tuple[float, float, RunResult]:
    """Wall and CPU seconds of one run, and its result."""
    started, cpu = time.perf_counter(), time.process_time()
    result = await run_dataset(
        dataset,
        output_dir=out,
        keep_entries=False,
        resamples=resamples,  # type: ignore[arg-type]
    )
    return time.perf_counter() - started, time.process_time() - cpu, result


def scores(entries: int, seed: int) -> np.ndarray:
    """Per entry: pass/fail, a grade, a continuous judge score (one run's, from ``seed``)."""
    rng = np.random.default_rng(seed)
    quality = np.random.default_rng(0).random(entries)
    passed = (rng.random(entries) < 0.2 + 0.7 * quality).astype(float)
    grade = np.clip(np.round((quality + rng.normal(0, 0.2, entries)) * 4) / 4, 0, 1)
    judged = np.clip(quality + rng.normal(0, 0.1, entries), 0, 1)
    return np.stack([passed, grade, judged], axis=1)


NAMES = ("exact", "graded", "judge")


def entries_of(table: np.ndarray) -> list[EntryResult]:
    return [
        EntryResult(
            index=i,
            name=f"q{i}",
            evaluations=[
                Evaluation(score=float(score), evaluator=name)
                for name, score in zip(NAMES, row, strict=True)
            ],
        )
        for i, row in enumerate(table)
    ]


def statistics_alone(entries: int) -> tuple[float, float]:
    """Seconds of the run's tally and statistics, and of a comparison, at ``entries``."""
    old_entries = entries_of(scores(entries, 1))
    tally = StatisticsTally(threshold=0.5, evaluators=NAMES)
    started = time.process_time()
    for entry in old_entries:
        tally.add(entry)
    tally.statistics(confidence=0.95, resamples=1000, seed=0)
    run_statistics = time.process_time() - started
    old = RunResult(name="bench", evaluators=list(NAMES), entries=old_entries)
    new = RunResult(name="bench", evaluators=list(NAMES), entries=entries_of(scores(entries, 2)))
    started = time.process_time()
    comparison = compare_runs(old, new)
    compared = time.process_time() - started
    assert comparison.paired == entries
    return run_statistics, compared


def main() -> int:
    print(f"{ENTRIES:,} entries x 3 evaluators (pass/fail, five-point grade, continuous judge)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dataset = load_dataset(write_dataset(folder, ENTRIES))
        with_stats: list[tuple[float, float]] = []
        without: list[tuple[float, float]] = []
        for round_ in range(2):
            wall, cpu, plain = anyio.run(timed_run, dataset, folder / f"plain{round_}", 0)
            without.append((cpu, wall))
            wall, cpu, result = anyio.run(timed_run, dataset, folder / f"stats{round_}", 1000)
            with_stats.append((cpu, wall))
            print(
                f"round {round_ + 1}: without {without[-1][0]:.1f} s CPU ({without[-1][1]:.1f} s "
                f"wall), with {with_stats[-1][0]:.1f} s CPU ({with_stats[-1][1]:.1f} s wall)"
            )
        assert plain.statistics is None and result.statistics is not None
        judge = result.statistics.evaluator("checks.py:judge") or result.statistics.evaluators[2]
        print(f"judge: mean {judge.mean:.4f} {judge.mean_interval} (n={judge.n:,})")
    print(
        f"wall: best with {min(w for _, w in with_stats):.1f} s, best without "
        f"{min(w for _, w in without):.1f} s"
    )
    ok = report(
        f"whole run with statistics vs without (CPU), {ENTRIES:,} entries",
        min(cpu for cpu, _ in with_stats),
        min(cpu for cpu, _ in without),
        "s",
        GOAL,
    )
    tally_seconds, compare_seconds = statistics_alone(ENTRIES)
    run_seconds = min(cpu for cpu, _ in without)
    added = tally_seconds + compare_seconds
    print(
        f"statistics alone: the run's tally and intervals {tally_seconds:.2f} s, a comparison "
        f"with a baseline of {ENTRIES:,} entries {compare_seconds:.2f} s: "
        f"{added / run_seconds:.1%} of the run's {run_seconds:.1f} s (CPU)"
    )
    ok = (
        report("run + statistics + comparison vs run", run_seconds + added, run_seconds, "s", GOAL)
        and ok
    )
    return 0 if ok else 1


if __name__ == "__main__":
    arguments = parser(__doc__)
    arguments.add_argument(
        "entries", nargs="?", type=int, default=ENTRIES, help="entries (100,000)"
    )
    ENTRIES = arguments.parse_args().entries
    sys.exit(main())
