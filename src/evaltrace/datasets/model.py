"""The dataset file format: :class:`Dataset`, :class:`DatasetEntry`, :class:`EvaluatorSpec`.

A dataset names the app's entry point (``runnable``), the evaluators that score every entry,
and the entries: the runnable's arguments (``entry_kwargs``), the values served to
``wrap(purpose="input")`` (``eval_input``) and what is expected. It is the JSON format of the
pixie-qa dataset files, which load unchanged; YAML holds the same data.

.. code-block:: json

    {
      "name": "customer-faq",
      "runnable": "app/run.py:AppRunnable",
      "evaluators": ["Factuality"],
      "entries": [
        {
          "name": "greeting",
          "entry_kwargs": {"question": "Hello"},
          "eval_input": [{"name": "question", "value": "Hello"}],
          "expectation": "A friendly greeting that offers to help",
          "evaluators": ["...", "ClosedQA"]
        }
      ]
    }

Besides what each field checks by itself, a dataset is checked as a whole: entry names are
unique, ``"..."`` appears only in an entry's evaluator list and only when the dataset has
evaluators, aggregators are declared on dataset-level evaluators only, an entry names each of
its ``eval_input`` values once, and a value in both ``entry_kwargs`` and ``eval_input`` under
one name is the same in both.

Example:
    >>> dataset = Dataset.model_validate(
    ...     {"evaluators": ["ExactMatch"], "entries": [{"entry_kwargs": {"q": "hi"}}]}
    ... )
    >>> entry = dataset.entries[0]
    >>> entry.name, entry.description, entry.expectation
    ('0', '0', UNSET)
    >>> [spec.name for spec in dataset.evaluators_for(entry)]
    ['ExactMatch']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, Protocol, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    GetPydanticSchema,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from evaltrace.datasets.problems import DatasetProblem, describe_value, format_location
from evaltrace.evals.evaluable import UNSET, Evaluable, NamedData, Unset
from evaltrace.metrics.check_types import (
    MISSING,
    Check,
    CheckValueError,
    UnknownCheckTypeError,
    check_name,
    check_type_names,
    lookup_check_type,
)
from evaltrace.metrics.classification import AggregatorSpec

__all__ = [
    "INHERIT",
    "CheckSpec",
    "Dataset",
    "DatasetEntry",
    "EvaluatorSpec",
    "NamedInput",
    "ValidationScope",
    "dataset_problems",
    "entry_problems",
    "with_default_name",
]

INHERIT: Final = "..."
"""In an entry's ``evaluators``, stands for the dataset's evaluators."""

_SCOPE_KEY: Final = "evaltrace.datasets.scope"


class ValidationScope:
    """Where a dataset being validated comes from, and where its cross-field problems go.

    Passed as validation context (``Dataset.model_validate(data, context=scope.context())``)
    by :func:`~evaltrace.datasets.load_dataset`, so that the checks spanning several fields
    report into a list instead of raising one ``ValueError``.

    Args:
        file: How problems name the file.
        path: The file's path, recorded on the dataset (references resolve against it).
        owned: Whether the entries validated are new objects nobody else holds (a document
            the loader just parsed), filled in place rather than copied.
    """

    def __init__(self, file: str, path: Path | None = None, *, owned: bool = False) -> None:
        self.file = file
        """How problems name the file."""
        self.path = path
        """The file's path, if it is a file."""
        self.problems: list[DatasetProblem] = []
        """The cross-field problems found."""
        self.owned = owned
        """Whether the entries are the loader's own new objects."""

    def context(self) -> dict[str, Any]:
        """The validation context carrying this scope."""
        return {_SCOPE_KEY: self}


def _known_check_types(schema: dict[str, Any]) -> None:
    schema["examples"] = check_type_names()  # as registered when the schema is made


class CheckSpec(BaseModel):
    """A check as a dataset writes it: ``{"type": "contains", "value": "Paris"}``.

    The value is checked against its type as the file is read (a regular expression must
    compile, a schema must be a JSON schema), for the types known then: a type that the
    runnable's module registers is checked when the dataset is resolved.

    Example:
        >>> CheckSpec.model_validate({"type": "icontains", "value": "paris"}).to_check().name
        'icontains "paris"'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    type: str = Field(min_length=1, json_schema_extra=_known_check_types)
    """The check type (``"contains"``, ``"regex"``, ``"not-contains"``, ...)."""
    value: JsonValue = None
    """The check's value (a text, a list of texts, a pattern, a schema, a number)."""
    name: str | None = Field(default=None, min_length=1)
    """The display name in reports; the type and the value by default."""
    output: str | None = Field(default=None, min_length=1)
    """The name of the output to check; the run's output by default."""

    @property
    def given_value(self) -> Any:
        """The value, or :data:`~evaltrace.metrics.check_types.MISSING` when none was given."""
        return self.value if "value" in self.model_fields_set else MISSING

    def to_check(self) -> Check:
        """The evaluator applying this check.

        Raises:
            UnknownCheckTypeError: No check type has this name.
            CheckValueError: The value does not fit the type.
        """
        return Check(self.type, self.given_value, output=self.output, name=self.name)

    @field_validator("value")
    @classmethod
    def _value_fits(cls, value: JsonValue, info: ValidationInfo) -> JsonValue:
        check_type = info.data.get("type")
        if isinstance(check_type, str):
            _check_value(check_type, value)
        return value

    @model_validator(mode="after")
    def _value_given_when_needed(self) -> Self:
        if self.name == INHERIT:
            raise ValueError("'...' cannot name a check; choose another name")
        if "value" not in self.model_fields_set:
            _check_value(self.type, MISSING)
        return self


def _check_value(check_type: str, value: Any) -> None:
    """Refuse a value that does not fit a known check type (unknown ones wait for resolution)."""
    try:
        known, _ = lookup_check_type(check_type)
    except UnknownCheckTypeError:
        return  # the runnable's module may register it: reported when the dataset is resolved
    try:
        known.prepare(value)
    except CheckValueError as exc:
        raise PydanticCustomError(
            "check_value",
            "{message}",
            {
                "message": exc.message,
                "expected": exc.expected,
                "found": exc.found,
                "hint": exc.hint,
            },
        ) from None


def _check_display_name(data: Mapping[str, Any]) -> str:
    """The display name of a check item not validated yet (a placeholder when it is invalid)."""
    name, check_type = data.get("name"), data.get("type")
    if isinstance(name, str) and name:
        return name
    if isinstance(check_type, str) and check_type:
        return check_name(check_type, data.get("value", MISSING))
    return "check"


class EvaluatorSpec(BaseModel):
    """An evaluator as a dataset declares it: a name, an object, or a check.

    The object is ``{"name", "args", "aggregators"}``, the check ``{"type", "value"}``. A bare
    string is accepted wherever a spec is: ``"Factuality"`` is ``{"name": "Factuality"}``, and
    a spec without arguments or aggregators is written back as its bare name. A check is
    written back as it was given; its spec's ``name`` is the check's display name.

    Example:
        >>> EvaluatorSpec.model_validate("ExactMatch")
        EvaluatorSpec(name='ExactMatch', args={}, aggregators=[], check=None)
        >>> EvaluatorSpec.model_validate({"type": "contains", "value": "Paris"}).name
        'contains "Paris"'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """A built-in or registered evaluator name (``"Factuality"``), a reference to a callable
    (``"evals.py:tone"``, ``"my_pkg.evals:tone"``), or ``"..."`` (an entry's list only: the
    dataset's evaluators)."""
    args: dict[str, JsonValue] = Field(default_factory=dict)
    """Keyword arguments for the evaluator's class or factory."""
    aggregators: list[AggregatorSpec] = Field(default_factory=list)
    """Dataset-level metrics computed over this evaluator's per-entry results (precision,
    recall, F-beta, confusion matrix). Dataset-level evaluators only."""
    check: CheckSpec | None = None
    """The check, for a spec written ``{"type": ..., "value": ...}`` (then :attr:`name` is its
    display name)."""

    @property
    def is_inherit(self) -> bool:
        """Whether this is ``"..."``, standing for the dataset's evaluators."""
        return self.check is None and self.name == INHERIT

    @model_validator(mode="before")
    @classmethod
    def _accept_bare_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"name": data}
        if isinstance(data, Mapping) and "type" in data:  # a check: {"type": ..., "value": ...}
            return {"name": _check_display_name(data), "check": data}
        if isinstance(data, Mapping | EvaluatorSpec):
            return data
        raise PydanticCustomError(
            "evaluator_spec_type",
            "expected an evaluator name, an object with 'name' (and optionally 'args', "
            "'aggregators'), or a check with 'type' (and 'value')",
        )

    @model_serializer(mode="wrap")
    def _bare_name_when_plain(self, handler: SerializerFunctionWrapHandler) -> Any:
        if self.check is not None:
            return self.check.model_dump(mode="json", exclude_unset=True)
        if not self.args and not self.aggregators:
            return self.name
        data = handler(self)
        if isinstance(data, dict):
            data.pop("check", None)
        return data

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        as_object = handler(core_schema)
        # A check is its own form in the file, not a key of this one.
        as_check = as_object.get("properties", {}).pop("check", {}).get("anyOf", [{}])[0]
        as_name = {
            "type": "string",
            "minLength": 1,
            "description": 'An evaluator name or reference, e.g. "Factuality" or '
            '"evals.py:tone"; "..." in an entry stands for the dataset\'s evaluators.',
        }
        return {"anyOf": [as_name, as_object, as_check]}


class NamedInput(NamedData):
    """One ``eval_input`` item: the value ``wrap(purpose="input", name=...)`` returns."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


def _no_default_in_schema(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class DatasetEntry(BaseModel):
    """One test case: the runnable's arguments, its served inputs, and what is expected.

    Two fields the pixie-qa format requires are optional here, because a sensible default
    exists: ``description`` (the entry's name) and ``eval_input`` (no served inputs).

    An entry may instead point at a run that was stored (``trace``, and ``trace_id`` when the
    file holds several): it is scored from that trace, without calling the runnable, and
    gives no ``entry_kwargs``.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        json_schema_extra={"oneOf": [{"required": ["entry_kwargs"]}, {"required": ["trace"]}]},
    )

    name: str | None = Field(default=None, min_length=1)
    """A unique name (used to select entries, compare runs and shard); its position in
    ``entries`` as a string when omitted."""
    entry_kwargs: dict[str, JsonValue] = Field(
        default_factory=dict, json_schema_extra=_no_default_in_schema
    )
    """The arguments of the runnable: keyword arguments, or the fields of the pydantic model
    its ``run`` takes. Required, unless the entry gives ``trace``."""
    trace: str | None = Field(default=None, min_length=1)
    """A trace file holding this entry's run, stored earlier (``EVALTRACE_TRACE_FILE``, a
    results folder's ``traces.jsonl``, an OTLP-JSON or Phoenix export; relative to the dataset
    file): the entry is scored from it, and the runnable is not called."""
    trace_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{32}$")
    """Which trace of ``trace`` (32 hex digits); may be left out when the file holds one."""
    eval_input: list[NamedInput] = Field(default_factory=list)
    """Values that ``wrap(purpose="input", name=...)`` returns during the run, by name."""
    description: str | None = None
    """A human-readable label; the entry's name when omitted."""
    expectation: Annotated[
        JsonValue | Unset,
        WithJsonSchema({"description": "Any JSON value."}),
        Field(json_schema_extra=_no_default_in_schema),
    ] = UNSET
    """What a correct output looks like, for comparing evaluators. Absent: no expectation;
    ``null`` is a real expectation (expect nothing)."""
    eval_metadata: dict[str, JsonValue] | None = None
    """Extra data for evaluators (expected tool names, thresholds, context, ...)."""
    evaluators: list[EvaluatorSpec] | None = None
    """This entry's evaluators. Omitted: the dataset's; with ``"..."``: the dataset's plus
    these; without: only these."""

    def to_evaluable(self) -> Evaluable:
        """The test case of this entry, without output (the run provides it).

        Example:
            >>> entry = DatasetEntry(entry_kwargs={}, expectation=None)
            >>> entry.to_evaluable().has_expectation
            True
        """
        return Evaluable(
            eval_input=[NamedData(name=item.name, value=item.value) for item in self.eval_input],
            expectation=self.expectation,
            eval_metadata=self.eval_metadata,
            description=self.description,
        )

    @property
    def stored(self) -> bool:
        """Whether the entry is scored from a stored trace (it gives ``trace``)."""
        return self.trace is not None

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(self.expectation, Unset) and isinstance(data, dict):
            data.pop("expectation", None)
        return data


class Dataset(BaseModel):
    """A dataset: the runnable, the evaluators, and the entries they run on.

    ``runnable`` may be omitted when the runnable is given in code (``assert_dataset_pass``);
    ``evaltrace test`` needs it. :func:`~evaltrace.datasets.load_dataset` names an unnamed
    dataset after its file.

    A ``.evaltrace.jsonl`` file holds the same data in lines: its first line, the header, is
    one object with every key here but ``entries``; each further line is one entry (a
    ``DatasetEntry``); blank lines are skipped.
    """

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        serialize_by_alias=True,
        title="evaltrace dataset",
    )

    schema_: str | None = Field(default=None, alias="$schema")
    """The JSON Schema this file follows (for editors); ignored by evaltrace."""
    name: str | None = Field(default=None, min_length=1)
    """The dataset's name, shown in reports; the file name without its suffix when omitted."""
    runnable: str | None = Field(default=None, min_length=1)
    """The app's entry point: ``"path/to/file.py:Name"`` (relative to this file) or
    ``"package.module:Name"``; a Runnable class or object, or a plain function. Not needed
    when every entry points at a stored trace."""
    evaluators: list[EvaluatorSpec] = Field(default_factory=list)
    """The evaluators of every entry that does not list its own."""
    epochs: int | None = Field(default=None, ge=1)
    """How many times each entry's app is run, each run scored on its own and then reduced
    (``reducer``); once when omitted. ``evaltrace test --epochs`` overrides it."""
    reducer: str | None = Field(default=None, min_length=1)
    """How an entry's runs are reduced to one evaluation per evaluator: ``mean`` (when
    omitted), ``median``, ``mode``, ``min`` or ``max``."""
    entries: Annotated[
        Sequence[DatasetEntry],
        # Validated (and described) as a list; a JSONL dataset's reader puts its own in.
        GetPydanticSchema(lambda _, handler: handler(list[DatasetEntry])),
        Field(min_length=1),
    ]
    """The test cases (at least one). In a ``.evaltrace.jsonl`` file, one a line after the
    header line, each read from its line when it is asked for."""

    _path: Path | None = PrivateAttr(default=None)
    _source: str = PrivateAttr(default="<dataset>")

    @property
    def path(self) -> Path | None:
        """The absolute path of the dataset's file; ``None`` for a dataset built in code.

        References resolve against its folder.
        """
        return self._path

    @property
    def source(self) -> str:
        """How problems name the dataset: its path as given, or ``"<dataset>"``."""
        return self._source

    @property
    def stored(self) -> bool:
        """Whether the entries point at stored traces (then nothing runs)."""
        return self.entries[0].stored

    def evaluators_for(self, entry: DatasetEntry) -> list[EvaluatorSpec]:
        """The evaluators of ``entry``, with ``"..."`` expanded to the dataset's.

        Example:
            >>> dataset = Dataset.model_validate({
            ...     "evaluators": ["Factuality"],
            ...     "entries": [{"entry_kwargs": {}, "evaluators": ["...", "ClosedQA"]}],
            ... })
            >>> [spec.name for spec in dataset.evaluators_for(dataset.entries[0])]
            ['Factuality', 'ClosedQA']
        """
        if entry.evaluators is None:
            return list(self.evaluators)
        expanded: list[EvaluatorSpec] = []
        for spec in entry.evaluators:
            expanded.extend(self.evaluators if spec.is_inherit else (spec,))
        return expanded

    @model_validator(mode="after")
    def _check_as_a_whole(self, info: ValidationInfo) -> Self:
        scope = (info.context or {}).get(_SCOPE_KEY)
        file = scope.file if isinstance(scope, ValidationScope) else "<dataset>"
        problems = dataset_problems(file, self.evaluators, list(enumerate(self.entries)))
        owned = isinstance(scope, ValidationScope) and scope.owned
        self.entries = [
            with_default_name(entry, index, copy=not owned)
            for index, entry in enumerate(self.entries)
        ]
        if isinstance(scope, ValidationScope):
            scope.problems.extend(problems)
            self._path = scope.path.absolute() if scope.path is not None else None
            self._source = scope.file
        elif problems:
            raise ValueError("\n".join(str(problem) for problem in problems))
        return self


def with_default_name(entry: DatasetEntry, index: int, *, copy: bool = True) -> DatasetEntry:
    """``entry`` with its omitted name (``index``) and description (the name) filled in.

    The filled fields stay out of ``model_fields_set``, so ``model_dump(exclude_unset=True)``
    writes the entry back as the file had it.

    Args:
        entry: The entry.
        index: Its position in the dataset's entries.
        copy: Fill a shallow copy (the entry given may be the caller's); ``False`` fills
            ``entry`` itself, for an entry just parsed that nobody else holds.
    """
    if entry.name is not None and entry.description is not None:
        return entry
    name = entry.name if entry.name is not None else str(index)
    # Filled in place, past the frozen model's guard: model_construct would add 0.5-1.6x the
    # entries' validation time to loading (bench_dataset_memory.py, filling descriptions).
    filled = entry.__copy__() if copy else entry
    filled.__dict__.update(name=name, description=entry.description or name)
    return filled


def dataset_problems(
    file: str,
    evaluators: Sequence[EvaluatorSpec] | None,
    entries: Sequence[tuple[int, DatasetEntry]],
    names: Sequence[tuple[int, str | None]] | None = None,
) -> list[DatasetProblem]:
    """The problems that span several fields of a dataset.

    Args:
        file: How problems name the file.
        evaluators: The dataset-level evaluators, or ``None`` when they are themselves invalid
            (the checks that need them are skipped).
        entries: The entries that are valid by themselves, with their positions.
        names: The names of the entries (``None`` where omitted) with their positions, when
            they are known for more entries than ``entries`` holds; else taken from
            ``entries``.

    Returns:
        The problems found.
    """
    problems: list[DatasetProblem] = []

    def problem(
        location: Sequence[str | int],
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        problems.append(
            DatasetProblem(
                file=file,
                location=format_location(location),
                message=message,
                expected=expected,
                found=found,
                hint=hint,
            )
        )

    for index, spec in enumerate(evaluators or ()):
        if spec.is_inherit:
            problem(
                ("evaluators", index),
                "'...' is not an evaluator",
                hint="'...' belongs in an entry's evaluators, where it stands for these; "
                "remove it here",
            )
    _duplicate_specs(
        problem,
        ("evaluators",),
        [
            (index, spec, False)
            for index, spec in enumerate(evaluators or ())
            if not spec.is_inherit
        ],
    )

    first_with_name: dict[str, tuple[int, bool]] = {}
    for index, given in names if names is not None else [(i, e.name) for i, e in entries]:
        implicit = given is None
        name = str(index) if given is None else given
        if name in first_with_name:
            other, other_implicit = first_with_name[name]
            problem(
                ("entries", index, "name"),
                f"duplicate entry name {name!r}, also the name of entries[{other}]",
                hint="give each entry a unique name"
                + (
                    " (an entry without a name is named by its position)"
                    if implicit or other_implicit
                    else ""
                ),
            )
        else:
            first_with_name[name] = (index, implicit)
    for index, entry in entries:
        _check_entry(problem, index, entry, evaluators)
    if entries:
        first = entries[0][1].stored
        mixed = next((index for index, entry in entries if entry.stored != first), None)
        if mixed is not None:
            problem(
                ("entries", mixed),
                "entries scored from stored traces ('trace') and entries that run the "
                "runnable ('entry_kwargs') are mixed in one dataset",
                hint="put the entries with 'trace' in a dataset file of their own",
            )
    return problems


def entry_problems(
    file: str, index: int, entry: DatasetEntry, evaluators: Sequence[EvaluatorSpec] | None
) -> list[DatasetProblem]:
    """The problems of one entry that span its fields, or its evaluators and the dataset's.

    What :func:`dataset_problems` checks of each entry, for a reader that sees one entry at
    a time (names and the mix of stored and run entries are the reader's to check).

    Args:
        file: How problems name the file.
        index: The entry's position.
        entry: The entry, valid by itself.
        evaluators: The dataset-level evaluators, or ``None`` when they are invalid.
    """
    problems: list[DatasetProblem] = []

    def problem(
        location: Sequence[str | int],
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        problems.append(
            DatasetProblem(
                file=file,
                location=format_location(location),
                message=message,
                expected=expected,
                found=found,
                hint=hint,
            )
        )

    _check_entry(problem, index, entry, evaluators)
    return problems


class _Report(Protocol):
    def __call__(
        self,
        location: Sequence[str | int],
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        """Record one problem."""


def _check_entry(
    problem: _Report,
    index: int,
    entry: DatasetEntry,
    dataset_evaluators: Sequence[EvaluatorSpec] | None,
) -> None:
    where: tuple[str | int, ...] = ("entries", index)
    if entry.evaluators is not None:
        inherits = [i for i, spec in enumerate(entry.evaluators) if spec.is_inherit]
        for position in inherits[1:]:
            problem(
                (*where, "evaluators", position),
                "'...' appears more than once",
                hint="list '...' once; it adds all the dataset's evaluators",
            )
        for position, spec in enumerate(entry.evaluators):
            location = (*where, "evaluators", position)
            if spec.is_inherit and (spec.args or spec.aggregators):
                problem(location, "'...' takes no args or aggregators", found="an object")
            elif spec.is_inherit and dataset_evaluators is not None and not dataset_evaluators:
                problem(
                    location,
                    "'...' stands for the dataset's evaluators, but the dataset has none",
                    hint="add a top-level 'evaluators' list, or remove '...'",
                )
            elif spec.aggregators:
                problem(
                    (*location, "aggregators"),
                    "aggregators are dataset-level metrics",
                    hint="declare them on the evaluator in the top-level 'evaluators' list",
                )
        expanded: list[tuple[int, EvaluatorSpec, bool]] = []
        for position, spec in enumerate(entry.evaluators):
            if spec.is_inherit:
                expanded += [(position, inherited, True) for inherited in dataset_evaluators or ()]
            else:
                expanded.append((position, spec, False))
        _duplicate_specs(problem, (*where, "evaluators"), expanded)

    if entry.trace is None:
        if entry.trace_id is not None:
            problem(
                (*where, "trace_id"),
                "trace_id without trace",
                hint="give 'trace', the file holding the trace, or remove 'trace_id'",
            )
        elif "entry_kwargs" not in entry.model_fields_set:
            problem(
                (*where, "entry_kwargs"),
                "missing required key 'entry_kwargs'",
                hint="give the runnable's arguments, or 'trace' to score a stored trace",
            )
    elif entry.entry_kwargs:
        problem(
            (*where, "entry_kwargs"),
            "an entry scored from a stored trace runs nothing, so it takes no entry_kwargs",
            hint="remove 'entry_kwargs', or 'trace' to run the runnable",
        )

    seen_inputs: dict[str, int] = {}
    for position, item in enumerate(entry.eval_input):
        location = (*where, "eval_input", position, "name")
        if item.name in seen_inputs:
            problem(
                location,
                f"duplicate eval_input name {item.name!r}, "
                f"also eval_input[{seen_inputs[item.name]}]",
                hint="wrap(purpose='input', name=...) returns one value per name; "
                "keep one item per name",
            )
            continue
        seen_inputs[item.name] = position
        if item.name in entry.entry_kwargs and not _same_json(
            item.value, entry.entry_kwargs[item.name]
        ):
            problem(
                (*where, "eval_input", position, "value"),
                f"eval_input {item.name!r} differs from entry_kwargs[{item.name!r}]",
                expected=describe_value(entry.entry_kwargs[item.name]) + " as in entry_kwargs",
                found=describe_value(item.value),
                hint=f"the runnable is called with entry_kwargs, but wrap(purpose='input', "
                f"name={item.name!r}) returns the eval_input value; make them equal or rename one",
            )


def _duplicate_specs(
    problem: _Report,
    where: tuple[str | int, ...],
    specs: Sequence[tuple[int, EvaluatorSpec, bool]],
) -> None:
    """Report a spec listed twice; ``specs`` holds (position, spec, came from '...')."""
    seen: dict[str, tuple[int, bool]] = {}
    for position, spec, inherited in specs:
        key = spec.model_dump_json()
        if key not in seen:
            seen[key] = (position, inherited)
            continue
        first, first_inherited = seen[key]
        if inherited and first_inherited:
            continue  # a duplicate within the dataset's list, reported there
        also = (
            "among the dataset's evaluators that '...' adds"
            if first_inherited
            else (f"evaluators[{first}]")
        )
        problem(
            (*where, position),
            f"evaluator {spec.name!r} is listed twice (also {also})",
            hint="list each evaluator once; to run one evaluator with two settings, give each "
            "its own args",
        )


def _same_json(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, containers compare deeply."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same_json(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same_json, left, right))
    return type(left) is type(right) and bool(left == right)
