"""The package flows one way: each module imports only from the floors below it.

The floors are named in docs/architecture.md. Imports are read with ``ast`` from the source,
function-local ones and ``TYPE_CHECKING`` ones included, so a cycle cannot hide in a function.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "evaltrace"

FLOORS: dict[str, float] = {
    "_safe_text": 0,
    "errors": 0.5,
    "checks": 0.5,
    "version": 0.5,
    "constants": 0.5,
    "concurrency": 0.6,
    "statistics": 0.6,
    "capture": 1,
    "trace": 2,
    "evals": 3,
    "llm": 4,
    "judges": 5,
    "metrics": 5,
    "results": 6,
    "engine": 6.5,
    "datasets": 7,
    "pipeline": 8,
    "serve": 8.5,
    "testing": 9,
    "demo": 9,
    "cli": 10,
    "__main__": 11,
}
TOP: float = 10
"""The floor of the package root: ``from evaltrace import ...`` inside it imports from here."""
"""Each top-level module or subpackage of ``evaltrace`` and its floor (the base is below 1).

Parts on one floor (``judges`` and ``metrics``) may not import each other."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str | None:
    """The top-level part of ``evaltrace`` that ``module`` belongs to (``""``: the root)."""
    pieces = module.split(".")
    if pieces[0] != "evaltrace":
        return None
    return pieces[1] if len(pieces) > 1 else ""


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, a relative one resolved against ``path``."""
    if not node.level:
        return node.module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import in ``path``, relative ones made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            names = [alias.name for alias in node.names]
            if module == "evaltrace" or (node.level and not node.module):
                # ``from evaltrace import x`` and ``from . import x`` may name submodules
                for name in names:
                    submodule = f"{module}.{name}"
                    known = (
                        _part(submodule) in FLOORS
                        or (PACKAGE.parent / Path(*submodule.split(".")))
                        .with_suffix(".py")
                        .exists()
                    )
                    yield node.lineno, submodule if known else module, [name]
            else:
                yield node.lineno, module, names


def _sources() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path != PACKAGE / "__init__.py")


def test_every_part_of_the_package_has_a_floor() -> None:
    parts = {_part(_module_name(path)) for path in _sources()}
    assert sorted(part for part in parts if part not in FLOORS) == []


def test_modules_import_only_from_floors_below() -> None:
    wrong = []
    for path in _sources():
        module = _module_name(path)
        own = _part(module)
        assert own is not None
        for line, imported, _ in _imports(path):
            other = _part(imported)
            if other is None or other == own:
                continue
            floor = TOP if other == "" else FLOORS.get(other, 99)
            if floor >= FLOORS[own]:
                wrong.append(f"{module}:{line} imports {imported} (floor {floor})")
    assert wrong == []


def test_an_import_from_the_package_root_or_a_relative_one_is_read(tmp_path: Path) -> None:
    probe = PACKAGE / "capture" / "_layering_probe.py"
    probe.write_text(
        "from evaltrace import run_dataset\nfrom . import wrap\nfrom ..engine import execute\n"
    )
    try:
        found = [(imported, names) for _, imported, names in _imports(probe)]
    finally:
        probe.unlink()
    assert found == [
        ("evaltrace", ["run_dataset"]),
        ("evaltrace.capture.wrap", ["wrap"]),
        ("evaltrace.engine", ["execute"]),
    ]
    assert _part("evaltrace") == "" and TOP >= FLOORS["capture"]


def test_no_module_imports_another_modules_private_names() -> None:
    wrong = []
    for path in _sources():
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if not node.module.startswith("evaltrace"):
                        continue
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and node.module != module:
                        wrong.append(f"{module}:{node.lineno} imports {node.module}.{alias.name}")
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("evaltrace"):
                        aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                wrong.append(f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    assert wrong == []


@pytest.mark.parametrize("heavy", ["evaltrace.judges", "evaltrace.metrics", "evaltrace.pipeline"])
def test_importing_evaltrace_loads_no_judges_metrics_or_pipeline(heavy: str) -> None:
    code = (
        f"import sys, evaltrace; print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_importing_evaltrace_loads_no_optional_heavy_dependency() -> None:
    heavy = ["openai", "pandas", "numpy", "autoevals", "yaml", "jinja2", "rich"]
    code = f"import sys, evaltrace; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
