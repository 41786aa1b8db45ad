"""Deterministic evaluators with pydantic-evals' names and meanings.

* :class:`Contains`: the output contains a value (a substring of a text, a key/value subset
  of an object, a member of a list);
* :class:`IsInstance`: the output is of a type, by name;
* :class:`MaxDuration`: the runnable finished within a time;
* :class:`HasMatchingSpan`: some span of the trace matches a
  :class:`~evaltrace.trace.SpanQuery`.

Each scores 1.0 or 0.0 and says why; each is registered under its name, so a dataset file
names it like any evaluator (``{"name": "Contains", "args": {"value": "Paris"}}``).

The output checked is the run's output as evaluators see it: its one output, or several
collapsed into ``{name: value}`` (``output=`` picks one by name). What an app returns or
records is kept as JSON data, so an object (a pydantic model, a dataclass) is checked as the
JSON object it was recorded as. An entry without output is skipped by the output checks,
one that did not run by :class:`MaxDuration`, one without a trace by :class:`HasMatchingSpan`.

Example:
    >>> from evaltrace.evals import Evaluable, NamedData
    >>> case = Evaluable(eval_output=[NamedData(name="answer", value={"city": "Paris"})])
    >>> Contains({"city": "Paris"}).evaluate(EvaluatorContext(evaluable=case)).score
    1.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from pydantic import ValidationError

from evaltrace._safe_text import type_name
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import Evaluator
from evaltrace.metrics.registry import shown
from evaltrace.trace.query import SpanQuery
from evaltrace.trace.tree import walk_trace

__all__ = [
    "Contains",
    "HasMatchingSpan",
    "IsInstance",
    "MaxDuration",
    "checked_output",
    "output_text",
]

_SHOWN: Final = 100
_JSON_TYPES: Final = "str, int, float, bool, list, dict or NoneType"


def checked_output(ctx: EvaluatorContext, output: str | None) -> tuple[Any] | str:
    """The output to check, in a 1-tuple, or why there is none.

    Args:
        ctx: The entry.
        output: The name of the output to check; ``None`` for the run's output (its one
            output, or several collapsed into ``{name: value}``).

    Example:
        >>> from evaltrace.evals import Evaluable, NamedData
        >>> case = Evaluable(eval_output=[NamedData(name="answer", value="Paris")])
        >>> checked_output(EvaluatorContext(evaluable=case), None)
        ('Paris',)
    """
    items = ctx.evaluable.eval_output
    if not items:
        return "no output to check: the run recorded none"
    if output is None:
        return (ctx.output(),)
    for item in items:
        if item.name == output:
            return (item.value,)
    names = ", ".join(repr(item.name) for item in items)
    return f"no output named {output!r} to check (the run recorded {names})"


def output_text(value: Any) -> str:
    """``value`` as text: a string as it is, anything else as its JSON text.

    Example:
        >>> output_text({"city": "Paris"}), output_text("Paris")
        ('{"city": "Paris"}', 'Paris')
    """
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON data: an evaluable given in code may hold any
        return repr(value)


def _check_output_name(output: object) -> None:
    if output is not None and not (isinstance(output, str) and output):
        raise TypeError(f"output must be None or an output's name, got {output!r}")


class Contains(Evaluator):
    """The output contains ``value``.

    * A text output (with a text ``value``, or with ``as_strings=True`` whatever the types)
      contains ``value`` as a substring; ``case_sensitive=False`` ignores case.
    * An object output contains every key of an object ``value`` with the same value; with
      any other ``value``, it has ``value`` as a key.
    * A list output has ``value`` as a member.

    Any other output (a number, ``null``) contains nothing, unless compared as text.

    Args:
        value: What the output must contain.
        case_sensitive: Compare texts with their case (texts only).
        as_strings: Compare the text of the output with the text of ``value`` (JSON text for
            what is not a string).
        output: The name of the output to check (the run's output when ``None``).
        name: The display name (``"Contains"`` by default).

    Example:
        >>> evaluator = Contains("paris", case_sensitive=False)
    """

    def __init__(
        self,
        value: Any,
        case_sensitive: bool = True,
        as_strings: bool = False,
        *,
        output: str | None = None,
        name: str | None = None,
    ) -> None:
        _check_output_name(output)
        self.value = value
        """What the output must contain."""
        self.case_sensitive = case_sensitive
        """Whether texts are compared with their case."""
        self.as_strings = as_strings
        """Whether output and value are compared as texts."""
        self.output = output
        """The name of the output checked, or ``None`` for the run's output."""
        self.name = name or "Contains"
        """The display name."""

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score 1.0 when the output contains the value, else 0.0 saying what is missing."""
        found = checked_output(ctx, self.output)
        if isinstance(found, str):
            return Evaluation.skip(found, evaluator=self.name)
        output = found[0]
        missing = self._missing(output)
        if missing is None:
            reasoning = f"the output contains {shown(self.value, _SHOWN)}"
            return Evaluation(score=1.0, reasoning=reasoning, evaluator=self.name)
        return Evaluation(score=0.0, reasoning=missing, evaluator=self.name)

    def _missing(self, output: Any) -> str | None:
        """Why ``output`` does not contain the value, or ``None`` when it does."""
        if self.as_strings or (isinstance(output, str) and isinstance(self.value, str)):
            text, wanted = output_text(output), output_text(self.value)
            if not self.case_sensitive:
                text, wanted = text.casefold(), wanted.casefold()
            if wanted in text:
                return None
            return (
                f"the output {shown(output_text(output), _SHOWN)} does not contain "
                f"{shown(output_text(self.value), _SHOWN)}"
            )
        if isinstance(output, Mapping):
            if not isinstance(self.value, Mapping):
                if _is_key(self.value, output):
                    return None
                return f"the output has no key {shown(self.value, _SHOWN)}"
            for key, expected in self.value.items():
                if key not in output:
                    return f"the output has no key {shown(key, 30)}"
                if output[key] != expected:
                    return (
                        f"the output's {shown(key, 30)} is {shown(output[key], _SHOWN)}, not "
                        f"{shown(expected, _SHOWN)}"
                    )
            return None
        if isinstance(output, list | tuple):
            if any(item == self.value for item in output):
                return None
            return f"the output {shown(output, _SHOWN)} has no member {shown(self.value, _SHOWN)}"
        return (
            f"the output is {type_name(output)} {shown(output, _SHOWN)}, which contains "
            "nothing; pass as_strings=True to compare its text"
        )


def _is_key(value: Any, mapping: Mapping[Any, Any]) -> bool:
    try:
        return value in mapping
    except TypeError:  # an unhashable value is the key of nothing
        return False


class IsInstance(Evaluator):
    """The output is an instance of the type called ``type_name`` (or of a subclass of it).

    The output is the JSON data the run recorded, so its type is one of ``str``, ``int``,
    ``float``, ``bool``, ``list``, ``dict`` and ``NoneType`` (and ``bool`` is an ``int``, as in
    Python): an object the app returned (a pydantic model, a dataclass) is a ``dict``.

    Args:
        type_name: The type's name (or qualified name), e.g. ``"str"`` or ``"dict"``.
        output: The name of the output to check (the run's output when ``None``).
        name: The display name (``"IsInstance"`` by default).

    Example:
        >>> evaluator = IsInstance("dict", output="answer")
    """

    def __init__(
        self, type_name: str, *, output: str | None = None, name: str | None = None
    ) -> None:
        if not isinstance(type_name, str) or not type_name:
            raise TypeError(f"type_name must be a type's name such as 'str', got {type_name!r}")
        _check_output_name(output)
        self.type_name = type_name
        """The type's name."""
        self.output = output
        """The name of the output checked, or ``None`` for the run's output."""
        self.name = name or "IsInstance"
        """The display name."""

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score 1.0 when the output's type (or a base of it) has the name, else 0.0."""
        found = checked_output(ctx, self.output)
        if isinstance(found, str):
            return Evaluation.skip(found, evaluator=self.name)
        kind = type(found[0])
        if any(self.type_name in (cls.__name__, cls.__qualname__) for cls in kind.__mro__):
            reasoning = f"the output is a {kind.__name__}"
            return Evaluation(score=1.0, reasoning=reasoning, evaluator=self.name)
        reasoning = f"the output is a {kind.__qualname__}, not a {self.type_name}"
        if self.type_name not in _JSON_TYPES:
            reasoning += f" (outputs are recorded as JSON data: {_JSON_TYPES})"
        return Evaluation(score=0.0, reasoning=reasoning, evaluator=self.name)


class MaxDuration(Evaluator):
    """The runnable finished within ``seconds``: its wall time, ``EvaluatorContext.duration_s``.

    An entry that did not run (an evaluable scored as given) is skipped; one scored from a
    stored trace is timed by its root span.

    Args:
        seconds: The longest run allowed, in seconds or as a :class:`~datetime.timedelta`.
        name: The display name (``"MaxDuration"`` by default).

    Raises:
        ValueError: ``seconds`` is negative or not a finite number.

    Example:
        >>> evaluator = MaxDuration(seconds=2.5)
    """

    def __init__(self, seconds: float | timedelta, *, name: str | None = None) -> None:
        limit = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int | float)
            or not math.isfinite(limit)
            or limit < 0
        ):
            raise ValueError(f"seconds must be a number of seconds >= 0, got {seconds!r}")
        self.seconds = float(limit)
        """The longest run allowed, in seconds."""
        self.name = name or "MaxDuration"
        """The display name."""

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score 1.0 when the run took at most the limit, else 0.0 saying how long it took."""
        duration = ctx.duration_s
        if duration is None:
            return Evaluation.skip(
                "nothing ran, so there is no duration to check", evaluator=self.name
            )
        within = duration <= self.seconds
        relation = "within" if within else "more than"
        reasoning = f"the run took {duration:.3g} s, {relation} {self.seconds:g} s"
        return Evaluation(score=float(within), reasoning=reasoning, evaluator=self.name)


def _problems(error: ValidationError) -> str:
    """Each problem of a span query on one line: where, then what (``kind: unknown key``)."""
    described = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "the query"
        what = "unknown key" if problem["type"] == "extra_forbidden" else problem["msg"]
        described.append(f"{where}: {what.removeprefix('Value error, ')}")
    return "; ".join(described)


class HasMatchingSpan(Evaluator):
    """Some span of the trace matches ``query``.

    Args:
        query: A :class:`~evaltrace.trace.SpanQuery`, or the same as a dict (as a dataset file
            writes it).
        name: The display name (``"HasMatchingSpan"`` by default).

    Raises:
        ValueError: ``query`` is not a valid span query (the message names the key).

    Example:
        >>> evaluator = HasMatchingSpan({"has_kind": "tool", "name_equals": "search"})
    """

    def __init__(self, query: SpanQuery | Mapping[str, Any], *, name: str | None = None) -> None:
        if isinstance(query, SpanQuery):
            self.query = query
            """The query."""
        else:
            try:
                self.query = SpanQuery.model_validate(query)
            except ValidationError as exc:
                raise ValueError(f"query is not a valid span query: {_problems(exc)}") from None
        self.name = name or "HasMatchingSpan"
        """The display name."""

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score 1.0 when a span matches (the reasoning names the first), else 0.0."""
        if ctx.trace is None:
            return Evaluation.skip("no trace to search: nothing ran", evaluator=self.name)
        count = 0
        for node in walk_trace(ctx.trace):
            count += 1
            if self.query(node):
                reasoning = f"span {node.span.name!r} matches {self.query}"
                return Evaluation(score=1.0, reasoning=reasoning, evaluator=self.name)
        spans = f"{count} span{'' if count == 1 else 's'}"
        reasoning = f"none of the {spans} of the trace matches {self.query}"
        return Evaluation(score=0.0, reasoning=reasoning, evaluator=self.name)
