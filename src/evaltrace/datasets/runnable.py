"""The app's entry point in a dataset run: the :class:`Runnable` protocol and its adapter.

A dataset's ``runnable`` is one of:

* a **Runnable class**: ``create()`` (optional classmethod, sync or async; ``cls()`` without
  it) makes the one instance of the run, ``setup()`` (optional) runs once before the entries,
  ``run(args)`` once per entry, concurrently, and ``teardown()`` (optional) once at the end,
  always (see :meth:`RunnableAdapter.session`);
* an **object** with a ``run`` method (and optionally ``setup``/``teardown``), used as is;
* a **plain function**, sync or async, or any other callable.

The entry's ``entry_kwargs`` reach ``run`` (or the function) in one of two ways, read from
its signature (annotations resolved with :func:`typing.get_type_hints`, so
``from __future__ import annotations`` is fine):

* it takes **one parameter annotated with a structured type**, a pydantic model, a dataclass,
  a ``TypedDict`` or a ``dict``: ``entry_kwargs`` is validated as that type and passed as the
  one argument;
* otherwise ``entry_kwargs`` are passed as **keyword arguments**.

Sync methods and functions run in a worker thread with the caller's context, so they never
block the event loop. :meth:`RunnableAdapter.check_arguments` checks an entry's arguments
against the signature or model before anything runs.

Example:
    >>> import anyio
    >>> def answer(question: str) -> str:
    ...     return question.upper()
    >>> adapter = RunnableAdapter(answer)
    >>> problems = adapter.check_arguments(
    ...     {"questoin": "hi"}, file="faq.json", location="entries[0].entry_kwargs"
    ... )
    >>> [problem.message for problem in problems]
    ["missing required argument 'question'", "unexpected argument 'questoin'"]
    >>> problems[1].hint
    "did you mean 'question'? answer takes: question"
    >>> anyio.run(adapter.run, {"question": "hi"})
    'HI'
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import typing
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio
import typing_extensions
from pydantic import BaseModel, TypeAdapter, ValidationError

from evaltrace._safe_text import exception_text, safe_repr, type_name
from evaltrace.concurrency.callables import is_async_callable
from evaltrace.concurrency.threads import run_in_worker_thread
from evaltrace.datasets.problems import DatasetProblem, closest, describe_value
from evaltrace.errors import EvaltraceError

__all__ = [
    "NotRunnableError",
    "Runnable",
    "RunnableAdapter",
    "RunnableLifecycleError",
]

ArgsT = TypeVar("ArgsT", contravariant=True)


@runtime_checkable
class Runnable(Protocol[ArgsT]):
    """What drives the app for a dataset run: an object with ``async run(args)``.

    Only ``run`` is required. A class may also define, and the dataset runner then calls:

    * ``create()``, a classmethod returning the instance (else the class is called with no
      arguments);
    * ``async setup()``, once per dataset before any entry runs;
    * ``async teardown()``, once per dataset after the last entry, even when entries or
      ``setup`` failed or the run was interrupted.

    ``run`` is called concurrently for several entries on the one instance. Annotate its
    parameter with a pydantic model to receive the entry's ``entry_kwargs`` validated as that
    model, or give it named parameters to receive them as keyword arguments.

    Example:
        >>> from pydantic import BaseModel
        >>> class Question(BaseModel):
        ...     question: str
        >>> class App(Runnable[Question]):
        ...     async def run(self, args: Question) -> str:
        ...         return args.question.upper()
    """

    async def run(self, args: ArgsT, /) -> Any:
        """Run the app on one entry's arguments; the return value is its output."""


class NotRunnableError(EvaltraceError, TypeError):
    """An object cannot drive a dataset run (not callable, no ``run``, unusable signature)."""


class RunnableLifecycleError(EvaltraceError, RuntimeError):
    """:meth:`RunnableAdapter.run` was called on a class before :meth:`~RunnableAdapter.setup`."""


class RunnableAdapter:
    """One interface over every kind of runnable: ``setup``, ``run(entry_kwargs)``, ``teardown``.

    Args:
        target: A Runnable class, an object with a ``run`` method, or a callable.
        name: How messages name it (derived from ``target`` by default).

    Raises:
        NotRunnableError: ``target`` has no usable ``run`` and is not callable, or the
            signature cannot be read (an annotation naming something undefined, a
            positional-only parameter that keyword arguments cannot fill).
    """

    def __init__(self, target: object, *, name: str | None = None) -> None:
        self.target = target
        """What was adapted."""
        self.name = name or _name_of(target)
        """How messages name the runnable."""
        self._instance: object | None = None
        self._is_class = isinstance(target, type)
        if isinstance(target, type):
            _check_constructible(target, self.name)
        function, skip = _run_function(target, self.name)
        self._function = function
        self._parameters = _parameters(function, skip, self.name)
        keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self._keywords = [p.name for p in self._parameters if p.kind in keyword_kinds]
        self._required = [
            p.name
            for p in self._parameters
            if p.kind in keyword_kinds and p.default is inspect.Parameter.empty
        ]
        self._takes_any_keyword = any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in self._parameters
        )
        self._argument_type: Any = _one_argument_type(function, self._parameters, self.name)
        self._fields: list[str] | None = None
        self._validator: TypeAdapter[Any] | None = None
        if self._argument_type is None:
            _check_keywords_can_fill(self._parameters, self.name)
        else:
            self._fields = _field_names(self._argument_type)
            self._validator = _validator(self._argument_type, self.name)

    @property
    def takes_one_argument(self) -> bool:
        """Whether ``entry_kwargs`` are validated into one argument (else keyword arguments)."""
        return self._argument_type is not None

    @property
    def argument_type(self) -> Any:
        """The annotated type of the one argument, or ``None`` for keyword arguments."""
        return self._argument_type

    # -- checking ---------------------------------------------------------------------------

    def check_arguments(
        self, entry_kwargs: Mapping[str, Any], *, file: str, location: str
    ) -> list[DatasetProblem]:
        """Every problem with calling the runnable with ``entry_kwargs``, without calling it.

        Args:
            entry_kwargs: One entry's arguments.
            file: How problems name the dataset file.
            location: Where ``entry_kwargs`` is in the file (``entries[2].entry_kwargs``).
        """
        if self._validator is not None:
            return self._check_model(self._validator, entry_kwargs, file, location)
        return self._check_keywords(entry_kwargs, file, location)

    def _check_model(
        self,
        validator: TypeAdapter[Any],
        entry_kwargs: Mapping[str, Any],
        file: str,
        location: str,
    ) -> list[DatasetProblem]:
        problems: list[DatasetProblem] = []
        model = _type_label(self._argument_type)
        if self._fields is not None:
            for key in entry_kwargs:
                if key not in self._fields:
                    listing = f"{model} has the fields: {', '.join(self._fields) or 'none'}"
                    problems.append(_unexpected(file, location, key, self._fields, listing))
        try:
            validator.validate_python(dict(entry_kwargs))
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                if error["type"] == "extra_forbidden":
                    continue  # reported above, with a suggestion
                where = ".".join(str(part) for part in error["loc"])
                if error["type"] == "missing":
                    problems.append(
                        DatasetProblem(
                            file=file,
                            location=location,
                            message=f"missing required field {where!r}",
                            hint=f"{self.name} validates entry_kwargs as {model}",
                        )
                    )
                else:
                    problems.append(
                        DatasetProblem(
                            file=file,
                            location=f"{location}.{where}" if where else location,
                            message=f"invalid for {model}: {error['msg']}",
                            found=describe_value(error.get("input")),
                        )
                    )
        return problems

    def _check_keywords(
        self, entry_kwargs: Mapping[str, Any], file: str, location: str
    ) -> list[DatasetProblem]:
        problems: list[DatasetProblem] = []
        if all(name in entry_kwargs for name in self._required) and (
            self._takes_any_keyword or all(key in self._keywords for key in entry_kwargs)
        ):
            return problems
        signature = f"{self.name} takes: {', '.join(self._keywords) or 'no arguments'}"
        for name in self._required:
            if name not in entry_kwargs:
                problems.append(
                    DatasetProblem(
                        file=file,
                        location=location,
                        message=f"missing required argument {name!r}",
                        hint=signature,
                    )
                )
        if not self._takes_any_keyword:
            for key in entry_kwargs:
                if key not in self._keywords:
                    problems.append(_unexpected(file, location, key, self._keywords, signature))
        return problems

    # -- running ----------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create the instance of a class (``create()`` or ``cls()``) and run its ``setup()``.

        Raises:
            Exception: Whatever ``create`` or ``setup`` raised.
        """
        if self._is_class:
            assert isinstance(self.target, type)
            create = getattr(self.target, "create", None)
            self._instance = await _call_user(create if callable(create) else self.target)
        hook = getattr(self._hooks_owner(), "setup", None)
        if callable(hook):
            await _call_user(hook)

    async def run(self, entry_kwargs: Mapping[str, Any]) -> Any:
        """Call the runnable with one entry's arguments and return its output.

        Safe to call concurrently. For a class, :meth:`setup` must have run.

        Raises:
            RunnableLifecycleError: A class whose instance was not created by :meth:`setup`.
            pydantic.ValidationError: ``entry_kwargs`` do not validate as the argument model.
            Exception: Whatever the runnable raised.
        """
        function = self._bound_function()
        if self._validator is not None:
            return await _call_user(function, self._validator.validate_python(dict(entry_kwargs)))
        return await _call_user(function, **entry_kwargs)

    async def teardown(self) -> None:
        """Run the instance's ``teardown()``, shielded from cancellation; then forget it.

        Does nothing for a class whose instance was never created (``create`` failed).
        """
        owner = self._hooks_owner()
        if owner is None:
            return
        hook = getattr(owner, "teardown", None)
        try:
            if callable(hook):
                with anyio.CancelScope(shield=True):
                    await _call_user(hook)
        finally:
            if self._is_class:
                self._instance = None

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[RunnableAdapter]:
        """``setup()`` on entry and ``teardown()`` on exit, even on error or cancellation.

        ``teardown`` runs whenever the instance exists, also when ``setup`` raised part-way.

        Example:
            >>> async def main() -> None:
            ...     async with RunnableAdapter(str.upper).session() as app:
            ...         ...
        """
        try:
            await self.setup()
            yield self
        finally:
            await self.teardown()

    def _hooks_owner(self) -> object | None:
        if self._is_class:
            return self._instance
        if callable(getattr(self.target, "run", None)):
            return self.target
        return None

    def _bound_function(self) -> Callable[..., Any]:
        if not self._is_class:
            return self._function
        if self._instance is None:
            raise RunnableLifecycleError(
                f"{self.name}: run() was called before setup() created the instance; "
                "call setup() first (or use the session() context manager)"
            )
        run: Callable[..., Any] = getattr(self._instance, "run")  # noqa: B009
        return run

    def __repr__(self) -> str:
        return f"RunnableAdapter({self.name})"


def _type_label(annotation: Any) -> str:
    name = getattr(annotation, "__name__", None)
    return name if isinstance(name, str) else safe_repr(annotation)


def _unexpected(
    file: str, location: str, key: str, known: list[str], listing: str
) -> DatasetProblem:
    suggestion = closest(key, known)
    return DatasetProblem(
        file=file,
        location=f"{location}.{key}",
        message=f"unexpected argument {key!r}",
        hint=(f"did you mean {suggestion!r}? " if suggestion else "") + listing,
    )


def _name_of(target: object) -> str:
    name = getattr(target, "__name__", None)
    if isinstance(name, str) and (isinstance(target, type) or inspect.isroutine(target)):
        return name
    return type_name(target)


def _run_function(target: object, name: str) -> tuple[Callable[..., Any], int]:
    """The function whose signature decides the call, and how many leading parameters it binds.

    For a class it is the unbound ``run`` (``self`` skipped, unless it is a static or class
    method); for an object with ``run``, the bound method; else the callable itself.
    """
    if isinstance(target, type):
        raw = inspect.getattr_static(target, "run", None)
        if raw is None:
            raise NotRunnableError(
                f"{name} has no run method; a Runnable class defines "
                "async def run(self, args) (and optionally create, setup, teardown)"
            )
        if isinstance(raw, staticmethod):
            return raw.__func__, 0
        if isinstance(raw, classmethod):
            bound: Callable[..., Any] = getattr(target, "run")  # noqa: B009
            return bound, 0
        if not callable(raw):
            raise NotRunnableError(f"{name}.run is {type_name(raw)}, not a method")
        return raw, 1
    run = getattr(target, "run", None)
    if run is not None and callable(run) and not inspect.isroutine(target):
        return run, 0
    if callable(target):
        return target, 0
    raise NotRunnableError(
        f"{name} cannot drive a run: it is {type_name(target)}, not a Runnable class, an object "
        "with a run method, or a function"
    )


def _one_argument_type(
    function: Callable[..., Any], parameters: list[inspect.Parameter], name: str
) -> Any:
    """The structured type of the one parameter, if that is how the runnable takes arguments."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(parameters) != 1 or parameters[0].kind not in positional:
        return None
    annotation = _hints(function, name).get(parameters[0].name)
    return annotation if _is_structured(annotation) else None


def _check_keywords_can_fill(parameters: list[inspect.Parameter], name: str) -> None:
    for parameter in parameters:
        if (
            parameter.kind is inspect.Parameter.POSITIONAL_ONLY
            and parameter.default is inspect.Parameter.empty
        ):
            raise NotRunnableError(
                f"{name}: the parameter {parameter.name!r} is positional-only, so entry_kwargs "
                "cannot give it; make it a normal parameter, or annotate a single parameter "
                "with a pydantic model"
            )


def _validator(argument_type: Any, name: str) -> TypeAdapter[Any]:
    try:
        return TypeAdapter(argument_type)
    except Exception as exc:  # pydantic cannot build a validator for this type
        raise NotRunnableError(
            f"{name}: its argument type {_type_label(argument_type)} cannot be validated "
            f"({exception_text(exc)})"
        ) from None


def _check_constructible(cls: type, name: str) -> None:
    """Refuse a class without ``create`` whose constructor needs arguments (before any run)."""
    if callable(getattr(cls, "create", None)):
        return
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return  # a constructor Python cannot describe: try it at setup
    try:
        signature.bind()
    except TypeError as exc:
        raise NotRunnableError(
            f"{name}() cannot be called without arguments ({exc}); give its parameters "
            "defaults, or define a create() classmethod that builds the instance"
        ) from None


def _parameters(function: Callable[..., Any], skip: int, name: str) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise NotRunnableError(
            f"{name}: its signature cannot be read ({exception_text(exc)})"
        ) from None
    return list(signature.parameters.values())[skip:]


def _hints(function: Callable[..., Any], name: str) -> dict[str, Any]:
    target = function
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isroutine(target) or isinstance(target, type)):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target)
    except Exception as exc:  # an annotation naming something the module does not define
        raise NotRunnableError(
            f"{name}: the annotations of its parameters cannot be resolved "
            f"({exception_text(exc)}); import the annotated types at module level, not only "
            "under TYPE_CHECKING"
        ) from None


def _is_structured(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return True
    if typing_extensions.is_typeddict(annotation):
        return True
    origin = typing.get_origin(annotation) or annotation
    return origin in (dict, Mapping)


def _field_names(annotation: Any) -> list[str] | None:
    """The keys a structured argument type accepts, or ``None`` when it accepts any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation.model_config.get("extra") == "allow":
            return None
        names: list[str] = []
        for field_name, field in annotation.model_fields.items():
            names.append(field_name)
            if isinstance(field.alias, str) and field.alias != field_name:
                names.append(field.alias)
        return names
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return [field.name for field in dataclasses.fields(annotation)]
    if typing_extensions.is_typeddict(annotation):
        return list(typing.get_type_hints(annotation))
    return None


async def _call_user(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await ``function(*args, **kwargs)``; a sync function runs in a worker thread.

    The thread is a daemon thread with the caller's context: a call abandoned past its
    timeout never keeps the process from exiting.
    """
    if is_async_callable(function):
        result = await function(*args, **kwargs)
    else:
        result = await run_in_worker_thread(functools.partial(function, *args, **kwargs))
    if inspect.isawaitable(result):
        result = await result
    return result
