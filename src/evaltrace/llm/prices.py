"""What model calls cost, from a price table the user gives: :class:`PriceTable`.

evaltrace holds no prices of its own (they change, and differ by contract): a run is given
a table (``--prices prices.yaml``, the ``EVALTRACE_PRICES`` variable, or ``prices=`` in the
API), and without one its tokens are shown and its cost is unknown, never zero. A table
prices each model per million tokens of input, output and cached input::

    models:
      gpt-4o-mini:
        input: 0.15      # per million prompt tokens
        output: 0.60     # per million completion tokens
        cached: 0.075    # per million prompt tokens read from the provider's cache

A model's price applies to the model of that name, and to the dated versions a provider
answers with (``gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``); the longest name that
matches wins. Without ``cached``, cached tokens cost what other input tokens cost.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Final, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, computed_field

from evaltrace.errors import MissingPriceError, PriceFileError

__all__ = [
    "PRICES_VARIABLE",
    "Cost",
    "ModelPrice",
    "PriceTable",
    "TokenCounts",
    "current_prices",
    "load_prices",
    "resolve_prices",
    "using_prices",
]

PRICES_VARIABLE: Final = "EVALTRACE_PRICES"
"""The environment variable naming the price file a run uses when it is given none."""

_PER: Final = 1_000_000
"""Prices are per million tokens."""

_FIELDS: Final = ("input", "output", "cached")
_EXAMPLE: Final = "models:\n  gpt-4o-mini:\n    input: 0.15\n    output: 0.60\n    cached: 0.075"


class TokenCounts(Protocol):
    """Token counts of one model's calls.

    The app's :class:`~evaltrace.llm.calls.ModelUsage`, the judges'
    :class:`~evaltrace.llm.usage.JudgeUsage`.
    """

    @property
    def input_tokens(self) -> int:
        """Prompt tokens, the cached ones included."""

    @property
    def output_tokens(self) -> int:
        """Completion tokens."""

    @property
    def cached_tokens(self) -> int:
        """Of the prompt tokens, those read from the provider's cache."""


class ModelPrice(BaseModel):
    """What one model's tokens cost, per million.

    Example:
        >>> ModelPrice(input=0.15, output=0.6).cost(input_tokens=2_000_000, output_tokens=0)
        0.3
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, allow_inf_nan=False)
    """Price of a million prompt tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Price of a million completion tokens."""
    cached: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Price of a million prompt tokens read from the provider's cache; ``None``: as
    :attr:`input`."""

    def cost(self, *, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """What the tokens cost (``cached_tokens`` are part of ``input_tokens``)."""
        cached = min(cached_tokens, input_tokens)
        cached_price = self.input if self.cached is None else self.cached
        return (
            (input_tokens - cached) * self.input
            + cached * cached_price
            + output_tokens * self.output
        ) / _PER


class Cost(BaseModel):
    """What a set of model calls cost, model by model, or why that is unknown.

    Example:
        >>> table = PriceTable(models={"m": ModelPrice(input=1.0, output=2.0)})
        >>> from evaltrace.llm.calls import ModelUsage
        >>> table.cost({"m": ModelUsage(calls=1, input_tokens=1000, output_tokens=500)}).total
        0.002
    """

    model_config = ConfigDict(frozen=True)

    by_model: dict[str, float] = Field(default_factory=dict)
    """The cost of each model whose calls are priced."""
    unpriced: list[str] = Field(default_factory=list)
    """Models called that the table has no price for."""
    untracked: list[str] = Field(default_factory=list)
    """Models some of whose calls recorded no token count."""

    @property
    def known(self) -> bool:
        """Whether every call is priced (then :attr:`total` is the whole cost)."""
        return not self.unpriced and not self.untracked

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> float | None:
        """The whole cost; ``None`` (unknown) when some call could not be priced.

        Saved in the JSON too, for readers of ``result.json`` without evaltrace.
        """
        return float(sum(self.by_model.values())) if self.known else None

    def why_unknown(self) -> str | None:
        """Why :attr:`total` is unknown, in words; ``None`` when it is known."""
        reasons = []
        if self.unpriced:
            reasons.append(f"no price for {', '.join(self.unpriced)}")
        if self.untracked:
            reasons.append(f"calls without token counts to {', '.join(self.untracked)}")
        return "; ".join(reasons) or None


class PriceTable(BaseModel):
    """Prices of models, per million tokens (see the module documentation).

    Example:
        >>> table = PriceTable(models={"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)})
        >>> table.price_of("gpt-4o-mini-2024-07-18") is table.models["gpt-4o-mini"]
        True
    """

    model_config = ConfigDict(frozen=True)

    models: dict[str, ModelPrice] = Field(default_factory=dict)
    """Each model's price, by name."""
    currency: str = "USD"
    """The currency of the prices (shown next to costs)."""
    source: str | None = None
    """The file the table was read from, if any."""

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of ``model``: its own, else the longest name it is a version of."""
        found = self.models.get(model)
        if found is not None:
            return found
        best = None
        for name, price in self.models.items():
            if model.startswith(name + "-") and (best is None or len(name) > len(best[0])):
                best = (name, price)
        return best[1] if best is not None else None

    def cost(self, usage: Mapping[str, TokenCounts]) -> Cost:
        """What the calls of ``usage`` (by model) cost."""
        by_model: dict[str, float] = {}
        unpriced: list[str] = []
        untracked: list[str] = []
        for model, counts in usage.items():
            if getattr(counts, "calls_without_tokens", 0):
                untracked.append(model)
            price = self.price_of(model)
            if price is None:
                unpriced.append(model)
                continue
            by_model[model] = price.cost(
                input_tokens=counts.input_tokens,
                output_tokens=counts.output_tokens,
                cached_tokens=counts.cached_tokens,
            )
        return Cost(by_model=by_model, unpriced=unpriced, untracked=untracked)

    def total(self, usage: Mapping[str, TokenCounts]) -> float | None:
        """What the calls of ``usage`` cost in all; ``None`` when that is unknown."""
        return self.cost(usage).total

    def format(self, amount: float | None) -> str:
        """``amount`` with the table's currency; ``"unknown"`` for ``None``.

        Example:
            >>> PriceTable().format(0.0123456)
            '$0.01235'
        """
        if amount is None:
            return "unknown"
        shown = f"{amount:.4g}" if amount < 1 else f"{amount:,.2f}"
        if "e" in shown:
            shown = f"{amount:.6f}"
        return f"${shown}" if self.currency == "USD" else f"{shown} {self.currency}"


def load_prices(path: str | os.PathLike[str]) -> PriceTable:
    """Read a price file (YAML or JSON; see the module documentation).

    Raises:
        PriceFileError: The file cannot be read, or is not a price table; the message names
            the file, the line, the model and the field, and shows what is expected.
    """
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceFileError(
            f"cannot read the price file {where}: {exc}; give the path of a YAML file like\n"
            f"{_EXAMPLE}"
        ) from None
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise PriceFileError(f"{where}{line}: not YAML ({exc.__class__.__name__})") from None
    if not isinstance(document, yaml.MappingNode):
        raise PriceFileError(
            f"{where}: a price file is a mapping with 'models'; found "
            f"{_kind(document)}. Write it like\n{_EXAMPLE}"
        )
    currency = "USD"
    models_node: yaml.Node | None = None
    for key, value in document.value:
        name = key.value
        if name == "models":
            models_node = value
        elif name == "currency":
            if not (isinstance(value, yaml.ScalarNode) and value.value.strip()):
                raise PriceFileError(
                    f"{where}, line {_line(value)}: 'currency' is a currency's code "
                    f"(USD, EUR); found {_kind(value)}"
                )
            currency = value.value.strip()
        else:
            raise PriceFileError(
                f"{where}, line {_line(key)}: unknown key {name!r}; a price file has "
                "'models' (and optionally 'currency')"
            )
    if not isinstance(models_node, yaml.MappingNode):
        found = "nothing" if models_node is None else _kind(models_node)
        raise PriceFileError(
            f"{where}: 'models' must map each model's name to its prices; found {found}. "
            f"Write it like\n{_EXAMPLE}"
        )
    models: dict[str, ModelPrice] = {}
    for key, value in models_node.value:
        models[str(key.value)] = _model_price(where, str(key.value), key, value)
    return PriceTable(models=models, currency=currency, source=str(where))


def _model_price(where: Path, model: str, key: yaml.Node, node: yaml.Node) -> ModelPrice:
    if not isinstance(node, yaml.MappingNode):
        raise PriceFileError(
            f"{where}, line {_line(key)}, model {model!r}: expected its prices "
            f"(input, output, cached per million tokens); found {_kind(node)}"
        )
    prices: dict[str, float] = {}
    for field, value in node.value:
        name = field.value
        if name not in _FIELDS:
            raise PriceFileError(
                f"{where}, line {_line(field)}, model {model!r}: unknown field {name!r}; "
                "a model's prices are 'input', 'output' and 'cached' (per million tokens)"
            )
        number = _number(value)
        if number is None:
            raise PriceFileError(
                f"{where}, line {_line(value)}, model {model!r}, field {name!r}: expected "
                f"a price per million tokens (a number >= 0), found {_kind(value)}; "
                f"write e.g. '{name}: 0.15'"
            )
        prices[name] = number
    for required in ("input", "output"):
        if required not in prices:
            raise PriceFileError(
                f"{where}, line {_line(key)}, model {model!r}: field {required!r} is missing; "
                f"give its price per million tokens (e.g. '{required}: 0.15')"
            )
    return ModelPrice(**prices)


def _number(node: yaml.Node) -> float | None:
    if not isinstance(node, yaml.ScalarNode) or node.style is not None:
        return None  # a quoted scalar is a string, not a price
    try:
        number = float(node.value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _kind(node: yaml.Node | None) -> str:
    if isinstance(node, yaml.ScalarNode):
        return f"{node.value!r}" if node.value else "an empty value"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    return "an empty file"


def resolve_prices(
    prices: PriceTable | str | os.PathLike[str] | None,
    environ: Mapping[str, str] | None = None,
) -> PriceTable | None:
    """The price table a run uses: the one given, else ``EVALTRACE_PRICES``'s, else none.

    Args:
        prices: A table, or the path of a price file; ``None`` for the variable's.
        environ: The environment read (``os.environ`` by default).

    Raises:
        PriceFileError: The file given (or named by the variable) is not a price table.
    """
    if isinstance(prices, PriceTable):
        return prices
    if prices is not None:
        return load_prices(prices)
    named = (os.environ if environ is None else environ).get(PRICES_VARIABLE, "").strip()
    if not named:
        return None
    try:
        return load_prices(named)
    except PriceFileError as exc:
        raise PriceFileError(f"{exc} (named by {PRICES_VARIABLE})") from None


_CURRENT: ContextVar[PriceTable | None] = ContextVar("evaltrace_prices", default=None)


@contextmanager
def using_prices(prices: PriceTable | None) -> Iterator[None]:
    """Make ``prices`` the table the checks of the block price calls with (``max-cost``)."""
    token = _CURRENT.set(prices)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_prices() -> PriceTable:
    """The price table of the run being scored.

    Raises:
        MissingPriceError: The run was given none.
    """
    table = _CURRENT.get()
    if table is None:
        raise MissingPriceError(
            "no price table: give the run one with --prices prices.yaml, the "
            f"{PRICES_VARIABLE} variable, or prices= in the API"
        )
    return table
