"""The 21 autoevals scorers evaltrace ships, each a factory of an :class:`AutoevalsAdapter`.

Every factory takes keyword arguments only, typed by an ``*Options`` dictionary type: the
keywords of :class:`AdapterOptions` (where the scorer's arguments come from, the display
name, a client), the keywords autoevals' scorer class takes when it is built (``model``,
``temperature``, ``threshold``, ...), and the scorer arguments a factory may fix for every
evaluable (``criteria``, ``language``, ``context``, ...). An unknown keyword is a
``TypeError`` listing the accepted ones, for callers that are not type-checked (dataset
files). Dataset files name these factories through the evaluator registry
(:func:`evaltrace.datasets.lookup_evaluator`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, TypeAlias, TypedDict, Unpack

from evaltrace.judges.autoevals import AutoevalsAdapter, JudgeKind

__all__ = [
    "AdapterOptions",
    "AnswerCorrectness",
    "AnswerCorrectnessOptions",
    "AnswerRelevancy",
    "AnswerRelevancyOptions",
    "AutoevalsScorer",
    "Battle",
    "BattleOptions",
    "ClassifierOptions",
    "ClosedQA",
    "ClosedQAOptions",
    "ContextOptions",
    "ContextRelevancy",
    "EmbeddingSimilarity",
    "EmbeddingSimilarityOptions",
    "ExactMatch",
    "Factuality",
    "Faithfulness",
    "Humor",
    "JSONDiff",
    "JSONDiffOptions",
    "LevenshteinMatch",
    "ListContains",
    "ListContainsOptions",
    "Moderation",
    "ModerationOptions",
    "NumericDiff",
    "Possible",
    "RagasOptions",
    "Security",
    "Sql",
    "Summary",
    "Translation",
    "TranslationOptions",
    "ValidJSON",
]

AutoevalsScorer: TypeAlias = Any
"""An autoevals scorer instance (or class, where autoevals builds it); autoevals ships no types."""


class AdapterOptions(TypedDict, total=False):
    """The keywords every factory accepts (see :class:`AutoevalsAdapter`)."""

    expected: Any
    """The expected value for every evaluable without its own (its expectation, or
    ``eval_metadata[expected_key]``); encoded as entry values are."""
    expected_key: str | None
    """Read ``expected`` from ``eval_metadata[expected_key]`` instead of the expectation."""
    input_key: str | None
    """Give the scorer the input with this name instead of all inputs."""
    output_key: str | None
    """Give the scorer the output with this name instead of all outputs."""
    extra_metadata_keys: Sequence[str] | Mapping[str, str]
    """Scorer arguments read from ``eval_metadata``: names, or ``{argument: key}``."""
    name: str | None
    """The evaluator's display name; the factory's name by default."""
    client: Any
    """An openai client for this evaluator only, instead of the configured one."""


class JSONDiffOptions(AdapterOptions, total=False):
    """The keywords of :func:`JSONDiff`."""

    string_scorer: AutoevalsScorer
    """Scores two strings (autoevals' ``Levenshtein`` by default)."""
    number_scorer: AutoevalsScorer
    """Scores two numbers (autoevals' ``NumericDiff`` by default)."""
    preserve_strings: bool
    """Compare strings as text, never parsing them as JSON."""


class ListContainsOptions(AdapterOptions, total=False):
    """The keywords of :func:`ListContains`."""

    pairwise_scorer: AutoevalsScorer
    """Scores one output item against one expected item (``Levenshtein`` by default)."""
    allow_extra_entities: bool
    """Do not count output items beyond the expected ones against the score."""


class EmbeddingSimilarityOptions(AdapterOptions, total=False):
    """The keywords of :func:`EmbeddingSimilarity`."""

    model: str
    """The embedding model; the judge's embedding model by default."""
    prefix: str
    """Text put before both values before they are embedded."""
    expected_min: float
    """The cosine similarity that scores 0; higher ones are rescaled to ``[0, 1]`` (0.7)."""


class ClassifierOptions(AdapterOptions, total=False):
    """The keywords of the LLM classifiers (:func:`Factuality` ... :func:`Possible`)."""

    model: str
    """The completion model; the judge's model by default."""
    temperature: float
    """The sampling temperature sent with each request."""
    max_tokens: int
    """The most tokens the judge may answer with (autoevals sends at least 5)."""
    use_cot: bool
    """Ask the judge for its reasons before its choice (autoevals' default: yes)."""
    use_responses_api: bool
    """Call the Responses API instead of chat completions, whatever the model."""


class ClosedQAOptions(ClassifierOptions, total=False):
    """The keywords of :func:`ClosedQA`."""

    criteria: str
    """The criterion for every evaluable without ``eval_metadata["criteria"]``."""


class BattleOptions(ClassifierOptions, total=False):
    """The keywords of :func:`Battle`."""

    instructions: str
    """The instructions for every evaluable without ``eval_metadata["instructions"]``."""


class TranslationOptions(ClassifierOptions, total=False):
    """The keywords of :func:`Translation`."""

    language: str
    """The source language for every evaluable without ``eval_metadata["language"]``."""


class ModerationOptions(AdapterOptions, total=False):
    """The keywords of :func:`Moderation`."""

    threshold: float
    """Flag the output when any category score exceeds this, instead of the API's flag."""


class RagasOptions(AdapterOptions, total=False):
    """The keywords of every RAGAS scorer."""

    model: str
    """The completion model; the judge's model by default."""
    temperature: float
    """The sampling temperature sent with each request."""


class ContextOptions(RagasOptions, total=False):
    """The keywords of the RAGAS scorers that read a context (``ContextRelevancy``, ...)."""

    context: str | Sequence[str]
    """The context for every evaluable without ``eval_metadata["context"]``."""


class AnswerRelevancyOptions(ContextOptions, total=False):
    """The keywords of :func:`AnswerRelevancy`."""

    strictness: int
    """How many questions the judge generates from the output (3)."""
    embedding_model: str
    """The embedding model; the judge's embedding model by default."""


class AnswerCorrectnessOptions(RagasOptions, total=False):
    """The keywords of :func:`AnswerCorrectness`."""

    factuality_weight: float
    """The weight of the statement F1 (0.75)."""
    answer_similarity_weight: float
    """The weight of the embedding similarity (0.25)."""
    embedding_model: str
    """The embedding model; the judge's embedding model by default."""


def _keywords(options: Any) -> frozenset[str]:
    """The keywords an ``*Options`` dictionary type declares."""
    return frozenset(options.__optional_keys__)


_ADAPTER_KEYWORDS: Final = _keywords(AdapterOptions)


@dataclass(kw_only=True, frozen=True)
class _Spec:
    """How a factory configures its adapter."""

    scorer: str
    """The autoevals class."""
    keywords: frozenset[str] = _ADAPTER_KEYWORDS
    """Every keyword the factory accepts."""
    judge: JudgeKind | None = None
    """The judge service it calls."""
    arguments: tuple[str, ...] = ()
    """Scorer arguments read from ``eval_metadata`` (or given to the factory)."""
    required: tuple[str, ...] = ("output", "expected")
    """Arguments without which it is skipped."""
    fallbacks: Mapping[str, str] = field(default_factory=dict)
    """Stand-ins for missing arguments."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Values of optional prompt fields the evaluable may not have."""
    as_text: bool = False
    """Whether values reach the scorer as text."""

    @property
    def options(self) -> frozenset[str]:
        """The keywords that configure the scorer's construction."""
        return self.keywords - _ADAPTER_KEYWORDS - set(self.arguments)


def _classifier(keywords: frozenset[str] = _keywords(ClassifierOptions), **spec: Any) -> _Spec:
    return _Spec(judge="completion", keywords=keywords, as_text=True, **spec)


_SPECS: Final[Mapping[str, _Spec]] = MappingProxyType(
    {
        "LevenshteinMatch": _Spec(scorer="Levenshtein", as_text=True),
        "ExactMatch": _Spec(scorer="ExactMatch"),
        "NumericDiff": _Spec(scorer="NumericDiff"),
        "JSONDiff": _Spec(scorer="JSONDiff", keywords=_keywords(JSONDiffOptions)),
        "ValidJSON": _Spec(scorer="ValidJSON", required=("output",)),
        "ListContains": _Spec(scorer="ListContains", keywords=_keywords(ListContainsOptions)),
        "EmbeddingSimilarity": _Spec(
            scorer="EmbeddingSimilarity",
            keywords=_keywords(EmbeddingSimilarityOptions),
            judge="embedding",
            as_text=True,
        ),
        "Factuality": _classifier(scorer="Factuality", defaults={"input": ""}),
        "ClosedQA": _classifier(
            _keywords(ClosedQAOptions),
            scorer="ClosedQA",
            arguments=("criteria",),
            required=("output", "input", "criteria"),
            fallbacks={"criteria": "expected"},
        ),
        "Battle": _classifier(
            _keywords(BattleOptions),
            scorer="Battle",
            arguments=("instructions",),
            required=("output", "expected", "instructions"),
            fallbacks={"instructions": "input"},
        ),
        "Humor": _classifier(scorer="Humor", required=("output",)),
        "Security": _classifier(scorer="Security", required=("output",)),
        "Sql": _classifier(scorer="Sql", defaults={"input": ""}),
        "Summary": _classifier(scorer="Summary", required=("output", "expected", "input")),
        "Translation": _classifier(
            _keywords(TranslationOptions),
            scorer="Translation",
            arguments=("language",),
            required=("output", "expected", "input", "language"),
        ),
        "Possible": _classifier(scorer="Possible", required=("output", "input")),
        "Moderation": _Spec(
            scorer="Moderation",
            keywords=_keywords(ModerationOptions),
            judge="moderation",
            required=("output",),
            as_text=True,
        ),
        "ContextRelevancy": _Spec(
            scorer="ContextRelevancy",
            keywords=_keywords(ContextOptions),
            judge="completion",
            arguments=("context",),
            required=("input", "context"),
            as_text=True,
        ),
        "Faithfulness": _Spec(
            scorer="Faithfulness",
            keywords=_keywords(ContextOptions),
            judge="completion",
            arguments=("context",),
            required=("output", "input", "context"),
            as_text=True,
        ),
        "AnswerRelevancy": _Spec(
            scorer="AnswerRelevancy",
            keywords=_keywords(AnswerRelevancyOptions),
            judge="completion",
            arguments=("context",),
            required=("output", "input", "context"),
            as_text=True,
        ),
        "AnswerCorrectness": _Spec(
            scorer="AnswerCorrectness",
            keywords=_keywords(AnswerCorrectnessOptions),
            judge="completion",
            required=("output", "expected", "input"),
            as_text=True,
        ),
    }
)


def _build(factory: str, options: Mapping[str, object]) -> AutoevalsAdapter:
    spec = _SPECS[factory]
    unknown = sorted(set(options) - spec.keywords)
    if unknown:
        raise TypeError(
            f"{factory}() got unexpected keyword argument(s) "
            f"{', '.join(repr(key) for key in unknown)}; it accepts "
            f"{', '.join(sorted(spec.keywords))}."
        )
    given: dict[str, Any] = dict(options)
    adapter = {key: given.pop(key) for key in _ADAPTER_KEYWORDS if key in given}
    arguments = {key: given.pop(key) for key in spec.arguments if key in given}
    import autoevals

    return AutoevalsAdapter(
        getattr(autoevals, spec.scorer),
        judge=spec.judge,
        scorer_options=given,
        required=spec.required,
        fallbacks=spec.fallbacks,
        as_text=spec.as_text,
        extra_metadata_keys=adapter.pop("extra_metadata_keys", spec.arguments),
        name=adapter.pop("name", factory),
        **adapter,
        **{**spec.defaults, **arguments},
    )


def LevenshteinMatch(**options: Unpack[AdapterOptions]) -> AutoevalsAdapter:
    """Edit-distance similarity of the output to the expectation (1.0 when identical).

    Needs no model. Values that are not strings are compared as JSON text.

    Args:
        **options: The keywords of :class:`AdapterOptions`.

    Example:
        >>> evaluator = LevenshteinMatch()
    """
    return _build("LevenshteinMatch", options)


def ExactMatch(**options: Unpack[AdapterOptions]) -> AutoevalsAdapter:
    """1.0 when the output equals the expectation, else 0.0 (objects compared as JSON).

    Needs no model.

    Args:
        **options: The keywords of :class:`AdapterOptions`.

    Example:
        >>> evaluator = ExactMatch(output_key="answer")
    """
    return _build("ExactMatch", options)


def NumericDiff(**options: Unpack[AdapterOptions]) -> AutoevalsAdapter:
    """Closeness of a numeric output to the expected number, ``1 - |e - o| / (|e| + |o|)``.

    Needs no model.

    Args:
        **options: The keywords of :class:`AdapterOptions`.

    Example:
        >>> evaluator = NumericDiff()
    """
    return _build("NumericDiff", options)


def JSONDiff(**options: Unpack[JSONDiffOptions]) -> AutoevalsAdapter:
    """Structural similarity of a JSON output to the expected JSON (strings may be JSON text).

    Needs no model.

    Args:
        **options: The keywords of :class:`JSONDiffOptions`: ``string_scorer``,
            ``number_scorer``, ``preserve_strings``, and those of every factory.

    Example:
        >>> evaluator = JSONDiff(preserve_strings=True)
    """
    return _build("JSONDiff", options)


def ValidJSON(
    schema: Mapping[str, Any] | None = None, **options: Unpack[AdapterOptions]
) -> AutoevalsAdapter:
    """1.0 when the output is a JSON object or array (matching ``schema`` when one is given).

    The schema is ``schema`` if given, else the entry's ``eval_metadata["schema"]`` (another
    key with ``expected_key=...``); autoevals takes it as its ``expected`` argument. Needs no
    model.

    Args:
        schema: The JSON schema every output must match.
        **options: The keywords of :class:`AdapterOptions`.

    Example:
        >>> evaluator = ValidJSON(schema={"type": "object", "required": ["answer"]})
    """
    options.setdefault("expected_key", "schema")
    if schema is not None:
        options["expected"] = schema
    return _build("ValidJSON", options)


def ListContains(**options: Unpack[ListContainsOptions]) -> AutoevalsAdapter:
    """Overlap of an output list with the expected list, pairing items by similarity.

    Needs no model, but needs scipy (``pip install 'evaltrace[scipy]'``).

    Args:
        **options: The keywords of :class:`ListContainsOptions`: ``pairwise_scorer``,
            ``allow_extra_entities``, and those of every factory.

    Example:
        >>> evaluator = ListContains(allow_extra_entities=True)
    """
    return _build("ListContains", options)


def EmbeddingSimilarity(**options: Unpack[EmbeddingSimilarityOptions]) -> AutoevalsAdapter:
    """Cosine similarity of the embeddings of the output and the expectation, rescaled.

    Calls the judge's embedding model.

    Args:
        **options: The keywords of :class:`EmbeddingSimilarityOptions`: ``model``,
            ``prefix``, ``expected_min``, and those of every factory.

    Example:
        >>> evaluator = EmbeddingSimilarity(expected_min=0.5)
    """
    return _build("EmbeddingSimilarity", options)


def Factuality(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output agrees with the expectation on the facts.

    Reads ``output``, ``expected`` and (optionally) ``input``, the question.

    Args:
        **options: The keywords of :class:`ClassifierOptions`: ``model``, ``temperature``,
            ``max_tokens``, ``use_cot``, ``use_responses_api``, and those of every factory.

    Example:
        >>> evaluator = Factuality(model="gpt-4o-mini")
    """
    return _build("Factuality", options)


def ClosedQA(**options: Unpack[ClosedQAOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output answers the input and meets a criterion.

    The criterion is ``eval_metadata["criteria"]``, else ``criteria=...``, else the
    expectation.

    Args:
        **options: The keywords of :class:`ClosedQAOptions`.

    Example:
        >>> evaluator = ClosedQA(criteria="Names a city in France")
    """
    return _build("ClosedQA", options)


def Battle(**options: Unpack[BattleOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output is a better response than the expected one.

    The instructions both respond to are ``eval_metadata["instructions"]``, else
    ``instructions=...``, else the input.

    Args:
        **options: The keywords of :class:`BattleOptions`.

    Example:
        >>> evaluator = Battle()
    """
    return _build("Battle", options)


def Humor(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output is funny (Yes 1.0, Unsure 0.5, No 0.0).

    Args:
        **options: The keywords of :class:`ClassifierOptions`.

    Example:
        >>> evaluator = Humor()
    """
    return _build("Humor", options)


def Security(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output is malicious (not malicious scores 1.0).

    Args:
        **options: The keywords of :class:`ClassifierOptions`.

    Example:
        >>> evaluator = Security()
    """
    return _build("Security", options)


def Sql(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether an SQL output is equivalent to the expected query.

    The input, when there is one, is the question the queries answer.

    Args:
        **options: The keywords of :class:`ClassifierOptions`.

    Example:
        >>> evaluator = Sql()
    """
    return _build("Sql", options)


def Summary(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output summarises the input better than the expectation.

    Args:
        **options: The keywords of :class:`ClassifierOptions`.

    Example:
        >>> evaluator = Summary()
    """
    return _build("Summary", options)


def Translation(**options: Unpack[TranslationOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output translates the input as well as the expectation.

    The source language is ``eval_metadata["language"]``, else ``language=...``.

    Args:
        **options: The keywords of :class:`TranslationOptions`.

    Example:
        >>> evaluator = Translation(language="Spanish")
    """
    return _build("Translation", options)


def Possible(**options: Unpack[ClassifierOptions]) -> AutoevalsAdapter:
    """An LLM judge of whether the output offers a solution to the input's task.

    Args:
        **options: The keywords of :class:`ClassifierOptions`.

    Example:
        >>> evaluator = Possible()
    """
    return _build("Possible", options)


def Moderation(**options: Unpack[ModerationOptions]) -> AutoevalsAdapter:
    """The judge's moderation endpoint: 1.0 when the output is not flagged.

    Args:
        **options: The keywords of :class:`ModerationOptions`: ``threshold`` (flag when any
            category score exceeds it), and those of every factory.

    Example:
        >>> evaluator = Moderation(threshold=0.5)
    """
    return _build("Moderation", options)


def ContextRelevancy(**options: Unpack[ContextOptions]) -> AutoevalsAdapter:
    """RAGAS context relevancy: the share of the context an LLM finds relevant to the input.

    The context is ``eval_metadata["context"]`` (a string or a list of passages).

    Args:
        **options: The keywords of :class:`ContextOptions`: ``model``, ``temperature``,
            ``context``, and those of every factory.

    Example:
        >>> evaluator = ContextRelevancy()
    """
    return _build("ContextRelevancy", options)


def Faithfulness(**options: Unpack[ContextOptions]) -> AutoevalsAdapter:
    """RAGAS faithfulness: the share of the output's statements the context supports.

    The context is ``eval_metadata["context"]``.

    Args:
        **options: The keywords of :class:`ContextOptions`.

    Example:
        >>> evaluator = Faithfulness(extra_metadata_keys={"context": "documents"})
    """
    return _build("Faithfulness", options)


def AnswerRelevancy(**options: Unpack[AnswerRelevancyOptions]) -> AutoevalsAdapter:
    """RAGAS answer relevancy: how well questions generated from the output match the input.

    The context is ``eval_metadata["context"]``. Calls the judge's completion model
    ``strictness`` times (3) and its embedding model.

    Args:
        **options: The keywords of :class:`AnswerRelevancyOptions`: ``model``,
            ``temperature``, ``strictness``, ``embedding_model``, ``context``, and those of
            every factory.

    Example:
        >>> evaluator = AnswerRelevancy(strictness=2)
    """
    return _build("AnswerRelevancy", options)


def AnswerCorrectness(**options: Unpack[AnswerCorrectnessOptions]) -> AutoevalsAdapter:
    """RAGAS answer correctness: statement F1 against the expectation, blended with similarity.

    The similarity is that of the embeddings of the output and the expectation.

    Args:
        **options: The keywords of :class:`AnswerCorrectnessOptions`: ``model``,
            ``temperature``, ``factuality_weight`` (0.75), ``answer_similarity_weight``
            (0.25), ``embedding_model``, and those of every factory.

    Example:
        >>> evaluator = AnswerCorrectness(answer_similarity_weight=0.0)
    """
    return _build("AnswerCorrectness", options)
