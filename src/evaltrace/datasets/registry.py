"""Evaluator names a dataset may use: the built-in ones and those users register.

Every evaluator, judge and metric evaltrace ships is registered under its public name: the 21
autoevals scorers (``"Factuality"``, ``"ExactMatch"``, ...) and the metric evaluators
(``"DocumentRecall"``, ``"DocumentMRR"``, ``"DocumentMAP"``, ``"DocumentNDCG"``,
``"AnswerExactMatch"``, ``"AnswerF1"``, ``"SemanticAnswerSimilarity"``) and the deterministic
ones (``"Contains"``, ``"IsInstance"``, ``"MaxDuration"``, ``"HasMatchingSpan"``). Users add
their own with :func:`register_evaluator`, as a call or a decorator; a dataset then names them
like the built-in ones.

What is registered is a *factory* in the sense of :func:`~evaltrace.datasets.build_evaluator`:
a class (instantiated with the spec's ``args``), a function without required parameters
(called with ``args``), or an evaluator used as is.

Example:
    >>> @register_evaluator("Politeness", replace=True)
    ... def politeness(evaluable):
    ...     return "please" in str(evaluable.output_value())
    >>> lookup_evaluator("Politeness") is politeness
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar, overload

from evaltrace.datasets.model import INHERIT
from evaltrace.datasets.problems import closest
from evaltrace.errors import UnknownEvaluatorError
from evaltrace.judges import (
    AnswerCorrectness,
    AnswerRelevancy,
    Battle,
    ClosedQA,
    ContextRelevancy,
    EmbeddingSimilarity,
    ExactMatch,
    Factuality,
    Faithfulness,
    Humor,
    JSONDiff,
    LevenshteinMatch,
    ListContains,
    Moderation,
    NumericDiff,
    Possible,
    Security,
    Sql,
    Summary,
    Translation,
    ValidJSON,
)
from evaltrace.metrics.deterministic import Contains, HasMatchingSpan, IsInstance, MaxDuration
from evaltrace.metrics.evaluators import (
    AnswerExactMatch,
    AnswerF1,
    DocumentMAP,
    DocumentMRR,
    DocumentNDCG,
    DocumentRecall,
    SemanticAnswerSimilarity,
)

__all__ = [
    "BUILTIN_EVALUATORS",
    "UnknownEvaluatorError",
    "lookup_evaluator",
    "register_evaluator",
    "registered_evaluators",
]

F = TypeVar("F", bound=Callable[..., Any])

BUILTIN_EVALUATORS: Final[tuple[Callable[..., Any], ...]] = (
    LevenshteinMatch,
    ExactMatch,
    NumericDiff,
    JSONDiff,
    ValidJSON,
    ListContains,
    EmbeddingSimilarity,
    Factuality,
    ClosedQA,
    Battle,
    Humor,
    Security,
    Sql,
    Summary,
    Translation,
    Possible,
    Moderation,
    ContextRelevancy,
    Faithfulness,
    AnswerRelevancy,
    AnswerCorrectness,
    DocumentRecall,
    DocumentMRR,
    DocumentMAP,
    DocumentNDCG,
    AnswerExactMatch,
    AnswerF1,
    SemanticAnswerSimilarity,
    Contains,
    IsInstance,
    MaxDuration,
    HasMatchingSpan,
)
"""The evaluators evaltrace ships, each registered under its ``__name__``."""

_registry: dict[str, Callable[..., Any]] = {item.__name__: item for item in BUILTIN_EVALUATORS}
_lock = threading.Lock()


def _same_definition(old: object, new: object) -> bool:
    """Whether ``new`` is ``old`` or the same definition executed again (a reloaded module)."""
    if old is new:
        return True
    where = ("__module__", "__qualname__")
    return all(
        isinstance(getattr(old, name, None), str)
        and getattr(old, name, None) == getattr(new, name, None)
        for name in where
    )


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"an evaluator name must be a non-empty string, got {name!r}")
    if ":" in name or name == INHERIT or name != name.strip():
        raise ValueError(
            f"{name!r} cannot be an evaluator name: datasets read a name with ':' as a "
            "reference to code, and '...' as the dataset's evaluators; choose a plain name "
            "such as 'Politeness'"
        )
    return name


@overload
def register_evaluator(name: str, factory: F, *, replace: bool = False) -> F: ...


@overload
def register_evaluator(
    name: str, factory: None = None, *, replace: bool = False
) -> Callable[[F], F]: ...


def register_evaluator(
    name: str, factory: F | None = None, *, replace: bool = False
) -> F | Callable[[F], F]:
    """Make an evaluator available to datasets under ``name``.

    Call it with the factory, or use it as a decorator (``@register_evaluator("Name")``).
    Registering the same object again, or the same definition from a module executed again
    (same module and qualified name), is allowed; another object under a taken name needs
    ``replace=True``.

    Args:
        name: The name datasets use, such as ``"Politeness"``: no ``":"``, not ``"..."``.
        factory: A class (instantiated with the spec's ``args``), a function without required
            parameters (called with ``args``; it returns the evaluator), or an evaluator.
        replace: Allow replacing a different evaluator registered under ``name``.

    Returns:
        ``factory``, or a decorator registering and returning its argument.

    Raises:
        ValueError: ``name`` is not a valid name, or is taken and ``replace`` is false.
        TypeError: ``factory`` is not callable.

    Example:
        >>> from evaltrace.judges import ExactMatch
        >>> _ = register_evaluator("StrictMatch", ExactMatch, replace=True)
        >>> "StrictMatch" in registered_evaluators()
        True
    """
    _check_name(name)

    def register(target: F) -> F:
        if not callable(target):
            raise TypeError(
                f"the evaluator registered as {name!r} must be a class or a callable, "
                f"got {target!r}"
            )
        with _lock:
            current = _registry.get(name)
            if current is not None and not replace and not _same_definition(current, target):
                raise ValueError(
                    f"another evaluator is already registered as {name!r} ({current!r}); "
                    "pass replace=True to replace it, or choose another name"
                )
            _registry[name] = target
        return target

    if factory is None:
        return register
    return register(factory)


def lookup_evaluator(name: str) -> Callable[..., Any]:
    """The factory registered under ``name``.

    Raises:
        UnknownEvaluatorError: No evaluator has that name; the message suggests the closest.

    Example:
        >>> lookup_evaluator("ExactMatch").__name__
        'ExactMatch'
    """
    with _lock:
        factory = _registry.get(name)
        names = sorted(_registry)
    if factory is not None:
        return factory
    suggestion = closest(name, names)
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    raise UnknownEvaluatorError(f"no evaluator is registered as {name!r}.{hint}")


def registered_evaluators() -> list[str]:
    """The registered evaluator names, sorted.

    Example:
        >>> len(registered_evaluators()) >= 28
        True
    """
    with _lock:
        return sorted(_registry)
