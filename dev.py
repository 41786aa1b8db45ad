#!/usr/bin/env python3
"""Project tasks: ``python3 dev.py demo`` runs the demo, ``python3 dev.py test`` the checks.

Both create (or refresh) the local virtual environment ``.venv`` first, so a fresh machine
needs nothing but Python 3.11+. ``python3 dev.py bench`` runs the benchmarks in a separate
environment, ``.venv-bench``, which also holds the baselines they compare against
(``python3 dev.py bench --help`` tells how to run one of them).

The demo is ``evaltrace test instrumentation_examples --exit-zero``: every example app's
dataset, offline (each app's model and LLM judge are scripted servers on 127.0.0.1, so no API
key is needed), with the report printed and each run's folder (``result.json``,
``traces.jsonl``, ``scorecard.html``) written under ``evaltrace_results/``. One entry fails on
purpose (``refund-not-received`` of ``instrumentation_examples/intent_classifier``) to show
what a failure looks like; ``--exit-zero`` makes ``evaltrace test`` exit 0 all the same
(without it, a failed entry exits 1). Extra arguments go to ``evaltrace test``
(``python3 dev.py demo -v``). Last, ``evaltrace outcomes`` reads the Mindcraft experiment
shipped in ``instrumentation_examples/multi_agent_task/mindcraft`` as Mindcraft writes it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".evaltrace-installed"
BENCH_VENV = ROOT / ".venv-bench"


def _run(*cmd: str | os.PathLike[str]) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def ensure_venv(where: Path = VENV, *requirements: str) -> Path:
    """Create ``where`` and install the project (and ``requirements``) when their files changed.

    Returns:
        The environment's Python.
    """
    python = where / BIN.name / "python"
    stamp = where / STAMP.name
    if not python.exists():
        print(f"creating virtual environment in {where}", flush=True)
        venv.EnvBuilder(with_pip=True).create(where)
    sources = [ROOT / "pyproject.toml", *(ROOT / r for r in requirements)]
    wanted = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return python
    pip = (python, "-m", "pip", "install", "--disable-pip-version-check", "-q")
    extra = [arg for r in requirements for arg in ("-r", r)]
    if _run(*pip, "-U", "pip") != 0 or _run(*pip, "-e", ".[dev]", *extra) != 0:
        sys.exit(f"dev.py: installing the project into {where.name} failed (see pip's output)")
    stamp.write_text(wanted)
    return python


DEMO_FAILURE = """
One entry failed on purpose: refund-not-received of intent-classifier, a question about a
refund that the model labels order_status (instrumentation_examples/intent_classifier/README.md).
The demo passes --exit-zero, so evaltrace test exited 0 all the same; without it, a failed
entry makes the exit code 1. Each run's folder above holds result.json, traces.jsonl and
scorecard.html: open a scorecard in a browser."""


MINDCRAFT = "instrumentation_examples/multi_agent_task/mindcraft"
DEMO_OUTCOMES = (
    "outcomes",
    f"{MINDCRAFT}/experiments",
    "--tasks",
    f"{MINDCRAFT}/example_tasks.json",
    "--model-from-path",
    "{model}/{task}",
)
"""The demo's last command (after ``evaltrace``): the shipped Mindcraft experiment's outcomes."""

DEMO_OUTCOMES_INTRO = """
Last, evaltrace outcomes reads a Mindcraft experiment as Mindcraft writes it: chat logs of two
agents, two repetitions per task, the model from the folder layout (experiments/<model>/<task>)
and one log cut off mid-write, listed under problems (instrumentation_examples/multi_agent_task/
README.md)."""


def demo(args: list[str]) -> int:
    """Run every example's dataset, then a Mindcraft experiment's outcomes (see the module doc)."""
    code = _run(BIN / "evaltrace", "test", "instrumentation_examples", "--exit-zero", *args)
    if code == 0:
        print(DEMO_FAILURE, flush=True)
        print(DEMO_OUTCOMES_INTRO, flush=True)
        code = _run(BIN / "evaltrace", *DEMO_OUTCOMES)
    return code


def test(args: list[str]) -> int:
    """Run formatting, lint, type checks and the test suite; stop at the first failure."""
    steps = [
        (BIN / "ruff", "format", "--check", "."),
        (BIN / "ruff", "check", "."),
        (BIN / "mypy", "--strict", "src"),
    ]
    for step in steps:
        if _run(*step) != 0:
            return 1
    code = _run(PY, "-m", "pytest", *args)
    if code == 5:
        print("dev.py: pytest collected no tests; that is a failure here", file=sys.stderr)
        return 1
    return code


BENCH_HELP = """\
usage: python3 dev.py bench [SCRIPT [ARGS...]]

Run the benchmarks of bench/ in .venv-bench (made, or refreshed, first: the project and
bench/requirements.txt). Each prints its figures as ratios to a baseline measured in the same
run; the exit code is 1 when a figure misses its goal (bench/README.md lists every figure, its
goal, and the command that reproduces it).

  python3 dev.py bench                every script, one after the other
  python3 dev.py bench SCRIPT [ARGS]  one script (stored, or bench_stored.py), its arguments
                                      passed on: python3 dev.py bench SCRIPT --help tells them
  python3 dev.py bench --help         this help

scripts: {scripts}
"""


def _bench_scripts() -> dict[str, Path]:
    """Each benchmark script by its short name (``stored`` for ``bench_stored.py``)."""
    return {p.stem.removeprefix("bench_"): p for p in sorted((ROOT / "bench").glob("bench_*.py"))}


def bench(args: list[str]) -> int:
    """Run ``bench/bench_*.py`` in ``.venv-bench``; non-zero if a figure misses its goal."""
    scripts = _bench_scripts()
    if args and args[0] in ("-h", "--help", "help"):
        print(BENCH_HELP.format(scripts=", ".join(scripts)), end="")
        return 0
    chosen = list(scripts.values())
    if args:
        name = args[0].removesuffix(".py").removeprefix("bench/").removeprefix("bench_")
        if name not in scripts:
            print(
                f"dev.py bench: no benchmark script {args[0]!r}; the scripts are "
                f"{', '.join(scripts)} (python3 dev.py bench --help)",
                file=sys.stderr,
            )
            return 2
        chosen, args = [scripts[name]], args[1:]
    python = ensure_venv(BENCH_VENV, "bench/requirements.txt")
    failed = [s.name for s in chosen if _run(python, s, *args) != 0]
    if failed:
        print(f"dev.py: over goal or failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


TASKS = {"demo": demo, "test": test, "bench": bench}


def main() -> int:
    """Dispatch ``dev.py TASK [ARGS...]``."""
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS:
        print(f"usage: python3 dev.py {{{','.join(TASKS)}}} [args...]", file=sys.stderr)
        return 2
    task = sys.argv[1]
    if task != "bench":
        ensure_venv()
    return TASKS[task](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
