"""The one object an evaluator is given: what to score, the trace, the entry and the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from pydantic import JsonValue

from evaltrace.evals.evaluable import Evaluable, Unset
from evaltrace.trace.tree import ObservationNode

__all__ = ["EvaluatorContext"]

_NO_ATTRIBUTES: Final[Mapping[str, Any]] = MappingProxyType({})


def _no_attributes() -> Mapping[str, Any]:
    return _NO_ATTRIBUTES


@dataclass(kw_only=True, frozen=True, slots=True)
class EvaluatorContext:
    """Everything an evaluator may read about one entry of a run.

    The runner builds one per entry and gives the same one to each of the entry's evaluators
    (those declared to take it: a subclass of :class:`~evaltrace.Evaluator`, a function
    decorated with :func:`~evaltrace.evals.evaluator`, or one whose first parameter is
    annotated ``EvaluatorContext``).

    Example:
        >>> from evaltrace import NamedData
        >>> case = Evaluable(
        ...     eval_input=[NamedData(name="question", value="2+2?")],
        ...     eval_output=[NamedData(name="answer", value="4")],
        ...     expectation="4",
        ... )
        >>> ctx = EvaluatorContext(evaluable=case)
        >>> ctx.output("answer") == ctx.expectation, ctx.input("question")
        (True, '2+2?')
    """

    evaluable: Evaluable
    """What is scored: the named inputs and outputs, the expectation and the metadata."""
    trace: Sequence[ObservationNode] | None = None
    """The captured trace of the run (its root nodes); ``None`` when nothing ran (an evaluable
    scored as it was given) or the caller gave none."""
    entry_name: str | None = None
    """The entry's name: the dataset entry's name, or the test case's description."""
    entry_index: int | None = None
    """The entry's position among the inputs of the run; ``None`` outside a run of many."""
    run_id: str | None = None
    """The id of the run this entry belongs to (the same for every entry of one run)."""
    attributes: Mapping[str, Any] = field(default_factory=_no_attributes)
    """Attributes of the whole run, as its caller gave them (e.g. the dataset's name); read
    only, shared by every entry."""
    duration_s: float | None = None
    """Wall time of the run that produced the output; ``None`` when nothing ran."""

    @property
    def expectation(self) -> JsonValue | Unset:
        """The expected output; :data:`~evaltrace.UNSET` when none was given."""
        return self.evaluable.expectation

    @property
    def has_expectation(self) -> bool:
        """Whether an expectation (possibly ``None``) was given."""
        return self.evaluable.has_expectation

    @property
    def metadata(self) -> Mapping[str, JsonValue]:
        """The entry's metadata (expected tool names, thresholds, ...); empty when none."""
        return self.evaluable.eval_metadata or _NO_ATTRIBUTES

    def input(self, name: str | None = None, default: Any = None) -> Any:
        """The named input, or all inputs collapsed when ``name`` is ``None``.

        Collapsed means: no input gives ``None``, one gives its value, several give
        ``{name: value}``.
        """
        return self.evaluable.input_value(name, default)

    def output(self, name: str | None = None, default: Any = None) -> Any:
        """The named output, or all outputs collapsed when ``name`` is ``None``."""
        return self.evaluable.output_value(name, default)
