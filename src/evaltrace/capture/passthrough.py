"""The idle path of a decorated function: a wrapper taking the function's own parameters.

While no span could be seen by anyone (:data:`~evaltrace.capture.context.spans_unseen`),
``@wrap`` must cost about what any decorator costs. A wrapper written ``(*args, **kwargs)``
packs every call's arguments into a tuple and a dict and unpacks them again, about a third of
an idle decorated call (bench_capture.py, bench/README.md). :func:`passthrough` makes the
wrapper of a plain function with the function's own parameters instead, from generated
source, so that an idle call reads one flag and calls the function with its arguments:

.. code-block:: python

    def answer(question=_evaltrace_missing, k=_evaltrace_missing, *_evaltrace_more):
        if not _evaltrace_more and question is not _evaltrace_missing:
            if _evaltrace_state.spans_unseen:
                return _evaltrace_function(
                    question, (_evaltrace_default_1 if k is _evaltrace_missing else k)
                )
            return _evaltrace_traced(
                question, (_evaltrace_default_1 if k is _evaltrace_missing else k)
            )
        return _evaltrace_given(
            _evaltrace_traced, (), (("question", question), ("k", k)), _evaltrace_more, 2
        )

Every parameter defaults to a marker of "not given", so that the traced path gets the
arguments the call gave and no others (or, when no argument was left out before a given
one, every argument with the defaults put in, which records the same): the span records the
call as the generic wrapper records it (given arguments first, then the defaults; a missing
argument makes the function raise inside its span). The one difference: keyword arguments
given out of the parameters' order are recorded in the parameters' order. A call with
arguments the function does not take raises ``TypeError`` before a span is made. Functions
taking ``*args`` or ``**kwargs`` keep the generic wrapper: their arguments are packed
whatever the wrapper does.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any, Final

from evaltrace.capture import context

__all__ = ["passthrough"]


class _Missing:
    """Stands for an argument the call did not give."""

    def __repr__(self) -> str:
        return "<not given>"


_MISSING: Final = _Missing()
_PREFIX: Final = "_evaltrace_"
_KINDS: Final = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
)


def passthrough(fn: Callable[..., Any], traced: Callable[..., Any]) -> Callable[..., Any]:
    """The wrapper of ``fn``: ``fn`` itself while no span could be seen, else ``traced``.

    Args:
        fn: The decorated function.
        traced: The generic wrapper, ``(*args, **kwargs)``, that records the call.

    Returns:
        A function with ``fn``'s parameters and ``functools.wraps`` attributes, or ``traced``
        itself when ``fn`` is not a plain function whose parameters allow one (it takes
        ``*args`` or ``**kwargs``, or its signature cannot be read).
    """
    source = _source(fn)
    if source is None:
        return traced
    code, defaults = source
    namespace: dict[str, Any] = {
        f"{_PREFIX}function": fn,
        f"{_PREFIX}traced": traced,
        f"{_PREFIX}state": context,
        f"{_PREFIX}missing": _MISSING,
        f"{_PREFIX}given": _given,
        **defaults,
    }
    exec(code, namespace)  # source made above from the function's parameter names only
    wrapper = namespace[f"{_PREFIX}wrapper"]
    # Tracebacks and argument errors name the function, as they did the function itself.
    wrapper.__code__ = wrapper.__code__.replace(
        co_name=getattr(fn, "__name__", wrapper.__name__),
        co_qualname=getattr(fn, "__qualname__", wrapper.__qualname__),
    )
    functools.update_wrapper(wrapper, fn)
    return wrapper  # type: ignore[no-any-return]


def _source(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]] | None:
    """The wrapper's source and the defaults it names; ``None`` when ``fn`` allows none."""
    if not inspect.isfunction(fn) or inspect.isgeneratorfunction(fn):
        return None
    if inspect.isasyncgenfunction(fn):
        return None
    try:
        parameters = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind not in _KINDS or p.name.startswith(_PREFIX) for p in parameters):
        return None
    missing = f"{_PREFIX}missing"
    declared: list[str] = []
    passed: list[str] = []  # each argument passed on to the function, defaults put in
    present: list[str] = []  # the tests that every argument was given
    only: list[str] = []  # positional-only parameters, passed on by position
    named: list[str] = []  # the others, passed on by name when given
    defaults: dict[str, Any] = {}
    more = f"{_PREFIX}more"
    keywords: list[str] = []  # keyword-only parameters
    for index, parameter in enumerate(parameters):
        name = parameter.name
        kind = parameter.kind
        if kind is inspect.Parameter.KEYWORD_ONLY and f"*{more}" not in declared:
            declared.append(f"*{more}")
        declared.append(f"{name}={missing}")
        if kind is inspect.Parameter.POSITIONAL_ONLY:
            only.append(name)
            last = index + 1 == len(parameters) or parameters[index + 1].kind is not kind
            if last:
                declared.append("/")
        else:
            named.append(name)
        if kind is inspect.Parameter.KEYWORD_ONLY:
            keywords.append(name)
        value = name
        if parameter.default is inspect.Parameter.empty:
            present.append(f"{name} is not {missing}")
        else:
            default = f"{_PREFIX}default_{index}"
            defaults[default] = parameter.default
            value = f"({default} if {name} is {missing} else {name})"
        passed.append(value if kind is not inspect.Parameter.KEYWORD_ONLY else f"{name}={value}")
    if f"*{more}" not in declared:  # extra positional arguments reach the function
        declared.append(f"*{more}")
    is_async = inspect.iscoroutinefunction(fn)
    wait = "await " if is_async else ""
    given = ", ".join(f"({name!r}, {name})" for name in named)
    test = " and ".join([f"not {more}", *present])
    arguments = ", ".join(passed)
    lines = [
        f"{'async ' if is_async else ''}def {_PREFIX}wrapper({', '.join(declared)}):",
        f"    if {test}:",
        f"        if {_PREFIX}state.spans_unseen:",
        f"            return {wait}{_PREFIX}function({arguments})",
        *_traced_call(f"return {wait}{_PREFIX}traced({arguments})", parameters, missing),
        # Else the arguments the call gave and no others: the span records the call as the
        # call was made, and a call that does not fit fails in the function, in its span.
        f"    return {wait}{_PREFIX}given({_PREFIX}traced, ({', '.join(only)}"
        f"{',' if only else ''}), ({given}{',' if given else ''}), {more}, "
        f"{len(named) - len(keywords)})",
    ]
    return "\n".join(lines) + "\n", defaults


def _traced_call(call: str, parameters: Sequence[inspect.Parameter], missing: str) -> list[str]:
    """The lines that pass a call straight to the generic wrapper, every argument given.

    The generic wrapper records the arguments given first, then the defaults of the others;
    when no argument was left out before a given one, that is the parameters' order, and the
    wrapper may get every argument, defaults put in, without :func:`_given`'s repacking
    (about a twentieth of a captured call: the captured ``@wrap`` figure of bench/README.md).
    Other calls go on to :func:`_given`.
    """
    tests = []
    for parameter, following in itertools.pairwise(parameters):
        if parameter.default is inspect.Parameter.empty:
            continue  # a required parameter was given (the wrapper checked it first)
        if following.default is inspect.Parameter.empty:
            tests.append(f"{parameter.name} is not {missing}")
        else:
            tests.append(f"({parameter.name} is not {missing} or {following.name} is {missing})")
    if not tests:
        return [f"        {call}"]
    return [f"        if {' and '.join(tests)}:", f"            {call}"]


def _given(
    traced: Callable[..., Any],
    positional: Sequence[Any],
    named: Sequence[tuple[str, Any]],
    more: tuple[Any, ...],
    by_position: int,
) -> Any:
    """Call ``traced`` with the arguments a call gave, as it gave them.

    Args:
        traced: The generic wrapper.
        positional: The values of the positional-only parameters.
        named: Each other parameter's name and value, in order.
        more: Positional arguments past the parameters.
        by_position: How many of ``named`` may be given by position (the first ones).
    """
    args: list[Any] = []
    for value in positional:
        if value is _MISSING:
            break
        args.append(value)
    if more:  # every positional parameter was given by position, and more
        args += [value for _, value in named[:by_position]]
        args += more
        named = named[by_position:]
    return traced(*args, **{name: value for name, value in named if value is not _MISSING})
