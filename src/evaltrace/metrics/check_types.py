"""Checks written as data: ``{"type": "contains", "value": "Paris"}``, as promptfoo writes them.

A check type (:class:`CheckType`) is registered under its name; :class:`Check` is the evaluator
that applies one to an entry, scoring 1.0 when it passes and 0.0 when it fails, with a reason
either way. Every type has a ``not-`` form that passes when the check fails
(``{"type": "not-contains", "value": "sorry"}``). The built-in types:

================ ============================= ===================================================
type             value                         passes when
================ ============================= ===================================================
equals           any JSON value                the output is the value (a text value: the
                                               output's text; other values: the output's data,
                                               a text output read as JSON first)
contains         a string                      the output's text contains it
icontains        a string                      the same, ignoring case
contains-any     a list of strings             the output's text contains one of them
icontains-any    a list of strings             the same, ignoring case
contains-all     a list of strings             the output's text contains each of them
icontains-all    a list of strings             the same, ignoring case
starts-with      a string                      the output's text starts with it
regex            a regular expression          it matches somewhere in the output's text
                                               (Python's :mod:`re` syntax)
is-json          none, or a JSON schema        the output is JSON (text that parses, or data),
                                               following the schema when one is given
json-schema      a JSON schema                 the output is JSON following the schema
max-length       a whole number                the output's text has at most that many
                                               characters
max-duration     a number of seconds           the runnable finished within that time
max-latency      a number of seconds           the same: the app's wall time is at most that
max-cost         an amount (the price table's  the app's model calls (read from its trace) cost
                 currency)                     at most that, by the run's price table
                                               (``--prices``, ``EVALTRACE_PRICES``, ``prices=``)
================ ============================= ===================================================

The output's text is the output itself when it is a string, else its JSON text. The output is
the run's output as evaluators see it (``"output": "<name>"`` picks a named one); an entry
without output is skipped, as is one that did not run for ``max-duration`` and
``max-latency``. ``max-cost`` without a price table, or with calls it cannot price (a model
it has no price for, a call that recorded no tokens), is an error of the evaluation that says
why: a cost is never taken to be zero.

A value that does not fit its type (a regular expression that does not compile, a schema
that is not a JSON schema, a list where a string is wanted) is refused when the check is
made: in a dataset file, that is a problem of the file, located by line and column.

:func:`register_check` adds a type (its ``not-`` form comes with it).

Example:
    >>> from evaltrace.evals import Evaluable, EvaluatorContext, NamedData
    >>> ctx = EvaluatorContext(evaluable=Evaluable(eval_output=[NamedData(name="a", value="Hi!")]))
    >>> result = Check("not-icontains", "sorry").evaluate(ctx)
    >>> result.evaluator, result.score, result.reasoning
    ('not-icontains "sorry"', 1.0, "the output 'Hi!' does not contain 'sorry' (ignoring case)")
"""

from __future__ import annotations

import difflib
import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from pydantic import JsonValue

from evaltrace._safe_text import type_name
from evaltrace.errors import EvaltraceError, MissingPriceError
from evaltrace.evals.context import EvaluatorContext
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluation import Evaluation
from evaltrace.evals.evaluator import Evaluator
from evaltrace.llm.calls import app_model_usage
from evaltrace.llm.prices import current_prices
from evaltrace.metrics.deterministic import checked_output, output_text
from evaltrace.metrics.registry import shown

__all__ = [
    "MISSING",
    "NOT_PREFIX",
    "Check",
    "CheckOutcome",
    "CheckType",
    "CheckValueError",
    "UnknownCheckTypeError",
    "check_name",
    "check_type_names",
    "closest_check_type",
    "lookup_check_type",
    "register_check",
]

NOT_PREFIX: Final = "not-"
"""The prefix of a check type that passes when the check it names fails."""

_SHOWN: Final = 80
_NAME_VALUE_WIDTH: Final = 40


class CheckValueError(EvaltraceError, ValueError):
    """A check's value does not fit its type; says what was expected and what was found.

    Args:
        message: What is wrong.
        expected: What would have been valid.
        found: What was given instead.
        hint: How to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        text = message
        if expected is not None:
            text += f"; expected {expected}"
        if found is not None:
            text += f", found {found}" if expected is not None else f"; found {found}"
        if hint:
            text += f"; {hint}"
        super().__init__(text)
        self.message = message
        """What is wrong."""
        self.expected = expected
        """What would have been valid."""
        self.found = found
        """What was given instead."""
        self.hint = hint
        """How to fix it."""


class UnknownCheckTypeError(EvaltraceError, KeyError):
    """No check type is registered under the name given (the message suggests the closest)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _Missing:
    """Stands for a value that was not given (``None`` is a value: JSON ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""The value of a check given without ``value``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckOutcome:
    """What a check found: whether what it states holds, and the finding in words."""

    holds: bool
    """Whether the check's statement holds (``contains``: the text contains the value); its
    ``not-`` form passes when it does not."""
    reason: str
    """What was found, read as the reason whichever form was asked: ``"the output 'Lyon'
    does not contain 'Paris'"``."""


Prepare: TypeAlias = Callable[[Any], Any]
"""Checks a check's value (:data:`MISSING` when none was given) and returns what the check
runs with (a compiled pattern, a schema validator); raises :class:`CheckValueError`."""

Run: TypeAlias = Callable[[Any, EvaluatorContext, Any], "CheckOutcome | str"]
"""``(prepared value, context, output) -> outcome``, or a string: why the entry is skipped.
``output`` is the output checked (``None`` for a type that does not read it)."""


@dataclass(frozen=True, kw_only=True)
class CheckType:
    """A kind of check, registered under :attr:`name`.

    Example:
        >>> shouting = CheckType(
        ...     name="all-caps",
        ...     value="none",
        ...     summary="the output's text is in capitals",
        ...     prepare=lambda value: None,
        ...     run=lambda _, ctx, output: CheckOutcome(
        ...         holds=output_text(output).isupper(), reason="checked the case"),
        ... )
    """

    name: str
    """The name a check gives as its ``type``, e.g. ``"contains"``."""
    value: str
    """What its ``value`` is, in words (for messages and documentation)."""
    summary: str
    """When it passes, in words."""
    prepare: Prepare
    """Checks the value (see :data:`Prepare`)."""
    run: Run
    """Applies the check to one entry (see :data:`Run`)."""
    reads_output: bool = True
    """Whether it checks the output (an entry without output is then skipped)."""


_registry: dict[str, CheckType] = {}
_lock = threading.Lock()


def register_check(check_type: CheckType, *, replace: bool = False) -> CheckType:
    """Make a check type available to :class:`Check` and dataset files, with its ``not-`` form.

    Args:
        check_type: The definition.
        replace: Allow replacing a type registered under the same name.

    Returns:
        ``check_type``.

    Raises:
        ValueError: The name is empty, starts with ``not-``, or is taken and ``replace`` is
            false.

    Example:
        >>> _ = register_check(CheckType(
        ...     name="is-empty", value="none", summary="the output's text is empty",
        ...     prepare=lambda value: None,
        ...     run=lambda _, ctx, output: CheckOutcome(
        ...         holds=not output_text(output), reason="looked at the text"),
        ... ), replace=True)
        >>> "not-is-empty" in check_type_names()
        True
    """
    name = check_type.name
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"a check type's name must be a non-empty word, got {name!r}")
    if name.startswith(NOT_PREFIX):
        raise ValueError(
            f"{name!r} cannot be a check type's name: 'not-' forms come with each type; "
            f"register {name.removeprefix(NOT_PREFIX)!r}"
        )
    with _lock:
        if name in _registry and not replace and _registry[name] is not check_type:
            raise ValueError(f"a check type {name!r} is already registered; pass replace=True")
        _registry[name] = check_type
    return check_type


def lookup_check_type(name: str) -> tuple[CheckType, bool]:
    """The check type called ``name``, and whether it is the ``not-`` form.

    Raises:
        UnknownCheckTypeError: No type has that name (the message suggests the closest).

    Example:
        >>> check_type, negated = lookup_check_type("not-contains")
        >>> check_type.name, negated
        ('contains', True)
    """
    negated = name.startswith(NOT_PREFIX)
    with _lock:
        found = _registry.get(name.removeprefix(NOT_PREFIX))
    if found is not None:
        return found, negated
    suggestion = closest_check_type(name)
    hint = f"; did you mean {suggestion!r}?" if suggestion else ""
    raise UnknownCheckTypeError(f"no check type is called {name!r}{hint}")


def check_type_names() -> list[str]:
    """Every check type's name and its ``not-`` form, sorted.

    Example:
        >>> "not-regex" in check_type_names()
        True
    """
    with _lock:
        names = list(_registry)
    return sorted([*names, *(NOT_PREFIX + name for name in names)])


def closest_check_type(name: str) -> str | None:
    """The registered check type (or ``not-`` form) most like ``name``, if any is close."""
    matches = difflib.get_close_matches(name, check_type_names(), n=1, cutoff=0.6)
    return matches[0] if matches else None


def check_name(type_: str, value: Any) -> str:
    """The display name of a check: its type and its value, shortened.

    Example:
        >>> check_name("contains-any", ["Paris", "Lyon"])
        'contains-any ["Paris", "Lyon"]'
    """
    if value is MISSING:
        return type_
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return f"{type_} {short_text(text, _NAME_VALUE_WIDTH)}"


class Check(Evaluator):
    """An evaluator applying one check type, as a dataset file's ``{"type": ..., "value": ...}``.

    Args:
        type: A registered check type, or its ``not-`` form (see the module documentation).
        value: The check's value (left out for a type that takes none, such as ``is-json``).
        output: The name of the output to check (the run's output when ``None``).
        name: The display name; by default the type and the value, e.g. ``contains "Paris"``.

    Raises:
        UnknownCheckTypeError: No such type.
        CheckValueError: ``value`` does not fit the type (a bad regular expression or
            schema, a value of the wrong kind, a missing value).

    Example:
        >>> Check("contains-any", ["Paris", "Lyon"]).name
        'contains-any ["Paris", "Lyon"]'
    """

    def __init__(
        self,
        type: str,
        value: Any = MISSING,
        *,
        output: str | None = None,
        name: str | None = None,
    ) -> None:
        if output is not None and not (isinstance(output, str) and output):
            raise TypeError(f"output must be None or an output's name, got {output!r}")
        self._type, self._negated = lookup_check_type(type)
        self._prepared = self._type.prepare(value)
        self.type = type
        """The check type, as given (``"not-contains"``)."""
        self.value = value
        """The value, as given (:data:`MISSING` when none was)."""
        self.output = output
        """The name of the output checked, or ``None`` for the run's output."""
        self.name = name or check_name(type, value)
        """The display name."""

    def evaluate(self, ctx: EvaluatorContext) -> Evaluation:
        """Score 1.0 when the check passes, 0.0 when it fails, with what was found."""
        output: Any = None
        if self._type.reads_output:
            found = checked_output(ctx, self.output)
            if isinstance(found, str):
                return Evaluation.skip(found, evaluator=self.name)
            output = found[0]
        outcome = self._type.run(self._prepared, ctx, output)
        if isinstance(outcome, str):
            return Evaluation.skip(outcome, evaluator=self.name)
        passed = outcome.holds != self._negated
        return Evaluation(score=float(passed), reasoning=outcome.reason, evaluator=self.name)


# --- the built-in types -------------------------------------------------------------------------


_JSON_KINDS: Final = {dict: "object", list: "array", str: "string", bool: "boolean"}


def _found(value: Any) -> str:
    """A value as a dataset problem shows it: its JSON kind and an excerpt."""
    if value is MISSING:
        return "no value"
    if value is None:
        return "null"
    kind = _JSON_KINDS.get(type(value)) or (
        "number" if isinstance(value, int | float) else type_name(value)
    )
    return f"{kind} {short_text(value, 40)}"


def _needs_value(type_: str, value: Any, expected: str) -> None:
    if value is MISSING:
        raise CheckValueError(
            f"a {type_!r} check needs a value", expected=expected, hint="add 'value'"
        )


def _text_value(type_: str) -> Prepare:
    def prepare(value: Any) -> str:
        _needs_value(type_, value, "a string")
        if not isinstance(value, str):
            raise CheckValueError(
                f"not a value for a {type_!r} check",
                expected="a string",
                found=_found(value),
            )
        return value

    return prepare


def _texts_value(type_: str) -> Prepare:
    def prepare(value: Any) -> list[str]:
        expected = 'a non-empty list of strings, e.g. ["Paris", "Lyon"]'
        _needs_value(type_, value, expected)
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(item, str) for item in value)
        ):
            raise CheckValueError(
                f"not a value for a {type_!r} check",
                expected=expected,
                found=_found(value),
            )
        return list(value)

    return prepare


def _shown_output(text: str) -> str:
    return shown(text, _SHOWN)


def _fold(text: str, ignore_case: bool) -> str:
    return text.casefold() if ignore_case else text


def _case_note(ignore_case: bool) -> str:
    return " (ignoring case)" if ignore_case else ""


def _contains(ignore_case: bool) -> Run:
    def run(value: str, ctx: EvaluatorContext, output: Any) -> CheckOutcome:
        text = output_text(output)
        at = _fold(text, ignore_case).find(_fold(value, ignore_case))
        note = _case_note(ignore_case)
        if at >= 0:
            return CheckOutcome(
                holds=True,
                reason=f"the output contains {shown(value, 40)}{note}, at character {at}",
            )
        return CheckOutcome(
            holds=False,
            reason=f"the output {_shown_output(text)} does not contain {shown(value, 40)}{note}",
        )

    return run


def _contains_any(ignore_case: bool) -> Run:
    def run(values: list[str], ctx: EvaluatorContext, output: Any) -> CheckOutcome:
        text = output_text(output)
        folded = _fold(text, ignore_case)
        note = _case_note(ignore_case)
        for value in values:
            if _fold(value, ignore_case) in folded:
                return CheckOutcome(
                    holds=True, reason=f"the output contains {shown(value, 40)}{note}"
                )
        return CheckOutcome(
            holds=False,
            reason=f"the output {_shown_output(text)} contains none of {shown(values, 60)}{note}",
        )

    return run


def _contains_all(ignore_case: bool) -> Run:
    def run(values: list[str], ctx: EvaluatorContext, output: Any) -> CheckOutcome:
        text = output_text(output)
        folded = _fold(text, ignore_case)
        note = _case_note(ignore_case)
        missing = [value for value in values if _fold(value, ignore_case) not in folded]
        if not missing:
            return CheckOutcome(
                holds=True, reason=f"the output contains each of {shown(values, 60)}{note}"
            )
        return CheckOutcome(
            holds=False,
            reason=f"the output {_shown_output(text)} lacks {shown(missing, 60)}{note}",
        )

    return run


def _starts_with(value: str, ctx: EvaluatorContext, output: Any) -> CheckOutcome:
    text = output_text(output)
    if text.startswith(value):
        return CheckOutcome(holds=True, reason=f"the output starts with {shown(value, 40)}")
    return CheckOutcome(
        holds=False,
        reason=f"the output {_shown_output(text)} does not start with {shown(value, 40)}",
    )


def _regex_value(value: Any) -> re.Pattern[str]:
    pattern = _text_value("regex")(value)
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CheckValueError(
            f"not a regular expression: {exc}", found=shown(pattern, 60)
        ) from None


def _regex(pattern: re.Pattern[str], ctx: EvaluatorContext, output: Any) -> CheckOutcome:
    text = output_text(output)
    match = pattern.search(text)
    shown_pattern = f"/{pattern.pattern}/"
    if match is not None:
        return CheckOutcome(
            holds=True,
            reason=f"the output matches {shown_pattern} at {shown(match.group(0), 40)}",
        )
    return CheckOutcome(
        holds=False, reason=f"the output {_shown_output(text)} does not match {shown_pattern}"
    )


def _equals_value(value: Any) -> Any:
    _needs_value("equals", value, "the expected output (any JSON value)")
    return value


def _equals(value: JsonValue, ctx: EvaluatorContext, output: Any) -> CheckOutcome:
    if isinstance(value, str):
        actual: Any = output_text(output)
    else:
        actual = output
        if isinstance(output, str):
            try:
                actual = json.loads(output)
            except ValueError:
                actual = output
    if _same_json(actual, value):
        return CheckOutcome(holds=True, reason=f"the output is {shown(value, _SHOWN)}")
    return CheckOutcome(
        holds=False, reason=f"the output is {shown(actual, _SHOWN)}, not {shown(value, _SHOWN)}"
    )


def _same_json(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, containers compare deeply."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same_json(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_same_json, left, right))
    return type(left) is type(right) and bool(left == right)


@dataclass(frozen=True, slots=True)
class _Schema:
    """A JSON schema checked once, with the validator that applies it."""

    schema: JsonValue
    validator: Any


def _schema(value: Any, type_: str) -> _Schema:
    import jsonschema  # loaded with the first schema: most runs check none

    if not isinstance(value, dict | bool):
        raise CheckValueError(
            f"not a value for a {type_!r} check",
            expected='a JSON schema object, e.g. {"type": "object", "required": ["city"]}',
            found=_found(value),
        )
    cls = jsonschema.validators.validator_for(value)
    try:
        cls.check_schema(value)
    except jsonschema.SchemaError as exc:
        where = "".join(f"[{part!r}]" for part in exc.path)
        raise CheckValueError(
            f"not a valid JSON schema: {exc.message}" + (f" (at schema{where})" if where else ""),
            hint="see https://json-schema.org/understanding-json-schema",
        ) from None
    return _Schema(schema=value, validator=cls(value))


def _is_json_value(value: Any) -> _Schema | None:
    return None if value is MISSING else _schema(value, "is-json")


def _json_schema_value(value: Any) -> _Schema:
    _needs_value("json-schema", value, "a JSON schema object")
    return _schema(value, "json-schema")


def _is_json(schema: _Schema | None, ctx: EvaluatorContext, output: Any) -> CheckOutcome:
    data = output
    if isinstance(output, str):
        try:
            data = json.loads(output)
        except ValueError as exc:
            return CheckOutcome(
                holds=False, reason=f"the output {_shown_output(output)} is not JSON: {exc}"
            )
    if schema is None:
        return CheckOutcome(holds=True, reason="the output is JSON")
    import jsonschema

    error = jsonschema.exceptions.best_match(schema.validator.iter_errors(data))
    if error is None:
        return CheckOutcome(holds=True, reason="the output is JSON following the schema")
    where = "".join(f"[{part!r}]" for part in error.absolute_path)
    return CheckOutcome(
        holds=False,
        reason=f"the output does not follow the schema: {error.message} (at output{where})",
    )


def _count_value(type_: str, unit: str, whole: bool) -> Prepare:
    def prepare(value: Any) -> float:
        expected = f"a whole number of {unit} >= 0" if whole else f"a number of {unit} >= 0"
        _needs_value(type_, value, expected)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (whole and not isinstance(value, int))
            or not math.isfinite(value)
            or value < 0
        ):
            raise CheckValueError(
                f"not a value for a {type_!r} check",
                expected=expected,
                found=_found(value),
            )
        return float(value)

    return prepare


def _max_length(limit: float, ctx: EvaluatorContext, output: Any) -> CheckOutcome:
    length = len(output_text(output))
    relation = "at most" if length <= limit else "more than"
    return CheckOutcome(
        holds=length <= limit,
        reason=f"the output is {length} characters long, {relation} {limit:g}",
    )


def _max_duration(limit: float, ctx: EvaluatorContext, output: Any) -> CheckOutcome | str:
    duration = ctx.duration_s
    if duration is None:
        return "nothing ran, so there is no duration to check"
    relation = "within" if duration <= limit else "more than"
    return CheckOutcome(
        holds=duration <= limit, reason=f"the run took {duration:.3g} s, {relation} {limit:g} s"
    )


def _max_cost(limit: float, ctx: EvaluatorContext, output: Any) -> CheckOutcome | str:
    if ctx.trace is None:
        return "nothing ran, so there are no model calls to price"
    prices = current_prices()
    cost = prices.cost(app_model_usage(ctx.trace))
    total = cost.total
    if total is None:
        where = f" ({prices.source})" if prices.source else ""
        raise MissingPriceError(
            f"cannot price the app's model calls: {cost.why_unknown()}; add the model to the "
            f"price table{where}"
        )
    relation = "at most" if total <= limit else "more than"
    return CheckOutcome(
        holds=total <= limit,
        reason=(
            f"the app's model calls cost {prices.format(total)}, {relation} {prices.format(limit)}"
        ),
    )


def _builtin_types() -> Sequence[CheckType]:
    text = "a string"
    texts = "a list of strings"
    types = [
        CheckType(
            name="equals",
            value="any JSON value",
            summary="the output is the value",
            prepare=_equals_value,
            run=_equals,
        ),
        CheckType(
            name="starts-with",
            value=text,
            summary="the output's text starts with the value",
            prepare=_text_value("starts-with"),
            run=_starts_with,
        ),
        CheckType(
            name="regex",
            value="a regular expression",
            summary="the regular expression matches somewhere in the output's text",
            prepare=_regex_value,
            run=_regex,
        ),
        CheckType(
            name="is-json",
            value="none, or a JSON schema",
            summary="the output is JSON (following the schema, when one is given)",
            prepare=_is_json_value,
            run=_is_json,
        ),
        CheckType(
            name="json-schema",
            value="a JSON schema",
            summary="the output is JSON following the schema",
            prepare=_json_schema_value,
            run=_is_json,
        ),
        CheckType(
            name="max-length",
            value="a whole number",
            summary="the output's text has at most that many characters",
            prepare=_count_value("max-length", "characters", whole=True),
            run=_max_length,
        ),
        CheckType(
            name="max-duration",
            value="a number of seconds",
            summary="the runnable finished within that many seconds",
            prepare=_count_value("max-duration", "seconds", whole=False),
            run=_max_duration,
            reads_output=False,
        ),
        CheckType(
            name="max-latency",
            value="a number of seconds",
            summary="the app's wall time was at most that many seconds",
            prepare=_count_value("max-latency", "seconds", whole=False),
            run=_max_duration,
            reads_output=False,
        ),
        CheckType(
            name="max-cost",
            value="an amount in the price table's currency",
            summary="the app's model calls cost at most that, by the run's price table",
            prepare=_count_value("max-cost", "the price table's currency", whole=False),
            run=_max_cost,
            reads_output=False,
        ),
    ]
    for prefix, ignore_case in (("", False), ("i", True)):
        case = ", ignoring case" if ignore_case else ""
        types += [
            CheckType(
                name=f"{prefix}contains",
                value=text,
                summary=f"the output's text contains the value{case}",
                prepare=_text_value(f"{prefix}contains"),
                run=_contains(ignore_case),
            ),
            CheckType(
                name=f"{prefix}contains-any",
                value=texts,
                summary=f"the output's text contains one of the values{case}",
                prepare=_texts_value(f"{prefix}contains-any"),
                run=_contains_any(ignore_case),
            ),
            CheckType(
                name=f"{prefix}contains-all",
                value=texts,
                summary=f"the output's text contains each of the values{case}",
                prepare=_texts_value(f"{prefix}contains-all"),
                run=_contains_all(ignore_case),
            ),
        ]
    return types


for _check_type in _builtin_types():
    register_check(_check_type)
