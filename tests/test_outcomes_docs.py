"""docs/outcomes.md runs as written, and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

from test_scorecard_docs import DOCS, run_markdown_examples


def test_the_outcomes_guide_runs_as_written(tmp_path: Path) -> None:
    lines = run_markdown_examples(DOCS / "outcomes.md", tmp_path)
    guide = (DOCS / "outcomes.md").read_text(encoding="utf-8")
    shown = re.search(r"prints\n\n```text\n(.*?)```", guide, re.S)
    assert shown is not None
    summary = shown.group(1).splitlines()
    start = lines.index(summary[0])
    assert lines[start : start + len(summary)] == summary
    assert (tmp_path / "outcomes.csv").read_text().startswith("task_id,task_type,")
