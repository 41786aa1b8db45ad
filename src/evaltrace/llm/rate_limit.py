"""``RateLimiter``: keep judge calls under a provider's requests and tokens limits.

A judge that calls a model API is usually limited per second and per minute, in requests and
in tokens. One :class:`RateLimiter` shared by every judge call of a run keeps the run under
those limits: each call first waits for ``await limiter.acquire(tokens=n)`` (or enters
``async with limiter.limit(tokens=n):``). This is what the judges' ``rate_limiter=`` argument
is for; until a judge takes one, wrap its model calls in the limiter yourself.
Concurrency caps are a different thing: use :class:`anyio.CapacityLimiter` for those.

Accounting is a sliding window per limit (1 second and 60 seconds): a call is admitted when,
for every configured limit, what was admitted in the last window plus the call's own amount
fits the limit, or when that window is empty. The empty-window rule lets a single call that
is larger than a limit through on its own instead of waiting forever; it then holds the
others back until it leaves the window. Waiting calls are served first come, first served,
so a large call is not starved by a stream of small ones, and a waiting call sleeps (never
blocking the event loop's thread) exactly until the entry that blocks it leaves its window.

Example:
    >>> import anyio
    >>> limiter = RateLimiter(requests_per_second=5, tokens_per_minute=40_000)
    >>> async def judge_call() -> None:
    ...     async with limiter.limit(tokens=1_200):
    ...         ...  # call the model
    >>> anyio.run(judge_call)
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["RateLimiter", "RateLimiting"]


@runtime_checkable
class RateLimiting(Protocol):
    """What judges wait for before each call: a :class:`RateLimiter`, or one shared elsewhere.

    Anything with ``async acquire(tokens)`` that returns once the call may go ahead; the Ray
    executor gives its workers one whose windows live in a single Ray actor, so that every
    worker of a run shares one set of limits.
    """

    async def acquire(self, tokens: int = 1) -> None:
        """Wait until a call of ``tokens`` tokens may go ahead, and count it."""
        ...


@dataclass(kw_only=True)
class _Window:
    """What was admitted under one limit during the last ``length`` seconds."""

    argument: str
    """The argument that configured this limit, for messages."""
    length: float
    """The window's length in seconds."""
    limit: float
    """The most that may be admitted in any window."""
    counts_tokens: bool
    """Whether an admission counts its tokens (else it counts 1)."""
    entries: deque[tuple[float, int]] = field(default_factory=deque)
    """``(admitted at, amount)``, oldest first."""
    used: int = 0
    """The sum of the amounts in :attr:`entries`."""

    def expire(self, now: float) -> None:
        while self.entries and self.entries[0][0] + self.length <= now:
            _, amount = self.entries.popleft()
            self.used -= amount

    def wait_for(self, amount: int, now: float) -> float:
        """Seconds until ``amount`` is admissible (0 if it is now); assumes :meth:`expire`."""
        used = self.used
        if used == 0 or used + amount <= self.limit:
            return 0.0
        # Entries leave oldest first; at worst the call waits for the window to empty.
        leaves_at = now
        for admitted_at, entry_amount in self.entries:
            used -= entry_amount
            leaves_at = admitted_at + self.length
            if used == 0 or used + amount <= self.limit:
                break
        return leaves_at - now


class RateLimiter:
    """Admits calls within requests and tokens limits per second and per minute.

    Give at least one limit. Requests count 1 per call; tokens count the ``tokens`` a call
    declares. A call is admitted when each configured window has room for it, or is empty, so a
    single call larger than a limit is admitted alone rather than never (and a limit below 1
    admits one call per window). Waiting calls are served in arrival order and sleep until
    they fit, without blocking the event loop.

    Use one limiter per event loop; it is not thread-safe.

    Args:
        requests_per_second: Most calls admitted in any 1-second window.
        requests_per_minute: Most calls admitted in any 60-second window.
        tokens_per_second: Most tokens admitted in any 1-second window.
        tokens_per_minute: Most tokens admitted in any 60-second window.
        clock: Monotonic clock in seconds; replace it (with ``sleep``) to test without waiting.
        sleep: Async sleep taking seconds, used to wait for room in a window.

    Raises:
        ValueError: No limit is given, or a limit is not a positive finite number.

    Example:
        >>> limiter = RateLimiter(requests_per_minute=500, tokens_per_minute=30_000)
        >>> async def judge(prompt: str) -> None:
        ...     await limiter.acquire(tokens=len(prompt) // 4 + 500)
        ...     ...  # call the model
    """

    def __init__(
        self,
        *,
        requests_per_second: float | None = None,
        requests_per_minute: float | None = None,
        tokens_per_second: float | None = None,
        tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
    ) -> None:
        limits = [
            ("requests_per_second", requests_per_second, 1.0, False),
            ("requests_per_minute", requests_per_minute, 60.0, False),
            ("tokens_per_second", tokens_per_second, 1.0, True),
            ("tokens_per_minute", tokens_per_minute, 60.0, True),
        ]
        self._windows: list[_Window] = []
        for name, limit, length, counts_tokens in limits:
            if limit is None:
                continue
            if (
                isinstance(limit, bool)
                or not isinstance(limit, int | float)
                or not math.isfinite(limit)
                or limit <= 0
            ):
                raise ValueError(
                    f"RateLimiter({name}={limit!r}): expected a positive finite number of "
                    f"{'tokens' if counts_tokens else 'requests'}, or None for no such limit"
                )
            self._windows.append(
                _Window(argument=name, length=length, limit=limit, counts_tokens=counts_tokens)
            )
        if not self._windows:
            raise ValueError(
                "RateLimiter() needs at least one limit: requests_per_second, "
                "requests_per_minute, tokens_per_second or tokens_per_minute"
            )
        self._clock = clock
        self._sleep = sleep
        self._lock = anyio.Lock()

    def __repr__(self) -> str:
        limits = ", ".join(f"{w.argument}={w.limit!r}" for w in self._windows)
        return f"RateLimiter({limits})"

    @property
    def limits(self) -> dict[str, float]:
        """The limits configured, by argument: ``RateLimiter(**limiter.limits)`` is a copy.

        Example:
            >>> RateLimiter(requests_per_minute=500).limits
            {'requests_per_minute': 500}
        """
        return {window.argument: window.limit for window in self._windows}

    async def acquire(self, tokens: int = 1) -> None:
        """Wait until a call of ``tokens`` tokens fits every limit, then count it.

        Callers are admitted in the order they called. The wait is an async sleep until the
        entry blocking the call leaves its window; the event loop keeps running meanwhile.

        Args:
            tokens: The tokens the call uses (prompt plus expected completion); counts only
                towards the tokens limits.

        Raises:
            ValueError: ``tokens`` is not an integer of at least 1.
        """
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise ValueError(
                f"RateLimiter.acquire(tokens={tokens!r}): expected an integer of at least 1"
            )
        async with self._lock:
            while True:
                now = self._clock()
                wait = 0.0
                for window in self._windows:
                    window.expire(now)
                    wait = max(wait, window.wait_for(tokens if window.counts_tokens else 1, now))
                if wait <= 0:
                    break
                await self._sleep(wait)
            for window in self._windows:
                amount = tokens if window.counts_tokens else 1
                window.entries.append((now, amount))
                window.used += amount

    @asynccontextmanager
    async def limit(self, *, tokens: int = 1) -> AsyncIterator[None]:
        """Wait for room as :meth:`acquire` does, then run the block.

        The call counts from the moment it is admitted; leaving the block releases nothing,
        since the limits are on calls started per window, not on calls in flight.

        Args:
            tokens: The tokens the call uses; see :meth:`acquire`.

        Example:
            >>> async def judge_call(limiter: RateLimiter) -> None:
            ...     async with limiter.limit(tokens=800):
            ...         ...  # call the model
        """
        await self.acquire(tokens)
        yield
