"""docs/export.md runs as written, and the README's Configuration table lists every variable."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "evaltrace"
VARIABLE = re.compile(r"^(EVALTRACE|OTEL|OPENAI)_[A-Z_]+$")


def test_the_export_guide_python_examples_run_in_order(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "export.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 5
    result = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "ExportStats(exported=0, failed=1, dropped=0, queued=0, exporting=0)" in result.stdout
    assert 'greet {"name":"Ada"} evaltrace-app' in result.stdout
    assert "['SUCCESS', 'SUCCESS', 'FAILED_SCORE_ZERO']" in result.stdout
    assert "production.jsonl, line 4" in result.stdout
    assert "gen_ai.evaluation.result pass" in result.stdout


def variables_read_by_the_package() -> set[str]:
    """Every environment variable name that appears as a string in the package's code."""
    import opentelemetry.sdk.environment_variables as sdk_names

    names = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if VARIABLE.match(node.value):
                    names.add(node.value)
            elif isinstance(node, ast.ImportFrom) and node.module == sdk_names.__name__:
                names.update(alias.name for alias in node.names if VARIABLE.match(alias.name))
    return names


def test_the_readme_configuration_table_lists_every_variable_evaltrace_reads() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`((?:EVALTRACE|OTEL|OPENAI)_[A-Z_]+)`", section))
    read = variables_read_by_the_package()
    assert "OTEL_EXPORTER_OTLP_TRACES_HEADERS" in read  # the scan sees the SDK's names too
    assert sorted(read - listed) == []
