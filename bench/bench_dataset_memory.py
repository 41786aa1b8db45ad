"""Memory of whole ``evaltrace test`` processes over large datasets, JSON against JSONL.

Run: ``.venv-bench/bin/python bench/bench_dataset_memory.py`` (``--help`` for the options).

1. *Peak RSS, JSON vs JSONL* — ``evaltrace test --no-scorecard`` (the console script, a fresh
   process each run, its peak resident memory from ``os.wait4``'s ``ru_maxrss``) over a
   dataset of N small entries (default 100,000; a sync no-I/O app, one sync evaluator) as
   ``faq.evaltrace.json`` and as ``faq.evaltrace.jsonl``.
2. *Peak RSS, 10x the entries* — the same over a JSONL dataset of 10 N entries (default
   1,000,000) vs N. Goal: at most 1.2x.
3. *Loading in process* — ``load_dataset`` of the N-entry JSON file under tracemalloc: the
   memory kept and the peak per entry, beyond what ``json.loads`` of the entries holds.
4. *Filling default names* — the loader fills an omitted description (and name) in place, in
   the entry's ``__dict__``; against ``model_construct`` of each entry, the cost over
   validating the entries.

Each process figure is given as min / median / max of ``--runs`` runs (3 by default).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

APP = """\
from evaltrace import wrap


def answer(question: str) -> str:
    return wrap(question.upper(), purpose="output", name="answer")
"""

CHECKS = """\
from evaltrace import Evaluation


def matches(evaluable):
    return Evaluation(score=float(evaluable.output_value("answer") == evaluable.expectation))
"""

HEADER = {"name": "bench", "runnable": "app.py:answer", "evaluators": ["checks.py:matches"]}
EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))


def entry(number: int) -> dict[str, object]:
    question = f"question {number}"
    return {
        "name": f"e{number}",
        "entry_kwargs": {"question": question},
        "expectation": question.upper(),
    }


def write_datasets(folder: Path, small: int, large: int) -> dict[str, Path]:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    paths = {
        "json": folder / "small.evaltrace.json",
        "jsonl": folder / "small.evaltrace.jsonl",
        "large": folder / "large.evaltrace.jsonl",
    }
    paths["json"].write_text(json.dumps({**HEADER, "entries": [entry(i) for i in range(small)]}))
    for key, count in (("jsonl", small), ("large", large)):
        if count:
            with paths[key].open("w") as stream:
                stream.write(json.dumps(HEADER) + "\n")
                for number in range(count):
                    stream.write(json.dumps(entry(number)) + "\n")
    return paths


# A forked child starts with its parent's peak RSS (Linux keeps the high-water mark across
# fork and exec): this small launcher forks the command, so the floor is its own few MiB,
# not this process's, and prints the command's ru_maxrss (KiB) on its last line.
LAUNCHER = """\
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
print("pid", pid, file=sys.stderr, flush=True)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, file=sys.stderr)
"""


def peak_rss(folder: Path, dataset: Path, sample: float = 0.0) -> tuple[float, float]:
    """Peak resident MiB and wall seconds of one ``evaltrace test --no-scorecard`` process.

    With ``sample`` (seconds), its high-water mark so far (``VmHWM``) and its last progress
    line are printed that often while it runs: a partial figure for a run cut short.
    """
    started = time.perf_counter()
    launched = subprocess.Popen(
        [
            sys.executable,
            "-c",
            LAUNCHER,
            EVALTRACE,
            "test",
            "--no-scorecard",
            "--output-dir",
            str(folder / "runs"),
            str(dataset),
        ],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CI": "1"},
    )
    assert launched.stderr is not None
    lines: list[str] = []
    if sample:
        threading.Thread(target=_report, args=(launched, lines, sample), daemon=True).start()
    lines.extend(launched.stderr)  # drained while it runs: progress lines fill the pipe
    launched.wait()
    wall = time.perf_counter() - started
    *error, last = "".join(lines).rstrip("\n").split("\n")
    code, peak = (int(word) for word in last.split())
    if code != 0:
        raise SystemExit(f"evaltrace test {dataset.name} exited {code}: {chr(10).join(error)}")
    return peak / 1024, wall  # ru_maxrss is in KiB on Linux


def _report(launched: subprocess.Popen[str], lines: list[str], every: float) -> None:
    """Print the process's high-water mark so far and its last progress line, every so often."""
    started = time.perf_counter()
    while launched.poll() is None:
        time.sleep(every)
        pid = next((line.split()[1] for line in lines if line.startswith("pid ")), None)
        try:
            with open(f"/proc/{pid}/status") as status:
                peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
        except (OSError, StopIteration):
            continue  # not started yet, or ended
        last = lines[-1].strip() if lines else ""
        print(
            f"    {time.perf_counter() - started:,.0f} s: VmHWM {int(peak) / 1024:.1f} MiB "
            f"({last})",
            flush=True,
        )


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"


def measure(folder: Path, dataset: Path, runs: int, label: str, sample: float = 0.0) -> list[float]:
    peaks, walls = [], []
    for _ in range(runs):
        peak, wall = peak_rss(folder, dataset, sample)
        peaks.append(peak)
        walls.append(wall)
        print(f"  {label}: {peak:.1f} MiB peak RSS, {wall:.1f} s", flush=True)
    print(f"{label}: peak RSS MiB min/median/max {spread(peaks)}; wall s {spread(walls)}")
    return peaks


def loading_in_process(path: Path, count: int) -> None:
    from evaltrace.datasets import load_dataset

    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    raw = json.loads(path.read_text())["entries"]
    data = tracemalloc.get_traced_memory()[0] - base
    del raw
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    dataset = load_dataset(path)
    kept, peak = (size - base for size in tracemalloc.get_traced_memory())
    tracemalloc.stop()
    assert len(dataset.entries) == count
    print(
        f"load_dataset of {count:,} JSON entries: kept {kept / count:,.0f} B/entry, peak "
        f"{peak / count:,.0f} B/entry; json.loads of the entries alone holds "
        f"{data / count:,.0f} B/entry: beyond it, kept {(kept - data) / count:,.0f} B, peak "
        f"{(peak - data) / count:,.0f} B (goal <= 1,024 B)"
    )


def filling_names(count: int) -> None:
    from evaltrace.datasets import DatasetEntry

    items = [entry(number) for number in range(count)]
    started = time.perf_counter()
    entries = [DatasetEntry.model_validate(item) for item in items]
    validating = time.perf_counter() - started
    started = time.perf_counter()
    for one in entries:
        one.__dict__.update(description=one.name)
    in_place = time.perf_counter() - started
    started = time.perf_counter()
    for one in entries:
        DatasetEntry.model_construct(
            _fields_set=set(one.model_fields_set), **{**one.__dict__, "description": one.name}
        )
    constructed = time.perf_counter() - started
    print(
        f"filling {count:,} descriptions: in place {in_place * 1e3:,.0f} ms, model_construct "
        f"{constructed * 1e3:,.0f} ms, validating the entries {validating * 1e3:,.0f} ms "
        f"(model_construct adds {constructed / validating:.2f}x the validation)"
    )


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=positive, default=100_000, help="N (default 100,000)")
    parser.add_argument(
        "--large", type=positive, default=None, help="the large JSONL dataset (default 10 N)"
    )
    parser.add_argument("--runs", type=positive, default=3, help="processes per figure (3)")
    parser.add_argument("--skip-large", action="store_true", help="skip figure 2")
    parser.add_argument(
        "--skip-json", action="store_true", help="skip the JSON side of figure 1, and 3-4"
    )
    parser.add_argument(
        "--sample",
        type=positive,
        default=0,
        metavar="SECONDS",
        help="print each large run's peak so far (VmHWM) this often: a partial figure",
    )
    args = parser.parse_args(argv)
    small = args.entries
    large = 0 if args.skip_large else args.large or 10 * small
    goal_met = True
    with tempfile.TemporaryDirectory(prefix="bench-dataset-memory-") as name:
        folder = Path(name)
        paths = write_datasets(folder, small, large)
        if not args.skip_json:
            loading_in_process(paths["json"], small)
            filling_names(small)
            as_json = measure(folder, paths["json"], args.runs, f"{small:,} entries, JSON")
        as_jsonl = measure(folder, paths["jsonl"], args.runs, f"{small:,} entries, JSONL")
        if not args.skip_json:
            ratio = statistics.median(as_jsonl) / statistics.median(as_json)
            print(f"JSONL vs JSON, {small:,} entries, median peak RSS: {ratio:.2f}x")
        if large:
            label = f"{large:,} entries, JSONL"
            big = measure(folder, paths["large"], args.runs, label, args.sample)
            ratio = statistics.median(big) / statistics.median(as_jsonl)
            goal_met = ratio <= 1.2
            print(
                f"JSONL {large:,} vs {small:,} entries, median peak RSS: {ratio:.2f}x "
                f"(goal <= 1.2x) {'ok' if goal_met else 'OVER GOAL'}"
            )
    return 0 if goal_met else 1


if __name__ == "__main__":
    sys.exit(main())
