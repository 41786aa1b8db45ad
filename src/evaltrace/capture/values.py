"""The record a ``wrap(value, purpose=..., name=...)`` call leaves in its run's registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:  # pydantic is heavy to import; the capture path does not need it
    from pydantic import JsonValue

__all__ = ["Purpose", "WrapRecord"]

Purpose: TypeAlias = Literal["input", "output", "state"]


@dataclass(kw_only=True, frozen=True, slots=True)
class WrapRecord:
    """One named value recorded by ``wrap`` during a run."""

    name: str
    """The name given to ``wrap``."""
    purpose: Purpose
    """``"input"``, ``"output"`` or ``"state"``."""
    value: JsonValue
    """The value as JSON-compatible data (secret-like keys redacted, never truncated)."""
    description: str | None = None
    """The optional description given to ``wrap``."""
    many: bool = False
    """Whether the name collects several values into a list (``wrap(..., many=True)``)."""
    span_id: int | None = None
    """The span that was current when the value was recorded, if any."""
    trace_id: int | None = None
    """The trace of that span, if any."""
    timestamp_ns: int = 0
    """When the value was recorded (``time.time_ns()``)."""
