#!/usr/bin/env python3
"""Project tasks: ``python3 dev.py demo`` runs the demo, ``python3 dev.py test`` the checks.

Both create (or refresh) the local virtual environment ``.venv`` first, so a fresh machine
needs nothing but Python 3.11+.
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


def _run(*cmd: str | os.PathLike[str]) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def ensure_venv() -> None:
    """Create ``.venv`` and install the project with its dev extra when pyproject changed."""
    if not PY.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    pip = (PY, "-m", "pip", "install", "--disable-pip-version-check", "-q")
    if _run(*pip, "-U", "pip") != 0 or _run(*pip, "-e", ".[dev]") != 0:
        sys.exit("dev.py: installing the project into .venv failed (see pip's output above)")
    STAMP.write_text(wanted)


def demo(args: list[str]) -> int:
    """Run the demo on the bundled examples."""
    return _run(PY, "-m", "evaltrace.demo", *args)


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


TASKS = {"demo": demo, "test": test}


def main() -> int:
    """Dispatch ``dev.py TASK [ARGS...]``."""
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS:
        print(f"usage: python3 dev.py {{{','.join(TASKS)}}} [args...]", file=sys.stderr)
        return 2
    ensure_venv()
    return TASKS[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
