"""From a dataset's names and references to the objects a run uses: :func:`resolve_dataset`.

Resolving imports the runnable and builds every evaluator before any entry runs, checks
every entry's ``entry_kwargs`` against the runnable's signature and every entry's ``trace``
reference (see :func:`~evaltrace.datasets.references.trace_reference_problem`); all the
problems found are raised together. The runnable is imported first, so an evaluator its
module registers (with :func:`~evaltrace.datasets.register_evaluator`) can be named by the
dataset.

A check item (``{"type": "contains", "value": "Paris"}``) becomes a
:class:`~evaltrace.metrics.Check`; any other evaluator spec becomes an evaluator by
:func:`build_evaluator`, whose rule tells factories from evaluators:

* a **class** is instantiated with the spec's ``args`` (``DocumentRecall``, a user's class
  with ``__call__``);
* a **function without required parameters** is a factory: it is called with ``args`` and
  returns the evaluator (``Factuality``, ``def strict_tone(): ...``);
* **anything else callable** (a function taking the evaluable, an object such as the result
  of ``create_llm_evaluator``) is the evaluator itself, used as is; it takes no ``args``.

Each distinct spec is built once and shared by the entries that use it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from evaltrace._safe_text import exception_text
from evaltrace.datasets.jsonl import with_entry_lines
from evaltrace.datasets.model import CheckSpec, Dataset, DatasetEntry, EvaluatorSpec
from evaltrace.datasets.problems import DatasetError, DatasetProblem, closest, format_location
from evaltrace.datasets.references import (
    ReferenceLoader,
    describe_object,
    parse_reference,
    trace_reference_problem,
)
from evaltrace.datasets.registry import (
    UnknownEvaluatorError,
    lookup_evaluator,
    registered_evaluators,
)
from evaltrace.datasets.runnable import NotRunnableError, RunnableAdapter
from evaltrace.errors import EvaltraceError, EvaluatorSignatureError
from evaltrace.evals.evaluator import EvaluatorFunction, evaluator_name, prepare_evaluator
from evaltrace.metrics.check_types import (
    CheckValueError,
    UnknownCheckTypeError,
    check_type_names,
    closest_check_type,
)

__all__ = [
    "STORED_TRACES_RUNNABLE",
    "EvaluatorBuildError",
    "PerEntry",
    "ResolvedDataset",
    "ResolvedEvaluator",
    "build_evaluator",
    "resolve_dataset",
    "resolve_evaluator_names",
    "resolve_evaluators",
]


class EvaluatorBuildError(EvaltraceError, TypeError):
    """An object cannot be made into an evaluator (not callable, wrong args, its factory raised).

    :func:`resolve_dataset` reports it as a problem located at the evaluator's spec.
    """

    def __init__(self, message: str, *, found: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        """What is wrong."""
        self.found = found
        """What was found instead."""
        self.hint = hint
        """How to fix it."""


_T = TypeVar("_T")


class PerEntry(Sequence[_T]):
    """One item for each entry of a dataset, where most entries share the first one's.

    What a run reads by entry index (each entry's evaluators) without a reference per entry:
    it keeps the first item and the entries whose item is another object, so a dataset of
    10**6 entries that share their evaluators costs no memory per entry.

    Example:
        >>> shared, own = ["a"], ["b"]
        >>> items = PerEntry([shared, shared, own, shared])
        >>> len(items), items[1] is shared, items[2] is own, list(items)[-1] is shared
        (4, True, True, True)
    """

    __slots__ = ("_first", "_length", "_others")

    def __init__(self, items: Iterable[_T]) -> None:
        self._length = 0
        self._first: _T | None = None
        self._others: dict[int, _T] = {}  # the entries whose item is not the first one
        for item in items:
            if self._length == 0:
                self._first = item
            elif item is not self._first:
                self._others[self._length] = item
            self._length += 1

    @classmethod
    def repeat(cls, item: _T, count: int) -> PerEntry[_T]:
        """``item`` for each of ``count`` entries."""
        made: PerEntry[_T] = cls(())
        made._first, made._length = item, count
        return made

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...

    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"entry {index} of {self._length}")
        return self._others.get(index, cast(_T, self._first))

    def __iter__(self) -> Iterator[_T]:
        for index in range(self._length):
            yield self._others.get(index, cast(_T, self._first))

    def __repr__(self) -> str:
        return f"PerEntry({list(self)!r})"


@dataclass(frozen=True, kw_only=True)
class ResolvedEvaluator:
    """An evaluator spec with the evaluator it was built into."""

    spec: EvaluatorSpec
    """The spec as the dataset declares it (its ``aggregators`` included)."""
    evaluator: EvaluatorFunction
    """The evaluator to call."""
    name: str
    """Its display name (the evaluator's ``name``, function or class name)."""


@dataclass(frozen=True, kw_only=True)
class ResolvedDataset:
    """A dataset ready to run: the runnable adapted, every entry's evaluators built."""

    dataset: Dataset
    """The dataset."""
    runnable: RunnableAdapter
    """The runnable; every entry's ``entry_kwargs`` fit its signature."""
    evaluators: list[ResolvedEvaluator]
    """The dataset-level evaluators (the ones carrying ``aggregators``)."""
    entry_evaluators: Sequence[list[ResolvedEvaluator]]
    """Each entry's evaluators, ``"..."`` expanded, in the order of ``dataset.entries``.
    Entries with the same evaluators share one list (do not change it in place)."""


def build_evaluator(target: object, args: Mapping[str, Any], *, label: str) -> EvaluatorFunction:
    """Make ``target`` (a registered or referenced object) into an evaluator.

    The evaluator built must take what it scores in one of the accepted forms
    (``f(evaluable)``, ``f(evaluable, *, trace=None)``, ``f(ctx: EvaluatorContext)``, an
    :class:`~evaltrace.evals.Evaluator`).

    Args:
        target: A class, a factory function without required parameters, or an evaluator.
        args: The spec's ``args``.
        label: How messages name ``target`` (the name or reference in the dataset).

    Raises:
        EvaluatorBuildError: ``target`` is not callable, takes no such ``args``, raised while
            being built, or built something that is not callable or whose parameters fit
            none of the accepted forms.

    Example:
        >>> from evaltrace.metrics import DocumentRecall
        >>> build_evaluator(DocumentRecall, {"mode": "single_hit"}, label="DocumentRecall").mode
        'single_hit'
    """
    evaluator = _build(target, args, label)
    try:
        prepare_evaluator(evaluator, label)
    except EvaluatorSignatureError as exc:
        raise EvaluatorBuildError(str(exc)) from None
    return evaluator


def _build(target: object, args: Mapping[str, Any], label: str) -> EvaluatorFunction:
    if isinstance(target, type):
        evaluator = _construct(target, args, label, "instantiating")
        if not callable(evaluator):
            raise EvaluatorBuildError(
                f"{label}: instances of {target.__qualname__} are not callable",
                hint="an evaluator class defines __call__(self, evaluable) (sync or async)",
            )
        return cast(EvaluatorFunction, evaluator)
    if not callable(target):
        raise EvaluatorBuildError(
            f"{label} is not callable",
            found=describe_object(target),
            hint="refer to an evaluator function, an evaluator class, or a factory function",
        )
    if _is_factory(target):
        evaluator = _construct(target, args, label, "calling the factory")
        if inspect.isawaitable(evaluator):
            close = getattr(evaluator, "close", None)
            if callable(close):
                close()  # never awaited: close it so that Python does not warn
            raise EvaluatorBuildError(
                f"{label} takes no required parameter, so it is called as a factory, but it "
                "returned an awaitable",
                hint="a factory is a plain function returning the evaluator",
            )
        if not callable(evaluator):
            raise EvaluatorBuildError(
                f"{label} takes no required parameter, so it is called as a factory, but it "
                "returned something that is not an evaluator",
                found=describe_object(evaluator),
                hint="if it is itself an evaluator, make its first parameter (the evaluable) "
                "required",
            )
        return cast(EvaluatorFunction, evaluator)
    if args:
        raise EvaluatorBuildError(
            f"{label} is an evaluator (it takes the evaluable), so it takes no args",
            found=", ".join(repr(key) for key in args),
            hint="to configure it, refer to a class or a factory function taking these arguments",
        )
    return target


def _is_factory(function: Callable[..., Any]) -> bool:
    """Whether ``function`` can be called without arguments (then it is a factory)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    required = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    return not any(p.kind in required and p.default is inspect.Parameter.empty for p in parameters)


def _construct(factory: Callable[..., Any], args: Mapping[str, Any], label: str, doing: str) -> Any:
    try:
        signature: inspect.Signature | None = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind(**args)
        except TypeError as exc:
            raise _bad_arguments(label, args, signature, exc) from None
    try:
        built: object = factory(**args)
    except Exception as exc:  # the user's factory failed: a problem to report
        raise EvaluatorBuildError(
            f"{doing} {label} raised {exception_text(exc)}",
            hint="check the spec's args" if args else None,
        ) from None
    return built


def _bad_arguments(
    label: str, args: Mapping[str, Any], signature: inspect.Signature, exc: TypeError
) -> EvaluatorBuildError:
    accepted = [
        p.name
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    unknown = [key for key in args if key not in accepted]
    suggestions = [
        f"{match!r} (not {key!r})"
        for key in unknown
        if (match := closest(key, accepted)) is not None
    ]
    hint = f"{label} accepts: {', '.join(accepted) or 'no arguments'}"
    if suggestions:
        hint = f"did you mean {', '.join(suggestions)}? " + hint
    return EvaluatorBuildError(f"{label}: the args do not fit ({exc})", hint=hint)


def resolve_dataset(
    dataset: Dataset,
    *,
    runnable: object | None = None,
    loader: ReferenceLoader | None = None,
) -> ResolvedDataset:
    """Import the dataset's runnable, build its evaluators, and check every entry's arguments.

    Args:
        dataset: A loaded dataset.
        runnable: The runnable to use instead of the dataset's ``runnable`` reference.
        loader: The run's module loader (one per run, shared by its datasets); a new one by
            default.

    Returns:
        The dataset with its runnable and evaluators.

    Raises:
        DatasetError: Every problem found: no runnable, a reference that does not load, an
            unknown evaluator name (with the closest), an evaluator that cannot be built, an
            entry whose ``entry_kwargs`` do not fit the runnable, an entry whose ``trace``
            leads out of the dataset's folder, is missing or is not a regular file.
    """
    loader = loader or ReferenceLoader()
    file = dataset.source
    base_dir = dataset.path.parent if dataset.path is not None else None
    problems: list[DatasetProblem] = []

    adapter = _resolve_runnable(dataset, runnable, loader, file, base_dir, problems)
    if adapter is not None:
        for index, entry in enumerate(dataset.entries):
            if entry.stored:
                continue
            problems += adapter.check_arguments(
                entry.entry_kwargs,
                file=file,
                location=format_location(("entries", index, "entry_kwargs")),
            )
    problems += _trace_problems(dataset, file, base_dir)

    built: dict[str, ResolvedEvaluator | None] = {}
    places: list[tuple[str, EvaluatorSpec]] = [
        (format_location(("evaluators", i)), spec) for i, spec in enumerate(dataset.evaluators)
    ]
    for index, entry in enumerate(dataset.entries):
        for position, spec in enumerate(entry.evaluators or ()):
            if not spec.is_inherit:
                places.append((format_location(("entries", index, "evaluators", position)), spec))
    for location, spec in places:
        key = spec.model_dump_json()
        if key not in built:
            built[key] = _resolve_evaluator(spec, loader, file, location, base_dir, problems)

    if problems or adapter is None:
        raise DatasetError(with_entry_lines(dataset, problems))

    # Entries share the dataset's spec objects, found by identity; an entry's own specs by
    # their data (a JSONL dataset's entries are parsed anew each time: ids are reused).
    by_identity: dict[int, ResolvedEvaluator | None] = {
        id(spec): built[spec.model_dump_json()] for spec in dataset.evaluators
    }

    def resolved(spec: EvaluatorSpec) -> ResolvedEvaluator:
        evaluator = by_identity.get(id(spec)) or built[spec.model_dump_json()]
        assert evaluator is not None  # a spec that failed is a problem, raised above
        return evaluator

    # The entries without a list of their own share one list, and entries whose lists resolve
    # to the same evaluators share one too: a run of 10**6 entries that share their
    # evaluators holds no memory for each.
    shared: dict[tuple[int, ...], list[ResolvedEvaluator]] = {}
    inherited: list[ResolvedEvaluator] | None = None

    def evaluators_of(entry: DatasetEntry) -> list[ResolvedEvaluator]:
        nonlocal inherited
        if entry.evaluators is None and inherited is not None:
            return inherited
        own = [resolved(spec) for spec in dataset.evaluators_for(entry)]
        own = shared.setdefault(tuple(id(item) for item in own), own)
        if entry.evaluators is None:
            inherited = own
        return own

    return ResolvedDataset(
        dataset=dataset,
        runnable=adapter,
        evaluators=[resolved(spec) for spec in dataset.evaluators],
        entry_evaluators=PerEntry(evaluators_of(entry) for entry in dataset.entries),
    )


def _trace_problems(dataset: Dataset, file: str, base_dir: Path | None) -> list[DatasetProblem]:
    """What is wrong with the entries' ``trace`` references; each file is checked once."""
    checked: dict[str, DatasetProblem | None] = {}
    problems: list[DatasetProblem] = []
    for index, entry in enumerate(dataset.entries):
        if entry.trace is None:
            continue
        location = format_location(("entries", index, "trace"))
        if entry.trace not in checked:
            checked[entry.trace] = trace_reference_problem(
                entry.trace, file=file, location=location, base_dir=base_dir
            )
        found = checked[entry.trace]
        if found is not None:
            problems.append(replace(found, location=location))
    return problems


def _resolve_runnable(
    dataset: Dataset,
    runnable: object | None,
    loader: ReferenceLoader,
    file: str,
    base_dir: Path | None,
    problems: list[DatasetProblem],
) -> RunnableAdapter | None:
    target = runnable
    if target is None:
        if dataset.runnable is None and dataset.stored:
            return RunnableAdapter(_stored_traces_only, name=STORED_TRACES_RUNNABLE)
        if dataset.runnable is None:
            problems.append(
                DatasetProblem(
                    file=file,
                    location="runnable",
                    message="missing: the dataset names no runnable",
                    expected="'path/to/app.py:Name' or 'package.module:Name'",
                    hint="add a top-level 'runnable' naming the app's entry point",
                )
            )
            return None
        try:
            target = loader.load(
                dataset.runnable, file=file, location="runnable", base_dir=base_dir
            )
        except DatasetError as exc:
            problems += exc.problems
            return None
    try:
        return RunnableAdapter(target, name=dataset.runnable if runnable is None else None)
    except NotRunnableError as exc:
        problems.append(
            DatasetProblem(
                file=file,
                location="runnable",
                message=str(exc),
                found=describe_object(target),
            )
        )
        return None


def resolve_evaluator_names(
    names: Sequence[str], *, source: str = "--evaluator", loader: ReferenceLoader | None = None
) -> list[EvaluatorFunction]:
    """Build the evaluators named as a dataset names them, e.g. on the command line.

    Each name is a built-in or registered evaluator (``"ExactMatch"``), or a reference to one
    (``"checks.py:polite"``, relative to the current folder, or ``"my_pkg.checks:polite"``).

    Args:
        names: The names.
        source: How problems name where the names come from.
        loader: The module loader; a new one by default.

    Raises:
        DatasetError: Every name that does not resolve (with the closest known name) or
            whose evaluator cannot be built.

    Example:
        >>> [type(e).__name__ for e in resolve_evaluator_names(["ExactMatch"])]
        ['AutoevalsAdapter']
    """
    loader = loader or ReferenceLoader()
    problems: list[DatasetProblem] = []
    built = [
        _resolve_evaluator(
            EvaluatorSpec(name=name), loader, source, f"[{index}]", Path.cwd(), problems
        )
        for index, name in enumerate(names)
    ]
    if problems:
        raise DatasetError(problems)
    return [item.evaluator for item in built if item is not None]


def _resolve_check(
    spec: EvaluatorSpec,
    check: CheckSpec,
    file: str,
    location: str,
    problems: list[DatasetProblem],
) -> ResolvedEvaluator | None:
    """The evaluator of a check item; its type is known by now (the runnable was imported)."""
    try:
        evaluator = check.to_check()
    except UnknownCheckTypeError:
        suggestion = closest_check_type(check.type)
        problems.append(
            DatasetProblem(
                file=file,
                location=f"{location}.type",
                message=f"unknown check type {check.type!r}",
                hint=(f"did you mean {suggestion!r}? " if suggestion else "")
                + f"the check types are {', '.join(check_type_names())}",
            )
        )
        return None
    except CheckValueError as exc:  # a type the runnable's module registers, checked only now
        problems.append(
            DatasetProblem(
                file=file,
                location=f"{location}.value",
                message=exc.message,
                expected=exc.expected,
                found=exc.found,
                hint=exc.hint,
            )
        )
        return None
    return ResolvedEvaluator(spec=spec, evaluator=evaluator, name=evaluator.name)


def resolve_evaluators(
    specs: Sequence[EvaluatorSpec],
    *,
    file: str,
    location: str = "evaluators",
    base_dir: Path | None = None,
    loader: ReferenceLoader | None = None,
) -> list[ResolvedEvaluator]:
    """Build evaluators declared as a dataset file declares them, in a file of another kind.

    The same names, references and ``args`` as a dataset's ``evaluators`` (an evaluators file
    of ``evaltrace serve``, say), resolved by the same registry and loader.

    Args:
        specs: The evaluator specs, in order.
        file: How problems name the file.
        location: Where the list is in the file (problems say ``evaluators[1]``).
        base_dir: The file's folder: references to files resolve against it.
        loader: The module loader; a new one by default.

    Raises:
        DatasetError: Every spec that does not resolve (with the closest known name) or whose
            evaluator cannot be built.
    """
    loader = loader or ReferenceLoader()
    problems: list[DatasetProblem] = []
    built = [
        _resolve_evaluator(
            spec, loader, file, format_location((location, index)), base_dir, problems
        )
        for index, spec in enumerate(specs)
    ]
    if problems:
        raise DatasetError(problems)
    return [item for item in built if item is not None]


STORED_TRACES_RUNNABLE = "stored traces"
"""The name of the runnable of a dataset whose entries are scored from stored traces."""


def _stored_traces_only(**entry_kwargs: Any) -> None:
    """Stands for the runnable of a dataset scored from stored traces; never called."""
    raise EvaltraceError(
        "the entries of this dataset are scored from stored traces: there is no runnable to call"
    )


def _resolve_evaluator(
    spec: EvaluatorSpec,
    loader: ReferenceLoader,
    file: str,
    location: str,
    base_dir: Path | None,
    problems: list[DatasetProblem],
) -> ResolvedEvaluator | None:
    if spec.check is not None:
        return _resolve_check(spec, spec.check, file, location, problems)
    try:
        if parse_reference(spec.name) is None:
            target: object = lookup_evaluator(spec.name)
        else:
            target = loader.load(spec.name, file=file, location=location, base_dir=base_dir)
        evaluator = build_evaluator(target, spec.args, label=spec.name)
    except UnknownEvaluatorError:
        suggestion = closest(spec.name, registered_evaluators())
        problems.append(
            DatasetProblem(
                file=file,
                location=location,
                message=f"unknown evaluator {spec.name!r}",
                hint=(f"did you mean {suggestion!r}? " if suggestion else "")
                + "a custom evaluator is written 'path/to/file.py:name' or "
                "'package.module:name', or registered with register_evaluator",
            )
        )
        return None
    except DatasetError as exc:
        problems += exc.problems
        return None
    except EvaluatorBuildError as exc:
        problems.append(
            DatasetProblem(
                file=file, location=location, message=exc.message, found=exc.found, hint=exc.hint
            )
        )
        return None
    return ResolvedEvaluator(spec=spec, evaluator=evaluator, name=evaluator_name(evaluator))
