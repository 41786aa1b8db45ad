"""Shared helpers of the benchmarks: the command line, timing with repeats, a ratio line."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def best_per_call(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    """Best-of-``repeat`` seconds per call of ``fn`` over ``number`` calls (noisy machine)."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - started) / number)
    return min(samples)


def interleaved_best(
    ours: Callable[[], object], baseline: Callable[[], object], number: int, repeat: int = 9
) -> tuple[float, float]:
    """Best seconds per call of each side, timing them in alternation so noise hits both."""
    best_ours = best_base = float("inf")
    for _ in range(repeat):
        best_ours = min(best_ours, best_per_call(ours, number, repeat=1))
        best_base = min(best_base, best_per_call(baseline, number, repeat=1))
    return best_ours, best_base


def median(values: list[float]) -> float:
    return statistics.median(values)


def report(label: str, ours: float, baseline: float, unit: str, goal: float) -> bool:
    """Print one line: both figures, the ratio and whether it meets the goal."""
    ratio = ours / baseline
    verdict = "ok" if ratio <= goal else "OVER GOAL"
    print(
        f"{label:<58} ours {ours:>10.3f} {unit:<5} baseline {baseline:>10.3f} {unit:<5} "
        f"ratio {ratio:5.2f}x (goal <= {goal}x) {verdict}",
        flush=True,
    )
    return ratio <= goal


def positive(text: str) -> int:
    """A whole number of 1 or more, for ``argparse`` (which says what was wrong)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The script's command line: ``--help`` prints its docstring, what it measures.

    A bad argument is refused with a message naming it and the exit code 2 (argparse's),
    never a traceback.
    """
    text = (doc or "").strip()
    return argparse.ArgumentParser(
        description=text.split("\n", 1)[0],
        epilog=text.split("\n", 1)[1].strip() if "\n" in text else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
