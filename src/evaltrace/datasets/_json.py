"""JSON as dataset files are read: every repeated key found, every value JSON cannot hold kept.

``json.loads`` keeps the last of an object's repeated keys without a word, and reads ``NaN``
or a number too long to convert as the parser pleases. A dataset file (JSON, or each line of
a JSONL one) is parsed here instead: a repeated key is returned for the caller to report
where it can (the line of a JSONL file, the object's line and column in a JSON one), and a
value JSON cannot hold becomes an :class:`~evaltrace.datasets._validation_problems.Unreadable`
that validation reports at its place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evaltrace.datasets._validation_problems import parse_constant, parse_float, parse_int

__all__ = ["first_repeated", "parse_json", "strict_decoder"]


def strict_decoder(repeated: list[str]) -> json.JSONDecoder:
    """A decoder that appends to ``repeated`` the first repeated key of each object repeating one.

    Values JSON cannot hold become :class:`~evaltrace.datasets._validation_problems.Unreadable`.
    """

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) != len(items):
            repeated.append(first_repeated(key for key, _ in items))
        return result

    return json.JSONDecoder(
        object_pairs_hook=pairs,
        parse_int=parse_int,
        parse_float=parse_float,
        parse_constant=parse_constant,
    )


def parse_json(text: str) -> tuple[Any, list[str]]:
    """``text`` parsed, and the first repeated key of each object that repeats one.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON.
        RecursionError: It nests deeper than Python can follow.

    Example:
        >>> parse_json('{"a": 1, "b": {"c": 2, "c": 3}}')
        ({'a': 1, 'b': {'c': 3}}, ['c'])
    """
    repeated: list[str] = []
    data = strict_decoder(repeated).decode(text)
    return data, repeated


def first_repeated(keys: Iterable[str]) -> str:
    """The first of ``keys`` seen twice (``""``: none is)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            return key
        seen.add(key)
    return ""
