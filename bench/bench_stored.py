"""evaluate_traces over a JSONL file of 10⁶ spans vs json.loads of its lines; peak memory.

Run: ``.venv-bench/bin/python bench/bench_stored.py [SPANS] [--rounds N] [--before SRC]``.
A file of SPANS spans (1,000,000 by default) in evaltrace's JSONL format, traces of 10 spans
each (an agent root with its input, output and a ``wrap`` output event, and nine tool or model
spans with inputs and outputs), is written to a temporary folder. Then, each in a fresh
interpreter, in alternation, best of ``--rounds`` (3), each round's ratio printed too:

* ours: ``evaluate_traces(path, [one pure evaluator])`` (the default ``root`` selector), which
  reads the file trace by trace, builds each trace tree, scores it and keeps its entry;
* baseline: ``json.loads`` of every line of the file, read line by line;
* with ``--before SRC`` (the ``src`` folder of another checkout, such as ``git worktree add
  /tmp/old main``), that checkout's ``evaluate_traces`` as a third side.

Each interpreter prints its wall time, its CPU time and its peak resident memory
(``ru_maxrss``); the peak of an interpreter that only imports evaltrace is printed too, to tell
what the run adds. On a loaded machine the CPU ratio moves less than the wall ratio.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive

SPANS = 1_000_000
ROUNDS = 3
PER_TRACE = 10
GOAL = 3.0

OURS = """
import resource, sys, time
import evaltrace
from evaltrace import evaluate_traces

def says_paris(evaluable):
    return 1.0 if "Paris" in str(evaluable.output_value("answer")) else 0.0

started, cpu = time.perf_counter(), time.process_time()
result = evaltrace.run(evaluate_traces(sys.argv[1], [says_paris]))
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
assert len(result.entries) == int(sys.argv[2]), len(result.entries)
assert all(entry.evaluations[0].score == 1.0 for entry in result.entries)
print(elapsed, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

BASELINE = """
import json, resource, sys, time
import evaltrace

started, cpu = time.perf_counter(), time.process_time()
count = 0
with open(sys.argv[1], "rb") as file:
    for line in file:
        json.loads(line)
        count += 1
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
assert count == int(sys.argv[2]) * 10
print(elapsed, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

IMPORT_ONLY = """
import resource
import evaltrace, evaltrace.evals
print(0.0, 0.0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def write_file(path: Path, traces: int) -> None:
    t0 = 1_733_400_000_000_000_000
    with open(path, "w", encoding="utf-8") as file:
        for number in range(traces):
            trace_id = f"{number + 1:032x}"
            root = f"{number + 1:016x}"
            start = t0 + number * 1_000_000
            lines = []
            for child in range(1, PER_TRACE):
                kind = "TOOL" if child % 2 else "LLM"
                lines.append(
                    {
                        "trace_id": trace_id,
                        "span_id": f"{child:08x}{number + 1:08x}",
                        "parent_span_id": root,
                        "name": f"step{child}",
                        "kind": "INTERNAL",
                        "start_time_ns": start + child * 1000,
                        "end_time_ns": start + child * 1000 + 500,
                        "status": {"code": "OK", "description": None},
                        "attributes": {
                            "openinference.span.kind": kind,
                            "input.value": json.dumps({"query": f"step {child} of run {number}"}),
                            "input.mime_type": "application/json",
                            "output.value": json.dumps(f"result {child} of run {number}"),
                            "output.mime_type": "application/json",
                        },
                        "events": [],
                        "resource": {"service.name": "bench"},
                    }
                )
            lines.append(
                {
                    "trace_id": trace_id,
                    "span_id": root,
                    "parent_span_id": None,
                    "name": "answer",
                    "kind": "INTERNAL",
                    "start_time_ns": start,
                    "end_time_ns": start + 900_000,
                    "status": {"code": "OK", "description": None},
                    "attributes": {
                        "openinference.span.kind": "AGENT",
                        "input.value": json.dumps({"question": "What is the capital of France?"}),
                        "input.mime_type": "application/json",
                        "output.value": json.dumps("Paris is the capital of France."),
                        "output.mime_type": "application/json",
                    },
                    "events": [
                        {
                            "name": "evaltrace.wrap",
                            "timestamp_ns": start + 800_000,
                            "attributes": {
                                "evaltrace.wrap.name": "answer",
                                "evaltrace.wrap.purpose": "output",
                                "evaltrace.wrap.value": json.dumps(
                                    "Paris is the capital of France."
                                ),
                            },
                        }
                    ],
                    "resource": {"service.name": "bench"},
                }
            )
            file.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def measure(
    code: str, path: Path, traces: int, source: str | None = None
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak resident bytes of ``code`` in a fresh interpreter.

    ``source``: a ``src`` folder of another checkout of evaltrace to run instead of this one.
    """
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(path), str(traces)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    seconds, cpu, peak = result.stdout.split()
    return float(seconds), float(cpu), int(peak)


def spread(ratios: list[float]) -> str:
    return (
        f"min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, "
        f"max {max(ratios):.2f}x over {len(ratios)} rounds"
    )


def main(rounds: int, before: str | None) -> int:
    traces = SPANS // PER_TRACE
    with tempfile.TemporaryDirectory(prefix="evaltrace-bench-") as folder:
        path = Path(folder) / "spans.jsonl"
        write_file(path, traces)
        size = os.path.getsize(path)
        print(f"{traces * PER_TRACE:,} spans in {traces:,} traces, {size / 1e6:,.0f} MB")
        times: dict[str, list[float]] = {"ours": [], "before": [], "json": []}
        cpus: dict[str, list[float]] = {"ours": [], "before": [], "json": []}
        peaks = {"ours": 0, "before": 0, "json": 0}
        for number in range(1, rounds + 1):  # in alternation, so that load hits every side
            sides = [("ours", OURS, None), ("json", BASELINE, None)]
            if before is not None:
                sides.insert(1, ("before", OURS, before))
            for side, code, source in sides:
                seconds, cpu, peak = measure(code, path, traces, source)
                times[side].append(seconds)
                cpus[side].append(cpu)
                peaks[side] = max(peaks[side], peak)
            shown = ", ".join(
                f"{side} {t[-1]:.2f} s (CPU {cpus[side][-1]:.2f} s)"
                for side, t in times.items()
                if t
            )
            print(f"round {number}: {shown}", flush=True)
        _, _, imported = measure(IMPORT_ONLY, path, traces)
    ours, baseline = min(times["ours"]), min(times["json"])
    ratio = ours / baseline
    print(
        f"evaluate_traces {ours:.2f} s ({traces * PER_TRACE / ours:,.0f} spans/s) vs json.loads "
        f"of the lines {baseline:.2f} s: {ratio:.2f}x (goal <= {GOAL}x) "
        f"{'ok' if ratio <= GOAL else 'OVER GOAL'}; each round: "
        + spread([o / j for o, j in zip(times["ours"], times["json"], strict=True)])
    )
    print(
        f"process CPU of the same runs, evaluate_traces vs json.loads, best of each: "
        f"{min(cpus['ours']) / min(cpus['json']):.2f}x; each round: "
        + spread([o / j for o, j in zip(cpus["ours"], cpus["json"], strict=True)])
    )
    if before is not None:
        print(
            f"the code in {before}: {min(times['before']):.2f} s, "
            f"{min(times['before']) / baseline:.2f}x; each round: "
            + spread([b / j for b, j in zip(times["before"], times["json"], strict=True)])
        )
    print(
        f"peak memory: evaluate_traces {peaks['ours'] / 1e6:,.0f} MB, json.loads of the lines "
        f"{peaks['json'] / 1e6:,.0f} MB, import only {imported / 1e6:,.0f} MB; "
        f"evaluate_traces adds {(peaks['ours'] - imported) / size:.2f}x the file size"
    )
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    command = parser(__doc__)
    command.add_argument(
        "spans", nargs="?", type=positive, default=SPANS, help="spans in the file (1,000,000)"
    )
    command.add_argument(
        "--rounds", type=positive, default=ROUNDS, help="rounds in alternation (3)"
    )
    command.add_argument(
        "--before",
        metavar="SRC",
        help="the src folder of another checkout (e.g. the code before a change), run as a "
        "third side in the same alternation",
    )
    arguments = command.parse_args()
    SPANS = arguments.spans
    sys.exit(main(arguments.rounds, arguments.before))
