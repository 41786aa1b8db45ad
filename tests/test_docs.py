"""Every fenced code block of README.md and docs/*.md runs, each on its own.

Each block is one test, named ``page:line`` (the line of its opening fence), run in a fresh
subprocess (``sys.executable``) whose working folder is a fresh temporary folder, under a
timeout. A block added to any page is picked up without touching this file. What a block's
info string (the words after the opening fence) asks for:

``python``
    Run as written. It must be self-contained: it imports and defines everything it uses. A
    block that defines ``test_*`` functions at the top level is a pytest module instead: it is
    written to ``test_example.py`` and run with ``python -m pytest``, which must pass at least
    one test and skip none.
``python title="app.py"`` (any language with ``title="PATH"``)
    A file the page shows. It is not run: a Python file is compiled, a JSON or YAML file
    parsed, a dataset file (``*.evaltrace.json``, ``.yaml``, ``.yml``) loaded with
    ``evaltrace.load_dataset``. Before each later block of the same page runs, the file is
    written at ``PATH`` in that block's temporary folder. This is the one way a block gets a
    file it did not write itself.
``bash`` / ``sh``
    The commands run for real with ``bash -e``, with this environment's ``bin`` first on
    ``PATH`` and the repository's ``instrumentation_examples`` linked into the folder. A
    command that cannot run here is listed in :data:`NOT_RUN_HERE` with the reason; nothing
    else may be left out.
``console``
    Lines starting with ``$ `` are commands (run in one ``bash``, without ``-e``: a shown
    command may fail on purpose, and ``echo $?`` shows its exit code); the other lines are
    what they print on standard output, compared exactly once run ids and durations are
    masked.
``json`` / ``yaml``
    Parsed.
``text``, or no language
    Not run: diagrams and output. A ``text`` block that follows a ``python`` block with only
    blank lines between them is everything that block prints, compared exactly once run ids
    and durations are masked.

Inside a Python block, ``print(...)  # words`` promises that ``words`` is a line it prints
(such lines are checked in order). :data:`FILES_LEFT` lists the files some blocks must leave
behind, with how each starts.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
TIMEOUT_S = 180
DATASET_SUFFIXES = (".evaltrace.json", ".evaltrace.yaml", ".evaltrace.yml", ".evaltrace.jsonl")

NOT_RUN_HERE: dict[tuple[str, str], str] = {
    ("README.md", "python3 dev.py demo"): (
        "dev.py first (re)installs the project into .venv; tests/test_demo.py runs the same "
        "`evaltrace test instrumentation_examples --exit-zero` and checks its report"
    ),
    ("README.md", "python3 dev.py test"): "it runs this test suite: it would run itself",
    ("README.md", "pip install /path/to/evaltrace"): "installs into the environment under test",
    ("README.md", 'pip install "evaltrace @ git+https://github.com/OWNER/evaltrace.git"'): (
        "needs the network and a published repository"
    ),
    ("README.md", "python -m build"): (
        "builds in an isolated environment downloaded from PyPI (minutes); checked by hand "
        "when the packaging changes"
    ),
    ("README.md", "pip install dist/evaltrace-0.1.0-py3-none-any.whl"): (
        "installs into the environment under test, after `python -m build`"
    ),
    ("docs/export.md", "python3 -m venv ~/.cache/phoenix-venv"): (
        "part of installing Arize Phoenix (hundreds of MB from PyPI); tests/test_phoenix.py "
        "runs the same round trip when EVALTRACE_PHOENIX names a Phoenix"
    ),
    ("docs/export.md", "~/.cache/phoenix-venv/bin/pip install arize-phoenix"): (
        "installs Arize Phoenix (hundreds of MB from PyPI)"
    ),
    (
        "docs/export.md",
        "PHOENIX_TELEMETRY_ENABLED=false ~/.cache/phoenix-venv/bin/phoenix serve",
    ): "a server that runs until stopped",
    (
        "docs/export.md",
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:6006 "
        "EVALTRACE_PROJECT_NAME=my-app python app.py",
    ): "exports to the Phoenix started above, which is not installed here",
    (
        "docs/export.md",
        "OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 \\\n"
        "EVALTRACE_PROJECT_NAME=my-app python app.py",
    ): "exports to the Phoenix started above, which is not installed here",
    (
        "docs/serve.md",
        "evaltrace serve --forward http://collector:4318 --evaluators online.yaml "
        "--results scores.jsonl",
    ): (
        "a server that runs until stopped; the Python block below it runs the same command "
        "and stops it"
    ),
    ("docs/cli.md", "evaltrace serve --forward http://127.0.0.1:6006 --evaluators online.yaml"): (
        "a server that runs until stopped; docs/serve.md runs it and stops it"
    ),
}
"""Commands shown in a ``bash`` block that this test does not run: (page, command) -> why."""

FILES_LEFT: dict[tuple[str, str], str] = {
    ("docs/scorecard.md", "scorecard.html"): "<!DOCTYPE html>",
    ("docs/outcomes.md", "outcomes.csv"): "task_id,task_type,",
}
"""(page, file) -> how the file starts, left by the block of the page that names the file."""

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
TITLE = re.compile(r'title="(?P<path>[^"]+)"')
TRAILING_COMMENT = re.compile(r"\s{2,}#.*$")
PRINT_COMMENT = re.compile(r"^\s*print\(.*\)  # (?P<shown>.*)$", re.M)
VOLATILE = [
    (re.compile(r"\d{8}T\d{6}\.\d{6}Z"), "<run-id>"),
    (re.compile(r"\b\d+\.\d+ s\b"), "<seconds> s"),
]


@dataclass(kw_only=True)
class Block:
    """One fenced block of a page."""

    page: str
    """The page, relative to the repository (``docs/export.md``)."""
    line: int
    """The line of the opening fence, from 1."""
    language: str
    """The first word of the info string, lower case; empty when there is none."""
    title: str | None
    """The file the block is, when its info string has ``title="PATH"``."""
    code: str
    """The text between the fences, without their indentation."""
    files: dict[str, str] = field(default_factory=dict)
    """The files shown earlier on the page: path -> text."""
    output: str | None = None
    """What the block prints, when a ``text`` block right after it shows that."""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, each knowing the files shown before it."""
    page = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    files: dict[str, str] = {}
    previous_end = -2
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j].removeprefix(indent))
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: this block is never closed"
        title = TITLE.search(info)
        block = Block(
            page=page,
            line=i + 1,
            language=info.split()[0].lower() if info else "",
            title=title["path"] if title else None,
            code="\n".join(body) + "\n",
            files=dict(files),
        )
        follows = all(not line.strip() for line in lines[previous_end + 1 : i])
        if block.language == "text" and blocks and blocks[-1].language == "python" and follows:
            blocks[-1].output = block.code
        if block.title:
            files[block.title] = block.code
        blocks.append(block)
        previous_end = j
        i = j + 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in read_blocks(page)]
RUN = [block for block in ALL_BLOCKS if block.language not in ("text", "")]


def commands(block: Block) -> list[str]:
    """The commands of a ``bash`` block, without comments; ``\\`` at a line's end continues it."""
    found: list[str] = []
    continued = False
    for line in block.code.splitlines():
        text = TRAILING_COMMENT.sub("", line).rstrip()
        if continued:
            found[-1] += "\n" + text
        elif text and not text.lstrip().startswith("#"):
            found.append(text)
        continued = text.endswith("\\")
    return found


def environment(folder: Path) -> dict[str, str]:
    """The blocks' environment: this one's, without configuration that would change them."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "EVALTRACE_", "OTEL_", "PYTEST_", "COLUMNS"))
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    env["HOME"] = str(folder.parent / "home")
    return env


def prepare(block: Block, folder: Path) -> None:
    """Write the files the page showed before ``block``, and link the examples."""
    for name, text in block.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (folder / "instrumentation_examples").symlink_to(ROOT / "instrumentation_examples")
    (folder.parent / "home").mkdir(exist_ok=True)


def run(args: list[str], folder: Path, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        args,
        cwd=folder,
        env=environment(folder),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        **options,
    )


def masked(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def check_file(block: Block, folder: Path) -> None:
    """A file block: parsed, compiled or loaded according to what it is."""
    assert block.title is not None
    if block.language == "python":
        compile(block.code, block.title, "exec")
    elif block.language == "json":
        json.loads(block.code)
    elif block.language == "yaml":
        yaml.safe_load(block.code)
    if block.title.endswith(DATASET_SUFFIXES):
        code = f"import evaltrace; evaltrace.load_dataset({block.title!r})"
        (folder / block.title).parent.mkdir(parents=True, exist_ok=True)
        (folder / block.title).write_text(block.code, encoding="utf-8")
        result = run([sys.executable, "-c", code], folder)
        assert result.returncode == 0, result.stderr


def run_python(block: Block, folder: Path) -> None:
    tree = ast.parse(block.code)
    tests = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    ]
    if tests:
        (folder / "test_example.py").write_text(block.code, encoding="utf-8")
        args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"]
        result = run([sys.executable, *args], folder)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"{len(tests)} passed" in result.stdout, result.stdout
        assert "skipped" not in result.stdout, result.stdout
        return
    result = run([sys.executable, "-c", block.code], folder)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    remaining = iter(printed)
    promised = PRINT_COMMENT.findall(block.code)
    missing = [line for line in promised if line not in remaining]  # in order: iter is consumed
    assert missing == [], f"promised by `print(...)  # ...` but not printed: {missing}\n{printed}"
    if block.output is not None:
        assert masked(result.stdout) == masked(block.output)


def run_bash(block: Block, folder: Path) -> None:
    wanted = [c for c in commands(block) if (block.page, c) not in NOT_RUN_HERE]
    if not wanted:
        return
    result = run(["bash", "-e", "-c", "\n".join(wanted)], folder)
    assert result.returncode == 0, result.stdout + result.stderr


def run_console(block: Block, folder: Path) -> None:
    script: list[str] = []
    shown: list[str] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            script.append(line[2:])
        else:
            shown.append(line)
    result = run(["bash", "-c", "\n".join(script)], folder)
    assert masked(result.stdout).splitlines() == masked("\n".join(shown)).splitlines(), (
        result.stderr
    )


@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    prepare(block, folder)
    if block.title is not None:
        check_file(block, folder)
    elif block.language == "python":
        run_python(block, folder)
    elif block.language in ("bash", "sh"):
        run_bash(block, folder)
    elif block.language == "console":
        run_console(block, folder)
    elif block.language == "json":
        json.loads(block.code)
    elif block.language == "yaml":
        yaml.safe_load(block.code)
    else:
        pytest.fail(f"{block.id}: no rule for ```{block.language} blocks; add one to this test")
    for (page, name), start in FILES_LEFT.items():
        if page == block.page and f'"{name}"' in block.code:
            assert (folder / name).read_text(encoding="utf-8").startswith(start)


def test_every_command_left_out_is_still_on_its_page() -> None:
    shown = {
        (block.page, command)
        for block in ALL_BLOCKS
        if block.language in ("bash", "sh")
        for command in commands(block)
    }
    assert sorted(set(NOT_RUN_HERE) - shown) == []


def test_every_file_check_names_a_block_that_makes_the_file() -> None:
    for page, name in FILES_LEFT:
        makers = [b for b in RUN if b.page == page and f'"{name}"' in b.code]
        assert len(makers) == 1, (page, name, [b.id for b in makers])


VARIABLE = re.compile(r"^(EVALTRACE|OTEL|OPENAI)_[A-Z_]+$")


def variables_read_by_the_package() -> set[str]:
    """Every environment variable name the package's code holds as a string or imports."""
    import opentelemetry.sdk.environment_variables as sdk_names

    names = set()
    for path in (ROOT / "src" / "evaltrace").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if VARIABLE.match(node.value):
                    names.add(node.value)
            elif isinstance(node, ast.ImportFrom) and node.module == sdk_names.__name__:
                names.update(alias.name for alias in node.names if VARIABLE.match(alias.name))
    return names


def test_the_readme_configuration_table_lists_exactly_the_variables_evaltrace_reads() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    listed = set(re.findall(r"`((?:EVALTRACE|OTEL|OPENAI)_[A-Z_]+)`", table))
    read = variables_read_by_the_package()
    assert "OTEL_EXPORTER_OTLP_TRACES_HEADERS" in read  # the scan sees the SDK's names too
    assert (sorted(read - listed), sorted(listed - read)) == ([], [])


def test_the_documented_dataset_timeout_is_the_default() -> None:
    from evaltrace.datasets import DEFAULT_DATASET_TIMEOUT

    guide = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    documented = re.search(r"`DEFAULT_DATASET_TIMEOUT`, (\d+) s", guide)
    assert documented is not None
    assert float(documented[1]) == DEFAULT_DATASET_TIMEOUT


def test_the_readme_set_up_commands_are_the_ones_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 dev.py test" in ci
    setup = next(b for b in ALL_BLOCKS if b.page == "README.md" and b.language == "bash")
    assert [shlex.split(c, comments=True) for c in commands(setup)] == [
        ["python3", "dev.py", "demo"],
        ["python3", "dev.py", "test"],
    ]


def test_every_benchmark_script_has_a_row_in_the_bench_results_table() -> None:
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    results = text.split("## Results", 1)[1].split("\n## ", 1)[0]
    in_table = set(re.findall(r"^\| `(bench_\w+\.py)` \|", results, re.M))
    scripts = {path.name for path in (ROOT / "bench").glob("bench_*.py")}
    assert sorted(scripts - in_table) == []


def test_every_bench_figure_names_the_command_that_reproduces_it() -> None:
    text = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    results = text.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(bench_\w+)\.py` \|.*\| `([^`|]*)` \|$", results, re.M)
    all_rows = re.findall(r"^\| `bench_\w+\.py` \|", results, re.M)
    assert len(rows) == len(all_rows), "a row of the results table ends without its command"
    for script, command in rows:
        words = shlex.split(command)
        assert words[:4] == ["python3", "dev.py", "bench", script.removeprefix("bench_")], (
            f"the figure of {script}.py names the command {command!r}; expected "
            f"'python3 dev.py bench {script.removeprefix('bench_')} [ARGS]'"
        )


def test_every_fence_of_every_page_is_read_as_a_block() -> None:
    fences = sum(
        1
        for page in PAGES
        for line in page.read_text(encoding="utf-8").splitlines()
        if FENCE.match(line)
    )
    assert fences == 2 * len(ALL_BLOCKS)


def block_of(language: str, code: str, output: str | None = None) -> Block:
    return Block(page="a.md", line=1, language=language, title=None, code=code, output=output)


@pytest.mark.parametrize(
    ("language", "code", "output"),
    [
        ("python", "raise SystemExit(3)\n", None),
        ("python", "print('Lima')  # Paris\n", None),
        ("python", "print('Lima')\n", "Paris\n"),
        ("python", "def test_fails():\n    assert False\n", None),
        ("bash", "false\necho still here\n", None),
        ("console", "$ echo Lima\nParis\n", None),
    ],
    ids=["exit-code", "print-comment", "output-block", "pytest", "bash", "console"],
)
def test_a_block_that_does_not_do_what_its_page_says_fails(
    language: str, code: str, output: str | None, tmp_path: Path
) -> None:
    block = block_of(language, code, output)
    runner = {"python": run_python, "bash": run_bash, "console": run_console}[language]
    with pytest.raises(AssertionError):
        runner(block, tmp_path)


def test_the_readme_quickstart_is_at_most_fifteen_lines() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", quickstart, re.S)
    assert code is not None
    assert len(code[1].splitlines()) <= 15


LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_every_page_points_at_a_file() -> None:
    pages = [*PAGES, *sorted((ROOT / "instrumentation_examples").glob("**/README.md"))]
    links = [
        (page, match["target"])
        for page in pages
        for match in LINK.finditer(page.read_text(encoding="utf-8"))
        if "://" not in match["target"] and not match["target"].startswith("mailto:")
    ]
    assert len(links) > 20  # the pages link to each other; a broken pattern finds none
    broken = [
        f"{page.relative_to(ROOT)}: {to}" for page, to in links if not (page.parent / to).exists()
    ]
    assert broken == []
