"""Per-entry evaluators built on the metric functions: retrieval, answers, semantic similarity.

They score with the metric definitions of :mod:`evaltrace.metrics.registry`, the same ones
pipeline evaluation uses. (The embedding functions that semantic similarity uses are in
:mod:`evaltrace.llm.embeddings`.)

Each evaluator is an object with a ``name`` and an ``async __call__(evaluable, *, trace=None)``
that returns an :class:`~evaltrace.evals.evaluation.Evaluation`, so it plugs into
``evaluate``, ``run_and_evaluate`` and ``assert_pass`` like any other evaluator.

Where the data comes from is explicit and has sensible defaults:

* **Retrieved documents** (:class:`DocumentRecall`, :class:`DocumentMRR`, :class:`DocumentMAP`,
  :class:`DocumentNDCG`), chosen by ``retrieved_from``:

  - ``None`` (the default): the output recorded with
    ``wrap(docs, purpose="output", name="retrieved_documents")``; else the documents of the
    retriever span that ended last (OpenInference ``retrieval.documents.{i}.document.*``
    attributes, or the list a ``@wrap(kind="retriever")`` function returned);
  - a name: the output recorded under that name, else the span of that name that ended last;
  - a callable ``(evaluable, trace) -> list | None``.

  An output is read from the evaluable, else from the values the trace recorded, with the one
  rule of :mod:`evaltrace.trace.values` for a repeated name (``many=True`` collects a list; a
  name recorded twice otherwise gives an *errored* evaluation).

* **Relevant documents**: ``eval_metadata["relevant_documents"]`` (the key is configurable with
  ``relevant_key``) when present, else the expectation when it is a list. The metadata wins
  because an expectation list may hold the expected answers rather than documents.

* **Answers** (:class:`AnswerExactMatch`, :class:`AnswerF1`, :class:`SemanticAnswerSimilarity`),
  chosen by ``answer_from``: ``None`` (the default) takes the output named ``"answer"``, else
  the one named ``"output"``, else the return value of the run (its root span); a name takes
  that output (from the evaluable, else from the trace); a callable
  ``(evaluable, trace) -> str | None`` decides. The expected answer is the expectation: a
  string or a list of acceptable strings. The reasoning says what was compared.

Missing data (no relevant documents, no expected answer, no retrieved documents) gives a
*skipped* evaluation that says what is missing: neither a 0 nor an error. A document without
the compared key matches nothing (as in Haystack) and is counted in the details
(``n_retrieved_without_key``, ``n_relevant_without_key``). Data of the wrong shape (documents
that are not a list, relevant documents mixing scored and unscored ones, an answer that is not
text) gives an *errored* one that says what was found. A document key that can never be
compared is refused when the evaluator is built.

Example:
    >>> import anyio
    >>> from evaltrace.evals import Evaluable, NamedData
    >>> case = Evaluable(
    ...     eval_output=[NamedData(name="retrieved_documents", value=["x", "a", "b"])],
    ...     eval_metadata={"relevant_documents": ["a", "b"]},
    ... )
    >>> anyio.run(DocumentMRR(), case).score
    0.5
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue

from evaltrace.errors import DuplicateWrapNameError
from evaltrace.evals.evaluable import HOW_TO_GIVE_AN_EXPECTATION, Evaluable, get_named
from evaltrace.evals.evaluation import Evaluation
from evaltrace.llm.config import judge_config
from evaltrace.llm.embeddings import Embedder, judge_embedder
from evaltrace.metrics.documents import (
    DocumentKey,
    DocumentKeyError,
    DocumentScoreError,
    document_keys,
    relevance_scores,
)
from evaltrace.metrics.registry import (
    Comparison,
    Metric,
    MetricInputError,
    Scoring,
    as_answer,
    as_documents,
    as_references,
    built_in,
    shown,
)
from evaltrace.metrics.retrieval import DEFAULT_RECALL_MODE, RecallMode
from evaltrace.metrics.similarity import answer_similarities, closest_reference, fixed_embedder
from evaltrace.trace.values import recorded_value, span_documents

if TYPE_CHECKING:
    from evaltrace.trace.spans import LLMSpan, ObserveSpan
    from evaltrace.trace.tree import ObservationNode

__all__ = [
    "AnswerDetails",
    "AnswerExactMatch",
    "AnswerF1",
    "AnswerSelector",
    "DocumentMAP",
    "DocumentMRR",
    "DocumentNDCG",
    "DocumentRecall",
    "DocumentSelector",
    "RetrievalDetails",
    "SemanticAnswerSimilarity",
]

DocumentSelector: TypeAlias = Callable[[Evaluable, "Sequence[ObservationNode] | None"], Any]
"""Finds the retrieved documents: ``(evaluable, trace) -> list of documents | None``."""

AnswerSelector: TypeAlias = Callable[[Evaluable, "Sequence[ObservationNode] | None"], Any]
"""Finds the answer to score: ``(evaluable, trace) -> str | None``."""

DEFAULT_RETRIEVED_NAME: Final = "retrieved_documents"
DEFAULT_RELEVANT_KEY: Final = "relevant_documents"
_ANSWER_NAMES: Final = ("answer", "output")
_COMPARED_WIDTH: Final = 60


class RetrievalDetails(BaseModel):
    """The ``details`` of a retrieval evaluation (stored as a JSON dict on the evaluation).

    Read them back typed with ``RetrievalDetails.model_validate(evaluation.details)``.

    Example:
        >>> RetrievalDetails(metric="recall", source="s", key="id", n_retrieved=0,
        ...                  n_relevant=1, missed=["d1"]).hits
        []
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    """The metric function: ``recall``, ``reciprocal_rank``, ``average_precision``, ``ndcg``."""
    source: str
    """Where the retrieved documents were read, e.g. ``"retriever span 'search'"``."""
    key: str
    """The document key compared: ``content``, ``id`` or ``metadata.<path>``."""
    n_retrieved: int
    """How many documents were retrieved (duplicates included)."""
    n_relevant: int
    """How many unique relevant documents have the compared key (the ones that can be found)."""
    n_retrieved_without_key: int = 0
    """Retrieved documents without the compared key: each matches nothing but keeps its rank."""
    n_relevant_without_key: int = 0
    """Relevant documents without the compared key: left out, since they can never be found."""
    hits: list[JsonValue] = []
    """The keys of the relevant documents retrieved, best rank first, each once."""
    hit_ranks: list[int] = []
    """The 1-based rank at which each hit was first retrieved (same order as ``hits``)."""
    missed: list[JsonValue] = []
    """The keys of the relevant documents not retrieved, in ground-truth order."""
    mode: str | None = None
    """The recall mode (``DocumentRecall`` only)."""
    k: int | None = None
    """The rank cut-off (``DocumentNDCG`` only)."""
    graded: bool | None = None
    """Whether the relevant documents' scores graded the relevance (``DocumentNDCG`` only)."""


class AnswerDetails(BaseModel):
    """The ``details`` of an answer evaluation (stored as a JSON dict on the evaluation).

    Example:
        >>> AnswerDetails(metric="token_f1", answer="Paris", references=["Paris"]).similarity
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    """``exact_match``, ``token_f1`` or ``semantic_similarity``."""
    answer: str
    """The answer that was scored."""
    references: list[str]
    """The acceptable answers it was compared with."""
    normalize: bool | None = None
    """Whether SQuAD normalisation was applied (exact match and F1)."""
    similarity: float | None = None
    """The raw cosine similarity, before clipping to ``[0, 1]`` (semantic similarity)."""
    best_reference: str | None = None
    """The reference closest to the answer (semantic similarity)."""
    model: str | None = None
    """The embedding model, when known (semantic similarity)."""


# --- reading documents from a trace -------------------------------------------------------------


def _latest_span(
    trace: Sequence[ObservationNode], wanted: Callable[[ObserveSpan | LLMSpan], bool]
) -> ObserveSpan | LLMSpan | None:
    """The matching span that ended last; on equal end times, the later one in walk order."""
    best: ObserveSpan | LLMSpan | None = None
    for node in trace:
        for item in node.walk():
            span = item.span
            if wanted(span) and (
                best is None or span.record.end_time_ns >= best.record.end_time_ns
            ):
                best = span
    return best


def _has_output(evaluable: Evaluable, name: str) -> bool:
    return any(item.name == name for item in evaluable.eval_output or ())


def _retrieved(
    evaluable: Evaluable,
    trace: Sequence[ObservationNode] | None,
    retrieved_from: str | DocumentSelector | None,
) -> tuple[Any, str] | str:
    """The retrieved documents and where they were found, or why none were found."""
    if callable(retrieved_from):
        documents = retrieved_from(evaluable, trace)
        if documents is None:
            return "the retrieved_from selector found no retrieved documents"
        return documents, "retrieved_from selector"
    name = retrieved_from or DEFAULT_RETRIEVED_NAME
    if _has_output(evaluable, name):
        return get_named(evaluable.eval_output, name), f"output {name!r}"
    if trace:
        found = _from_trace(trace, name, named_span=retrieved_from is not None)
        if found is not None:
            return found
    if retrieved_from is None:
        return (
            f"no retrieved documents: no output named {name!r} and no retriever span in the "
            f"trace; record them with wrap(documents, purpose='output', name={name!r}), "
            "decorate the retriever with @wrap(kind='retriever'), or pass retrieved_from="
        )
    return f"no retrieved documents: no output and no span named {name!r}"


def _from_trace(
    trace: Sequence[ObservationNode], name: str, *, named_span: bool
) -> tuple[Any, str] | str | None:
    """The documents recorded under ``name``, else those of the span standing for the retriever.

    That span is the one called ``name`` when ``named_span``, else the last retriever span;
    ``None`` when there is no such span.
    """
    try:
        return recorded_value(trace, name), f"output {name!r}"
    except KeyError:
        if named_span:
            span = _latest_span(trace, lambda span: span.name == name)
            where = "span"
        else:
            span = _latest_span(trace, lambda span: span.kind == "retriever")
            where = "retriever span"
    if span is None:
        return None
    documents = span_documents(span)
    if documents is None:
        return (
            f"the {where} {span.name!r} recorded no documents (no "
            f"retrieval.documents attributes and no list output)"
        )
    return documents, f"{where} {span.name!r}"


def _relevant(evaluable: Evaluable, relevant_key: str) -> Any:
    metadata = evaluable.eval_metadata or {}
    if relevant_key in metadata:
        return metadata[relevant_key]
    if isinstance(evaluable.expectation, list):
        return evaluable.expectation
    return None


async def _score_one(scoring: Scoring, output: Any, expected: Any, label: str) -> float:
    """Score one comparison with a built-in metric (sync, or async as semantic similarity)."""
    scores = scoring.score([Comparison(output=output, expected=expected, label=label)])
    if inspect.isawaitable(scores):
        scores = await scores
    return scores[0]


def _json_key(key: Hashable) -> JsonValue:
    if isinstance(key, tuple):
        return [_json_key(part) for part in key]
    if key is None or isinstance(key, str | int | float | bool):
        return key
    return repr(key)


# --- retrieval evaluators -----------------------------------------------------------------------


class _RetrievalEvaluator:
    """Shared reading of retrieved and relevant documents; subclasses name the metric."""

    _metric: ClassVar[str]
    """The metric's name in the details."""
    _definition: ClassVar[Metric]
    """The metric's definition in the registry."""

    def __init__(
        self,
        *,
        retrieved_from: str | DocumentSelector | None = None,
        relevant_key: str = DEFAULT_RELEVANT_KEY,
        key: DocumentKey = "content",
        name: str | None = None,
        **options: Any,
    ) -> None:
        if not (retrieved_from is None or callable(retrieved_from)) and not (
            isinstance(retrieved_from, str) and retrieved_from
        ):
            raise TypeError(
                "retrieved_from must be None, a non-empty output or span name, or a callable "
                f"(evaluable, trace) -> documents; got {retrieved_from!r}"
            )
        if not isinstance(relevant_key, str) or not relevant_key:
            raise TypeError(f"relevant_key must be a non-empty string, got {relevant_key!r}")
        self._scoring: Scoring = built_in(self._definition).build(key=key, **options)
        self.retrieved_from = retrieved_from
        """Where the retrieved documents are read (see the module documentation)."""
        self.relevant_key = relevant_key
        """The ``eval_metadata`` key holding the relevant documents."""
        self.key = key
        """The document key compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``."""
        self.name = name or type(self).__name__
        """The evaluator's display name."""

    def _extra_details(self, relevant: Sequence[object]) -> dict[str, Any]:
        return {}

    async def __call__(
        self, evaluable: Evaluable, *, trace: Sequence[ObservationNode] | None = None
    ) -> Evaluation:
        """Score the retrieved documents of ``evaluable`` against its relevant documents."""
        relevant = _relevant(evaluable, self.relevant_key)
        if relevant is None:
            return Evaluation.skip(
                f"no relevant documents in the expectation or eval_metadata[{self.relevant_key!r}]",
                evaluator=self.name,
            )
        try:
            found = _retrieved(evaluable, trace, self.retrieved_from)
            if isinstance(found, str):
                return Evaluation.skip(found, evaluator=self.name)
            source = found[1]
            retrieved = as_documents(
                found[0], f"the retrieved documents ({source})", "choose them with retrieved_from="
            )
            relevant = as_documents(
                relevant,
                "the relevant documents",
                f"give a list in the expectation or eval_metadata[{self.relevant_key!r}]",
            )
            retrieved_keys = document_keys(retrieved, self.key, what="retrieved")
            relevant_keys = document_keys(relevant, self.key, what="relevant")
            score = await _score_one(self._scoring, retrieved, relevant, self.name)
        except (
            DuplicateWrapNameError,
            MetricInputError,
            DocumentKeyError,
            DocumentScoreError,
        ) as exc:
            return Evaluation.errored(exc, where="evaluator", evaluator=self.name)
        details = self._details(retrieved_keys, relevant_keys, source, relevant)
        return Evaluation(
            score=score,
            reasoning=self._reasoning(details, len(relevant_keys)),
            details=details.model_dump(mode="json", exclude_none=True),
            evaluator=self.name,
        )

    def _reasoning(self, details: RetrievalDetails, n_given: int) -> str:
        if n_given == 0:
            return "the relevant documents are empty, so the score is 0.0"
        if details.n_relevant == 0:
            return f"none of the {n_given} relevant documents has {self.key!r}, so the score is 0.0"
        text = (
            f"{len(details.hits)} of {details.n_relevant} relevant documents retrieved "
            f"(ranks {details.hit_ranks}) among {details.n_retrieved} from {details.source}"
        )
        if details.n_retrieved_without_key or details.n_relevant_without_key:
            text += (
                f"; {details.n_retrieved_without_key} retrieved and "
                f"{details.n_relevant_without_key} relevant documents have no {self.key!r} "
                "and match nothing"
            )
        return text

    def _details(
        self,
        retrieved: list[Hashable | None],
        relevant: list[Hashable | None],
        source: str,
        relevant_documents: Sequence[object],
    ) -> RetrievalDetails:
        unique_relevant = [doc for doc in dict.fromkeys(relevant) if doc is not None]
        wanted = set(unique_relevant)
        hit_ranks: dict[Hashable, int] = {}
        for rank, document in enumerate(retrieved, start=1):
            if document in wanted and document not in hit_ranks:
                hit_ranks[document] = rank
        return RetrievalDetails(
            metric=self._metric,
            source=source,
            key=self.key,
            n_retrieved=len(retrieved),
            n_relevant=len(unique_relevant),
            hits=[_json_key(document) for document in hit_ranks],
            hit_ranks=list(hit_ranks.values()),
            missed=[
                _json_key(document) for document in unique_relevant if document not in hit_ranks
            ],
            n_retrieved_without_key=retrieved.count(None),
            n_relevant_without_key=relevant.count(None),
            **self._extra_details(relevant_documents),
        )


class DocumentRecall(_RetrievalEvaluator):
    """Recall of the retrieved documents: ``single_hit`` (any found) or ``multi_hit`` (share).

    See :func:`~evaltrace.metrics.recall` for the formula and the module documentation for
    where the documents are read. The default mode is the one of :func:`recall`,
    ``"single_hit"``, as in Haystack's ``DocumentRecallEvaluator``.

    Args:
        mode: ``"single_hit"`` (1 when any relevant document is retrieved; the default) or
            ``"multi_hit"`` (``|relevant ∩ retrieved| / |relevant|``).
        retrieved_from: ``None``, an output or span name, or a selector callable.
        relevant_key: The ``eval_metadata`` key holding the relevant documents.
        key: The document key compared: ``"content"``, ``"id"`` or ``"metadata.<path>"``.
        name: The display name (``"DocumentRecall"`` by default).

    Example:
        >>> evaluator = DocumentRecall(mode="multi_hit", key="id")
    """

    _metric = "recall"
    _definition = Metric.RECALL

    def __init__(
        self,
        mode: RecallMode = DEFAULT_RECALL_MODE,
        *,
        retrieved_from: str | DocumentSelector | None = None,
        relevant_key: str = DEFAULT_RELEVANT_KEY,
        key: DocumentKey = "content",
        name: str | None = None,
    ) -> None:
        super().__init__(
            retrieved_from=retrieved_from, relevant_key=relevant_key, key=key, name=name, mode=mode
        )
        self.mode: RecallMode = mode
        """The recall mode."""

    def _extra_details(self, relevant: Sequence[object]) -> dict[str, Any]:
        return {"mode": self.mode}


class DocumentMRR(_RetrievalEvaluator):
    """Reciprocal rank of the first relevant retrieved document (averaged over entries: MRR).

    See :func:`~evaltrace.metrics.reciprocal_rank`. Arguments as for :class:`DocumentRecall`
    without ``mode``.

    Example:
        >>> evaluator = DocumentMRR(retrieved_from="rerank", key="metadata.url")
    """

    _metric = "reciprocal_rank"
    _definition = Metric.MRR


class DocumentMAP(_RetrievalEvaluator):
    """Average precision of the retrieved documents (averaged over entries: MAP).

    See :func:`~evaltrace.metrics.average_precision`. Arguments as for :class:`DocumentRecall`
    without ``mode``.

    Example:
        >>> evaluator = DocumentMAP(relevant_key="gold_passages")
    """

    _metric = "average_precision"
    _definition = Metric.MAP


class DocumentNDCG(_RetrievalEvaluator):
    """Normalised discounted cumulative gain of the retrieved documents.

    See :func:`~evaltrace.metrics.ndcg`: when the relevant documents carry a ``score``, it is
    their graded relevance (as in Haystack's ``DocumentNDCGEvaluator``); otherwise relevance is
    binary. The details say which (``graded``).

    Args:
        k: Only the first ``k`` ranks count (``None``: all of them).
        retrieved_from: ``None``, an output or span name, or a selector callable.
        relevant_key: The ``eval_metadata`` key holding the relevant documents.
        key: The document key compared.
        name: The display name (``"DocumentNDCG"`` by default).

    Example:
        >>> evaluator = DocumentNDCG(k=5)
    """

    _metric = "ndcg"
    _definition = Metric.NDCG

    def __init__(
        self,
        k: int | None = None,
        *,
        retrieved_from: str | DocumentSelector | None = None,
        relevant_key: str = DEFAULT_RELEVANT_KEY,
        key: DocumentKey = "content",
        name: str | None = None,
    ) -> None:
        super().__init__(
            retrieved_from=retrieved_from, relevant_key=relevant_key, key=key, name=name, k=k
        )
        self.k = k
        """The rank cut-off, or ``None``."""

    def _extra_details(self, relevant: Sequence[object]) -> dict[str, Any]:
        return {"k": self.k, "graded": relevance_scores(relevant) is not None}


# --- answers ------------------------------------------------------------------------------------


def _answer(
    evaluable: Evaluable,
    trace: Sequence[ObservationNode] | None,
    answer_from: str | AnswerSelector | None,
) -> tuple[Any, str] | str:
    """The answer and where it was found, or why none was found."""
    if callable(answer_from):
        answer = answer_from(evaluable, trace)
        if answer is None:
            return "the answer_from selector found no answer"
        return answer, "answer_from selector"
    if answer_from is not None:
        if _has_output(evaluable, answer_from):
            return get_named(evaluable.eval_output, answer_from), f"output {answer_from!r}"
        if trace:
            try:
                return recorded_value(trace, answer_from), f"output {answer_from!r}"
            except KeyError:
                return f"no answer: the run recorded no output named {answer_from!r}"
        return f"no answer: the run recorded no output named {answer_from!r}"
    for name in _ANSWER_NAMES:
        if _has_output(evaluable, name):
            return get_named(evaluable.eval_output, name), f"output {name!r}"
    if trace:
        return trace[0].span.output, f"the return value of {trace[0].span.name!r}"
    names = ", ".join(repr(item.name) for item in evaluable.eval_output or ()) or "none"
    return (
        f"no answer: no output named 'answer' or 'output' and no trace (outputs: {names}); "
        "pass answer_from='<output name>'"
    )


def _references(evaluable: Evaluable) -> list[str] | str:
    """The acceptable answers, or why there are none; raises on a malformed expectation."""
    if evaluable.expectation is None or not evaluable.has_expectation:
        found = "the expectation is None" if evaluable.has_expectation else "no expectation"
        return f"no expected answer: {found}; {HOW_TO_GIVE_AN_EXPECTATION}"
    return as_references(evaluable.expectation, "the expectation")


def _compared(answer: str, references: list[str]) -> str:
    expected = references[0] if len(references) == 1 else references
    return f"answer {shown(answer, _COMPARED_WIDTH)} vs expected {shown(expected, _COMPARED_WIDTH)}"


class _AnswerEvaluator:
    """Shared reading of the answer and the expected answers; subclasses score them."""

    def __init__(self, *, answer_from: str | AnswerSelector | None, name: str | None) -> None:
        if not (answer_from is None or callable(answer_from)) and not (
            isinstance(answer_from, str) and answer_from
        ):
            raise TypeError(
                "answer_from must be None, a non-empty output name, or a callable "
                f"(evaluable, trace) -> answer; got {answer_from!r}"
            )
        self.answer_from = answer_from
        """Where the answer is read (see the module documentation)."""
        self.name = name or type(self).__name__
        """The evaluator's display name."""

    async def _evaluate(self, answer: str, references: list[str]) -> Evaluation:
        """Score one answer against the acceptable answers."""
        raise NotImplementedError

    def _inputs(
        self, evaluable: Evaluable, trace: Sequence[ObservationNode] | None
    ) -> tuple[str, list[str]] | Evaluation:
        """The answer and the references, or the skipped/errored evaluation saying why not."""
        try:
            references = _references(evaluable)
            if isinstance(references, str):
                return Evaluation.skip(references, evaluator=self.name)
            found = _answer(evaluable, trace, self.answer_from)
            if isinstance(found, str):
                return Evaluation.skip(found, evaluator=self.name)
            answer, source = found
            if answer is None:
                return Evaluation.skip(f"no answer: {source} is None", evaluator=self.name)
            return as_answer(answer, f"the answer ({source})", "pick one with answer_from="), (
                references
            )
        except (DuplicateWrapNameError, MetricInputError) as exc:
            return Evaluation.errored(exc, where="evaluator", evaluator=self.name)

    async def __call__(
        self, evaluable: Evaluable, *, trace: Sequence[ObservationNode] | None = None
    ) -> Evaluation:
        """Score the answer of ``evaluable`` against its expectation."""
        found = self._inputs(evaluable, trace)
        if isinstance(found, Evaluation):
            return found
        return await self._evaluate(*found)


class _TextMatch(_AnswerEvaluator):
    """An answer metric on the texts themselves (exact match, token F1)."""

    _metric: ClassVar[str]
    """The metric's name in the details."""
    _definition: ClassVar[Metric]
    """The metric's definition in the registry."""

    def __init__(
        self, *, normalize: bool, answer_from: str | AnswerSelector | None, name: str | None
    ) -> None:
        super().__init__(answer_from=answer_from, name=name)
        self._scoring = built_in(self._definition).build(normalize=normalize)
        self.normalize = normalize
        """Whether texts are normalised (SQuAD style) before comparing."""

    def _reasoning(self, score: float) -> str:
        """What the score says, before what was compared."""
        raise NotImplementedError

    async def _evaluate(self, answer: str, references: list[str]) -> Evaluation:
        score = await _score_one(self._scoring, answer, references, self.name)
        details = AnswerDetails(
            metric=self._metric, answer=answer, references=references, normalize=self.normalize
        )
        return Evaluation(
            score=score,
            reasoning=f"{self._reasoning(score)}: {_compared(answer, references)}",
            details=details.model_dump(mode="json", exclude_none=True),
            evaluator=self.name,
        )


class AnswerExactMatch(_TextMatch):
    """Exact match of the answer with the expected answer (or any of several).

    See :func:`~evaltrace.metrics.exact_match`.

    Args:
        normalize: Compare SQuAD-normalised texts (lower case, no punctuation or articles).
        answer_from: ``None``, an output name, or a selector callable.
        name: The display name (``"AnswerExactMatch"`` by default).

    Example:
        >>> evaluator = AnswerExactMatch(normalize=True)
    """

    _metric = "exact_match"
    _definition = Metric.EM

    def __init__(
        self,
        *,
        normalize: bool = False,
        answer_from: str | AnswerSelector | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(normalize=normalize, answer_from=answer_from, name=name)

    def _reasoning(self, score: float) -> str:
        verdict = "matches" if score == 1.0 else "does not match"
        return f"the answer {verdict} the expected answer"


class AnswerF1(_TextMatch):
    """SQuAD token F1 of the answer against the expected answer (best of several).

    See :func:`~evaltrace.metrics.token_f1`.

    Args:
        normalize: Normalise both texts before splitting into tokens (the SQuAD default).
        answer_from: ``None``, an output name, or a selector callable.
        name: The display name (``"AnswerF1"`` by default).

    Example:
        >>> evaluator = AnswerF1(answer_from="final_answer")
    """

    _metric = "token_f1"
    _definition = Metric.F1

    def __init__(
        self,
        *,
        normalize: bool = True,
        answer_from: str | AnswerSelector | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(normalize=normalize, answer_from=answer_from, name=name)

    def _reasoning(self, score: float) -> str:
        return f"token F1 {score:.3f}"


class SemanticAnswerSimilarity(_AnswerEvaluator):
    """Semantic answer similarity (SAS): cosine of the answer's and the reference's embeddings.

    The score is the best cosine over the acceptable answers, clipped to ``[0, 1]``. The
    embeddings come from, in order: ``embed`` (any :data:`Embedder`); ``local_model`` (a
    sentence-transformers model, ``pip install evaltrace[embeddings]``); else the configured
    judge client's embeddings endpoint (``configure_judge(...)``), with ``model`` overriding
    its ``embedding_model``. When no judge is configured, or the package a local model needs
    is missing, the evaluation is errored and says how to fix it.

    Args:
        embed: A function ``(texts) -> vectors``, sync or async.
        model: The embedding model to ask the judge client for.
        local_model: A sentence-transformers model name, e.g. ``"all-MiniLM-L6-v2"``.
        answer_from: ``None``, an output name, or a selector callable.
        name: The display name (``"SemanticAnswerSimilarity"`` by default).

    Example:
        >>> import openai
        >>> from evaltrace.llm import openai_embedder
        >>> client = openai.AsyncOpenAI(api_key="k")
        >>> sas = SemanticAnswerSimilarity(embed=openai_embedder(client, "text-embedding-3-small"))
    """

    def __init__(
        self,
        embed: Embedder | None = None,
        model: str | None = None,
        *,
        local_model: str | None = None,
        answer_from: str | AnswerSelector | None = None,
        name: str | None = None,
    ) -> None:
        self._fixed = fixed_embedder(embed, local_model)
        super().__init__(answer_from=answer_from, name=name)
        self.embed = embed
        """The embedding function, when one was given."""
        self.model = model or local_model
        """The embedding model name, when known."""

    async def _evaluate(self, answer: str, references: list[str]) -> Evaluation:
        try:
            embed = self._fixed or judge_embedder(self.model)
            model = self.model if self._fixed else self.model or judge_config().embedding_model
            similarities = (await answer_similarities(embed, [(answer, references)]))[0]
        except Exception as exc:  # a failing embedding call is reported as data
            return Evaluation.errored(exc, where="embedding", evaluator=self.name)
        best, similarity = closest_reference(similarities)
        details = AnswerDetails(
            metric="semantic_similarity",
            answer=answer,
            references=references,
            similarity=similarity if best is not None else None,
            best_reference=references[best] if best is not None else None,
            model=model,
        )
        if best is None:
            reasoning = "no acceptable answers to compare with, so the score is 0.0"
        else:
            reasoning = (
                f"cosine similarity {similarity:.3f} with the closest expected answer: "
                f"{_compared(answer, [references[best]])}"
            )
        return Evaluation(
            score=max(0.0, min(1.0, similarity)),
            reasoning=reasoning,
            details=details.model_dump(mode="json", exclude_none=True),
            evaluator=self.name,
        )
