"""Forwarding what arrives to the collector behind: :class:`Forwarder`.

Every accepted request is queued as it arrived (its protobuf encoding), with the evaluation
spans scoring adds; a few senders (:data:`SENDERS`) send what is queued, each merging queued
requests into one up to the batch size (the protobuf encodings of two
``ExportTraceServiceRequest`` messages, joined, are the encoding of one message holding both:
no decoding needed). A request the collector
refuses for a while (429, 5xx, unreachable, timed out) is sent again with exponential backoff
(a ``Retry-After`` it gives is honoured) until the retry period ends, then dropped and
counted; one it rejects (another 4xx) is dropped and counted at once.

The queue is bounded in bytes; when it is full, intake answers 503 with ``Retry-After``, so
exporters send again later, and nothing the gateway accepted is lost silently.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import random
import ssl
import time
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Final, Literal

import aiohttp

from evaltrace.capture.exporters import OTLPSettings
from evaltrace.serve.metrics import Metrics
from evaltrace.serve.otlp import PROTOBUF

__all__ = ["Forwarder", "Kind"]

logger = logging.getLogger("evaltrace.serve")

Kind = Literal["app", "evaluation"]
"""What a queued batch holds: the apps' spans, or the evaluation spans scoring made."""

SENDERS: Final = 2
"""Forward requests in flight at once: a request that arrives while one is sent goes out
without waiting for its answer (bench/bench_serve.py: the added p99 latency at half load)."""
_FIRST_BACKOFF: Final = 0.25
_MAX_BACKOFF: Final = 10.0


@dataclass(slots=True)
class _Queued:
    body: bytes
    spans: int
    kind: Kind


class Forwarder:
    """Sends queued export requests to the forward target, retrying, within bounds.

    Args:
        target: The collector's traces URL and how to reach it.
        metrics: Where forwarded, retried and dropped spans are counted.
        max_bytes: Most bytes queued.
        batch_bytes: Most bytes in one request.
        retry_seconds: How long a failing request is retried before it is dropped.
    """

    def __init__(
        self,
        target: OTLPSettings,
        metrics: Metrics,
        *,
        max_bytes: int,
        batch_bytes: int,
        retry_seconds: float,
    ) -> None:
        self.target = target
        self.metrics = metrics
        self.max_bytes = max_bytes
        self.batch_bytes = batch_bytes
        self.retry_seconds = retry_seconds
        self.queued_bytes = 0
        """Bytes waiting (not counting the batch being sent)."""
        self.sending_bytes = 0
        """Bytes of the batches being sent."""
        self.healthy = True
        """Whether the last forward succeeded (``/readyz`` says so)."""
        self._queue: deque[_Queued] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def full(self, adding: int = 0) -> bool:
        """Whether ``adding`` more bytes would pass the bound (intake then answers 503)."""
        return self.queued_bytes + self.sending_bytes + adding > self.max_bytes

    def offer(self, body: bytes, spans: int, kind: Kind = "app") -> None:
        """Queue one request's encoding (never waits; the caller checked :meth:`full`)."""
        if self._closing:
            self.metrics.spans_dropped.add(spans, "shutdown")
            return
        self._queue.append(_Queued(body, spans, kind))
        self.queued_bytes += len(body)
        self._wake.set()

    def start(self) -> None:
        """Open the client and start the sender (in the running event loop)."""
        target = self.target
        timeout = aiohttp.ClientTimeout(total=target.timeout_seconds)
        connector = aiohttp.TCPConnector(ssl=_ssl_context(target), limit=SENDERS)
        headers = {**target.headers, "Content-Type": PROTOBUF}
        if target.compression != "none":
            headers["Content-Encoding"] = target.compression
        self._session = aiohttp.ClientSession(
            timeout=timeout, connector=connector, headers=headers, auto_decompress=True
        )
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run()) for _ in range(SENDERS)]

    async def close(self, deadline: float) -> None:
        """Send what is queued until ``deadline`` (monotonic); drop and count the rest."""
        self._closing = True
        self._wake.set()
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=max(0.0, deadline - time.monotonic()))
            for task in late:
                task.cancel()
            # cancelled here, at the deadline: what each held is counted as it stops
            await asyncio.gather(*late, return_exceptions=True)
        while self._queue:
            item = self._queue.popleft()
            self.metrics.spans_dropped.add(item.spans, "shutdown")
        self.queued_bytes = 0
        if self._session is not None:
            await self._session.close()

    async def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch, size = self._take()
            try:
                await self._send(batch)
            except asyncio.CancelledError:  # the drain deadline: what is in flight is lost
                for item in batch:
                    self.metrics.spans_dropped.add(item.spans, "shutdown")
                raise
            finally:
                self.sending_bytes -= size

    def _take(self) -> tuple[list[_Queued], int]:
        """The next batch and its size: queued requests of one kind, merged up to the limit."""
        first = self._queue.popleft()
        batch, size = [first], len(first.body)
        while self._queue and self._queue[0].kind == first.kind:
            following = len(self._queue[0].body)
            if size + following > self.batch_bytes:
                break
            batch.append(self._queue.popleft())
            size += following
        self.queued_bytes -= size
        self.sending_bytes += size
        return batch, size

    async def _send(self, batch: list[_Queued]) -> None:
        spans = sum(item.spans for item in batch)
        body = b"".join(item.body for item in batch)
        if self.target.compression == "gzip":
            body = gzip.compress(body, compresslevel=5)
        elif self.target.compression == "deflate":
            body = zlib.compress(body)
        give_up = time.monotonic() + self.retry_seconds
        backoff = _FIRST_BACKOFF
        attempt = 0
        while True:
            attempt += 1
            failure, retry_after = await self._post(body)
            if failure is None:
                self.healthy = True
                self.metrics.spans_forwarded.add(spans, batch[0].kind)
                return
            if retry_after is None and failure.startswith("rejected"):
                self.metrics.spans_dropped.add(spans, "forward_rejected")
                logger.warning(
                    "forward: the collector %s %d spans; dropped",
                    failure,
                    spans,
                    extra={"event": "forward_rejected", "spans": spans},
                )
                return
            self.healthy = False
            wait = retry_after if retry_after is not None else backoff * random.uniform(0.5, 1.5)
            now = time.monotonic()
            if now + wait > give_up:
                self.metrics.spans_dropped.add(spans, "forward_failed")
                logger.warning(
                    "forward: %s; gave up after %d attempts, %d spans dropped",
                    failure,
                    attempt,
                    spans,
                    extra={"event": "forward_failed", "spans": spans, "attempts": attempt},
                )
                return
            if attempt == 1:
                logger.warning(
                    "forward: %s; retrying for up to %g s",
                    failure,
                    self.retry_seconds,
                    extra={"event": "forward_retrying"},
                )
            self.metrics.forward_retries.add()
            await asyncio.sleep(wait)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _post(self, body: bytes) -> tuple[str | None, float | None]:
        """Send once: ``(None, None)`` on success, else what failed and any ``Retry-After``."""
        assert self._session is not None
        try:
            async with self._session.post(self.target.endpoint, data=body) as response:
                await response.read()
                status = response.status
                if 200 <= status < 300:
                    return None, None
                retry_after = _retry_after(response.headers.get("Retry-After"))
                if status == 429 or status >= 500:
                    return f"the collector answered {status}", retry_after or None
                return f"rejected ({status})", None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return f"the collector cannot be reached ({type(exc).__name__}: {exc})", None


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: the backoff applies
    return min(max(seconds, 0.0), _MAX_BACKOFF * 3)


def _ssl_context(target: OTLPSettings) -> ssl.SSLContext | bool:
    if not target.endpoint.startswith("https://"):
        return False
    context = ssl.create_default_context(cafile=target.certificate_file)
    if target.client_certificate_file is not None:
        context.load_cert_chain(target.client_certificate_file, target.client_key_file)
    return context
