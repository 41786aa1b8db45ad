"""Third-party instrumentors that ``init(instrument=[...])`` enables on evaltrace's provider.

Each name maps to the instrumentors that can serve it, in order of preference; the first one
installed is used. For ``"openai"``, OpenInference's comes first: it records the messages on
the span by default (the OpenTelemetry GenAI one records them only when told to by two
variables, see :data:`INSTRUMENTORS`), and its spans are the ones Arize Phoenix shows best.
Both are read by :func:`evaltrace.last_llm_call` into the same ``LLMSpan`` fields.

Example:
    >>> sorted(INSTRUMENTORS)
    ['openai']
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk.trace import TracerProvider

from evaltrace._safe_text import exception_text, safe_repr
from evaltrace.errors import ConfigurationError

__all__ = [
    "INSTRUMENTORS",
    "Instrumentor",
    "check_instrument",
    "enable_instrumentors",
    "find_instrumentors",
]

logger = logging.getLogger("evaltrace")


@dataclass(kw_only=True, frozen=True)
class Instrumentor:
    """Where to find one instrumentor and how to install it."""

    module: str
    """The module that defines it, e.g. ``openinference.instrumentation.openai``."""
    class_name: str
    """Its class, an OpenTelemetry ``BaseInstrumentor``."""
    package: str
    """The distribution that ships it, for ``pip install``."""
    advice: Callable[[Mapping[str, str]], str | None] | None = None
    """Given the environment, what to set for its spans to carry what evaluators read
    (``None`` when nothing is missing)."""


_GENAI_OPT_IN: Final = "gen_ai_latest_experimental"
_GENAI_SPAN_CONTENT: Final = frozenset({"span_only", "span_and_event"})


def _genai_advice(env: Mapping[str, str]) -> str | None:
    opt_in = {item.strip() for item in env.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")}
    content = env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
    if _GENAI_OPT_IN in opt_in and content in _GENAI_SPAN_CONTENT:
        return None
    return (
        "its spans carry no prompt or completion messages unless "
        f"OTEL_SEMCONV_STABILITY_OPT_IN={_GENAI_OPT_IN} and "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only are set before init() "
        "(with the older 'true', messages go to log records, not spans)"
    )


INSTRUMENTORS: MutableMapping[str, tuple[Instrumentor, ...]] = {
    "openai": (
        Instrumentor(
            module="openinference.instrumentation.openai",
            class_name="OpenAIInstrumentor",
            package="openinference-instrumentation-openai",
        ),
        Instrumentor(
            module="opentelemetry.instrumentation.openai_v2",
            class_name="OpenAIInstrumentor",
            package="opentelemetry-instrumentation-openai-v2",
            advice=_genai_advice,
        ),
    ),
}
"""Instrumentor choices by the name given to ``init(instrument=[...])``, preferred first.

Add an entry to make another name available."""


def check_instrument(names: object) -> tuple[str, ...]:
    """Check the ``instrument`` option of ``init``.

    Raises:
        ConfigurationError: It is not a list of known names.
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ConfigurationError(
            f"instrument expects a list of library names, e.g. instrument=['openai']; got "
            f"{safe_repr(names)}"
        )
    for name in names:
        if name not in INSTRUMENTORS:
            known = ", ".join(repr(known) for known in sorted(INSTRUMENTORS))
            raise ConfigurationError(
                f"instrument names a library evaltrace has no instrumentor for: {safe_repr(name)}; "
                f"known: {known}"
            )
    return tuple(names)


def find_instrumentors(names: Sequence[str]) -> list[tuple[Instrumentor, Any]]:
    """The first installed instrumentor of each name, made but not yet instrumenting.

    Args:
        names: Names checked by :func:`check_instrument`.

    Raises:
        ConfigurationError: No instrumentor of a name can be imported; the message says why
            for each and which package to install.
    """
    return [_load(name) for name in names]


def enable_instrumentors(
    found: Sequence[tuple[Instrumentor, Any]], provider: TracerProvider, env: Mapping[str, str]
) -> list[Any]:
    """Make each instrumentor of :func:`find_instrumentors` send its spans to ``provider``.

    An instrumentor that is instrumenting already (on whichever provider) is left as it is.

    Args:
        found: What :func:`find_instrumentors` returned.
        provider: The tracer provider the instrumentors' spans go to.
        env: The environment, for the instrumentors' advice.

    Returns:
        The instrumentors this call enabled (to uninstrument on shutdown).

    Raises:
        ConfigurationError: An instrumentor could not instrument (its library is missing).
    """
    enabled = []
    for choice, instrumentor in found:
        if instrumentor.is_instrumented_by_opentelemetry:
            continue
        instrumentor.instrument(tracer_provider=provider)
        if not instrumentor.is_instrumented_by_opentelemetry:
            raise ConfigurationError(
                f"{choice.package} did not instrument; is the library it instruments "
                "installed? (the log above says why)"
            )
        advice = choice.advice(env) if choice.advice is not None else None
        if advice is not None:
            logger.warning("evaltrace: %s is enabled, but %s", choice.package, advice)
        logger.info("evaltrace: %s is enabled on evaltrace's tracer provider", choice.package)
        enabled.append(instrumentor)
    return enabled


def _load(name: str) -> tuple[Instrumentor, Any]:
    problems = []
    for choice in INSTRUMENTORS[name]:
        try:
            module = importlib.import_module(choice.module)
        except ImportError as exc:
            problems.append(f"{choice.package} ({exception_text(exc)})")
            continue
        return choice, getattr(module, choice.class_name)()
    install = INSTRUMENTORS[name][0].package
    raise ConfigurationError(
        f"init(instrument=[{name!r}]) found no {name} instrumentor installed: "
        + "; ".join(problems)
        + f". Install one, e.g. pip install {install}"
    )
