"""What a run is made of: its entries, and the source that gives them.

An :class:`Entry` is one thing to score: an argument to run the app with (or a stored trace
to read instead, or a test case that carries its output already), its evaluators, the test
case whose inputs, expectation and metadata it keeps, and its name. An :class:`EntrySource`
gives a run its entries lazily, one at a time, with what the run records of them (its name,
its file, its evaluators, its fingerprint). Plain inputs and stored traces are sources of
this floor (:mod:`evaltrace.engine.inputs`, :mod:`evaltrace.engine.stored`); dataset entries
and pipeline inputs are sources of the floors above.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from evaltrace._safe_text import type_name
from evaltrace.engine.runs import EntryPoint
from evaltrace.evals.evaluable import Evaluable
from evaltrace.evals.evaluation import EvaluationError
from evaltrace.evals.evaluator import EvaluatorFunction, PreparedEvaluator, prepare_evaluator
from evaltrace.results.model import EntryResult, EntrySelection, RunFingerprint
from evaltrace.trace import StoredTrace

if TYPE_CHECKING:
    from evaltrace.engine.scoring import Scored

__all__ = ["Entry", "EntrySource", "EvaluatorPlans", "Evaluators", "SourceInfo"]


@dataclass(frozen=True, slots=True)
class Evaluators:
    """The evaluators of one or more entries, each prepared once, and their names."""

    prepared: tuple[PreparedEvaluator, ...]
    """The evaluators, ready to call."""
    names: tuple[str, ...]
    """Their display names, in order."""


class EvaluatorPlans:
    """Prepares each evaluator once per run, and each list of evaluators once.

    Entries that share one list object share its :class:`Evaluators` (a dataset's entries
    with the same evaluators do), so a run of 10**6 such entries prepares them once.
    """

    def __init__(self) -> None:
        self._lists: dict[int, tuple[Sequence[EvaluatorFunction], Evaluators]] = {}
        self._prepared: dict[int, tuple[EvaluatorFunction, PreparedEvaluator]] = {}

    def of(self, listed: Sequence[EvaluatorFunction], where: str = "evaluators") -> Evaluators:
        """The evaluators of ``listed``, prepared.

        Args:
            listed: The evaluators (sync or async callables).
            where: How errors name the list (``"inputs[3].evaluators"``).

        Raises:
            TypeError: An item is not callable.
        """
        known = self._lists.get(id(listed))
        if known is not None and known[0] is listed:  # the value keeps the list alive
            return known[1]
        prepared = []
        for position, check in enumerate(listed):
            if not callable(check):
                raise TypeError(f"{where}[{position}] is {type_name(check)}, not callable")
            one = self._prepared.get(id(check))
            if one is None or one[0] is not check:
                one = self._prepared[id(check)] = (check, prepare_evaluator(check))
            prepared.append(one[1])
        plan = Evaluators(tuple(prepared), tuple(item.name for item in prepared))
        self._lists[id(listed)] = (listed, plan)
        return plan

    def names(self) -> list[str]:
        """The display names of every evaluator prepared so far, in first-use order."""
        return list(dict.fromkeys(name for _, plan in self._lists.values() for name in plan.names))


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """One entry of a run: what to run or read, what scores it, what it is called."""

    index: int
    """Its position in the run (the index of its saved result)."""
    evaluators: Evaluators
    """What scores it (none: it is run and saved, not scored)."""
    input: Any = None
    """The argument the runnable is called with."""
    case: Evaluable | None = None
    """The test case whose named inputs, expectation, metadata and description are kept; one
    whose ``eval_output`` is set is scored as it is, without running anything."""
    name: str | None = None
    """Its name, given to evaluators and saved (its position when ``None``)."""
    served: Mapping[str, Any] | None = None
    """What ``wrap(..., purpose="input", name=...)`` returns during its run; by default the
    case's named inputs."""
    trace: StoredTrace | None = None
    """A stored trace to score instead of running anything."""

    @property
    def label(self) -> str:
        """How messages name it: its name, else ``"input #<index>"``."""
        return self.name if self.name is not None else f"input #{self.index}"

    def inputs(self) -> Mapping[str, Any] | None:
        """What its run serves to ``wrap(..., purpose="input")``."""
        if self.served is not None:
            return self.served
        case = self.case
        if case is None or not case.eval_input:
            return None
        return {item.name: item.value for item in case.eval_input}


@dataclass(frozen=True, kw_only=True)
class SourceInfo:
    """What a run records of where its entries came from (the saved result's header)."""

    source: str | None = None
    """The file the entries came from (a dataset file, a trace file)."""
    evaluators: list[str] = field(default_factory=list)
    """The evaluators' display names, in order."""
    settings: dict[str, JsonValue] = field(default_factory=dict)
    """Settings of the source, saved with the run's own (``"runnable"``, ``"traces"``, ...)."""
    selection: EntrySelection | None = None
    """Which of a dataset's entries run (its filter and shard)."""
    aggregators: dict[str, list[dict[str, JsonValue]]] = field(default_factory=dict)
    """The dataset-level aggregators declared on each evaluator, as a dataset file writes
    them."""
    fingerprint: RunFingerprint | None = None
    """What makes the run comparable with another."""


class EntrySource(ABC):
    """Where a run's entries come from; what the run needs of them beside the entries."""

    runnable: EntryPoint | None = None
    """The app every entry that runs is run with; ``None`` when no entry runs."""
    scored: bool = True
    """Whether its entries are scored while they run (a pipeline's are only run)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The run's name: the dataset's, the runnable's, the trace file's."""

    @abstractmethod
    def entries(self) -> Iterator[Entry]:
        """The entries, made as the run takes them (a run of any size is never held)."""

    @abstractmethod
    def __len__(self) -> int:
        """How many entries :meth:`entries` gives."""

    def info(self) -> SourceInfo:
        """What the run records of the source; called once, before the first entry."""
        return SourceInfo()

    def arriving(self) -> AsyncIterator[Entry] | None:
        """The entries as they arrive, for a source fed while the run goes on; ``None`` here.

        A source whose entries are not known up front (traces received over the network by
        ``evaltrace serve``) returns an async iterator: the run's workers take each entry
        from it when one is free, waiting for the next without holding the event loop, and
        the run ends when it is exhausted. :meth:`entries` is then not used, ``len`` counts
        the entries taken so far, and a resumed run does not apply. Only the local executor
        scores such a source. ``None`` (the default): the run takes :meth:`entries`.
        """
        return None

    def session(self) -> AbstractAsyncContextManager[object]:
        """What runs around the entries in each process that scores them; nothing by default.

        A dataset's runnable's ``setup`` and ``teardown``.
        """
        return contextlib.nullcontext()

    def finish(self, scored: Scored) -> EntryResult:
        """The saved result of a scored entry, with what the source adds to it.

        A pipeline adds each component's calls. What it raises ends the run. By default the
        result as scored.
        """
        return scored.result

    def errors(self) -> Iterable[EvaluationError]:
        """What went wrong outside any entry, known once every entry was taken; none by default.

        Lines of a trace file that belong to no trace.
        """
        return ()
