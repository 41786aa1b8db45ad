"""The result of one evaluator applied to one evaluable."""

from __future__ import annotations

import math
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from evaltrace._safe_text import exception_message, type_name
from evaltrace.constants import DEFAULT_THRESHOLD
from evaltrace.errors import EvaltraceError
from evaltrace.evals.evaluable import redacted_text, saved_value

__all__ = ["Evaluation", "EvaluationError", "EvaluationStatus"]

EvaluationStatus = Literal["scored", "labelled", "skipped", "errored"]
"""What an evaluation holds: a score, only a label, nothing (skipped), or an error."""


class EvaluationError(BaseModel):
    """Why an evaluation has no score: the evaluator (or the run) failed."""

    model_config = ConfigDict(frozen=True)

    type: str
    """The exception type name, e.g. ``"TimeoutError"``."""
    message: str
    """The exception message (its secrets redacted), or a description of the invalid
    result."""
    where: str | None = None
    """What failed: ``"evaluator"``, ``"runnable"``, ``"judge"``, ...; ``None`` when unknown."""

    @classmethod
    def from_exception(cls, exc: BaseException, where: str | None = None) -> EvaluationError:
        """Describe ``exc``; never raises, even when its ``__str__`` does.

        Example:
            >>> EvaluationError.from_exception(TimeoutError(), where="judge").message
            'TimeoutError()'
        """
        message = exception_message(exc)
        if not isinstance(exc, EvaltraceError):  # the app's text may quote its secrets
            message = redacted_text(message)
        return cls(type=type_name(exc), message=message, where=where)


class Evaluation(BaseModel):
    """The result of one evaluator on one evaluable.

    A scored evaluation has a finite ``score`` in ``[0, 1]``, and may carry a ``label`` beside
    it. A labelled one has only a ``label`` (a string result, such as ``"positive"``): like a
    skipped one it is neither a pass nor a failure, and the reports count how often each label
    was given. An errored one (``error`` set) and a skipped one (``skipped=True``, the evaluator
    declined to score) have neither: they never count as passing and are never averaged as a 0.

    Example:
        >>> Evaluation(score=0.8, reasoning="mostly right").status
        'scored'
        >>> Evaluation(label="positive").status
        'labelled'
    """

    model_config = ConfigDict(frozen=True)

    score: float | None = None
    """The score in ``[0, 1]``; ``None`` exactly when the evaluation errored, was skipped, or
    gave only a label."""
    reasoning: str = ""
    """Why this score (or why it errored or was skipped); secrets in it (a ``Bearer`` token,
    a URL's password) are redacted as in ``wrap`` values."""
    details: dict[str, Any] | SerializeAsAny[BaseModel] = Field(default_factory=dict)
    """Evaluator-specific data: a dict, or a pydantic model. A dict is encoded as JSON data
    when the evaluation is made, as ``wrap`` values are (numpy numbers and arrays become
    numbers and lists, other objects their text, secret-like keys are redacted), so that
    every way of saving it gives the same data and none can fail."""
    error: EvaluationError | None = None
    """Set when the evaluator failed, raised, timed out or returned something invalid."""
    skipped: bool = False
    """Set when the evaluator declined to score this evaluable (neither a pass nor a failure)."""
    evaluator: str | None = None
    """The display name of the evaluator that produced this result."""
    label: str | None = Field(default=None, min_length=1)
    """A string result (a class, a verdict, a category), beside the score or instead of it;
    never set on an errored or skipped evaluation."""

    @field_validator("reasoning")
    @classmethod
    def _redact_reasoning(cls, reasoning: str) -> str:
        if not reasoning:
            return reasoning
        saved = saved_value(reasoning)
        return saved if isinstance(saved, str) else redacted_text(reasoning)

    @field_validator("details", mode="before")
    @classmethod
    def _encode_details(cls, details: Any) -> Any:
        if isinstance(details, BaseModel):
            try:
                details.model_dump_json()
            except (PydanticSerializationError, ValueError, TypeError):
                return saved_value(details)  # a model holding what JSON cannot
            return details
        if isinstance(details, dict) and details:
            return saved_value(details)
        return details

    @model_validator(mode="after")
    def _check_score(self) -> Self:
        if self.error is not None or self.skipped:
            if self.score is not None:
                raise ValueError("an errored or skipped Evaluation must have score=None")
            if self.label is not None:
                raise ValueError("an errored or skipped Evaluation carries no label")
            if self.error is not None and self.skipped:
                raise ValueError("an Evaluation cannot be both errored and skipped")
            return self
        if self.score is None:
            if self.label is not None:
                return self
            raise ValueError(
                "a score or a label is required unless the evaluation errored or was skipped"
            )
        if isinstance(self.score, bool) or not math.isfinite(self.score):
            raise ValueError(f"score must be a finite number in [0, 1], got {self.score!r}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must be in [0, 1], got {self.score!r}")
        return self

    @property
    def status(self) -> EvaluationStatus:
        """``"scored"``, ``"labelled"`` (a label and no score), ``"skipped"`` or ``"errored"``."""
        if self.error is not None:
            return "errored"
        if self.skipped:
            return "skipped"
        return "labelled" if self.score is None else "scored"

    @property
    def counts_toward_pass(self) -> bool:
        """Whether pass criteria judge this evaluation: it has a score or an error.

        A skipped or a label-only evaluation is neither a pass nor a failure: it is left out.
        """
        return self.score is not None or self.error is not None

    def passed(self, threshold: float = DEFAULT_THRESHOLD) -> bool:
        """Whether this is a scored evaluation with ``score >= threshold``."""
        return self.error is None and self.score is not None and self.score >= threshold

    @classmethod
    def errored(
        cls,
        error: BaseException | EvaluationError,
        *,
        where: str | None = None,
        evaluator: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Evaluation:
        """Build an errored evaluation from an exception or an :class:`EvaluationError`."""
        err = (
            error
            if isinstance(error, EvaluationError)
            else EvaluationError.from_exception(error, where=where)
        )
        return cls(
            score=None,
            reasoning=f"{err.type}: {err.message}",
            error=err,
            evaluator=evaluator,
            details=details or {},
        )

    @classmethod
    def skip(
        cls,
        reasoning: str,
        *,
        evaluator: str | None = None,
        details: dict[str, Any] | BaseModel | None = None,
    ) -> Evaluation:
        """Build a skipped evaluation: the evaluator declined to score (neither pass nor fail).

        Example:
            >>> Evaluation.skip("no expectation to compare with", details={"field": "x"}).status
            'skipped'
        """
        return cls(
            score=None,
            reasoning=reasoning,
            skipped=True,
            evaluator=evaluator,
            details=details if details is not None else {},
        )

    def with_evaluator(self, name: str) -> Evaluation:
        """Return a copy naming ``name`` as the evaluator (kept if already set)."""
        if self.evaluator is not None:
            return self
        return self.model_copy(update={"evaluator": name})
