"""The data an evaluator scores: named inputs, named outputs, the expectation."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema

from evaltrace.capture.codec import Codec
from evaltrace.capture.config import current_runtime, settings

__all__ = [
    "UNSET",
    "Evaluable",
    "checked_model",
    "fields_given",
    "model_of_state",
    "HasExpectation",
    "NamedData",
    "TestCase",
    "Unset",
    "collapse_named_data",
    "encode_unless_json",
    "expectation_field",
    "HOW_TO_GIVE_AN_EXPECTATION",
    "get_named",
    "json_value",
    "redacted_text",
    "saved_value",
]

HOW_TO_GIVE_AN_EXPECTATION: Final = (
    "give one with expected_output=... on run_and_evaluate, "
    "evaluables=[Evaluable(expectation=...)] on assert_pass, "
    'or an "expectation" in the dataset entry'
)
"""How a user gives an evaluable its expectation; quoted by evaluators that need one."""


class Unset:
    """Type of :data:`UNSET`: "no value was given", as distinct from ``None``."""

    _instance: ClassVar[Unset | None] = None

    def __new__(cls) -> Unset:
        """Return the one instance."""
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNSET"

    def __copy__(self) -> Unset:
        return self

    def __deepcopy__(self, memo: Any) -> Unset:
        # The one instance, at once: pydantic deep-copies it as the default of every model
        # made with ``model_construct`` (bench_stored.py, bench/README.md).
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.is_instance_schema(
            cls, serialization=core_schema.plain_serializer_function_ser_schema(lambda _: None)
        )


UNSET: Final = Unset()
"""Marks an absent expectation. ``None`` is a real expectation ("expect nothing")."""


_JSON: Final = TypeAdapter[JsonValue](JsonValue)


@functools.lru_cache(maxsize=4)
def _codec_for(max_bytes: int, redact_keys: frozenset[str]) -> Codec:
    return Codec(max_bytes=max_bytes, redact_keys=redact_keys)


def _codec() -> Codec:
    active = current_runtime()
    if active is not None:
        return active.codec
    current = settings()
    return _codec_for(current.max_value_bytes, current.redact_keys)


def saved_value(value: object) -> JsonValue:
    """``value`` as it is kept in a saved result: encoded by the capture codec, always.

    Unlike :func:`json_value`, JSON data goes through the codec too, so secret-like keys are
    redacted in ``result.json`` and the scorecard exactly as they are on spans. Never raises.

    Example:
        >>> saved_value({"question": "2+2?", "api_key": "sk-1"})
        {'question': '2+2?', 'api_key': '[REDACTED]'}
    """
    return _codec().to_jsonable(value)


def redacted_text(text: str) -> str:
    """Free text (an exception message) with its secrets redacted, as on a span's exception.

    Example:
        >>> redacted_text("login failed: password=hunter2")
        'login failed: password=[REDACTED]'
    """
    return _codec().redact_text(text)


ModelT = TypeVar("ModelT", bound=BaseModel)


@functools.cache
def _field_defaults(
    cls: type[BaseModel],
) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...], dict[tuple[str, ...], set[str]] | None]:
    """Every field of ``cls`` with its default, in order; its factories; its shared field sets.

    The field of a factory (or a required one) holds ``None`` in the first, until it is set.
    The last is, for a frozen model, the sets of fields given its models share
    (:func:`fields_given`; ``None`` for a model that is not frozen).
    """
    fields = cls.model_fields
    template = {
        name: None if info.default_factory is not None or info.is_required() else info.default
        for name, info in fields.items()
    }
    factories = tuple(
        (name, info.default_factory)
        for name, info in fields.items()
        if info.default_factory is not None
    )
    return template, factories, ({} if cls.model_config.get("frozen") else None)


def checked_model(
    cls: type[ModelT], fields: dict[str, Any], *, given: tuple[str, ...] | None = None
) -> ModelT:
    """A model of values that are valid already, made without validating them again.

    For values the engine built itself, which validation would keep as they are (JSON data
    from the capture codec or decoded from spans, a score checked finite and in range): the
    model equals ``cls(**fields)``, its set fields and field order included, for a fraction
    of the cost. Missing fields get their defaults (a factory's a fresh value); every
    required field must be given. Giving anything validation would change or refuse makes a
    model that breaks its own rules: only for values checked where they were made, and for
    models with no private attributes and no extra fields (:class:`NamedData`,
    :class:`Evaluable`, :class:`~evaltrace.evals.Evaluation`). ``given`` names the fields
    the model reads as given (``model_fields_set``) when that is not every key of ``fields``:
    for a field a validator derives, as validation leaves it unset.

    Example:
        >>> checked_model(NamedData, {"name": "answer", "value": 4}) == NamedData(
        ...     name="answer", value=4
        ... )
        True
    """
    template, factories, _ = _field_defaults(cls)
    values = template.copy()
    values.update(fields)  # a key given keeps its place: the fields stay in declaration order
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    return model_of_state(cls, values, fields_given(cls, tuple(fields) if given is None else given))


def fields_given(cls: type[BaseModel], given: tuple[str, ...]) -> set[str]:
    """The set of fields given of a model of ``cls`` made of fields named ``given``.

    For a frozen model, the models given the same fields share one set: nothing changes a
    frozen model's set in place (``model_copy`` copies it first), and one set per kind of
    model rather than one per model is an object fewer per model for the garbage collector
    to go through (six per row of a run: bench_runner.py's c=50 figure, bench/README.md).
    """
    shared = _field_defaults(cls)[2]
    if shared is None:
        return set(given)
    fields_set = shared.get(given)
    if fields_set is None:
        fields_set = set(given)
        if len(shared) < _SHARED_FIELD_SETS:
            shared[given] = fields_set
    return fields_set


def model_of_state(cls: type[ModelT], values: dict[str, Any], fields_set: set[str]) -> ModelT:
    """A model of ``cls`` holding ``values`` (every field, in order) as they are, unvalidated.

    The one place that writes the state pydantic's own construction sets, at once through the
    slots of the (frozen) model: validating what the engine built itself was a sixth of an
    entry's CPU in a run (bench_runner.py's c=50 figure, bench/README.md). Only for
    :func:`checked_model` and the engine's own fast paths, with values checked where they
    were made.
    """
    model = _new_model(cls)
    _set_dict(model, values)
    _set_fields_set(model, fields_set)
    _set_extra(model, None)
    _set_private(model, None)
    return model


_SHARED_FIELD_SETS: Final = 64
"""At most this many sets of fields given are shared per model class."""
_new_model = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def json_value(value: object) -> JsonValue:
    """``value`` as JSON-compatible data.

    JSON data (``dict`` with ``str`` keys, ``list``, ``str``, numbers, ``bool``, ``None``) is
    kept as it is. Anything else (a dataclass, a pydantic model, a Haystack ``Document``, a
    tuple, ...) is encoded as ``wrap`` values are: through the capture codec, which also
    redacts secret-like keys and shows what it cannot encode by its ``repr``. Never raises.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass
        ... class Document:
        ...     content: str
        >>> json_value(Document(content="Paris"))
        {'content': 'Paris'}
    """
    try:
        return _JSON.validate_python(value)
    except ValidationError:
        return _codec().to_jsonable(value)


def encode_unless_json(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate ``value`` as it is; if it is not JSON data, validate its encoding instead.

    For the ``mode="wrap"`` field validators of values that are saved: a numpy number, a
    dataclass or any object becomes JSON data when the model is made, so that saving it can
    never fail later.
    """
    try:
        return handler(value)
    except ValidationError:
        return handler(_codec().to_jsonable(value))


class NamedData(BaseModel):
    """One named value: an input the run received or a value it recorded.

    A value that is not JSON data (a dataclass, a pydantic model, a Haystack ``Document``) is
    encoded as :func:`json_value` does.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    """The name given to ``wrap(..., name=...)`` or to the dataset entry's input."""
    value: JsonValue
    """The value, as JSON-compatible data."""

    @field_validator("value", mode="wrap")
    @classmethod
    def _encode_value(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return encode_unless_json(value, handler)


def get_named(items: Sequence[NamedData] | None, name: str, default: Any = None) -> Any:
    """Return the value of the item called ``name``, or ``default`` when there is none.

    Example:
        >>> get_named([NamedData(name="answer", value=42)], "answer")
        42
    """
    for item in items or ():
        if item.name == name:
            return item.value
    return default


def collapse_named_data(items: Sequence[NamedData] | None) -> JsonValue:
    """Collapse named data into the shape a judge prompt wants.

    No item gives ``None``, one item gives its value, several give ``{name: value}``.

    Example:
        >>> collapse_named_data([NamedData(name="q", value="hi")])
        'hi'
    """
    if not items:
        return None
    if len(items) == 1:
        return items[0].value
    return {item.name: item.value for item in items}


class HasExpectation(BaseModel):
    """A model whose ``expectation`` may be :data:`UNSET`: left out of its JSON when it is.

    ``None`` is a real expectation ("expect nothing") and is written; an absent one is not,
    so a saved model reads back exactly as it was. Each subclass declares the field where it
    belongs in its own field order, as ``expectation: JsonValue | Unset = expectation_field()``.
    """

    if TYPE_CHECKING:
        expectation: JsonValue | Unset

    @property
    def has_expectation(self) -> bool:
        """Whether an expectation (possibly ``None``) was given."""
        return not isinstance(self.expectation, Unset)


def expectation_field() -> Any:
    """The ``expectation`` field of a :class:`HasExpectation`: :data:`UNSET`, left out of JSON.

    Left out by the field itself, not by a serializer of the model: one in Python made writing
    a saved entry six times slower (bench_cli.py's --traces row, bench/README.md).
    """
    return Field(UNSET, exclude_if=_is_unset)


def _is_unset(value: object) -> bool:
    return isinstance(value, Unset)


class TestCase(HasExpectation):
    """What a run is given and what it is expected to produce.

    An expectation or metadata that is not JSON data is encoded as :func:`json_value` does.
    ``expected_output=``, pixie-qa's name for the expectation, is taken as ``expectation=``
    with a ``DeprecationWarning``.
    """

    __test__ = False  # not a pytest test class
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    eval_input: list[NamedData] = Field(default_factory=list)
    """The named inputs of the run."""
    expectation: JsonValue | Unset = expectation_field()
    """The reference output; :data:`UNSET` when there is none, ``None`` to expect nothing."""
    eval_metadata: dict[str, JsonValue] | None = None
    """Extra data for evaluators (expected tool names, thresholds, context, ...)."""
    description: str | None = None
    """A human-readable label for the case."""

    @model_validator(mode="before")
    @classmethod
    def _expected_output_keyword(cls, data: Any) -> Any:
        # Otherwise an unknown keyword, ignored: the expectation would be silently dropped.
        if not isinstance(data, dict) or "expected_output" not in data:
            return data
        warnings.warn(
            f"{cls.__name__}(expected_output=...) is deprecated; pass expectation=... instead",
            DeprecationWarning,
            stacklevel=3,  # the caller of the constructor (or of model_validate)
        )
        if "expectation" in data:
            raise ValueError(
                f"{cls.__name__} got both expectation= and expected_output=, which is the old "
                "name of expectation=; pass only expectation=..."
            )
        given = dict(data)
        given["expectation"] = given.pop("expected_output")
        return given

    @field_validator("expectation", "eval_metadata", mode="wrap")
    @classmethod
    def _encode_values(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return encode_unless_json(value, handler)

    @property
    def expected_output(self) -> JsonValue | Unset:
        """Read alias of :attr:`expectation` (as a keyword, deprecated: pass ``expectation=``)."""
        return self.expectation

    def input_value(self, name: str | None = None, default: Any = None) -> Any:
        """Return the named input, or all inputs collapsed when ``name`` is ``None``."""
        if name is None:
            return collapse_named_data(self.eval_input)
        return get_named(self.eval_input, name, default)


class Evaluable(TestCase):
    """A test case together with what the run produced, ready to be scored."""

    eval_output: list[NamedData] | None = None
    """The values the run recorded (``wrap`` outputs and states, or the return value);
    ``None`` when the run has not happened yet."""

    def output_value(self, name: str | None = None, default: Any = None) -> Any:
        """Return the named output, or all outputs collapsed when ``name`` is ``None``."""
        if name is None:
            return collapse_named_data(self.eval_output)
        return get_named(self.eval_output, name, default)
