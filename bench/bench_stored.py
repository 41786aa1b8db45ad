"""evaluate_traces over a JSONL file of 10⁶ spans vs json.loads of its lines; peak memory.

A file of ``SPANS`` spans (first argument; 1,000,000 by default) in evaltrace's JSONL format,
traces of 10 spans each (an agent root with its input, output and a ``wrap`` output event, and
nine tool or model spans with inputs and outputs), is written to a temporary folder. Then, each
in a fresh interpreter, in alternation, best of ``ROUNDS``:

* ours: ``evaluate_traces(path, [one pure evaluator])`` (the default ``root`` selector), which
  reads the file trace by trace, builds each trace tree, scores it and keeps its entry;
* baseline: ``json.loads`` of every line of the file, read line by line.

Each interpreter prints its wall time and its peak resident memory (``ru_maxrss``); the peak
of an interpreter that only imports evaltrace is printed too, to tell what the run adds.
"""

from __future__ import annotations

import json
import os
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

started = time.perf_counter()
result = evaltrace.run(evaluate_traces(sys.argv[1], [says_paris]))
elapsed = time.perf_counter() - started
assert len(result.entries) == int(sys.argv[2]), len(result.entries)
assert all(entry.evaluations[0].score == 1.0 for entry in result.entries)
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

BASELINE = """
import json, resource, sys, time
import evaltrace

started = time.perf_counter()
count = 0
with open(sys.argv[1], "rb") as file:
    for line in file:
        json.loads(line)
        count += 1
elapsed = time.perf_counter() - started
assert count == int(sys.argv[2]) * 10
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""

IMPORT_ONLY = """
import resource
import evaltrace, evaltrace.evals
print(0.0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
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


def measure(code: str, path: Path, traces: int) -> tuple[float, int]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(path), str(traces)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, peak = result.stdout.split()
    return float(seconds), int(peak)


def main() -> int:
    traces = SPANS // PER_TRACE
    with tempfile.TemporaryDirectory(prefix="evaltrace-bench-") as folder:
        path = Path(folder) / "spans.jsonl"
        write_file(path, traces)
        size = os.path.getsize(path)
        print(f"{traces * PER_TRACE:,} spans in {traces:,} traces, {size / 1e6:,.0f} MB")
        ours = baseline = float("inf")
        ours_peak = baseline_peak = 0
        for _ in range(ROUNDS):
            seconds, peak = measure(OURS, path, traces)
            ours, ours_peak = min(ours, seconds), max(ours_peak, peak)
            seconds, peak = measure(BASELINE, path, traces)
            baseline, baseline_peak = min(baseline, seconds), max(baseline_peak, peak)
        _, imported = measure(IMPORT_ONLY, path, traces)
    ratio = ours / baseline
    print(
        f"evaluate_traces {ours:.2f} s ({traces * PER_TRACE / ours:,.0f} spans/s) vs json.loads "
        f"of the lines {baseline:.2f} s: {ratio:.2f}x (goal <= {GOAL}x) "
        f"{'ok' if ratio <= GOAL else 'OVER GOAL'}"
    )
    print(
        f"peak memory: evaluate_traces {ours_peak / 1e6:,.0f} MB, json.loads of the lines "
        f"{baseline_peak / 1e6:,.0f} MB, import only {imported / 1e6:,.0f} MB; "
        f"evaluate_traces adds {(ours_peak - imported) / size:.2f}x the file size"
    )
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    command = parser(__doc__)
    command.add_argument(
        "spans", nargs="?", type=positive, default=SPANS, help="spans in the file (1,000,000)"
    )
    SPANS = command.parse_args().spans
    sys.exit(main())
