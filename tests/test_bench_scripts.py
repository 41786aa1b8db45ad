"""Every benchmark script answers ``--help`` with what it measures, and refuses a bad option."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[script.stem for script in SCRIPTS])
def test_a_bench_script_prints_its_help_and_refuses_a_bad_option(script: Path) -> None:
    helped = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    refused = subprocess.run(
        [sys.executable, str(script), "--no-such-option"],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: ") and len(helped.stdout.splitlines()) > 2
    assert refused.returncode == 2 and "--no-such-option" in refused.stderr
    assert "Traceback" not in refused.stderr
