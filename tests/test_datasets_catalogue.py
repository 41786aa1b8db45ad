"""A catalogue of malformed datasets: each is one DatasetError naming the file and the place.

Every case is a file written to ``tmp_path`` (with the user modules it refers to), loaded with
``load_dataset`` and resolved with ``resolve_dataset``. What must hold for each: the error is
exactly ``DatasetError`` (never a parser's or pydantic's exception), every problem names the
file, one problem is at the expected place (a path in the document, or a line and column for
a syntax error) and says what is wrong, and the message shows the file and that place.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaltrace.datasets import DatasetError, load_dataset, resolve_dataset

APP = "def run(question: str) -> str:\n    return question\n"

MODEL_APP = """\
from __future__ import annotations

from pydantic import BaseModel


class Args(BaseModel):
    question: str
    context: str = ""


class App:
    async def run(self, args: Args) -> str:
        return args.question
"""


def dataset(**changes: Any) -> str:
    """A valid dataset (a runnable taking ``question``), with top-level keys changed."""
    document: dict[str, Any] = {
        "name": "catalogue",
        "runnable": "app.py:run",
        "evaluators": ["ExactMatch"],
        "entries": [{"entry_kwargs": {"question": "hi"}, "expectation": "hi"}],
    }
    document.update(changes)
    return json.dumps(document, indent=2)


def entries(*items: dict[str, Any], **changes: Any) -> str:
    return dataset(entries=list(items), **changes)


def entry(**changes: Any) -> dict[str, Any]:
    return {"entry_kwargs": {"question": "hi"}, **changes}


@dataclass
class Case:
    id: str
    content: str | bytes
    message: str
    """A fragment of the expected problem's message."""
    location: str | None = None
    """The expected problem's location (exactly), when it is a place in the document."""
    line: int | None = None
    """The expected problem's line, for syntax errors."""
    column: int | None = None
    filename: str = "dataset.json"
    files: dict[str, str] = field(default_factory=lambda: {"app.py": APP})
    """Other files written beside the dataset (user code)."""
    setup: Callable[[Path], Path] | None = None
    """Makes the path to load instead of writing ``content`` (directories, pipes, ...)."""
    max_bytes: int | None = None


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def _sparse_over_limit(tmp_path: Path) -> Path:
    from evaltrace.datasets import MAX_DATASET_BYTES

    path = tmp_path / "huge.json"
    with path.open("wb") as stream:
        stream.truncate(MAX_DATASET_BYTES + 1)  # sparse: no disk used, zeros if ever read
    return path


def _deep_json() -> str:
    return '{"entries": [{"entry_kwargs": {"q": ' + "[" * 100_000 + "]" * 100_000 + "}}]}"


def _billion_laughs() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    return "\n".join(lines) + "\nentries:\n  - entry_kwargs: {question: *i}\n"


CASES = [
    # -- syntax ---------------------------------------------------------------------------------
    Case("json-missing-colon", '{\n  "entries": [\n    {"entry_kwargs" {}}\n  ]\n}',
         "not valid JSON: Expecting ':' delimiter", line=3, column=21),
    Case("json-trailing-comma", '{"entries": [{"entry_kwargs": {}},]}',
         "not valid JSON", line=1, column=35),
    Case("json-truncated", '{"entries": [{"entry_kwargs": {', "not valid JSON", line=1),
    Case("json-duplicate-key", '{"entries": [\n  {"entry_kwargs": {}, "entry_kwargs": {}}\n]}',
         "'entry_kwargs' appears twice", line=2, column=3),
    Case("yaml-unclosed-flow", "entries:\n  - entry_kwargs: {question: hi\n  - x: 1\n",
         "not valid YAML", line=3, column=6, filename="dataset.yaml"),
    Case("yaml-bad-indentation", "entries:\n  - entry_kwargs: {}\n   description: x\n",
         "not valid YAML", line=3, column=4, filename="dataset.yaml"),
    Case("yaml-python-tag",
         "entries:\n  - entry_kwargs: !!python/object/apply:os.system ['echo pwned']\n",
         "would construct a Python object", line=2, column=19, filename="dataset.yaml"),
    Case("yaml-two-documents", "entries: []\n---\nentries: []\n",
         "expected a single document", line=2, filename="dataset.yaml"),
    Case("yaml-duplicate-key", "entries:\n  - entry_kwargs: {}\n    entry_kwargs: {}\n",
         "'entry_kwargs' appears twice", line=3, column=5, filename="dataset.yaml"),
    Case("yaml-billion-laughs", _billion_laughs(), "aliases expand", filename="dataset.yaml"),
    # -- encoding, size, kind of file -----------------------------------------------------------
    Case("invalid-utf8", b'{"entries": [\n  {"entry_kwargs": {"q": "caf\xe9"}}]}',
         "not valid UTF-8", line=2, column=30),
    Case("utf16", '{"entries": []}'.encode("utf-16"), "UTF-16"),
    Case("bom-then-syntax-error", b'\xef\xbb\xbf{"entries": [}', "not valid JSON",
         line=1, column=14),
    Case("empty-file", "  \n", "the file is empty"),
    Case("deep-nesting-json", _deep_json(), "nests too deeply"),
    Case("deep-nesting-yaml", "entries: " + "[" * 100_000, "nests too deeply",
         filename="dataset.yaml"),
    Case("huge-number-json", '{"entries": [{"entry_kwargs": {"n": ' + "9" * 5000 + "}}]}",
         "number is too long", location="entries[0].entry_kwargs.n"),
    Case("huge-number-yaml", "entries:\n  - entry_kwargs: {n: " + "9" * 5000 + "}\n",
         "cannot be read", line=2, column=23, filename="dataset.yaml"),
    Case("nan-json", '{"entries": [{"entry_kwargs": {"question": NaN}}]}',
         "NaN is not a JSON number", location="entries[0].entry_kwargs.question"),
    Case("yaml-timestamp-tag", "entries:\n  - entry_kwargs: {when: !!timestamp 2024-01-01}\n",
         "not a JSON value", location="entries[0].entry_kwargs.when", filename="dataset.yaml"),
    Case("oversize-small-limit", dataset(), "too large", max_bytes=64),
    Case("oversize-default-limit", "", "too large", setup=_sparse_over_limit),
    Case("directory", "", "is a folder", setup=lambda tmp: tmp),
    Case("fifo", "", "is a pipe", setup=_fifo),
    Case("device", "", "is a device", setup=lambda tmp: Path("/dev/zero")),
    Case("missing-file", "", "no such file", setup=lambda tmp: tmp / "absent.json"),
    # -- shape ----------------------------------------------------------------------------------
    Case("top-level-array", "[1, 2]", "a dataset is an object"),
    Case("entries-missing", '{"name": "x"}', "missing required key 'entries'",
         location="entries"),
    Case("entries-empty", entries(), "at least one entry", location="entries"),
    Case("entries-not-array", dataset(entries={}), "wrong type", location="entries"),
    Case("entry-not-object", dataset(entries=[3]), "wrong type", location="entries[0]"),
    Case("entry-kwargs-missing", entries({"description": "x"}),
         "missing required key 'entry_kwargs'", location="entries[0].entry_kwargs"),
    Case("entry-kwargs-wrong-type", entries({"entry_kwargs": ["hi"]}), "wrong type",
         location="entries[0].entry_kwargs"),
    Case("eval-input-not-list", entries(entry(eval_input={"question": "hi"})), "wrong type",
         location="entries[0].eval_input"),
    Case("eval-input-item-missing-name", entries(entry(eval_input=[{"value": 1}])),
         "missing required key 'name'", location="entries[0].eval_input[0].name"),
    Case("name-wrong-type", dataset(name=3), "wrong type", location="name"),
    Case("description-wrong-type", entries(entry(description=["x"])), "wrong type",
         location="entries[0].description"),
    Case("unknown-top-level-key", dataset(evaluator=["ExactMatch"]),
         "did you mean 'evaluators'", location="evaluator"),
    Case("unknown-entry-key", entries(entry(expectaton="x")), "did you mean 'expectation'",
         location="entries[0].expectaton"),
    Case("unknown-eval-input-key", entries(entry(eval_input=[{"name": "q", "vaule": 1}])),
         "did you mean 'value'", location="entries[0].eval_input[0].vaule"),
    Case("evaluator-spec-wrong-type", dataset(evaluators=[3]), "not an evaluator",
         location="evaluators[0]"),
    Case("evaluator-spec-unknown-key", dataset(evaluators=[{"name": "ExactMatch", "arg": {}}]),
         "did you mean 'args'", location="evaluators[0].arg"),
    Case("aggregator-unknown-type",
         dataset(evaluators=[{"name": "ExactMatch",
                              "aggregators": [{"type": "f1", "classes": ["a"]}]}]),
         "unknown value", location="evaluators[0].aggregators[0].type"),
    Case("aggregator-misspelt-key",
         dataset(evaluators=[{"name": "ExactMatch",
                              "aggregators": [{"type": "fscore", "classes": ["a"], "fvalue": 2}]}]),
         "did you mean 'fValue'", location="evaluators[0].aggregators[0].fvalue"),
    # -- across fields --------------------------------------------------------------------------
    Case("duplicate-entry-names", entries(entry(name="a"), entry(name="b"), entry(name="a")),
         "duplicate entry name 'a', also the name of entries[0]", location="entries[2].name"),
    Case("implicit-name-collision", entries(entry(name="1"), entry()),
         "duplicate entry name '1'", location="entries[1].name"),
    Case("ellipsis-without-dataset-list",
         entries(entry(evaluators=["...", "LevenshteinMatch"]), evaluators=[]),
         "the dataset has none", location="entries[0].evaluators[0]"),
    Case("ellipsis-at-dataset-level", dataset(evaluators=["...", "ExactMatch"]),
         "'...' is not an evaluator", location="evaluators[0]"),
    Case("aggregators-on-entry-evaluator",
         entries(entry(evaluators=[{"name": "ExactMatch",
                                    "aggregators": [{"type": "recall", "classes": ["a"]}]}])),
         "dataset-level", location="entries[0].evaluators[0].aggregators"),
    Case("evaluator-listed-twice", entries(entry(evaluators=["...", "ExactMatch"])),
         "listed twice", location="entries[0].evaluators[1]"),
    Case("eval-input-disagrees-with-entry-kwargs",
         entries(entry(eval_input=[{"name": "question", "value": "bye"}])),
         "differs from entry_kwargs['question']", location="entries[0].eval_input[0].value"),
    Case("duplicate-eval-input-names",
         entries(entry(eval_input=[{"name": "doc", "value": 1}, {"name": "doc", "value": 2}])),
         "duplicate eval_input name 'doc'", location="entries[0].eval_input[1].name"),
    # -- references and the registry (resolve_dataset) ------------------------------------------
    Case("unknown-evaluator", dataset(evaluators=["Factualty"]),
         "unknown evaluator 'Factualty'", location="evaluators[0]"),
    Case("unknown-evaluator-in-entry", entries(entry(evaluators=["...", "LevenshteinMach"])),
         "did you mean 'LevenshteinMatch'", location="entries[0].evaluators[1]"),
    Case("reference-missing-file", dataset(evaluators=["checks.py:tone"]),
         "no such file 'checks.py'", location="evaluators[0]"),
    Case("reference-missing-name", dataset(evaluators=["checks.py:tonne"]),
         "has no attribute 'tonne'", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "def tone(evaluable):\n    return 1.0\n"}),
    Case("reference-not-callable", dataset(evaluators=["checks.py:THRESHOLD"]),
         "is not callable", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "THRESHOLD = 0.5\n"}),
    Case("reference-module-raises", dataset(evaluators=["checks.py:tone"]),
         "raised KeyError: 'OPENAI_KEY'", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "import os\n\nKEY = {}['OPENAI_KEY']\n"}),
    Case("reference-module-syntax-error", dataset(evaluators=["checks.py:tone"]),
         "raised SyntaxError", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "def tone(evaluable)\n    return 1\n"}),
    Case("reference-missing-module", dataset(evaluators=["no_such_pkg.checks:tone"]),
         "no module named 'no_such_pkg'", location="evaluators[0]"),
    Case("reference-malformed", dataset(evaluators=["checks.py:"]), "is not a reference",
         location="evaluators[0]"),
    Case("evaluator-args-misspelt",
         dataset(evaluators=[{"name": "DocumentRecall", "args": {"mod": "single_hit"}}]),
         "did you mean 'mode' (not 'mod')", location="evaluators[0]"),
    Case("evaluator-function-given-args",
         dataset(evaluators=[{"name": "checks.py:tone", "args": {"strict": True}}]),
         "takes no args", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "def tone(evaluable):\n    return 1.0\n"}),
    Case("factory-returns-non-callable", dataset(evaluators=["checks.py:make"]),
         "not an evaluator", location="evaluators[0]",
         files={"app.py": APP, "checks.py": "def make():\n    return 0.5\n"}),
    Case("runnable-missing", json.dumps({"entries": [{"entry_kwargs": {}}]}),
         "names no runnable", location="runnable"),
    Case("runnable-missing-file", dataset(runnable="absent.py:run"), "no such file",
         location="runnable"),
    Case("runnable-not-callable", dataset(runnable="app.py:VERSION"), "cannot drive a run",
         location="runnable", files={"app.py": APP + "VERSION = '1'\n"}),
    Case("runnable-missing-argument", entries(entry(), {"entry_kwargs": {}}),
         "missing required argument 'question'", location="entries[1].entry_kwargs"),
    Case("runnable-unexpected-argument", entries({"entry_kwargs": {"questoin": "hi"}}),
         "did you mean 'question'", location="entries[0].entry_kwargs.questoin"),
    Case("runnable-model-field-missing",
         entries(entry(), {"entry_kwargs": {"context": "x"}}, runnable="app.py:App"),
         "missing required field 'question'", location="entries[1].entry_kwargs",
         files={"app.py": MODEL_APP}),
]  # fmt: skip


def test_the_catalogue_has_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_dataset_is_one_error_naming_file_and_place(case: Case, tmp_path: Path) -> None:
    if case.id == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    if case.id == "device" and not (
        Path("/dev/zero").exists() and stat.S_ISCHR(os.stat("/dev/zero").st_mode)
    ):
        pytest.skip("no /dev/zero on this platform")
    for name, text in case.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    if case.setup is not None:
        path = case.setup(tmp_path)
    else:
        path = tmp_path / case.filename
        if isinstance(case.content, bytes):
            path.write_bytes(case.content)
        else:
            path.write_text(case.content, encoding="utf-8")

    with pytest.raises(Exception) as caught:
        options = {} if case.max_bytes is None else {"max_bytes": case.max_bytes}
        resolve_dataset(load_dataset(path, **options))

    error = caught.value
    assert isinstance(error, DatasetError), f"{type(error).__name__}: {error}"
    assert all(problem.file == str(path) for problem in error.problems)
    matching = [problem for problem in error.problems if case.message in str(problem)]
    assert matching, f"no problem says {case.message!r}:\n{error}"
    problem = matching[0]
    text = str(error)
    assert str(path) in text
    if case.location is not None:
        assert problem.location == case.location
        assert f"{path}: {case.location}: " in text
    if case.line is not None:
        assert problem.line == case.line
        assert f"{path}:{case.line}:" in text
    if case.column is not None:
        assert problem.column == case.column
    assert "Traceback" not in text
