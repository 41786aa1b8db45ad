"""Prompt-based LLM judges: :func:`create_llm_evaluator`.

A judge is a prompt template with placeholders for the evaluable's data. The model answers
through a forced tool call (a ``select_choice`` with an enum of choices, or a
``submit_score`` with a number in [0, 1]), never through prose that has to be searched with a
regex; an answer that does not fit is an errored evaluation quoting what the model said.

Placeholders are substituted by a scanner that only knows these names, so literal braces in
the template (a JSON example, say) stay as written and braces inside the data are never
interpreted:

* ``{eval_input}``, ``{eval_output}``: all inputs / outputs, collapsed (one item gives its
  value, several a ``{name: value}`` object); ``{eval_input[name]}``, ``{eval_output[name]}``:
  one of them by name;
* ``{expected_output}`` (or ``{expectation}``): the expectation;
* ``{eval_metadata[key]}``: one metadata value; ``{eval_metadata}``: all of it;
* ``{description}``: the entry's description.

Values that are not strings are written as JSON.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from evaltrace.capture.codec import json_text
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluable import HOW_TO_GIVE_AN_EXPECTATION, Evaluable, Unset, get_named
from evaltrace.evals.evaluation import Evaluation
from evaltrace.llm.config import judge_client, judge_config, uses_responses_api
from evaltrace.llm.isolation import estimate_tokens, run_judge_call, run_judge_call_in_thread

__all__ = [
    "LLMEvaluator",
    "UnparseableJudgeAnswerError",
    "create_llm_evaluator",
]

_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\[\]{}]+)\])?\}")
_KEYED: Final = frozenset({"eval_input", "eval_output", "eval_metadata"})
_PLAIN: Final = frozenset({"eval_input", "eval_output", "eval_metadata", "description"})
_EXPECTATION: Final = frozenset({"expected_output", "expectation"})
_KNOWN: Final = _PLAIN | _EXPECTATION
_EXCERPT: Final = 300

CHOICE_TOOL: Final = "select_choice"
"""The tool a judge with ``choice_scores`` must call."""
SCORE_TOOL: Final = "submit_score"
"""The tool a judge without ``choice_scores`` must call."""

_REASONS_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "string",
    "description": "Your reasoning, step by step, written before you decide.",
}


class UnparseableJudgeAnswerError(EvaltraceError, ValueError):
    """The judge's answer does not fit the tool it was told to call."""


@dataclass(kw_only=True, frozen=True)
class _Placeholder:
    """One placeholder occurrence, validated at creation."""

    text: str
    name: str
    key: str | None


class LLMEvaluator:
    """An evaluator asking an LLM judge to score an evaluable; see :func:`create_llm_evaluator`.

    Example:
        >>> judge = create_llm_evaluator("concise", "Is this concise? {eval_output}")
        >>> judge.name
        'concise'
    """

    def __init__(
        self,
        name: str,
        prompt_template: str,
        *,
        model: str | None = None,
        client: Any = None,
        choice_scores: Mapping[str, float] | None = None,
        use_reasoning: bool = True,
        temperature: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"an LLM evaluator needs a non-empty name, got {name!r}")
        if not isinstance(prompt_template, str) or not prompt_template.strip():
            raise ValueError(f"{name}: the prompt template must be a non-empty string")
        self.name = name
        """The evaluator's display name."""
        self.prompt_template = prompt_template
        """The prompt, with placeholders."""
        self.model = model
        """The model; the judge configuration's when ``None``."""
        self.choice_scores: Mapping[str, float] | None = (
            None if choice_scores is None else _check_choices(name, choice_scores)
        )
        """The score of each choice, or ``None`` when the judge gives a score itself."""
        self.use_reasoning = use_reasoning
        """Whether the judge writes its reasoning (a ``reasons`` argument) before answering."""
        self.temperature = temperature
        """The sampling temperature; the model's default when ``None``."""
        self._client = client
        self._placeholders = _scan(name, prompt_template)

    def __repr__(self) -> str:
        return f"LLMEvaluator({self.name!r}, model={self.model!r})"

    @property
    def tool_name(self) -> str:
        """The name of the tool the judge is forced to call."""
        return CHOICE_TOOL if self.choice_scores is not None else SCORE_TOOL

    def render(self, evaluable: Evaluable) -> str:
        """The prompt for ``evaluable``, placeholders filled in.

        Raises:
            LookupError: ``evaluable`` lacks a value the template uses.

        Example:
            >>> judge = create_llm_evaluator("j", 'Rate {eval_output} as JSON {"score": n}')
            >>> from evaltrace.evals.evaluable import NamedData
            >>> judge.render(Evaluable(eval_output=[NamedData(name="a", value="{hi}")]))
            'Rate {hi} as JSON {"score": n}'
        """
        values = {spec.text: _text(self._lookup(spec, evaluable)) for spec in self._placeholders}

        def fill(match: re.Match[str]) -> str:
            return values.get(match.group(0), match.group(0))

        return _PLACEHOLDER.sub(fill, self.prompt_template)

    async def __call__(self, evaluable: Evaluable, *, trace: Any = None) -> Evaluation:
        """Ask the judge to score ``evaluable``.

        Args:
            evaluable: What to score.
            trace: Accepted for the evaluator protocol; not used.

        Returns:
            The scored evaluation; skipped when the evaluable lacks data the template uses;
            errored when the judge is not configured, fails, or answers out of bounds.
        """
        try:
            prompt = self.render(evaluable)
        except LookupError as exc:
            return Evaluation.skip(f"{self.name} was not run: {exc}", evaluator=self.name)
        try:
            config = judge_config()
            client = judge_client(config, client=self._client, evaluator=self.name)
            model = self.model or config.model
            request = self._request(model, prompt)
            sender = client.caching
            # The answer is read inside the judge call: one that does not parse fails the
            # call, and a failed call leaves nothing in the judge cache.
            if client.is_async:

                async def call() -> Evaluation:
                    return self._read(await _send(sender, request), model)

                return await run_judge_call(config, call, tokens=estimate_tokens(prompt))
            return await run_judge_call_in_thread(
                config,
                lambda: self._read(_send(sender, request), model),
                tokens=estimate_tokens(prompt),
            )
        except Exception as exc:  # the judge's failure is reported as data
            return Evaluation.errored(exc, where="judge", evaluator=self.name)

    def _read(self, reply: Any, model: str) -> Evaluation:
        arguments = _tool_arguments(reply, self.tool_name, responses=uses_responses_api(model))
        return self._evaluation(arguments, model)

    def _lookup(self, spec: _Placeholder, evaluable: Evaluable) -> Any:
        if spec.name in _EXPECTATION:
            if isinstance(evaluable.expectation, Unset):
                raise LookupError(
                    f"the template uses {spec.text}, and the entry has no expectation; "
                    f"{HOW_TO_GIVE_AN_EXPECTATION}"
                )
            return evaluable.expectation
        if spec.name == "description":
            return evaluable.description or ""
        if spec.name == "eval_metadata":
            metadata = evaluable.eval_metadata or {}
            if spec.key is None:
                return metadata
            if spec.key not in metadata:
                keys = ", ".join(repr(key) for key in metadata) or "none"
                raise LookupError(
                    f"the template uses {spec.text}, and the entry's eval_metadata has no "
                    f"{spec.key!r} (keys: {keys})"
                )
            return metadata[spec.key]
        items = evaluable.eval_input if spec.name == "eval_input" else evaluable.eval_output
        if items is None:
            raise LookupError(
                f"the template uses {spec.text}, and the evaluable has no outputs yet"
            )
        if spec.key is None:
            return (
                evaluable.input_value() if spec.name == "eval_input" else evaluable.output_value()
            )
        missing = object()
        value = get_named(items, spec.key, missing)
        if value is missing:
            names = ", ".join(repr(item.name) for item in items) or "none"
            raise LookupError(
                f"the template uses {spec.text}, and there is no item named {spec.key!r} "
                f"(names: {names})"
            )
        return value

    def _parameters(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        if self.use_reasoning:
            properties["reasons"] = dict(_REASONS_SCHEMA)
        if self.choice_scores is not None:
            properties["choice"] = {
                "type": "string",
                "enum": list(self.choice_scores),
                "description": "The single choice that answers the question.",
            }
        else:
            properties["score"] = {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "The score, from 0 (worst) to 1 (best).",
            }
        return {"type": "object", "properties": properties, "required": list(properties)}

    def _instructions(self) -> str:
        reasoning = (
            "Write your reasoning step by step in `reasons` first, then "
            if (self.use_reasoning)
            else ""
        )
        if self.choice_scores is not None:
            choices = ", ".join(self.choice_scores)
            return (
                f"Answer by calling `{CHOICE_TOOL}`. {reasoning}set `choice` to exactly one "
                f"of: {choices}."
            )
        return (
            f"Answer by calling `{SCORE_TOOL}`. {reasoning}set `score` to a number from 0 "
            "(worst) to 1 (best)."
        )

    def _request(self, model: str, prompt: str) -> _Request:
        description = (
            "Select one choice." if self.choice_scores is not None else "Submit the score."
        )
        return _Request(
            model=model,
            instructions=self._instructions(),
            content=prompt,
            tool=self.tool_name,
            description=description,
            parameters=self._parameters(),
            temperature=self.temperature,
        )

    def _evaluation(self, arguments: Mapping[str, Any], model: str) -> Evaluation:
        raw = json.dumps(arguments, ensure_ascii=False)[:_EXCERPT]
        reasons = arguments.get("reasons", "")
        if isinstance(reasons, list):
            reasons = "\n".join(str(item) for item in reasons)
        reasoning = reasons if isinstance(reasons, str) else str(reasons)
        details: dict[str, Any] = {"model": model}
        if self.choice_scores is not None:
            given_choice = arguments.get("choice")
            choice = given_choice.strip() if isinstance(given_choice, str) else None
            if choice is None or choice not in self.choice_scores:
                raise UnparseableJudgeAnswerError(
                    f"the judge chose {given_choice!r}, which is not one of "
                    f"{', '.join(repr(key) for key in self.choice_scores)}; it answered: {raw}"
                )
            details["choice"] = choice
            score = self.choice_scores[choice]
        else:
            given = arguments.get("score")
            if (
                isinstance(given, bool)
                or not isinstance(given, int | float)
                or not math.isfinite(given)
                or not 0 <= given <= 1
            ):
                raise UnparseableJudgeAnswerError(
                    f"the judge's score {given!r} is not a number from 0 to 1; it answered: {raw}"
                )
            score = float(given)
        if reasoning:
            details["rationale"] = reasoning
        return Evaluation(score=score, reasoning=reasoning, details=details, evaluator=self.name)


def create_llm_evaluator(
    name: str,
    prompt_template: str,
    *,
    model: str | None = None,
    client: Any = None,
    choice_scores: Mapping[str, float] | None = None,
    use_reasoning: bool = True,
    temperature: float | None = None,
) -> LLMEvaluator:
    """Create an evaluator that asks an LLM judge to score with your prompt.

    With ``choice_scores`` the judge picks one choice (a forced ``select_choice`` tool call
    whose ``choice`` is an enum of the choices) and the score is that choice's value; without
    it, the judge gives a score from 0 to 1 itself (a forced ``submit_score`` tool call). A
    ``gpt-5*`` model is called through the Responses API, any other through chat completions.

    Args:
        name: The evaluator's name in results.
        prompt_template: The prompt; see the module documentation for its placeholders.
            Text in braces that is not a placeholder stays as written.
        model: The model; the judge configuration's (:func:`configure_judge`) when ``None``.
        client: An ``openai.AsyncOpenAI`` or ``openai.OpenAI`` client for this evaluator,
            instead of the configured one.
        choice_scores: The score of each choice, each in [0, 1], such as
            ``{"A": 1.0, "B": 0.5, "C": 0.0}``.
        use_reasoning: Have the judge write its reasoning (``reasons``) before answering; it
            becomes the evaluation's reasoning.
        temperature: The sampling temperature; the model's default when ``None``.

    Returns:
        The evaluator (an async callable).

    Raises:
        ValueError: The template uses an unknown placeholder (the message suggests the
            closest known one), or ``choice_scores`` is empty or has a score outside [0, 1].

    Example:
        >>> judge = create_llm_evaluator(
        ...     "helpfulness",
        ...     "Question: {eval_input} Answer: {eval_output} Is the answer helpful?",
        ...     choice_scores={"yes": 1.0, "partly": 0.5, "no": 0.0},
        ... )
    """
    return LLMEvaluator(
        name,
        prompt_template,
        model=model,
        client=client,
        choice_scores=choice_scores,
        use_reasoning=use_reasoning,
        temperature=temperature,
    )


# -- the request -----------------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True)
class _Request:
    """One judge request, independent of the API it goes through.

    The judge's fixed instructions lead, as a system message that is the same for every
    entry, and the rendered prompt follows: the request's start (tools, then instructions)
    is then byte-identical from one entry to the next, which providers' prompt caching bills
    lower (the cached tokens are counted in ``judge_usage``).
    """

    model: str
    instructions: str
    content: str
    tool: str
    description: str
    parameters: Mapping[str, Any]
    temperature: float | None


def _messages(request: _Request) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": request.instructions},
        {"role": "user", "content": request.content},
    ]


def _chat_arguments(request: _Request) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request),
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": request.tool,
                    "description": request.description,
                    "parameters": dict(request.parameters),
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": request.tool}},
    }
    if request.temperature is not None:
        arguments["temperature"] = request.temperature
    return arguments


def _responses_arguments(request: _Request) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": request.model,
        "input": _messages(request),
        "tools": [
            {
                "type": "function",
                "name": request.tool,
                "description": request.description,
                "parameters": dict(request.parameters),
                "strict": False,
            }
        ],
        "tool_choice": {"type": "function", "name": request.tool},
    }
    if request.temperature is not None:
        arguments["temperature"] = request.temperature
    return arguments


def _send(client: Any, request: _Request) -> Any:
    """Send ``request`` with ``client`` (returns an awaitable with an async client)."""
    if uses_responses_api(request.model):
        return client.responses.create(**_responses_arguments(request))
    return client.chat.completions.create(**_chat_arguments(request))


def _tool_arguments(reply: Any, tool: str, *, responses: bool) -> dict[str, Any]:
    """The arguments of the ``tool`` call in ``reply``; unparseable answers raise."""
    calls: list[tuple[str | None, Any]] = []
    text: str | None = None
    if responses:
        for item in getattr(reply, "output", None) or ():
            if getattr(item, "type", None) == "function_call":
                calls.append((getattr(item, "name", None), getattr(item, "arguments", None)))
        text = getattr(reply, "output_text", None)
    else:
        choices = getattr(reply, "choices", None) or ()
        message = getattr(choices[0], "message", None) if choices else None
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            calls.append((getattr(function, "name", None), getattr(function, "arguments", None)))
        text = getattr(message, "content", None)
    arguments = next((given for name, given in calls if name == tool), None)
    if arguments is None:
        called = ", ".join(repr(name) for name, _ in calls)
        what = f"called {called}" if calls else f"wrote {_excerpt(text)}"
        raise UnparseableJudgeAnswerError(
            f"the judge did not call the {tool!r} tool it was told to call; it {what}"
        )
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise UnparseableJudgeAnswerError(
            f"the judge's {tool!r} arguments are not valid JSON ({exc.msg}): {_excerpt(arguments)}"
        ) from None
    if not isinstance(parsed, dict):
        raise UnparseableJudgeAnswerError(
            f"the judge's {tool!r} arguments are not a JSON object: {_excerpt(arguments)}"
        )
    return parsed


# -- the template ----------------------------------------------------------------------------


def _scan(name: str, template: str) -> tuple[_Placeholder, ...]:
    """The placeholders of ``template``; a misspelt placeholder raises ``ValueError``."""
    found: dict[str, _Placeholder] = {}
    for match in _PLACEHOLDER.finditer(template):
        word, key = match.group(1), match.group(2)
        if word not in _KNOWN:
            close = difflib.get_close_matches(word, sorted(_KNOWN), n=1, cutoff=0.75)
            if close:
                suggestion = f"{{{close[0]}[{key}]}}" if key else f"{{{close[0]}}}"
                raise ValueError(
                    f"{name}: the prompt template uses the unknown placeholder "
                    f"{match.group(0)}; did you mean {suggestion}? Placeholders: "
                    "{eval_input}, {eval_output}, {expected_output}, {eval_metadata[key]}, "
                    "{description}."
                )
            continue  # braces that are not a placeholder stay as written
        if key is not None and word not in _KEYED:
            raise ValueError(
                f"{name}: the placeholder {match.group(0)} takes no [key]; write "
                f"{{{word}}}. Keys go with eval_input, eval_output and eval_metadata."
            )
        found.setdefault(match.group(0), _Placeholder(text=match.group(0), name=word, key=key))
    return tuple(found.values())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value, spaced=True)


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(text[:_EXCERPT] + ("..." if len(text) > _EXCERPT else ""))


def _check_choices(name: str, choice_scores: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(choice_scores, Mapping) or not choice_scores:
        raise ValueError(
            f"{name}: choice_scores must be a non-empty mapping of choice to score, such as "
            '{"A": 1.0, "B": 0.0}'
        )
    checked: dict[str, float] = {}
    for choice, score in choice_scores.items():
        if not isinstance(choice, str) or not choice.strip():
            raise ValueError(f"{name}: choice {choice!r} must be a non-empty string")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
            or not 0 <= score <= 1
        ):
            raise ValueError(
                f"{name}: choice_scores[{choice!r}] = {score!r}; each score must be a number "
                "from 0 to 1"
            )
        checked[choice] = float(score)
    return checked
