"""autoevals scorers as evaltrace evaluators: :class:`AutoevalsAdapter`.

An adapter reads the scorer's arguments from an :class:`Evaluable` (``output`` from its
outputs, ``expected`` from its expectation, ``input`` from its inputs, and arguments such as
``context`` or ``criteria`` from ``eval_metadata``), runs the scorer with autoevals' async API,
and turns the autoevals ``Score`` into an :class:`Evaluation`:

* a numeric score (numpy ones included) becomes a float score, the scorer's ``rationale``
  its reasoning and the scorer's metadata its ``details``;
* a ``None`` score, or a required argument the evaluable does not have, becomes a skipped
  evaluation saying why;
* an exception becomes an errored evaluation.

Model-backed scorers are given an explicit client and model from the judge configuration
(:func:`~evaltrace.judges.configure_judge`) every time they run; nothing falls back to a
default endpoint. The 21 shipped scorers are built by the factories of
:mod:`evaltrace.judges.scorers`; ``autoevals`` itself is imported when a scorer first runs
or is built, not before.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

from pydantic import JsonValue

from evaltrace._safe_text import safe_repr
from evaltrace.capture.codec import json_text, jsonable
from evaltrace.errors import InvalidEvaluatorResultError, MissingExtraError
from evaltrace.evals.display import short_text
from evaltrace.evals.evaluable import (
    HOW_TO_GIVE_AN_EXPECTATION,
    UNSET,
    Evaluable,
    Unset,
    get_named,
    json_value,
)
from evaltrace.evals.evaluation import Evaluation
from evaltrace.judges.llm import UnparseableJudgeAnswerError
from evaltrace.llm.config import JudgeClient, JudgeConfig, judge_client, judge_config
from evaltrace.llm.isolation import estimate_tokens, run_judge_call, run_judge_call_in_thread

__all__ = ["AutoevalsAdapter", "JudgeKind"]

JudgeKind: TypeAlias = Literal["completion", "embedding", "moderation"]
"""Which judge service a scorer calls: chat/Responses completions, embeddings or moderation."""

_JUDGE_KINDS: Final = ("completion", "embedding", "moderation")

# Optional packages a scorer may import while it runs, and the evaltrace extra installing each.
_EXTRAS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {"scipy": ("scipy", "scipy"), "numpy": ("scipy", "scipy"), "openai": ("openai", "llm")}
)

_ABSENT: Final = object()


class _NeverRaised(Exception):
    """Stands in for autoevals' rate-limit class so that autoevals never retries by itself.

    autoevals retries a rate-limited call up to 100 times with growing sleeps. The openai
    clients already retry 429 replies (``max_retries``), so a rate limit that outlasts them
    becomes an errored evaluation instead of a stall.
    """


class AutoevalsAdapter:
    """Run an autoevals scorer as an evaltrace evaluator.

    Arguments for the scorer are read from the evaluable being scored:

    * ``output``: its outputs collapsed (one output gives its value, several a
      ``{name: value}`` dict), or the output named ``output_key``;
    * ``expected``: the entry's own, ``eval_metadata[expected_key]`` if ``expected_key`` is
      given, else the evaluable's expectation; when the entry has none, the fixed
      ``expected`` argument if given (encoded as entry values are: a pydantic model or a
      dataclass becomes its JSON data);
    * ``input``: its inputs collapsed, or the input named ``input_key``;
    * each name in ``extra_metadata_keys`` (or each ``argument: metadata key`` pair of a
      mapping): ``eval_metadata[key]``, when the entry has it;
    * anything in ``scorer_kwargs``: a fixed value, used when the evaluable has none.

    An argument in ``required`` that the evaluable cannot supply makes the evaluation skipped,
    with the reason. With ``as_text``, values that are not strings are given to the scorer as
    JSON text (a ``context`` list of passages as the passages joined by newlines).

    The scorer is an autoevals scorer instance, used as is, or a scorer class (or any
    callable returning a scorer), constructed with ``scorer_options``. When ``judge`` names
    the service the scorer calls, the adapter resolves the judge configuration on every call,
    errs with instructions when none is configured, and constructs the scorer with
    ``client=`` (an autoevals ``LLMClient`` over the judge's openai client) and, unless
    ``scorer_options`` sets it, ``model=`` (the judge model; the embedding model for
    ``"embedding"``). An instance keeps the client it was built with; one built without a
    client uses the judge's client.

    Args:
        scorer: An autoevals scorer, or a class or callable that builds one.
        expected: The expected value for every evaluable that has none of its own
            (``UNSET``: none).
        expected_key: Read ``expected`` from ``eval_metadata[expected_key]`` instead of the
            expectation.
        input_key: Give the scorer the input with this name instead of all inputs.
        output_key: Give the scorer the output with this name instead of all outputs.
        extra_metadata_keys: Scorer arguments read from ``eval_metadata``: names (the
            argument and the key are the same) or a mapping of argument to key.
        name: The evaluator's display name; the scorer's name by default.
        judge: The judge service the scorer calls; ``None`` for a scorer that calls none.
        client: An openai client for this evaluator only, instead of the configured one.
        scorer_options: Keyword arguments for constructing the scorer from a class.
        required: Arguments without which the scorer is not run (the evaluation is skipped).
        fallbacks: For an argument the evaluable lacks, another argument whose value stands
            in (``{"criteria": "expected"}``).
        as_text: Give the scorer JSON text instead of structured values.
        **scorer_kwargs: Fixed scorer arguments (``criteria=``, ``language=``, ...); the
            evaluable's own values take precedence.

    Raises:
        ValueError: ``judge`` is not a known judge kind, or ``scorer_options`` were given
            with a scorer instance.

    Example:
        >>> import anyio, autoevals
        >>> from evaltrace.evals.evaluable import NamedData
        >>> adapter = AutoevalsAdapter(autoevals.Levenshtein, name="edit similarity")
        >>> evaluable = Evaluable(
        ...     eval_output=[NamedData(name="answer", value="kitten")], expectation="sitten"
        ... )
        >>> round(anyio.run(adapter, evaluable).score, 3)
        0.833
    """

    def __init__(
        self,
        scorer: Any,
        *,
        expected: Any = UNSET,
        expected_key: str | None = None,
        input_key: str | None = None,
        output_key: str | None = None,
        extra_metadata_keys: Sequence[str] | Mapping[str, str] = (),
        name: str | None = None,
        judge: JudgeKind | None = None,
        client: Any = None,
        scorer_options: Mapping[str, Any] | None = None,
        required: Collection[str] = ("output",),
        fallbacks: Mapping[str, str] | None = None,
        as_text: bool = False,
        **scorer_kwargs: Any,
    ) -> None:
        if judge is not None and judge not in _JUDGE_KINDS:
            raise ValueError(
                f"AutoevalsAdapter(judge={judge!r}) must be None or one of {_JUDGE_KINDS}."
            )
        is_instance = not isinstance(scorer, type) and hasattr(scorer, "eval_async")
        if is_instance and scorer_options:
            raise ValueError(
                "AutoevalsAdapter(scorer_options=...) configures a scorer the adapter builds; "
                f"{type(scorer).__name__} is already built. Pass its class instead, or drop "
                "scorer_options."
            )
        if not is_instance and not callable(scorer):
            raise TypeError(
                "AutoevalsAdapter(scorer=...) takes an autoevals scorer, or a class or callable "
                f"that builds one; got {type(scorer).__name__}."
            )
        self.name: str = name or _scorer_name(scorer)
        """The evaluator's display name."""
        self.judge: JudgeKind | None = judge
        """The judge service the scorer calls, if any."""
        self.expected: JsonValue | Unset = (
            expected if isinstance(expected, Unset) else json_value(expected)
        )
        """The expected value of an evaluable without its own, as JSON data; or ``UNSET``."""
        self.expected_key = expected_key
        """The ``eval_metadata`` key holding the expected value, if not the expectation."""
        self.input_key = input_key
        """The name of the input given to the scorer (all inputs when ``None``)."""
        self.output_key = output_key
        """The name of the output given to the scorer (all outputs when ``None``)."""
        self.metadata_keys: Mapping[str, str] = MappingProxyType(
            _metadata_keys(extra_metadata_keys)
        )
        """Scorer arguments read from ``eval_metadata``, as ``{argument: key}``."""
        self.required: tuple[str, ...] = tuple(required)
        """Arguments without which the evaluation is skipped."""
        self.fallbacks: Mapping[str, str] = MappingProxyType(dict(fallbacks or {}))
        """Stand-ins for missing arguments, as ``{argument: other argument}``."""
        self.as_text = as_text
        """Whether structured values reach the scorer as JSON text."""
        self.scorer_kwargs: Mapping[str, Any] = MappingProxyType(dict(scorer_kwargs))
        """Fixed scorer arguments."""
        self._scorer = scorer
        self._is_instance = is_instance
        self._options: dict[str, Any] = dict(scorer_options or {})
        self._client = client
        self._lock = threading.Lock()
        self._pure_scorer: Any = scorer if is_instance else None
        self._judge_scorer: tuple[tuple[Any, ...], Any, Any] | None = None

    def __repr__(self) -> str:
        return f"AutoevalsAdapter({_scorer_name(self._scorer)}, name={self.name!r})"

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Score ``evaluable`` with the scorer.

        Args:
            evaluable: What to score.
            trace: Accepted for the evaluator protocol; autoevals scorers do not use it.

        Returns:
            The scored, skipped or errored evaluation.
        """
        arguments = self._arguments(evaluable)
        if isinstance(arguments, str):
            return Evaluation.skip(arguments, evaluator=self.name)
        where = "judge" if self.judge is not None else "evaluator"
        try:
            score = await self._score(arguments)
        except ImportError as exc:
            return Evaluation.errored(
                _explain_missing_package(exc, self.name), where=where, evaluator=self.name
            )
        except Exception as exc:  # the scorer's failure is reported as data
            return Evaluation.errored(exc, where=where, evaluator=self.name)
        evaluation = self._evaluation(score, where)
        if self.judge is None and evaluation.status == "scored" and not evaluation.reasoning:
            return evaluation.model_copy(update={"reasoning": _compared(arguments)})
        return evaluation

    # -- arguments -------------------------------------------------------------------------

    def _arguments(self, evaluable: Evaluable) -> dict[str, Any] | str:
        """The scorer's arguments, or why the evaluation is skipped."""
        found: dict[str, Any] = dict(self.scorer_kwargs)
        metadata = evaluable.eval_metadata or {}
        if evaluable.eval_output is not None:
            output = (
                evaluable.output_value()
                if self.output_key is None
                else get_named(evaluable.eval_output, self.output_key, _ABSENT)
            )
            if output is not _ABSENT:
                found["output"] = output
        # The entry's own expectation is the more specific one: it wins over a fixed one.
        if self.expected_key is not None:
            if self.expected_key in metadata:
                found["expected"] = metadata[self.expected_key]
        elif evaluable.has_expectation:
            found["expected"] = evaluable.expectation
        if "expected" not in found and not isinstance(self.expected, Unset):
            found["expected"] = self.expected
        if self.input_key is None:
            if evaluable.eval_input:
                found["input"] = evaluable.input_value()
        else:
            value = get_named(evaluable.eval_input, self.input_key, _ABSENT)
            if value is not _ABSENT:
                found["input"] = value
        for argument, key in self.metadata_keys.items():
            if key in metadata:
                found[argument] = metadata[key]
        for argument, stand_in in self.fallbacks.items():
            if argument not in found and stand_in in found:
                found[argument] = found[stand_in]
        missing = [argument for argument in self.required if argument not in found]
        if missing:
            reasons = "; ".join(self._missing_reason(argument, evaluable) for argument in missing)
            return f"{self.name} was not run: {reasons}"
        found.setdefault("output", None)
        if self.as_text:
            found = {argument: _as_text(argument, value) for argument, value in found.items()}
        return found

    def _missing_reason(self, argument: str, evaluable: Evaluable) -> str:
        if argument == "output":
            if evaluable.eval_output is None:
                reason = "the evaluable has no outputs yet (eval_output is None)"
            else:
                names = ", ".join(repr(item.name) for item in evaluable.eval_output) or "none"
                reason = f"it has no output named {self.output_key!r} (outputs: {names})"
        elif argument == "expected":
            if self.expected_key is not None:
                reason = f"its eval_metadata has no {self.expected_key!r}"
            else:
                reason = (
                    f"it has no expectation ({HOW_TO_GIVE_AN_EXPECTATION}; or pass "
                    "expected=... to the evaluator)"
                )
        elif argument == "input":
            if self.input_key is None:
                reason = "it has no inputs"
            else:
                names = ", ".join(repr(item.name) for item in evaluable.eval_input) or "none"
                reason = f"it has no input named {self.input_key!r} (inputs: {names})"
        elif argument in self.metadata_keys:
            reason = (
                f"its eval_metadata has no {self.metadata_keys[argument]!r} (add it to the "
                f"entry, or pass {argument}=... to the evaluator)"
            )
        else:
            reason = f"pass {argument}=... to the evaluator"
        stand_in = self.fallbacks.get(argument)
        if stand_in is not None:
            reason += f", and there is no {stand_in!r} to use instead"
        return f"it needs {argument!r}, but {reason}"

    # -- scoring ---------------------------------------------------------------------------

    async def _score(self, arguments: dict[str, Any]) -> Any:
        if self.judge is None:
            return await self._pure().eval_async(**arguments)
        config = judge_config()
        client = judge_client(config, client=self._client, evaluator=self.name)
        import autoevals

        llm, scorer = self._scorer_for(config, client)
        default_models = {"completion": self._model(config), "embedding": self._embedding(config)}
        tokens = estimate_tokens(*arguments.values())

        # autoevals keeps a default client and models in context variables; setting them in
        # the judge call's own context gives scorers that build helpers internally (and
        # scorer instances built without a client) the judge's client and models too.
        if client.is_async:

            async def call() -> Any:
                autoevals.init(client=llm, default_model=default_models)
                return await scorer.eval_async(**arguments)

            try:
                return await run_judge_call(config, call, tokens=tokens)
            except KeyError as exc:
                raise _unknown_choice(exc, scorer) from exc

        def call_sync() -> Any:
            autoevals.init(client=llm, default_model=default_models)
            return scorer.eval(**arguments)

        try:
            return await run_judge_call_in_thread(config, call_sync, tokens=tokens)
        except KeyError as exc:
            raise _unknown_choice(exc, scorer) from exc

    def _pure(self) -> Any:
        with self._lock:
            if self._pure_scorer is None:
                self._pure_scorer = self._scorer(**self._options)
            return self._pure_scorer

    def _model(self, config: JudgeConfig) -> str:
        if self.judge == "embedding":
            return str(self._options.get("model") or config.embedding_model)
        return str(self._options.get("model") or config.model)

    def _embedding(self, config: JudgeConfig) -> str:
        if self.judge == "embedding":
            return self._model(config)
        return str(self._options.get("embedding_model") or config.embedding_model)

    def _scorer_for(self, config: JudgeConfig, client: JudgeClient) -> tuple[Any, Any]:
        """The autoevals client and scorer for this judge; rebuilt when the judge changes."""
        key = (self._model(config), self._embedding(config), client.is_async)
        with self._lock:
            built = self._judge_scorer
            if built is not None and built[0][0] is client.openai and built[0][1:] == key:
                return built[1], built[2]
        llm = _autoevals_client(client)
        if self._is_instance:
            scorer = self._scorer
        else:
            options = dict(self._options)
            options["client"] = llm
            if self.judge != "moderation":
                options.setdefault("model", self._model(config))
            if self.judge == "completion" and _accepts(self._scorer, "embedding_model"):
                options.setdefault("embedding_model", self._embedding(config))
            scorer = self._scorer(**options)
        with self._lock:
            self._judge_scorer = ((client.openai, *key), llm, scorer)
        return llm, scorer

    def _evaluation(self, score: Any, where: str) -> Evaluation:
        metadata = jsonable(getattr(score, "metadata", None) or {})
        details: dict[str, Any] = metadata if isinstance(metadata, dict) else {"metadata": metadata}
        raw: Any = getattr(score, "score", _ABSENT)
        if raw is _ABSENT:
            return Evaluation.errored(
                InvalidEvaluatorResultError(
                    f"{self.name}: the scorer returned {type(score).__name__}, not an "
                    "autoevals Score"
                ),
                where=where,
                evaluator=self.name,
            )
        rationale = details.get("rationale")
        if raw is None:
            why = rationale if isinstance(rationale, str) and rationale else "it gave no score"
            return Evaluation.skip(
                f"{self.name} skipped: {why}", details=details, evaluator=self.name
            )
        try:
            return Evaluation(
                score=float(raw),
                reasoning=rationale if isinstance(rationale, str) else "",
                details=details,
                evaluator=self.name,
            )
        except (TypeError, ValueError) as exc:
            return Evaluation.errored(
                InvalidEvaluatorResultError(
                    f"{self.name}: the scorer gave the score {raw!r}, not a number in [0, 1] "
                    f"({exc})"
                ),
                where=where,
                evaluator=self.name,
            )


_COMPARED_WIDTH: Final = 60


def _shown(value: Any) -> str:
    if isinstance(value, str):  # quoted, so that case and whitespace differences show
        cut = value if len(value) <= _COMPARED_WIDTH else value[: _COMPARED_WIDTH - 1] + "…"
        return safe_repr(cut)
    return short_text(value, _COMPARED_WIDTH)


def _compared(arguments: Mapping[str, Any]) -> str:
    """What a local scorer compared, for the reasoning of its score."""
    shown = f"output {_shown(arguments.get('output'))}"
    if "expected" in arguments:
        shown += f" vs expected {_shown(arguments['expected'])}"
    return f"compared {shown}"


def _autoevals_client(client: JudgeClient) -> Any:
    """An autoevals ``LLMClient`` over the judge's openai client.

    autoevals sends a ``gpt-5*`` model to the Responses API (converting the reply back to
    the chat-completions shape) and any other model to chat completions.
    """
    from autoevals.oai import LLMClient

    llm = LLMClient(openai=client.openai, is_async=client.is_async)
    llm.RateLimitError = _NeverRaised
    return llm


def _unknown_choice(exc: KeyError, scorer: Any) -> Exception:
    """Explain autoevals' ``KeyError`` for a choice outside the classifier's choices."""
    choices = getattr(scorer, "choice_scores", None)
    if not isinstance(choices, Mapping) or not exc.args or exc.args[0] in choices:
        return exc
    return UnparseableJudgeAnswerError(
        f"the judge chose {exc.args[0]!r}, which is not one of "
        f"{', '.join(repr(choice) for choice in choices)}"
    )


def _accepts(factory: Callable[..., Any], parameter: str) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    found = parameters.get(parameter)
    return found is not None and found.kind is not inspect.Parameter.VAR_KEYWORD


def _scorer_name(scorer: Any) -> str:
    target = getattr(scorer, "func", scorer)  # functools.partial
    if isinstance(target, type):
        return target.__name__
    named = getattr(target, "_name", None)
    if callable(named):
        return str(named())
    return str(getattr(target, "__name__", type(target).__name__))


def _metadata_keys(keys: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    if isinstance(keys, str):
        raise TypeError(
            f"extra_metadata_keys={keys!r} is one string; pass a tuple of names, such as "
            f"({keys!r},), or a mapping of scorer argument to eval_metadata key."
        )
    if isinstance(keys, Mapping):
        return {str(argument): str(key) for argument, key in keys.items()}
    return {str(key): str(key) for key in keys}


def _as_text(argument: str, value: Any) -> Any:
    if isinstance(value, str):
        return value
    if (
        argument == "context"
        and isinstance(value, list)
        and all(isinstance(item, str) for item in value)
    ):
        return "\n".join(value)
    return json_text(value, spaced=True)


def _explain_missing_package(exc: ImportError, evaluator: str) -> ImportError:
    module = exc.name or ""
    package = _EXTRAS.get(module.split(".")[0])
    if package is None:
        return exc
    return MissingExtraError(evaluator, *package)
