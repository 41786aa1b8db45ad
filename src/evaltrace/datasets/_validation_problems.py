"""Turning pydantic's validation errors about a dataset into :class:`DatasetProblem` values.

Pydantic locates an error by a tuple such as ``("entries", 3, "eval_input", 0, "name")``; it
also inserts the names of union members (``"fscore"`` for a discriminated aggregator spec,
``"json-or-python[...]"`` inside a JSON value). The location is rendered without those (and
without the ``check`` that holds a check item inside its evaluator spec), and the model at
the location supplies the known keys for suggesting a misspelt one.

A problem with a check's value (a regular expression that does not compile, a schema that is
not a JSON schema) is also given its line and column in the file, when the caller can find
them (:data:`Locator`).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias

from pydantic import BaseModel, JsonValue
from pydantic_core import ErrorDetails

from evaltrace.datasets.model import CheckSpec, Dataset, EvaluatorSpec
from evaltrace.datasets.problems import DatasetProblem, closest, describe_value, format_location

__all__ = [
    "Locator",
    "Unreadable",
    "parse_constant",
    "parse_float",
    "parse_int",
    "problems_from_errors",
]

Locator: TypeAlias = Callable[[Sequence[str | int]], tuple[int, int] | None]
"""Finds where a value is in the file's text: its path (``["evaluators", 1, "value"]``) to its
1-based line and column, or ``None`` when it cannot be found."""

_LOCATED: Final = frozenset({"check_value"})
"""The kinds of problem given a line and column: those whose fix is in the value itself."""


class Unreadable:
    """Stands in for a value the parser could read but JSON cannot hold (``NaN``, ``1e999``).

    Validation rejects it where it stands, so the problem is reported at its location in the
    document (which the JSON parser itself cannot give).

    Args:
        text: The value as written (shortened).
        reason: What is wrong with it.
        hint: How to fix it.
    """

    def __init__(self, text: str, *, reason: str, hint: str) -> None:
        self.text = text
        """The value as written (shortened)."""
        self.reason = reason
        """What is wrong with it."""
        self.hint = hint
        """How to fix it."""

    def __repr__(self) -> str:
        return self.text


def parse_int(text: str) -> int | Unreadable:
    """A JSON integer; an :class:`Unreadable` when it is too long to convert."""
    try:
        return int(text)
    except ValueError:  # longer than sys.get_int_max_str_digits()
        return Unreadable(
            f"{text[:12]}... ({len(text)} digits)",
            reason="the number is too long",
            hint="write very long numbers as strings",
        )


def parse_float(text: str) -> float | Unreadable:
    """A JSON number; an :class:`Unreadable` when it is out of range."""
    value = float(text)
    if math.isfinite(value):
        return value
    return Unreadable(text, reason="the number is out of range", hint="write it as a string")


def parse_constant(name: str) -> Unreadable:
    """``NaN`` and ``Infinity``, which JSON cannot hold, as :class:`Unreadable`."""
    return Unreadable(name, reason=f"{name} is not a JSON number", hint="write null or a string")


_EXPECTED_BY_TYPE: Final[Mapping[str, str]] = {
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "an array",
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}

_UNION_NOISE: Final = ("is_instance_of",)  # the Unset member of ``JsonValue | Unset``


def problems_from_errors(
    errors: Sequence[ErrorDetails],
    *,
    file: str,
    root: type[BaseModel] = Dataset,
    locate: Locator | None = None,
) -> list[DatasetProblem]:
    """One problem per pydantic error about a document validated as ``root``.

    Args:
        errors: ``ValidationError.errors()``.
        file: How problems name the file.
        root: The model the document was validated as.
        locate: Finds a value's line and column in the file (for a check's value).
    """
    problems = []
    for error in errors:
        if error["type"] in _UNION_NOISE:
            continue
        parts, parent = _walk(root, error["loc"])
        problem = _problem(error, file, parts, parent)
        if locate is not None and error["type"] in _LOCATED:
            found = locate(parts)
            if found is not None:
                problem = dataclasses.replace(problem, line=found[0], column=found[1])
        problems.append(problem)
    return problems


def _problem(
    error: ErrorDetails, file: str, parts: list[str | int], parent: object
) -> DatasetProblem:
    kind = error["type"]
    location = format_location(parts)
    value = error.get("input")
    if isinstance(value, Unreadable):
        return DatasetProblem(
            file=file, location=location, message=value.reason, found=value.text, hint=value.hint
        )
    found = describe_value(value)
    key = parts[-1] if parts else ""
    if kind == "missing":
        return DatasetProblem(
            file=file,
            location=location,
            message=f"missing required key {key!r}",
            expected=_describe_type(_field_type(parent, key)),
        )
    if kind == "extra_forbidden":
        known = _known_keys(parent)
        suggestion = closest(str(key), known)
        listed = ", ".join(repr(name) for name in known)
        return DatasetProblem(
            file=file,
            location=location,
            message=f"unknown key {key!r}",
            hint=(f"did you mean {suggestion!r}? " if suggestion else "")
            + f"the keys here are {listed}",
        )
    if kind == "recursion_depth_exceeded":
        return DatasetProblem(
            file=file,
            location=format_location(parts[:8]) + ("..." if len(parts) > 8 else ""),
            message="the value nests too deeply to be read",
            hint="flatten the data",
        )
    if kind == "invalid-json-value":
        return DatasetProblem(
            file=file,
            location=location,
            message="not a JSON value",
            expected="a string, number, boolean, null, array or object",
            found=found,
            hint="YAML tags such as !!binary, !!set or !!timestamp build values JSON cannot "
            "hold; quote the value",
        )
    if kind == "too_short" and parts == ["entries"]:
        return DatasetProblem(
            file=file,
            location=location,
            message="a dataset needs at least one entry",
            expected="a non-empty array of entries",
            found=found,
        )
    if kind == "string_too_short":
        return DatasetProblem(
            file=file, location=location, message="must not be empty", expected="a non-empty string"
        )
    if kind in _EXPECTED_BY_TYPE:
        return DatasetProblem(
            file=file,
            location=location,
            message="wrong type",
            expected=_EXPECTED_BY_TYPE[kind],
            found=found,
        )
    if kind == "evaluator_spec_type":
        return DatasetProblem(
            file=file,
            location=location,
            message="not an evaluator",
            expected="an evaluator name, an object with 'name' (and optionally 'args', "
            "'aggregators'), or a check with 'type' (and 'value')",
            found=found,
        )
    if kind == "check_value":
        context = error.get("ctx", {})
        return DatasetProblem(
            file=file,
            location=location,
            message=str(context.get("message") or error["msg"]),
            expected=context.get("expected"),
            found=context.get("found"),
            hint=context.get("hint"),
        )
    if kind == "literal_error":
        return DatasetProblem(
            file=file,
            location=location,
            message="unknown value",
            expected=f"one of {error.get('ctx', {}).get('expected', '?')}",
            found=found,
        )
    message = error["msg"].removeprefix("Value error, ")
    return DatasetProblem(file=file, location=location, message=message, found=found)


def _walk(root: type[BaseModel], loc: Sequence[str | int]) -> tuple[list[str | int], object]:
    """The rendered parts of ``loc``, and the type holding its last part."""
    current: object = root
    parent: object = root
    parts: list[str | int] = []
    labelled = False  # inside a JSON value pydantic labels each level ("dict", "list") first
    for part in loc:
        parent = current = _strip(current)
        if current is JsonValue:
            if not labelled and isinstance(part, str) and _is_member_label(part):
                labelled = True
            else:
                parts.append(part)
                labelled = False
            continue
        if isinstance(part, int):
            parts.append(part)
            current = _item_type(current)
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            if current is EvaluatorSpec and part == "check":
                current = CheckSpec  # a check item is the spec in the file: no key of its own
                continue
            parts.append(part)
            current = _field_type(current, part)
            continue
        members = _union_members(current)
        if members:
            chosen = _member_tagged(members, part)
            if chosen is not None or _is_member_label(part):
                current = chosen if chosen is not None else JsonValue
                continue
        parts.append(part)
        current = _value_type(current)
    return parts, parent


def _strip(annotation: object) -> object:
    """``T`` from ``Annotated[T, ...]`` and from ``T | None``."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    members = _union_members(annotation)
    if members:
        rest = [member for member in members if member is not type(None)]
        if len(rest) == 1:
            return _strip(rest[0])
    return annotation


def _union_members(annotation: object) -> tuple[object, ...]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return ()


def _member_tagged(members: Sequence[object], tag: str) -> object | None:
    """The model among ``members`` whose literal ``type`` (discriminator) default is ``tag``."""
    for member in members:
        if isinstance(member, type) and issubclass(member, BaseModel):
            field = member.model_fields.get("type")
            if field is not None and field.default == tag:
                return member
    return None


def _is_member_label(part: str) -> bool:
    return "[" in part or part in _MEMBER_LABELS


_MEMBER_LABELS: Final = frozenset({"list", "dict", "str", "int", "float", "bool", "none"})


def _item_type(annotation: object) -> object:
    if typing.get_origin(annotation) in (list, Sequence, tuple):
        args = typing.get_args(annotation)
        return args[0] if args else None
    return None


def _value_type(annotation: object) -> object:
    if typing.get_origin(annotation) in (dict, Mapping):
        args = typing.get_args(annotation)
        return args[1] if len(args) == 2 else None
    return None


def _field_type(model: object, key: str | int) -> object:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field.annotation
    return None


def _known_keys(model: object) -> list[str]:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _describe_type(annotation: object) -> str | None:
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "an object"
    origin = typing.get_origin(annotation) or annotation
    if origin in (dict, Mapping):
        return "an object"
    if origin in (list, Sequence):
        return "an array"
    if origin is str:
        return "a string"
    return None
