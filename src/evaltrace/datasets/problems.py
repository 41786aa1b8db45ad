"""What is wrong with a dataset: :class:`DatasetProblem` and the one error carrying them all.

Loading and resolving a dataset never stops at the first mistake: every problem found is
collected, each naming the file, where in it (``entries[3].eval_input[0].name``, or a line and
column for a syntax error), what was expected, what was found and how to fix it, and they are
raised together as one :class:`DatasetError`. When one of them is a missing file or attribute,
the error is also the builtin pixie-qa raised for it: :class:`DatasetFileNotFoundError` (a
``FileNotFoundError``) or :class:`DatasetAttributeError` (an ``AttributeError``).

Example:
    >>> problem = DatasetProblem(
    ...     file="faq.json", location="entries[0].entry_kwarg", message="unknown key",
    ...     hint="did you mean 'entry_kwargs'?",
    ... )
    >>> print(DatasetError([problem]))
    1 problem in dataset faq.json:
      faq.json: entries[0].entry_kwarg: unknown key; did you mean 'entry_kwargs'?
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, cast

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.errors import EvaltraceError

__all__ = [
    "DatasetAttributeError",
    "DatasetError",
    "DatasetFileNotFoundError",
    "DatasetProblem",
    "Missing",
    "closest",
    "describe_value",
    "format_location",
]

MAX_LISTED_PROBLEMS: Final = 50
"""How many problems the message of a :class:`DatasetError` lists (all stay in ``problems``)."""

_SHOWN_CHARS: Final = 60

Missing: TypeAlias = Literal["file", "attribute"]
"""What a :class:`DatasetProblem` finds missing: a file, or an attribute of a module."""


@dataclass(frozen=True, kw_only=True)
class DatasetProblem:
    """One thing wrong with a dataset file, located precisely enough to fix it."""

    file: str
    """The dataset file (as given), or a label such as ``"<runnable>"`` for other sources."""
    location: str = ""
    """Where in the file: a path such as ``entries[3].eval_input[0].name``; empty for the whole
    file."""
    message: str
    """What is wrong, in a few words."""
    expected: str | None = None
    """What would have been valid."""
    found: str | None = None
    """What the file holds instead (a type and a short excerpt)."""
    hint: str | None = None
    """How to fix it, when there is something more useful to say than ``expected``."""
    line: int | None = None
    """The 1-based line, when known (syntax errors)."""
    column: int | None = None
    """The 1-based column, when known (syntax errors)."""
    missing: Missing | None = None
    """What is missing, when the problem is a missing file (the dataset file, or a file its
    runnable, an evaluator or an entry's ``trace`` names) or a missing attribute of a module."""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        if self.location:
            where += f": {self.location}"
        text = f"{where}: {self.message}"
        if self.expected is not None:
            text += f"; expected {self.expected}"
            if self.found is not None:
                text += f", found {self.found}"
        elif self.found is not None:
            text += f"; found {self.found}"
        if self.hint:
            text += f"; {self.hint}"
        return text


class DatasetError(EvaltraceError, ValueError):
    """A dataset cannot be used; :attr:`problems` lists everything wrong with it at once.

    Built from problems of which one is a missing file, the error is a
    :class:`DatasetFileNotFoundError`; else, when one is a missing attribute, a
    :class:`DatasetAttributeError`; as ``OSError(errno.ENOENT, ...)`` is a
    ``FileNotFoundError``.

    Args:
        problems: The problems found (at least one).
        subject: What kind of file the problems are in, for the message (``"dataset"``, or
            ``"evaluators file"`` for ``evaltrace serve``'s).

    Example:
        >>> error = DatasetError([DatasetProblem(file="a.json", message="the file is empty")])
        >>> [problem.message for problem in error.problems]
        ['the file is empty']
        >>> type(DatasetError([DatasetProblem(file="a.json", message="no such file",
        ...                                   missing="file")])).__name__
        'DatasetFileNotFoundError'
    """

    def __new__(  # noqa: D102
        cls, problems: Sequence[DatasetProblem], *, subject: str = "dataset"
    ) -> DatasetError:
        if cls is DatasetError:
            missing = {problem.missing for problem in problems}
            cls = next((error for kind, error in _BY_MISSING.items() if kind in missing), cls)
        if issubclass(cls, OSError):  # an OSError's instance is laid out by OSError's __new__
            return cast(DatasetError, OSError.__new__(cls, problems))
        return super().__new__(cls, problems)

    def __init__(self, problems: Sequence[DatasetProblem], *, subject: str = "dataset") -> None:
        if not problems:
            raise ValueError("a DatasetError needs at least one problem")
        self.problems: list[DatasetProblem] = list(problems)
        """Every problem found, in the order found."""
        self.subject = subject
        """What kind of file the problems are in, as the message says."""
        self.valid_parts: Any = None
        """What of the dataset is valid, when the file's own validation failed (a
        :class:`~evaltrace.datasets.loading.ValidParts`): :func:`prepare_dataset` checks it
        against the user's code too, to report every problem at once."""
        super().__init__(self._render())

    def _render(self) -> str:
        files = list(dict.fromkeys(problem.file for problem in self.problems))
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        many = f"{len(files)} dataset files" if self.subject == "dataset" else f"{len(files)} files"
        subject = f"{self.subject} {files[0]}" if len(files) == 1 else many
        lines = [f"{count} {noun} in {subject}:"]
        lines += [f"  {problem}" for problem in self.problems[:MAX_LISTED_PROBLEMS]]
        if count > MAX_LISTED_PROBLEMS:
            lines.append(f"  ... and {count - MAX_LISTED_PROBLEMS} more (see .problems)")
        return "\n".join(lines)


class DatasetFileNotFoundError(DatasetError, FileNotFoundError):
    """A dataset cannot be used, and a file it needs is not there.

    The dataset file itself, or a file its runnable, an evaluator or an entry's ``trace``
    names. A ``FileNotFoundError``, as pixie-qa raised for a missing dataset or module file.
    """


class DatasetAttributeError(DatasetError, AttributeError):
    """A dataset cannot be used, and a reference names an attribute its module lacks.

    An ``AttributeError``, as pixie-qa raised for a ``file.py:name`` whose name is missing.
    """


_BY_MISSING: Final[dict[Missing, type[DatasetError]]] = {  # in order: a missing file first
    "file": DatasetFileNotFoundError,
    "attribute": DatasetAttributeError,
}


def format_location(parts: Iterable[str | int]) -> str:
    """Render a path into a document as ``entries[3].eval_input[0].name``.

    Example:
        >>> format_location(["entries", 3, "eval_input", 0, "name"])
        'entries[3].eval_input[0].name'
    """
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to ``word``, or ``None`` when none is close.

    Example:
        >>> closest("entry_kwarg", ["entry_kwargs", "eval_input"])
        'entry_kwargs'
    """
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def describe_value(value: object) -> str:
    """A short description of a parsed value: its JSON type and an excerpt.

    Example:
        >>> describe_value([1, 2])
        'array [1, 2]'
        >>> describe_value(None)
        'null'
    """
    if value is None:
        return "null"
    kind = _JSON_TYPES.get(type(value), type_name(value))
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = safe_repr(value)
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return f"{kind} {text}"


_JSON_TYPES: Final[dict[type, str]] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
}
