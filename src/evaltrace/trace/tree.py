"""The trace tree: finished spans arranged by parent, with the values ``wrap`` recorded."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from evaltrace.capture.codec import json_text
from evaltrace.trace.spans import (
    LLMMessage,
    LLMSpan,
    ObserveSpan,
    SpanRecord,
    parse_named_values,
    span_view,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from evaltrace.capture.values import WrapRecord

__all__ = [
    "NodePredicate",
    "ObservationNode",
    "ParentCycle",
    "SpanPredicate",
    "build_from_records",
    "build_trace",
    "build_trace_and_cycles",
    "split_traces",
    "trace_to_text",
    "unlink_unshared",
    "walk_trace",
]

SpanPredicate: TypeAlias = Callable[[ObserveSpan | LLMSpan], bool]
"""A test on a span view, used by :meth:`ObservationNode.find_all` and the selectors."""

NodePredicate: TypeAlias = Callable[["ObservationNode"], bool]
"""A test on a node (its span, and the spans around it), used by the navigation of
:class:`ObservationNode`; a :class:`~evaltrace.trace.SpanQuery` is one."""

_SpanKey: TypeAlias = tuple[int, int]
_TEXT_LIMIT = 120
_MESSAGES_SHOWN = 3


@dataclass(slots=True, weakref_slot=True)
class ObservationNode:
    """One span of a trace and the spans started under it, ordered by start time.

    Each node knows its :attr:`parent`, so a trace can be walked down (:attr:`children`,
    :attr:`descendants`) and up (:attr:`ancestors`). The ``find_``, ``first_`` and ``any_``
    helpers search the children, the descendants or the ancestors with a :data:`NodePredicate`,
    such as a :class:`~evaltrace.trace.SpanQuery`; the descendant and ancestor ones take a
    ``stop_recursing_when`` predicate, beyond a match of which they search no further.

    Example:
        >>> for node in trace[0].walk():  # doctest: +SKIP
        ...     print(node.span.name, node.span.duration_ms)
        >>> trace[0].first_descendant(SpanQuery(has_kind="tool"))  # doctest: +SKIP
    """

    span: ObserveSpan | LLMSpan
    """The span's view."""
    children: list[ObservationNode] = field(default_factory=list)
    """The child spans, earliest start first."""
    parent: ObservationNode | None = field(default=None, init=False, repr=False, compare=False)
    """The node whose span this one's ran inside; ``None`` for a root. Set by
    :func:`build_trace`, and for the ``children`` a node is made with."""

    def __post_init__(self) -> None:
        for child in self.children:
            child.parent = self

    def walk(self) -> Iterator[ObservationNode]:
        """Yield this node and every node below it, depth-first, parents before children."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, name: str) -> list[ObservationNode]:
        """Return the nodes (this one included) whose span is called ``name``, depth-first."""
        return [node for node in self.walk() if node.span.name == name]

    def find_all(self, predicate: SpanPredicate) -> list[ObservationNode]:
        """Return the nodes (this one included) whose span satisfies ``predicate``, depth-first.

        Example:
            >>> node.find_all(lambda span: span.status == "error")  # doctest: +SKIP
        """
        return [node for node in self.walk() if predicate(node.span)]

    # --- up and down the tree -------------------------------------------------------------------

    @property
    def ancestors(self) -> list[ObservationNode]:
        """The nodes above this one: its parent first, the root last (empty for a root)."""
        return list(self._above(None))

    @property
    def descendants(self) -> list[ObservationNode]:
        """Every node below this one, depth-first, parents before children (not this one)."""
        return list(self._below(None))

    @property
    def depth(self) -> int:
        """How many ancestors this node has: 0 for a root."""
        return sum(1 for _ in self._above(None))

    def find_children(self, predicate: NodePredicate) -> list[ObservationNode]:
        """The children that satisfy ``predicate``, earliest start first."""
        return [child for child in self.children if predicate(child)]

    def first_child(self, predicate: NodePredicate) -> ObservationNode | None:
        """The earliest child that satisfies ``predicate``, or ``None``."""
        return next((child for child in self.children if predicate(child)), None)

    def any_child(self, predicate: NodePredicate) -> bool:
        """Whether some child satisfies ``predicate``."""
        return self.first_child(predicate) is not None

    def find_descendants(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> list[ObservationNode]:
        """The descendants that satisfy ``predicate``, depth-first.

        Args:
            predicate: The test.
            stop_recursing_when: Below a node that satisfies it, nothing is searched (the node
                itself is).
        """
        return [node for node in self._below(stop_recursing_when) if predicate(node)]

    def first_descendant(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> ObservationNode | None:
        """The first descendant, depth-first, that satisfies ``predicate``, or ``None``."""
        return next((n for n in self._below(stop_recursing_when) if predicate(n)), None)

    def any_descendant(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> bool:
        """Whether some descendant satisfies ``predicate``."""
        return self.first_descendant(predicate, stop_recursing_when) is not None

    def find_ancestors(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> list[ObservationNode]:
        """The ancestors that satisfy ``predicate``, closest first.

        Args:
            predicate: The test.
            stop_recursing_when: Above a node that satisfies it, nothing is searched (the node
                itself is).
        """
        return [node for node in self._above(stop_recursing_when) if predicate(node)]

    def first_ancestor(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> ObservationNode | None:
        """The closest ancestor that satisfies ``predicate``, or ``None``."""
        return next((n for n in self._above(stop_recursing_when) if predicate(n)), None)

    def any_ancestor(
        self, predicate: NodePredicate, stop_recursing_when: NodePredicate | None = None
    ) -> bool:
        """Whether some ancestor satisfies ``predicate``."""
        return self.first_ancestor(predicate, stop_recursing_when) is not None

    def _below(self, stop: NodePredicate | None) -> Iterator[ObservationNode]:
        stack = list(reversed(self.children))
        while stack:
            node = stack.pop()
            yield node
            if stop is None or not stop(node):
                stack.extend(reversed(node.children))

    def _above(self, stop: NodePredicate | None) -> Iterator[ObservationNode]:
        node = self.parent
        while node is not None:
            yield node
            if stop is not None and stop(node):
                return
            node = node.parent

    def to_text(self) -> str:
        """Render this subtree as an indented outline, one block per span.

        Each span gives a line ``[kind] name (duration, status)``, then its input, output,
        named values, messages (model calls) and error, each shortened to about 120 characters.
        The outline is meant to be read by a person or pasted into a judge prompt.

        Example:
            >>> print(trace[0].to_text())  # doctest: +SKIP
            [chain] answer (12.0 ms, ok)
              input: {"question":"What is the capital of France?"}
              output: "Paris"
        """
        lines: list[str] = []
        stack: list[tuple[ObservationNode, int]] = [(self, 0)]
        while stack:
            node, depth = stack.pop()
            lines.extend(_span_lines(node.span, "  " * depth))
            stack.extend((child, depth + 1) for child in reversed(node.children))
        return "\n".join(lines)


@dataclass(frozen=True, kw_only=True, slots=True)
class ParentCycle:
    """Spans of one trace whose parent links go round in a loop: the trace is damaged.

    A span's parent is the span it ran inside, so following parent links leads up to a root;
    only a damaged file (or spans given wrong ids) holds a loop. :func:`build_trace` breaks
    each loop at its earliest span, which becomes a root, so that no span is lost.

    Example:
        >>> a = SpanRecord(trace_id=1, span_id=1, parent_span_id=1, name="a",
        ...                start_time_ns=1, end_time_ns=2)
        >>> print(build_trace_and_cycles([a])[1][0])
        span 0000000000000001 ('a') names itself as its parent
    """

    spans: tuple[SpanRecord, ...]
    """The spans of the loop: the earliest first, then each one's parent in turn (the last
    one's parent is the first)."""

    def __str__(self) -> str:
        first = self.spans[0]
        if len(self.spans) == 1:
            return f"span {first.span_id:016x} ({first.name!r}) names itself as its parent"
        chain = " -> ".join(f"{span.span_id:016x} ({span.name!r})" for span in self.spans)
        return f"the parent links of spans {chain} -> {first.span_id:016x} go round in a loop"


def walk_trace(trace: Iterable[ObservationNode]) -> Iterator[ObservationNode]:
    """Yield every node of a trace (a list of roots), depth-first, root by root."""
    for node in trace:
        yield from node.walk()


def split_traces(trace: Iterable[ObservationNode]) -> list[list[ObservationNode]]:
    """Split a trace (a list of roots) into one trace per trace id.

    A file holding several runs, or a capture around several top-level calls, gives the roots
    of several traces; selectors such as :func:`~evaltrace.root` read what they are given as
    one run, so evaluate each run on its own.

    Args:
        trace: The roots, as :func:`build_trace` or :func:`~evaltrace.load_traces` return them.

    Returns:
        One list of roots per trace id, ordered by their first root (the earliest start, for
        roots in start order); the roots of one trace keep their order.

    Example:
        >>> evaluables = [root(run) for run in split_traces(load_traces("runs.jsonl"))]
        ...     # doctest: +SKIP
    """
    traces: dict[int, list[ObservationNode]] = {}
    for node in trace:
        traces.setdefault(node.span.trace_id, []).append(node)
    return list(traces.values())


_COUNTS_EVERY_REFERENCE: Final = sys.implementation.name == "cpython" and sys.version_info < (
    3,
    14,
)
"""Whether ``sys.getrefcount`` counts every reference: CPython before 3.14, whose interpreter
may skip counting some of them. Elsewhere a trace is left to the garbage collector, as a
wrong count would drop the parent links of a tree still in use."""


def unlink_unshared(roots: list[ObservationNode]) -> None:
    """Drop the parent links of a trace that only the caller's one reference reaches.

    Parent links make every tree a reference cycle, which only the garbage collector frees,
    after it has traced the tree several times over: a quarter of scoring stored traces
    was that collector's work (bench_stored.py, bench/README.md). The one holder of a
    trace's roots (a :class:`~evaltrace.trace.StoredTrace`) calls this as it is freed: when
    neither the list of roots, nor a node, nor a list of children is referred to from
    anywhere else, nothing can reach the trace any more, and without its parent links it is
    freed at once. Otherwise nothing changes.

    Args:
        roots: The roots, held by the caller alone when the trace is unshared.
    """
    if not _COUNTS_EVERY_REFERENCE:
        return
    probe: list[ObservationNode] = []
    # Each count is taken beside that of a fresh object held the same way, so that what the
    # interpreter holds while counting cancels out.
    if type(roots) is not list or sys.getrefcount(roots) - sys.getrefcount(probe) != 1:
        return
    # One pass over the tree, one count per node and list: 4 us a trace of 10 spans
    # instead of 13 us in several passes, 7% of reading one (bench_stored.py,
    # bench/README.md).
    found = _nodes_and_lists(roots)
    if found is None:
        return
    nodes, lists = found
    # Beside the probe: a node is held by the list that holds it (its parent's children or
    # the roots) and by its children's parent links; a list of children, by its node alone.
    # A node held twice in the tree counts once more than that and stops the unlinking.
    base = -1
    for item in nodes:
        count = sys.getrefcount(item)
        if base < 0:
            base = count
        elif count - base != 1 + len(item.children):
            return
    base = -1
    for children in lists:
        count = sys.getrefcount(children)
        if base < 0:
            base = count
        elif count - base != 1:
            return
    for item in nodes[1:]:
        item.parent = None


def _nodes_and_lists(
    roots: list[ObservationNode],
) -> tuple[list[ObservationNode], list[list[ObservationNode]]] | None:
    """A probe and each node of a tree; a probe and each node's list of children.

    ``None`` for a root with a parent, a node that is not a plain :class:`ObservationNode`
    (a subclass may hold more), children that are not a list, or a child whose parent is
    not the node that lists it: not a tree as the readers build it. (Made apart from the
    counting, so that none of its variables holds a node while they are counted.)
    """
    nodes = [_new_node(ObservationNode)]  # a probe: a node nothing else holds, never read
    lists: list[list[ObservationNode]] = [[]]
    stack = list(roots)
    for node in stack:
        if type(node) is not ObservationNode or node.parent is not None:
            return None
    while stack:
        node = stack.pop()
        children = node.children
        if type(children) is not list:
            return None
        for child in children:
            if type(child) is not ObservationNode or child.parent is not node:
                return None
        stack.extend(children)
        nodes.append(node)
        lists.append(children)
    return nodes, lists


def trace_to_text(trace: Iterable[ObservationNode]) -> str:
    """Render a whole trace (every root) with :meth:`ObservationNode.to_text`."""
    return "\n".join(node.to_text() for node in trace)


def build_trace(
    spans: Iterable[ReadableSpan | SpanRecord], named_values: Iterable[WrapRecord] = ()
) -> list[ObservationNode]:
    """Arrange finished spans into trees and attach the values ``wrap`` recorded.

    A span whose parent is not among ``spans`` becomes a root (an orphan keeps its subtree).
    Children and roots are ordered by start time. A ``WrapRecord`` attaches to the span with its
    ``span_id``; the records given for a span replace the values read from that span's
    ``evaltrace.wrap`` events (records hold the untruncated values); spans without records keep
    the values from their events (traces loaded from files). Records that match no span are put
    on the earliest root. A span repeated in ``spans`` is kept once. Parent links that go round
    in a loop (a damaged file's) are broken at the loop's earliest span, which becomes a root;
    :func:`build_trace_and_cycles` also says where.

    Args:
        spans: Finished spans, SDK spans or records, in any order.
        named_values: The ``wrap`` records of the run, in the order they were recorded.

    Returns:
        The roots, earliest start first; empty when there are no spans.

    Example:
        >>> trace = build_trace(exporter.get_finished_spans())  # doctest: +SKIP
        >>> print(trace_to_text(trace))  # doctest: +SKIP
    """
    return build_trace_and_cycles(spans, named_values)[0]


def build_trace_and_cycles(
    spans: Iterable[ReadableSpan | SpanRecord], named_values: Iterable[WrapRecord] = ()
) -> tuple[list[ObservationNode], list[ParentCycle]]:
    """:func:`build_trace`, and the loops of parent links it had to break.

    The trace readers use it to report a damaged trace instead of scoring it as sound.

    Returns:
        The roots, as :func:`build_trace` gives them, and each loop of parent links found
        (none in a sound trace), in the order of their earliest spans.

    Example:
        >>> roots, cycles = build_trace_and_cycles(spans)  # doctest: +SKIP
        >>> [str(cycle) for cycle in cycles]  # doctest: +SKIP
        []
    """
    records: dict[_SpanKey, SpanRecord] = {}
    for span in spans:
        record = span if type(span) is SpanRecord else _record(span)
        key = (record.trace_id, record.span_id)
        if key not in records:
            records[key] = record
    return build_from_records(records, named_values)


def build_from_records(
    records: dict[tuple[int, int], SpanRecord], named_values: Iterable[WrapRecord] = ()
) -> tuple[list[ObservationNode], list[ParentCycle]]:
    """:func:`build_trace_and_cycles` of spans already keyed by their ids, each once.

    For the trace readers, which keep each span once as they read it.

    Args:
        records: Each span under its ``(trace_id, span_id)``, in any order.
        named_values: The ``wrap`` records of the run, in the order they were recorded.
    """
    if not records:
        return [], []
    ordered = sorted(records.values(), key=_start)

    given: dict[_SpanKey, list[WrapRecord]] = {}
    unattached: list[WrapRecord] = []
    values_given = list(named_values)
    if values_given:
        by_span_id: dict[int, list[_SpanKey]] = {}
        for record in ordered:
            by_span_id.setdefault(record.span_id, []).append((record.trace_id, record.span_id))
        for value in values_given:
            owner = _owner(value, by_span_id)
            if owner is None:
                unattached.append(value)
            else:
                given.setdefault(owner, []).append(value)

    roots = _in_start_order(ordered, records, given, unattached)
    if roots is not None:
        return roots, []
    keys = [(record.trace_id, record.span_id) for record in ordered]
    children, root_keys, loops = _link(records, keys)
    nodes: dict[_SpanKey, ObservationNode] = {}
    for key in keys:
        values = _values_of(records[key], given.get(key, ()), unattached, key == root_keys[0])
        nodes[key] = ObservationNode(span=span_view(records[key], values))
    for key, child_keys in children.items():
        node = nodes[key]
        node.children = [nodes[child] for child in child_keys]
        for child in node.children:
            child.parent = node
    cycles = [ParentCycle(spans=tuple(records[key] for key in loop)) for loop in loops]
    return [nodes[key] for key in root_keys], cycles


def _in_start_order(
    ordered: list[SpanRecord],
    records: dict[_SpanKey, SpanRecord],
    given: Mapping[_SpanKey, Sequence[WrapRecord]],
    unattached: list[WrapRecord],
) -> list[ObservationNode] | None:
    """The roots of a trace each of whose spans starts after its parent, linked in one pass.

    ``None`` when a span's parent comes later in ``ordered`` (or is the span itself): only
    then can parent links go round in a loop, and the caller links the trace step by step.
    One pass instead of those steps was a fifth of reading a stored trace (bench_stored.py,
    bench/README.md).
    """
    nodes: dict[_SpanKey, ObservationNode] = {}
    roots: list[ObservationNode] = []
    with_values = bool(given or unattached)
    for record in ordered:
        trace_id = record.trace_id
        key = (trace_id, record.span_id)
        parent_id = record.parent_span_id
        parent = None
        if parent_id is not None:
            parent_key = (trace_id, parent_id)
            parent = nodes.get(parent_key)
            if parent is None and parent_key in records:
                return None
        values: Iterable[WrapRecord] = ()
        if with_values:
            values = _values_of(
                record, given.get(key, ()), unattached, parent is None and not roots
            )
        # Made without the dataclass's __init__ (its default factory and __post_init__):
        # a tenth of building a stored trace's tree (bench_stored.py, bench/README.md).
        node = nodes[key] = _new_node(ObservationNode)
        node.span = span_view(record, values)
        node.children = []
        node.parent = parent
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


_new_node = object.__new__


def _record(span: ReadableSpan | SpanRecord) -> SpanRecord:
    return span if isinstance(span, SpanRecord) else SpanRecord.from_readable(span)


def _values_of(
    record: SpanRecord, own: Sequence[WrapRecord], unattached: list[WrapRecord], first_root: bool
) -> Iterable[WrapRecord]:
    """The ``wrap`` values of a span: its own, and on the first root those of no span."""
    if unattached and first_root:
        mine = own or parse_named_values(record)
        return sorted([*mine, *unattached], key=lambda value: value.timestamp_ns)
    return own


_start = operator.attrgetter("start_time_ns")


def _link(
    records: dict[_SpanKey, SpanRecord], ordered: list[_SpanKey]
) -> tuple[dict[_SpanKey, list[_SpanKey]], list[_SpanKey], list[list[_SpanKey]]]:
    """Return each span's children and the roots, all in start order, and the parent loops."""
    children: dict[_SpanKey, list[_SpanKey]] = {key: [] for key in ordered}
    parents: dict[_SpanKey, _SpanKey] = {}
    roots: list[_SpanKey] = []
    loops: list[list[_SpanKey]] = []
    for key in ordered:
        parent_id = records[key].parent_span_id
        parent = (key[0], parent_id) if parent_id is not None else None
        if parent is None or parent not in records:
            roots.append(key)
        elif parent == key:  # its own parent: a loop of one
            roots.append(key)
            loops.append([key])
        else:
            children[parent].append(key)
            parents[key] = parent
    reached: set[_SpanKey] = set()
    _reach(roots, children, reached)
    if len(reached) == len(ordered):
        return children, roots, loops
    # The spans reached from no root hang from loops of parent links (only a damaged file
    # holds one): each loop is broken at its earliest span, which becomes a root, so that no
    # span is lost and the spans below a loop stay under their parents.
    rank = {key: position for position, key in enumerate(ordered)}
    for key in ordered:
        if key in reached:
            continue
        # Every span above an unreached span is unreached too, and a root is above none of
        # them: the parent links from it end in a loop.
        above: dict[_SpanKey, None] = {}
        span = key
        while span not in above:
            above[span] = None
            span = parents[span]
        chain = list(above)
        loop = chain[chain.index(span) :]
        first = loop.index(min(loop, key=rank.__getitem__))
        loop = loop[first:] + loop[:first]
        children[parents.pop(loop[0])].remove(loop[0])
        roots.append(loop[0])
        loops.append(loop)
        _reach([loop[0]], children, reached)
    roots.sort(key=lambda key: records[key].start_time_ns)
    loops.sort(key=lambda loop: rank[loop[0]])
    return children, roots, loops


def _reach(
    start: list[_SpanKey], children: dict[_SpanKey, list[_SpanKey]], reached: set[_SpanKey]
) -> None:
    stack = list(start)
    while stack:
        key = stack.pop()
        if key not in reached:
            reached.add(key)
            stack.extend(children[key])


def _owner(value: WrapRecord, by_span_id: dict[int, list[_SpanKey]]) -> _SpanKey | None:
    if value.span_id is None:
        return None
    for key in by_span_id.get(value.span_id, ()):
        if value.trace_id is None or value.trace_id == key[0]:
            return key
    return None


# --- text outline -------------------------------------------------------------------------------


def _span_lines(span: ObserveSpan | LLMSpan, indent: str) -> list[str]:
    head = (
        f"{indent}[{_short(span.kind)}] {_short(span.name)} "
        f"({_duration(span.duration_ms)}, {span.status})"
    )
    detail = indent + "  "
    lines: list[str] = []
    if isinstance(span, LLMSpan):
        if span.model:
            head += f" model={_short(span.model)}"
        usage = span.usage
        if usage.input_tokens is not None or usage.output_tokens is not None:
            head += f" tokens={_count(usage.input_tokens)}->{_count(usage.output_tokens)}"
        lines.append(head)
        if span.input_messages:
            lines.extend(_message_lines(span.input_messages, detail))
        elif span.input is not None:  # a decorated model call: its arguments, not messages
            lines.append(f"{detail}input: {_short_json(span.input)}")
        if span.output_messages or span.output is not None:
            lines.append(f"{detail}output: {_short(span.output_text or '')}")
        lines.extend(
            f"{detail}tool call: {_short(f'{call.name}({call.arguments})')}"
            for call in span.tool_calls
        )
    else:
        lines.append(head)
        if span.input is not None:
            lines.append(f"{detail}input: {_short_json(span.input)}")
        if span.output is not None:
            lines.append(f"{detail}output: {_short_json(span.output)}")
    lines.extend(
        f"{detail}{value.purpose} {value.name}: {_short_json(value.value)}"
        for value in span.named_values
    )
    if span.error is not None:
        error = span.error
        text = f"{error.type}: {error.message}" if error.type else error.message
        lines.append(f"{detail}error: {_short(text)}")
    return lines


def _message_lines(messages: tuple[LLMMessage, ...], indent: str) -> list[str]:
    lines: list[str] = []
    hidden = len(messages) - _MESSAGES_SHOWN
    if hidden > 0:
        lines.append(f"{indent}({hidden} earlier message{'s' if hidden > 1 else ''})")
    for message in messages[max(hidden, 0) :]:
        text = message.content or ""
        calls = ", ".join(f"{call.name}({call.arguments})" for call in message.tool_calls)
        if calls:
            text = f"{text} -> {calls}" if text else f"-> {calls}"
        lines.append(f"{indent}{message.role}: {_short(text)}")
    return lines


def _duration(ms: float) -> str:
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _short_json(value: Any) -> str:
    return _short(json_text(value))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
