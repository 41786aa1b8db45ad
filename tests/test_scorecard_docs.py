"""docs/scorecard.md runs as written, and prints what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def run_markdown_examples(path: Path, cwd: Path) -> list[str]:
    """Run the Python blocks of ``path`` in order, in one process, in ``cwd``; return its lines.

    The lines printed include, in order, the ``text`` of each ``print(...)  # text`` line.
    """
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    assert blocks, f"{path.name} has no Python example"
    code = "\n".join(blocks)
    expected = re.findall(r"^print\(.*\)  # (.*)$", code, re.M)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    printed = iter(lines)
    missing = [line for line in expected if line not in printed]  # in order: iter is consumed
    assert missing == [], lines
    return lines


def test_the_scorecard_guide_runs_as_written(tmp_path: Path) -> None:
    run_markdown_examples(DOCS / "scorecard.md", tmp_path)
    assert (tmp_path / "scorecard.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
