"""Where evaluate_traces spends its own time on bench_stored.py's file, phase by phase.

Run: ``.venv-bench/bin/python bench/stored_phases.py [--rounds N] [--before SRC]``.
Writes bench_stored.py's file of 10,000 traces of 10 spans to a temporary folder, then, in a
fresh interpreter per side and round (sides in alternation), times each phase alone over
2,000 traces, median of 5, in µs a trace of process CPU: ``json.loads`` of the lines, the
first pass of ``read_traces``, reading a trace into its tree and views, the ``root``
selector, counting the model calls (``app_model_usage``), and freeing the trace; then the
five phases together, and that sum over ``json.loads`` of the same process (which moves less
with the machine's load than the µs do). With ``--before SRC`` (the ``src`` folder of
another checkout) that checkout is measured too.
Not a goal's figure (bench_stored.py gives that): it says which phase a change moved.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive
from bench_stored import write_file

TRACES = 10_000
MEASURED = 2_000

PHASES = """
import gc, json, sys, time
from evaltrace.evals.selectors import root
from evaltrace.llm.calls import app_model_usage
from evaltrace.trace import read_traces
from evaltrace.trace.trace_file import TraceFile

path, count = sys.argv[1], int(sys.argv[2])
traces = read_traces(path)
keys = list(traces._order)[:count]
lines = open(path, "rb").readlines()[: count * 10]
gc.disable()
found = {}

def timed(name, step, per=count):
    started = time.process_time()
    out = step()
    found.setdefault(name, []).append((time.process_time() - started) / per * 1e6)
    return out

with open(path, "rb") as file:
    for _ in range(5):
        timed("json.loads", lambda: [json.loads(line) for line in lines])
        timed("first pass", lambda: TraceFile(path), per=len(traces))
        kept = timed("read a trace", lambda: [traces._trace(file, key) for key in keys])
        roots = [stored.roots for stored in kept]
        timed("root", lambda: [root(one) for one in roots])
        timed("count model calls", lambda: [app_model_usage(one) for one in roots])
        del roots
        timed("free", kept.clear)
        del kept
        gc.collect()
medians = {name: sorted(values)[2] for name, values in found.items()}
ours = sum(value for name, value in medians.items() if name != "json.loads")
print(
    " ".join(f"{name}={value:.1f}" for name, value in medians.items())
    + f" | the five phases {ours:.1f}, {ours / medians['json.loads']:.2f}x json.loads"
)
"""


def main(rounds: int, before: str | None) -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spans.jsonl"
        write_file(path, TRACES)
        sides = [("this checkout", None)] + ([("before", before)] if before else [])
        for number in range(1, rounds + 1):
            for label, source in sides:
                env = dict(os.environ)
                if source is not None:
                    env["PYTHONPATH"] = source
                done = subprocess.run(
                    [sys.executable, "-c", PHASES, str(path), str(MEASURED)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    print(done.stderr, file=sys.stderr)
                    return 1
                print(f"round {number}, {label}: {done.stdout.strip()} (us a trace)", flush=True)
    return 0


if __name__ == "__main__":
    command = parser(__doc__)
    command.add_argument("--rounds", type=positive, default=3, help="rounds of each side (3)")
    command.add_argument("--before", help="the src folder of another checkout, measured too")
    arguments = command.parse_args()
    sys.exit(main(arguments.rounds, arguments.before))
