"""Reading a dataset file: :func:`load_dataset`.

The file is checked before it is read (it must be a regular file no larger than
:data:`MAX_DATASET_BYTES`), decoded as UTF-8 (a byte order mark is accepted), parsed as JSON or
YAML, and validated as a :class:`~evaltrace.datasets.Dataset`. Whatever goes wrong is reported
as a :class:`~evaltrace.datasets.DatasetError` listing every problem found, never as the
parser's own exception: a syntax error with its line and column, a value JSON cannot hold
(``NaN``, a number too long to convert) at its location in the document, data nested deeper
than Python can follow, invalid UTF-8 with the line and column of the first bad byte.

The format follows the suffix: ``.json`` is JSON, ``.yaml`` and ``.yml`` are YAML, ``.jsonl``
is a JSONL dataset (a header line, then one entry per line: :mod:`evaltrace.datasets.jsonl`,
read line by line and not bounded by the size limit); any other file is JSON when it starts
with ``{`` and YAML otherwise.

A valid JSON dataset is read entry by entry and its entries kept as their text
(:mod:`evaltrace.datasets._json_entries`), each made again when it is asked for; a JSON file
with any problem is validated as a whole, which reports every problem at once.
"""

from __future__ import annotations

import codecs
import functools
import json
import json.scanner
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from evaltrace._safe_text import exception_message
from evaltrace.checks import check_count
from evaltrace.constants import MAX_DATASET_BYTES
from evaltrace.datasets._json import first_repeated, parse_json
from evaltrace.datasets._json_entries import read_valid_json_dataset
from evaltrace.datasets._validation_problems import Locator, problems_from_errors
from evaltrace.datasets._yaml import YamlProblem, parse_yaml, yaml_position
from evaltrace.datasets.jsonl import is_jsonl, load_jsonl_dataset
from evaltrace.datasets.model import (
    Dataset,
    DatasetEntry,
    EvaluatorSpec,
    ValidationScope,
    dataset_problems,
)
from evaltrace.datasets.problems import DatasetError, DatasetProblem, describe_value

__all__ = [
    "MAX_DATASET_BYTES",
    "dataset_from_data",
    "json_position",
    "load_dataset",
    "read_document",
    "validate_document",
    "with_positions",
]

_Model = TypeVar("_Model", bound=BaseModel)


_NAME_SUFFIXES: Final = (".jsonl", ".json", ".yaml", ".yml", ".evaltrace")


def load_dataset(path: str | os.PathLike[str], *, max_bytes: int = MAX_DATASET_BYTES) -> Dataset:
    """Read and validate the dataset file at ``path``.

    Every problem with the file is collected and raised at once. References to user code
    (the runnable, custom evaluators) are not imported here: :func:`resolve_dataset` does it.

    Args:
        path: A ``.json``, ``.yaml``, ``.yml`` or ``.jsonl`` dataset file.
        max_bytes: The largest file accepted, in bytes.

    Returns:
        The dataset; its ``path`` is ``path`` made absolute, its ``source`` is ``path`` as
        given, and its name defaults to the file's name without suffixes
        (``faq.evaltrace.yaml`` gives ``faq``).

    Raises:
        DatasetError: The file is missing, unreadable, too large, not UTF-8, not valid JSON or
            YAML, or not a valid dataset; ``problems`` lists everything found.
        ValueError: ``max_bytes`` is not a whole number >= 1.

    Example:
        >>> dataset = load_dataset("datasets/faq.evaltrace.yaml")  # doctest: +SKIP
        >>> dataset.name, len(dataset.entries)  # doctest: +SKIP
        ('faq', 12)
    """
    max_bytes = check_count(max_bytes, "max_bytes")
    location = Path(path)
    file = os.fspath(path)
    if is_jsonl(location):
        return _load_jsonl(location, file)
    text = _decode(_read(location, file, max_bytes), file)
    if _format_of(location, text) == "json":
        streamed = read_valid_json_dataset(text, file=file, path=location)
        if streamed is not None:
            if streamed.name is None:
                _name_after_file(streamed, location)
            return streamed
        document = _parse_json(text, file)
        locate: Locator = functools.partial(json_position, text)
    else:
        document = _parse_yaml(text, file, max_bytes)
        locate = functools.partial(yaml_position, text)
    return _validated(document, file=file, path=location, locate=locate, owned=True)


def read_document(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_DATASET_BYTES
) -> tuple[Any, str]:
    """Read a JSON or YAML file of evaltrace's (a dataset, an evaluators file) as data.

    The file is read as a dataset file is (checked, decoded, parsed safely), and what goes
    wrong is one :class:`~evaltrace.datasets.DatasetError` naming the file, and the line and
    column of a syntax error.

    Args:
        path: The file (JSON by its ``.json`` suffix or a leading ``{``, else YAML).
        max_bytes: The largest file accepted, in bytes.

    Returns:
        The parsed data and the file's text (for :func:`validate_document`'s line numbers).

    Raises:
        DatasetError: The file is missing, unreadable, too large, not UTF-8, or not valid
            JSON or YAML.
    """
    max_bytes = check_count(max_bytes, "max_bytes")
    location = Path(path)
    file = os.fspath(path)
    text = _decode(_read(location, file, max_bytes), file)
    if _format_of(location, text) == "json":
        return _parse_json(text, file), text
    return _parse_yaml(text, file, max_bytes), text


def validate_document(data: object, model: type[_Model], *, file: str, text: str = "") -> _Model:
    """Validate parsed data as ``model``, every problem at once, as dataset files are.

    Each problem names the file, the field (``evaluators[1].name``), what was expected and
    what was found, and, when the file's ``text`` is given, the line the field is on.

    Args:
        data: The parsed document.
        model: The pydantic model it must be.
        file: How problems name the file.
        text: The file's text, to find the line of each problem's field.

    Raises:
        DatasetError: The data is not a valid ``model``.

    Example:
        >>> class Limits(BaseModel):
        ...     model_config = {"extra": "forbid"}
        ...     rate: float = 1.0
        >>> validate_document({"rat": 2}, Limits, file="limits.yaml", text="rat: 2")
        Traceback (most recent call last):
        ...
        evaltrace.datasets.problems.DatasetError: 1 problem in dataset limits.yaml:
          limits.yaml:1:6: rat: unknown key 'rat'; did you mean 'rate'? the keys here are 'rate'
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_errors(exc.errors(include_url=False), file=file, root=model)
        raise DatasetError(_positioned(problems, file, text) if text else problems) from None
    except RecursionError:
        raise DatasetError([_too_deep(file)]) from None


def dataset_from_data(
    data: object,
    *,
    file: str = "<dataset>",
    path: Path | None = None,
    locate: Locator | None = None,
) -> Dataset:
    """Validate parsed data as a dataset, reporting every problem at once.

    Args:
        data: What a dataset file holds, parsed (a dict).
        file: How problems name the source.
        path: The file the data came from (references resolve against its folder).
        locate: Finds a value's line and column in the file's text, for the problems whose
            fix is in the value (a check's regular expression or schema).

    Raises:
        DatasetError: The data is not a valid dataset.

    Example:
        >>> dataset_from_data({"entries": [{"entry_kwargs": {}}]}).entries[0].name
        '0'
    """
    return _validated(data, file=file, path=path, locate=locate, owned=False)


def _validated(
    data: object, *, file: str, path: Path | None, locate: Locator | None, owned: bool
) -> Dataset:
    """Validate ``data``; when ``owned`` (a document just parsed), consume it entry by entry."""
    if not isinstance(data, dict):
        raise DatasetError(
            [
                DatasetProblem(
                    file=file,
                    message="a dataset is an object",
                    expected="an object with 'entries' (and 'name', 'runnable', 'evaluators')",
                    found="nothing" if data is None else describe_value(data),
                )
            ]
        )
    scope = ValidationScope(file, path, owned=owned)
    if owned and isinstance(data.get("entries"), list):
        _validate_entries_in_place(data["entries"])
    try:
        dataset = Dataset.model_validate(data, context=scope.context())
    except ValidationError as exc:
        problems = problems_from_errors(exc.errors(include_url=False), file=file, locate=locate)
        problems += _cross_field_problems_of_valid_parts(data, file)
        error = DatasetError(problems)
        error.valid_parts = _valid_parts(data, file, path)
        raise error from None
    except RecursionError:
        raise DatasetError([_too_deep(file)]) from None
    if scope.problems:
        error = DatasetError(scope.problems)
        error.valid_parts = ValidParts(dataset=dataset, indexes=range(len(dataset.entries)))
        raise error
    if dataset.name is None and path is not None:
        _name_after_file(dataset, path)
    return dataset


def _name_after_file(dataset: Dataset, path: Path) -> None:
    """Name an unnamed dataset after its file, a default that is not written back."""
    dataset.name = _name_from(path)
    dataset.model_fields_set.discard("name")


def _validate_entries_in_place(entries: list[Any]) -> None:
    """Replace each valid entry's data with the entry, so that its parsed data is freed at once.

    Loading then never holds the whole parsed document and the whole dataset together: the
    peak per entry goes from 2.1 to 1.4 KB (bench_dataset_memory.py, 10**5 small entries).
    The entries left as data are validated with the dataset, which reports their problems.
    """
    for index, raw in enumerate(entries):
        try:
            entries[index] = DatasetEntry.model_validate(raw)
        except (ValidationError, RecursionError):
            continue


def _cross_field_problems_of_valid_parts(data: dict[str, Any], file: str) -> list[DatasetProblem]:
    """The checks spanning fields, run on whatever parts of an invalid dataset are valid."""
    evaluators: list[EvaluatorSpec] | None = None
    raw_evaluators = data.get("evaluators", [])
    if isinstance(raw_evaluators, list):
        try:
            evaluators = [EvaluatorSpec.model_validate(item) for item in raw_evaluators]
        except ValidationError:
            evaluators = None
    entries: list[tuple[int, DatasetEntry]] = []
    names: list[tuple[int, str | None]] = []
    raw_entries = data.get("entries")
    if isinstance(raw_entries, list):
        for index, raw in enumerate(raw_entries):
            if isinstance(raw, DatasetEntry):  # validated already, see _validate_entries_in_place
                names.append((index, raw.name))
                entries.append((index, raw))
                continue
            name = raw.get("name") if isinstance(raw, dict) else None
            if isinstance(raw, dict) and (name is None or isinstance(name, str)):
                names.append((index, name))
            try:
                entries.append((index, DatasetEntry.model_validate(raw)))
            except (ValidationError, RecursionError):
                continue  # its own problems are already reported
    return dataset_problems(file, evaluators, entries, names)


@dataclass(frozen=True, kw_only=True)
class ValidParts:
    """What of an invalid dataset file is valid.

    The checks that need the user's code (the runnable's signature against each entry's
    arguments, the evaluators' signatures, the aggregators' pairings) run on it, so that one
    validation reports every problem.
    """

    dataset: Dataset
    """The dataset's valid header with the entries whose arguments could be read (not
    validated as a whole: a run never uses it)."""
    indexes: Sequence[int]
    """Each of those entries' index in the file."""


def _valid_parts(data: dict[str, Any], file: str, path: Path | None) -> ValidParts | None:
    """The valid header and readable entries of ``data``, whose validation failed."""
    header = {key: value for key, value in data.items() if key != "entries"}
    runnable = header.get("runnable")
    attempts = [header, {"runnable": runnable} if isinstance(runnable, str) else None]
    base: Dataset | None = None
    for attempt in attempts:
        if attempt is None:
            continue
        try:  # one stand-in entry: a dataset has at least one
            base = Dataset.model_validate(
                {**attempt, "entries": [{"entry_kwargs": {}}]},
                context=ValidationScope(file, path).context(),
            )
        except (ValidationError, RecursionError):
            continue
        break
    if base is None:
        return None
    entries: list[DatasetEntry] = []
    indexes: list[int] = []
    raw_entries = data.get("entries")
    for index, raw in enumerate(raw_entries if isinstance(raw_entries, list) else ()):
        entry = _readable_entry(raw)
        if entry is not None:
            entries.append(entry)
            indexes.append(index)
    if not entries and base.runnable is None:
        return None  # nothing left whose references could be checked
    return ValidParts(dataset=base.model_copy(update={"entries": entries}), indexes=indexes)


def _readable_entry(raw: object) -> DatasetEntry | None:
    """``raw`` as an entry, else an entry of its arguments alone, else ``None``."""
    try:
        return DatasetEntry.model_validate(raw)
    except (ValidationError, RecursionError):  # reported already: its arguments still count
        return _arguments_of(raw)


def _arguments_of(raw: object) -> DatasetEntry | None:
    """An entry of ``raw``'s arguments alone, when they can be checked without the rest."""
    if not isinstance(raw, dict) or "trace" in raw or "evaluators" in raw:
        return None  # its own evaluators are invalid: checking it without them would mislead
    try:
        return DatasetEntry.model_validate({"entry_kwargs": raw.get("entry_kwargs", {})})
    except (ValidationError, RecursionError):
        return None


_LOCATION_PART: Final = re.compile(r"\[(\d+)\]|([^.\[\]]+)")

_POSITIONED_PROBLEMS: Final = 50
"""How many of a file's problems are given their line (each one parses the file again)."""


def with_positions(error: DatasetError, path: str | os.PathLike[str]) -> DatasetError:
    """``error`` with the line and column of each problem located in the file at ``path``.

    A problem found after the file was read (an argument the runnable does not take, an
    evaluator that cannot be built) names a place such as ``entries[2].entry_kwargs.query``;
    the file is read again, on this failing path only, to give that place its line. A
    problem whose place is not in the file (a key that is missing) is given its parent's.
    """
    if os.fspath(path).endswith(".jsonl"):  # its entries' problems carry their lines already
        return error
    try:
        text = _decode(_read(Path(path), os.fspath(path), MAX_DATASET_BYTES), os.fspath(path))
    except DatasetError:  # gone or changed since it was read: the places are enough
        return error
    problems = _positioned(error.problems, os.fspath(path), text)
    if problems == error.problems:
        return error
    return DatasetError(problems)


def _positioned(problems: Sequence[DatasetProblem], file: str, text: str) -> list[DatasetProblem]:
    """``problems``, each without a line given the line and column of its place in ``text``."""
    locate: Locator = functools.partial(
        json_position if _format_of(Path(file), text) == "json" else yaml_position, text
    )
    positioned = list(problems)
    for position, problem in enumerate(positioned[:_POSITIONED_PROBLEMS]):
        if problem.line is not None or not problem.location:
            continue
        parts: list[str | int] = [
            int(index) if index else key for index, key in _LOCATION_PART.findall(problem.location)
        ]
        while parts:
            found = locate(parts)
            if found is not None:
                positioned[position] = replace(problem, line=found[0], column=found[1])
                break
            parts.pop()
    return positioned


def _load_jsonl(location: Path, file: str) -> Dataset:
    """A JSONL dataset: read line by line, so ``max_bytes`` does not bound it."""
    try:
        info = location.stat()
    except OSError:
        info = None  # the reader says what is wrong
    if info is not None and not stat.S_ISREG(info.st_mode):
        _check_kind_and_size(file, info, info.st_size)
    dataset = load_jsonl_dataset(location, file=file)
    if dataset.name is None:
        _name_after_file(dataset, location)
    return dataset


def _name_from(path: Path) -> str:
    name = path.name
    for suffix in _NAME_SUFFIXES:
        name = name.removesuffix(suffix)
    return name or path.name


# -- reading ----------------------------------------------------------------------------------


def _fail(file: str, message: str, **more: Any) -> DatasetError:
    return DatasetError([DatasetProblem(file=file, message=message, **more)])


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_kind_and_size(file: str, info: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = _file_kind(info.st_mode)
        raise _fail(
            file,
            f"is {kind}, not a dataset file",
            expected="a .json or .yaml file",
            found=kind,
            hint="name a dataset file inside it" if kind == "a folder" else None,
        )
    if info.st_size > max_bytes:
        raise _too_large(file, info.st_size, max_bytes)


def _too_large(file: str, size: int, max_bytes: int) -> DatasetError:
    return _fail(
        file,
        "the file is too large",
        expected=f"at most {max_bytes} bytes",
        found=f"{size} bytes",
        hint="split the dataset into several files, or pass a larger max_bytes",
    )


def _read(location: Path, file: str, max_bytes: int) -> bytes:
    try:
        _check_kind_and_size(file, location.stat(), max_bytes)
        # Non-blocking, so that a path swapped for a pipe after the check cannot hang the open.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(location, flags)
        with os.fdopen(descriptor, "rb") as stream:
            info = os.fstat(stream.fileno())
            _check_kind_and_size(file, info, max_bytes)
            size = info.st_size
            # Read what the file holds, not a buffer of the limit (50 MiB for a small file).
            data = stream.read(size + 1)
            if len(data) > size:  # it grew after the check
                data += stream.read(max_bytes + 1 - len(data))
    except FileNotFoundError:
        raise _fail(
            file,
            "no such file",
            hint=f"check the path (relative paths start from {os.getcwd()})",
            missing="file",
        ) from None
    except IsADirectoryError:
        raise _fail(file, "is a folder, not a dataset file", hint="name a file inside it") from None
    except OSError as exc:
        raise _fail(file, f"cannot be read: {exc.strerror or exception_message(exc)}") from None
    if len(data) > max_bytes:  # it grew after the check
        raise _too_large(file, len(data), max_bytes)
    return data


def _decode(data: bytes, file: str) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _fail(
            file,
            "the file is UTF-16 text",
            expected="UTF-8",
            hint="save the file as UTF-8",
        )
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        raise _fail(
            file,
            "the file is not valid UTF-8",
            expected="UTF-8 text",
            found=f"the byte 0x{data[exc.start]:02x}",
            line=data.count(b"\n", 0, exc.start) + 1,
            column=exc.start - line_start + 1,
            hint="save the file as UTF-8",
        ) from None
    if not text.strip():
        raise _fail(file, "the file is empty", expected="a dataset object with 'entries'")
    return text


def _format_of(location: Path, text: str) -> Literal["json", "yaml"]:
    suffix = location.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    return "json" if text.lstrip().startswith("{") else "yaml"


def _too_deep(file: str) -> DatasetProblem:
    return DatasetProblem(
        file=file, message="the data nests too deeply to be read", hint="flatten the nested values"
    )


# -- JSON -------------------------------------------------------------------------------------


def _parse_json(text: str, file: str) -> Any:
    try:
        data, duplicated = parse_json(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            [
                DatasetProblem(
                    file=file,
                    message=f"not valid JSON: {exc.msg}",
                    line=exc.lineno,
                    column=exc.colno,
                )
            ]
        ) from None
    except RecursionError:
        raise DatasetError([_too_deep(file)]) from None
    if duplicated:
        raise DatasetError(_duplicate_key_problems(text, file, duplicated))
    return data


def json_position(text: str, path: Sequence[str | int]) -> tuple[int, int] | None:
    r"""The 1-based line and column where the value at ``path`` starts in a JSON document.

    Args:
        text: The document (valid JSON).
        path: Keys and indexes from the top, e.g. ``["evaluators", 1, "value"]``.

    Returns:
        The line and column, or ``None`` when there is no value at ``path``.

    Example:
        >>> json_position('{"a": [1,\n  {"b": 2}]}', ["a", 1, "b"])
        (2, 9)
    """
    decoder = json.JSONDecoder()
    at = _skip_space(text, 0)
    try:
        for part in path:
            if isinstance(part, str) and text.startswith("{", at):
                at = _member(decoder, text, at + 1, part)
            elif isinstance(part, int) and text.startswith("[", at):
                at = _item(decoder, text, at + 1, part)
            else:
                return None
            if at < 0:
                return None
    except (ValueError, RecursionError, IndexError):
        return None
    line_start = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, at) + 1, at - line_start + 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _member(decoder: json.JSONDecoder, text: str, at: int, key: str) -> int:
    """Where the value of ``key`` starts in the object whose members start at ``at``; -1 if none."""
    at = _skip_space(text, at)
    while not text.startswith("}", at):
        name, at = decoder.raw_decode(text, at)
        at = _skip_space(text, _skip_space(text, at) + 1)  # past the colon
        if name == key:
            return at
        at = _skip_space(text, decoder.raw_decode(text, at)[1])
        if text.startswith(",", at):
            at = _skip_space(text, at + 1)
    return -1


def _item(decoder: json.JSONDecoder, text: str, at: int, index: int) -> int:
    """Where item ``index`` starts in the array whose items start at ``at``; -1 if none."""
    at = _skip_space(text, at)
    position = 0
    while not text.startswith("]", at):
        if position == index:
            return at
        at = _skip_space(text, decoder.raw_decode(text, at)[1])
        if text.startswith(",", at):
            at = _skip_space(text, at + 1)
        position += 1
    return -1


def _duplicate_key_problems(text: str, file: str, keys: list[str]) -> list[DatasetProblem]:
    """Locate the objects holding a key twice, re-reading with the pure-Python scanner.

    The C scanner does not say where an object starts; the Python one calls ``parse_object``
    with its position, so this slower pass runs only for a file known to have the mistake.
    """
    positions: list[tuple[str, int]] = []
    starts: list[int] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({key for key, _ in items}) != len(items):
            positions.append((first_repeated(key for key, _ in items), starts[-1] - 1))
        return dict(items)

    # parse_object and the pure-Python scanner are real but absent from the type stubs.
    decoder: Any = json.JSONDecoder(object_pairs_hook=pairs, parse_constant=str)
    scanners: Any = json.scanner
    parse_object = decoder.parse_object

    def located_parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
        starts.append(s_and_end[1])
        try:
            return parse_object(s_and_end, *args)
        finally:
            starts.pop()

    decoder.parse_object = located_parse_object
    decoder.scan_once = scanners.py_make_scanner(decoder)
    try:
        decoder.decode(text)
    except (RecursionError, ValueError):
        positions = [(key, -1) for key in keys]
    problems = []
    for key, offset in positions:
        line = text.count("\n", 0, offset) + 1 if offset >= 0 else None
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1 if offset >= 0 else None
        problems.append(
            DatasetProblem(
                file=file,
                message=f"the key {key!r} appears twice in the object starting here",
                hint="keep one; the later one would silently replace the first",
                line=line,
                column=column,
            )
        )
    return problems


# -- YAML -------------------------------------------------------------------------------------


def _parse_yaml(text: str, file: str, max_bytes: int) -> Any:
    try:
        # A document of the size limit spells out at most about one value per two bytes.
        return parse_yaml(text, max_nodes=max(max_bytes // 2, 1000))
    except YamlProblem as exc:
        raise DatasetError(
            [
                DatasetProblem(
                    file=file,
                    message=exc.message,
                    line=exc.line,
                    column=exc.column,
                    hint=exc.hint,
                )
            ]
        ) from None
    except RecursionError:
        raise DatasetError([_too_deep(file)]) from None
