"""Reading what a run recorded: its named ``wrap`` values and a retriever span's documents.

One rule for a name recorded more than once, used by every reader (the ``root`` selector, the
metric evaluators, pipeline evaluation): the values of a name recorded only with
``wrap(..., many=True)`` are gathered into a list, in the order they were recorded; a name
recorded once holds its value; a name recorded several times otherwise is an error
(:class:`~evaltrace.errors.DuplicateWrapNameError`), since which of the values is meant
cannot be known.

Inputs (``purpose="input"``) and outputs (``purpose="output"`` and ``"state"``) are read
apart: the same name may be both an input and an output of one run.

Example:
    >>> recorded_values(trace)  # doctest: +SKIP
    {'retrieved_documents': ['d1', 'd2'], 'answer': 'Paris'}
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from evaltrace.capture import conventions as conv
from evaltrace.capture.codec import decode
from evaltrace.errors import DuplicateWrapNameError

if TYPE_CHECKING:
    from pydantic import JsonValue

    from evaltrace.capture.values import WrapRecord
    from evaltrace.trace.spans import LLMSpan, ObserveSpan
    from evaltrace.trace.tree import ObservationNode

__all__ = [
    "Side",
    "collect_values",
    "recorded_value",
    "recorded_values",
    "span_documents",
    "wrap_records",
]

Side: TypeAlias = Literal["input", "output"]
"""Which values to read: ``"input"`` ones, or ``"output"`` ones (outputs and states)."""

_WHAT: Final[Mapping[Side, str]] = {"input": "input", "output": "output or state"}
_DOCUMENT_FIELDS: Final = {
    conv.DOCUMENT_CONTENT: "content",
    conv.DOCUMENT_ID: "id",
    conv.DOCUMENT_SCORE: "score",
    conv.DOCUMENT_METADATA: "metadata",
}


def wrap_records(trace: Sequence[ObservationNode]) -> list[WrapRecord]:
    """Every value ``wrap`` recorded in ``trace``, in the order they were recorded.

    Args:
        trace: The trace (its roots).

    Returns:
        The records of every span, by time of recording; records of equal time keep the
        order of the spans in the tree.
    """
    records: list[WrapRecord] = []
    stack = list(reversed(trace))
    # Depth-first, parents before children, as walk_trace walks, without a generator per node:
    # this runs for every stored trace scored (bench_stored.py, bench/README.md).
    while stack:
        node = stack.pop()
        values = node.span.named_values
        if values:
            records.extend(values)
        children = node.children
        if children:
            stack.extend(reversed(children))
    if len(records) > 1:
        records.sort(key=_timestamp)
    return records


_timestamp = operator.attrgetter("timestamp_ns")


def collect_values(records: Iterable[WrapRecord], side: Side) -> dict[str, JsonValue]:
    """Apply the rule for repeated names (module documentation) to ``records`` of one side.

    Args:
        records: Records in the order they were recorded, all inputs or all outputs.
        side: Which side they are, for the error message.

    Returns:
        One value per name, in order of each name's first record.

    Raises:
        DuplicateWrapNameError: A name was recorded twice, not always with ``many=True``.

    Example:
        >>> from evaltrace.capture.values import WrapRecord
        >>> collect_values(
        ...     [WrapRecord(name="doc", purpose="state", value=v, many=True) for v in "ab"],
        ...     "output",
        ... )
        {'doc': ['a', 'b']}
    """
    groups: dict[str, list[WrapRecord]] = {}
    for record in records:
        groups.setdefault(record.name, []).append(record)
    collected: dict[str, JsonValue] = {}
    for name, group in groups.items():
        if all(record.many for record in group):
            collected[name] = [record.value for record in group]
        elif len(group) == 1:
            collected[name] = group[0].value
        else:
            raise DuplicateWrapNameError(
                f"wrap(..., name={name!r}) recorded {len(group)} {_WHAT[side]} values in one "
                "run, but a name holds one value unless it is a list. Pass many=True to every "
                f"wrap(..., name={name!r}) call to collect the values into a list, or give "
                "each call its own name."
            )
    return collected


def _on_side(record: WrapRecord, side: Side) -> bool:
    return (record.purpose == "input") is (side == "input")


def recorded_values(
    trace: Sequence[ObservationNode], side: Side = "output"
) -> dict[str, JsonValue]:
    """The named values a run recorded on one side, one per name.

    Args:
        trace: The trace of the run (its roots).
        side: ``"output"`` (outputs and states, the default) or ``"input"``.

    Returns:
        ``{name: value}`` in order of each name's first record; a ``many=True`` name holds
        the list of its values.

    Raises:
        DuplicateWrapNameError: A name was recorded twice, not always with ``many=True``.

    Example:
        >>> recorded_values(trace, "input")  # doctest: +SKIP
        {'question': 'Who wrote Emma?'}
    """
    return collect_values(
        (record for record in wrap_records(trace) if _on_side(record, side)), side
    )


def recorded_value(trace: Sequence[ObservationNode], name: str, side: Side = "output") -> Any:
    """The value a run recorded under ``name`` on one side.

    Only the records of ``name`` are read, so a repeated other name does not matter here.

    Args:
        trace: The trace of the run (its roots).
        name: The name given to ``wrap``.
        side: ``"output"`` (outputs and states, the default) or ``"input"``.

    Returns:
        The value; a ``many=True`` name gives the list of its values.

    Raises:
        KeyError: Nothing was recorded under ``name`` on that side.
        DuplicateWrapNameError: ``name`` was recorded twice, not always with ``many=True``.

    Example:
        >>> recorded_value(trace, "answer")  # doctest: +SKIP
        'Paris'
    """
    records = [
        record for record in wrap_records(trace) if record.name == name and _on_side(record, side)
    ]
    if not records:
        raise KeyError(name)
    return collect_values(records, side)[name]


def span_documents(span: ObserveSpan | LLMSpan) -> list[Any] | None:
    """Return the documents a retriever span carries, or ``None`` when it carries none.

    OpenInference ``retrieval.documents.{i}.document.{content,id,score,metadata}`` attributes
    come first; each becomes ``{"content", "id", "score", "metadata"}`` (the keys present; the
    metadata decoded from its JSON text). Otherwise the span's output: a list is the documents,
    a mapping with a ``"documents"`` list gives that list.

    Args:
        span: A span view from a trace.

    Returns:
        The documents in rank order, or ``None``.

    Example:
        >>> docs = span_documents(trace[0].find("search")[0].span)  # doctest: +SKIP
    """
    documents = _openinference_documents(span.attributes)
    if documents is not None:
        return documents
    output = span.output
    if isinstance(output, list):
        return output
    if isinstance(output, Mapping) and isinstance(output.get("documents"), list):
        return list(output["documents"])
    return None


def _openinference_documents(attributes: Mapping[str, Any]) -> list[Any] | None:
    prefix = conv.RETRIEVAL_DOCUMENTS + "."
    groups: dict[int, dict[str, Any]] = {}
    for name, value in attributes.items():
        if not name.startswith(prefix):
            continue
        index, dot, rest = name[len(prefix) :].partition(".")
        field = _DOCUMENT_FIELDS.get(rest)
        if dot and field is not None and index.isascii() and index.isdigit():
            if field == "metadata" and isinstance(value, str):
                value = decode(value)
            groups.setdefault(int(index), {})[field] = value
    if not groups:
        return None
    return [groups[index] for index in sorted(groups)]
