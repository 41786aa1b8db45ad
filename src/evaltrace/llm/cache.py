"""The judge cache: complete, successful judge responses kept in one SQLite file.

Running a suite again after changing one evaluator should pay only for that evaluator's
judge calls. :class:`JudgeCache` keeps every complete, successful judge response in an
embedded database (the standard library's ``sqlite3``, in WAL mode: one file, readers never
wait for writers, and several processes can share it), keyed by :func:`request_key`: a hash
of the endpoint, the API, the full request (model, messages, tools, response format,
sampling parameters) and the sample the call is (:mod:`evaltrace.llm.samples`), so the
k-th sample of a repeated judge is a key of its own and ``n`` samples stay ``n`` samples.

The cache never fails a run: a file that cannot be opened, is not a database, or was written
by a newer evaltrace is bypassed with one warning on the ``evaltrace`` logger (the judges are
asked as without a cache); a read or write that fails is skipped the same way. It is bounded:
past ``max_bytes`` of stored responses, those used longest ago are evicted; with a ``ttl``,
responses older than that are not used.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import math
import os
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from evaltrace.constants import JUDGE_CACHE_FILE, JUDGE_CACHE_MAX_BYTES
from evaltrace.errors import ConfigurationError
from evaltrace.llm.samples import JudgeSample

__all__ = [
    "CachedReply",
    "JudgeCache",
    "JudgeCacheStats",
    "default_judge_cache_path",
    "flush_judge_caches",
    "request_key",
    "shared_judge_cache",
]

logger = logging.getLogger("evaltrace")

_FORMAT: Final = 1
"""The version of the file's tables (``PRAGMA user_version``) and of the key's payload."""
_BUSY_SECONDS: Final = 10.0
"""How long one statement waits for another process's write before it is skipped."""
_TOUCH_EVERY: Final = 60.0
"""A hit rewrites its response's last-use time only when that is older than this (seconds):
most hits stay reads, and eviction still sees the order of use to the minute."""
_WRITER_IDLE_SECONDS: Final = 5.0
"""How long the writer thread waits for more writes before it ends (a new one starts when
needed), so that a cache no longer used holds no thread."""
_WRITE_EVERY: Final = 0.25
"""The writer commits what has gathered this often (seconds), not at every response."""
_WRITE_BATCH: Final = 256
"""A write handed over while this many are pending wakes the writer at once (bounds memory)."""
_EVICT_TO: Final = 0.9
"""Eviction frees space down to this share of ``max_bytes``, so it does not run per write."""
_ROW_OVERHEAD: Final = 96
"""Bytes counted per stored response beyond its key and body (the other columns, the index)."""

_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY,
        api TEXT NOT NULL,
        model TEXT NOT NULL,
        body TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        size INTEGER NOT NULL,
        created REAL NOT NULL,
        used REAL NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS responses_used ON responses (used)",
    "CREATE INDEX IF NOT EXISTS responses_created ON responses (created)",
    """CREATE TABLE IF NOT EXISTS totals (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        bytes INTEGER NOT NULL,
        entries INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO totals (id, bytes, entries) VALUES (1, 0, 0)",
    # The totals are kept by the database itself, in the transaction of each change, so that
    # processes sharing the file never disagree on them.
    """CREATE TRIGGER IF NOT EXISTS responses_added AFTER INSERT ON responses BEGIN
        UPDATE totals SET bytes = bytes + new.size, entries = entries + 1 WHERE id = 1;
    END""",
    """CREATE TRIGGER IF NOT EXISTS responses_removed AFTER DELETE ON responses BEGIN
        UPDATE totals SET bytes = bytes - old.size, entries = entries - 1 WHERE id = 1;
    END""",
    f"PRAGMA user_version = {_FORMAT}",
)


@dataclass(kw_only=True, frozen=True, slots=True)
class CachedReply:
    """One stored judge response."""

    api: str
    """The API that answered: ``"chat.completions"``, ``"responses"``, ``"embeddings"`` or
    ``"moderations"``."""
    model: str
    """The model the request named."""
    body: str
    """The response, as the JSON the API returned."""
    input_tokens: int = 0
    """The prompt tokens the response cost when it was asked."""
    output_tokens: int = 0
    """The completion tokens it cost."""
    cached_tokens: int = 0
    """Of its prompt tokens, those the provider had in its prompt cache."""


@dataclass(kw_only=True, frozen=True)
class JudgeCacheStats:
    """What a judge cache file holds (``evaltrace cache stats``).

    Example:
        >>> JudgeCacheStats(path=Path("c.sqlite3"), entries=0, bytes=0, max_bytes=1,
        ...                 ttl=None, file_bytes=0).entries
        0
    """

    path: Path
    """The cache file."""
    entries: int
    """Stored responses."""
    bytes: int
    """Their size, as counted against :attr:`max_bytes`."""
    max_bytes: int
    """The size limit."""
    ttl: float | None
    """Seconds a response is used for after it was stored; ``None``: no limit."""
    file_bytes: int
    """The size of the file on disk (with its write-ahead log)."""
    oldest: datetime | None = None
    """When the oldest stored response was stored."""
    newest: datetime | None = None
    """When the newest one was stored."""
    models: Mapping[str, tuple[int, int]] | None = None
    """Per model: stored responses, and the input and output tokens they cost together."""
    problem: str | None = None
    """Why the file cannot be used, when it cannot."""


def default_judge_cache_path() -> Path:
    """The judge cache file used when no other is configured.

    In evaltrace's folder of the user's cache directory: ``$XDG_CACHE_HOME`` (else
    ``~/.cache``) on Linux, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows.

    Example:
        >>> default_judge_cache_path().name
        'judge-cache.sqlite3'
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "evaltrace" / JUDGE_CACHE_FILE


def request_key(
    *, endpoint: str, api: str, request: Mapping[str, Any], sample: JudgeSample
) -> str | None:
    """The cache key of one judge request: SHA-256 of its canonical JSON.

    Args:
        endpoint: Where the request goes (the client's base URL).
        api: The API it calls (``"chat.completions"``, ...).
        request: The request's arguments (model, messages, tools, sampling parameters...).
        sample: Which sample of the judge the call is (its epoch and repetition index).

    Returns:
        The key (64 hex digits), or ``None`` when the request holds a value that is not
        JSON data (such a request is never cached).

    Example:
        >>> one = request_key(endpoint="http://h/v1", api="embeddings",
        ...                   request={"model": "m", "input": "hi"}, sample=JudgeSample())
        >>> two = request_key(endpoint="http://h/v1", api="embeddings",
        ...                   request={"model": "m", "input": "hi"}, sample=JudgeSample(path=(1,)))
        >>> len(one), one == two
        (64, False)
    """
    payload = {
        "format": _FORMAT,
        "endpoint": endpoint,
        "api": api,
        "request": request,
        "epoch": sample.epoch,
        "sample": list(sample.path),
    }
    try:
        text = json.dumps(
            payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Unusable(Exception):
    """The cache file cannot be used at all (not one of ours, or a newer format)."""


class JudgeCache:
    """Complete, successful judge responses kept in one SQLite file, shared by processes.

    Give one to :func:`~evaltrace.judges.configure_judge` (``cache=JudgeCache(...)``) to
    choose its file and limits; ``cache=True`` uses the default file with the default
    limits. Nothing is opened until the first judge call; each process opens its own
    connections.

    Reads are made on the caller's thread. Writes (new responses, and the last-use times of
    hits) are handed to a writer thread of the cache, which commits what has gathered in
    one transaction: a judge call never waits for a disk write. A response handed over is
    read back from memory until it is committed; :meth:`flush` waits for the writes, and
    they are flushed when the process exits.

    Args:
        path: The database file; :func:`default_judge_cache_path` when ``None``. Its folder is
            created when needed.
        max_bytes: Past this many bytes of stored responses, those used longest ago are
            evicted.
        ttl: Seconds a stored response is used for; ``None`` for no limit.

    Raises:
        ConfigurationError: ``max_bytes`` or ``ttl`` is not a positive number.

    Example:
        >>> import tempfile
        >>> cache = JudgeCache(Path(tempfile.mkdtemp()) / "judges.sqlite3", ttl=86400)
        >>> cache.put("k", CachedReply(api="embeddings", model="m", body="{}"))
        >>> cache.get("k").model
        'm'
        >>> cache.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_bytes: int = JUDGE_CACHE_MAX_BYTES,
        ttl: float | None = None,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ConfigurationError(
                f"JudgeCache(max_bytes=...) must be a whole number of bytes >= 1, such as "
                f"{JUDGE_CACHE_MAX_BYTES}, got {max_bytes!r}"
            )
        if ttl is not None and (
            isinstance(ttl, bool)
            or not isinstance(ttl, int | float)
            or not math.isfinite(ttl)
            or ttl <= 0
        ):
            raise ConfigurationError(
                f"JudgeCache(ttl=...) must be a positive number of seconds (such as 86400 for "
                f"a day) or None, got {ttl!r}"
            )
        self.path = Path(path).expanduser() if path is not None else default_judge_cache_path()
        """The database file."""
        self.max_bytes = max_bytes
        """The size limit of the stored responses, in bytes."""
        self.ttl = None if ttl is None else float(ttl)
        """Seconds a stored response is used for (``None``: no limit)."""
        self._problem: str | None = None
        self._warned: set[str] = set()
        self._started()
        _CACHES.add(self)

    def _started(self) -> None:
        """The state of this process: no connection yet, nothing pending, no writer."""
        self._pid = os.getpid()
        self._read_lock = threading.Lock()
        self._reads: sqlite3.Connection | None = None
        self._write_lock = threading.Lock()
        self._writes: sqlite3.Connection | None = None
        self._pending_lock = threading.Lock()
        self._pending: dict[str, CachedReply] = {}
        self._touched: dict[str, float] = {}
        self._wake = threading.Event()
        self._writer: threading.Thread | None = None
        self._problem = None

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r}, max_bytes={self.max_bytes}, ttl={self.ttl})"

    def __reduce__(self) -> tuple[Any, tuple[str, int, float | None]]:
        # Sent to another process (a Ray worker) as its file and limits: there it is that
        # process's one cache of the file, with connections of its own.
        return _shared_in_process, (str(self.path), self.max_bytes, self.ttl)

    @property
    def problem(self) -> str | None:
        """Why the file is bypassed, once it is; ``None`` while it is in use."""
        return self._problem

    # -- use -------------------------------------------------------------------------------

    def get(self, key: str) -> CachedReply | None:
        """The response stored under ``key``, if there is one still in date.

        Never raises: a file that cannot be read is bypassed (``None``), with a warning.
        """
        self._check_process()
        with self._pending_lock:
            pending = self._pending.get(key)
        if pending is not None:
            return pending
        with self._read_lock:
            connection = self._reads = self._open(self._reads)
            if connection is None:
                return None
            try:
                row = connection.execute(
                    "SELECT api, model, body, input_tokens, output_tokens, cached_tokens, "
                    "created, used FROM responses WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.Error as exc:
                self._failed("read", exc)
                return None
        if row is None:
            return None
        now = time.time()
        if self.ttl is not None and now - row[6] > self.ttl:
            return None
        if now - row[7] > _TOUCH_EVERY:
            with self._pending_lock:
                self._touched[key] = now
            self._wake_writer()
        return CachedReply(
            api=row[0],
            model=row[1],
            body=row[2],
            input_tokens=row[3],
            output_tokens=row[4],
            cached_tokens=row[5],
        )

    def put(self, key: str, reply: CachedReply) -> None:
        """Store ``reply`` under ``key`` (a key stored already keeps its first response).

        The write is committed by the cache's writer thread, which evicts the responses used
        longest ago when the stored ones pass ``max_bytes``; until then :meth:`get` reads it
        from memory. Never raises: a write that fails is dropped, with a warning.
        """
        self._check_process()
        with self._read_lock:  # a file that cannot be used takes nothing, even for a moment
            self._reads = self._open(self._reads)
        if self._problem is not None:
            return
        with self._pending_lock:
            self._pending.setdefault(key, reply)
        self._wake_writer()

    def flush(self) -> None:
        """Commit every write handed to the cache so far (never raises)."""
        self._check_process()
        self._write_pending()

    # -- the writer ------------------------------------------------------------------------

    def _wake_writer(self) -> None:
        # Bench: bench_judge_cache.py "empty cache vs off" (1.06-1.12x with each write
        # committed on the judge call's own thread, every response its own transaction;
        # waking the writer at every response still cost the judge calls thread switches):
        # the writer commits every _WRITE_EVERY seconds, or at once past _WRITE_BATCH.
        with self._pending_lock:
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_forever, name="evaltrace-judge-cache", daemon=True
                )
                self._writer.start()
            full = len(self._pending) + len(self._touched) >= _WRITE_BATCH
        if full:
            self._wake.set()

    def _write_forever(self) -> None:
        """Commit what is handed over, every little while; end after a while with nothing."""
        idle = 0.0
        while True:
            self._wake.wait(_WRITE_EVERY)
            self._wake.clear()
            with self._pending_lock:
                waiting = bool(self._pending or self._touched)
                if not waiting and idle >= _WRITER_IDLE_SECONDS:
                    # A put either sees no writer (and starts one), or this one sees its write.
                    self._writer = None
                    return
            if waiting:
                self._write_pending()
                idle = 0.0
            else:
                idle += _WRITE_EVERY

    def _write_pending(self) -> None:
        """Commit the responses and last-use times handed over so far, in one transaction."""
        with self._write_lock:
            with self._pending_lock:
                batch = list(self._pending.items())
                touched = list(self._touched.items())
                self._touched.clear()
            if not batch and not touched:
                return
            connection = self._writes = self._open(self._writes)
            if connection is not None:
                try:
                    self._commit(connection, batch, touched)
                except sqlite3.Error as exc:
                    self._failed("write", exc)
            with self._pending_lock:
                for key, reply in batch:
                    if self._pending.get(key) is reply:
                        del self._pending[key]

    def _commit(
        self,
        connection: sqlite3.Connection,
        batch: list[tuple[str, CachedReply]],
        touched: list[tuple[str, float]],
    ) -> None:
        now = time.time()
        rows = [
            (
                key,
                reply.api,
                reply.model,
                reply.body,
                reply.input_tokens,
                reply.output_tokens,
                reply.cached_tokens,
                len(key) + len(reply.body.encode("utf-8")) + len(reply.model) + _ROW_OVERHEAD,
                now,
                now,
            )
            for key, reply in batch
        ]
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.executemany(
                "INSERT OR IGNORE INTO responses (key, api, model, body, input_tokens, "
                "output_tokens, cached_tokens, size, created, used) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            connection.executemany(
                "UPDATE responses SET used = ? WHERE key = ?",
                [(when, key) for key, when in touched],
            )
            self._evict(connection, now)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _evict(self, connection: sqlite3.Connection, now: float) -> None:
        stored = connection.execute("SELECT bytes FROM totals WHERE id = 1").fetchone()[0]
        if stored <= self.max_bytes:
            return
        if self.ttl is not None:  # the expired go first
            connection.execute("DELETE FROM responses WHERE created < ?", (now - self.ttl,))
            stored = connection.execute("SELECT bytes FROM totals WHERE id = 1").fetchone()[0]
        excess = stored - int(self.max_bytes * _EVICT_TO)
        doomed: list[tuple[str]] = []
        for key, size in connection.execute("SELECT key, size FROM responses ORDER BY used"):
            if excess <= 0:
                break
            doomed.append((key,))
            excess -= size
        connection.executemany("DELETE FROM responses WHERE key = ?", doomed)

    # -- management ------------------------------------------------------------------------

    def stats(self) -> JudgeCacheStats:
        """What the file holds; a file that cannot be used gives its problem, not an error."""
        self.flush()
        file_bytes = sum(
            part.stat().st_size
            for part in (self.path, _sidecar(self.path, "-wal"))
            if part.is_file()
        )
        empty = JudgeCacheStats(
            path=self.path,
            entries=0,
            bytes=0,
            max_bytes=self.max_bytes,
            ttl=self.ttl,
            file_bytes=file_bytes,
        )
        if not self.path.exists():
            return empty
        with self._read_lock:
            connection = self._reads = self._open(self._reads, warn=False)
            if connection is None:
                return JudgeCacheStats(**{**vars(empty), "problem": self._problem})
            try:
                stored, entries = connection.execute(
                    "SELECT bytes, entries FROM totals WHERE id = 1"
                ).fetchone()
                oldest, newest = connection.execute(
                    "SELECT MIN(created), MAX(created) FROM responses"
                ).fetchone()
                models = {
                    model: (count, tokens)
                    for model, count, tokens in connection.execute(
                        "SELECT model, COUNT(*), SUM(input_tokens + output_tokens) "
                        "FROM responses GROUP BY model ORDER BY model"
                    )
                }
            except sqlite3.Error as exc:
                return JudgeCacheStats(**{**vars(empty), "problem": _describe(exc)})
        return JudgeCacheStats(
            path=self.path,
            entries=entries,
            bytes=stored,
            max_bytes=self.max_bytes,
            ttl=self.ttl,
            file_bytes=file_bytes,
            oldest=_when(oldest),
            newest=_when(newest),
            models=models,
        )

    def clear(self) -> int:
        """Remove every stored response; a file that is not a usable cache is deleted.

        Returns:
            How many responses were removed (0 for a deleted unusable file).

        Raises:
            OSError: The file cannot be deleted or written.
        """
        self.flush()
        if not self.path.exists():
            return 0
        with self._write_lock, self._read_lock:
            connection = self._writes = self._open(self._writes, warn=False)
            if connection is None:
                self._close()
                for suffix in ("", "-wal", "-shm"):
                    _sidecar(self.path, suffix).unlink(missing_ok=True)
                self._problem = None
                return 0
            try:
                removed = connection.execute("SELECT entries FROM totals WHERE id = 1").fetchone()[
                    0
                ]
                connection.execute("DELETE FROM responses")
                connection.execute("VACUUM")
            except sqlite3.Error as exc:
                raise OSError(f"cannot clear the judge cache {self.path}: {exc}") from exc
        return int(removed)

    def close(self) -> None:
        """Commit the pending writes and close this process's connections.

        The next use opens them again.
        """
        self.flush()
        with self._write_lock, self._read_lock:
            self._close()

    # -- connections -----------------------------------------------------------------------

    def _check_process(self) -> None:
        # Connections, locks and the writer inherited through fork() are the parent's: the
        # child starts afresh (what the parent had pending, the parent writes).
        if self._pid != os.getpid():
            self._started()

    def _open(
        self, connection: sqlite3.Connection | None, *, warn: bool = True
    ) -> sqlite3.Connection | None:
        """``connection`` if open, else a new one (the tables made on first use)."""
        if self._problem is not None:
            return None
        if connection is not None:
            return connection
        opened: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            opened = sqlite3.connect(
                self.path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
            opened.execute("PRAGMA journal_mode = WAL")
            opened.execute("PRAGMA synchronous = NORMAL")
            self._prepare(opened)
        except (sqlite3.Error, OSError, _Unusable) as exc:
            if opened is not None:
                opened.close()
            self._problem = _describe(exc)
            if warn:
                self._warn(
                    "open",
                    f"evaltrace: the judge cache {self.path} cannot be used ({self._problem}); "
                    "judges are asked without it. `evaltrace cache clear` starts it afresh, "
                    "or `--no-judge-cache` (EVALTRACE_JUDGE_CACHE=off) turns it off",
                )
            return None
        return opened

    def _prepare(self, connection: sqlite3.Connection) -> None:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version == _FORMAT:
            return
        if version > _FORMAT:
            raise _Unusable(f"it was written by a newer evaltrace (format {version})")
        connection.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                row[0]
                for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if tables - {"responses", "totals"}:
                raise _Unusable("it is an SQLite database of something else")
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _close(self) -> None:
        """Close both connections (the caller holds both locks, or owns the cache alone)."""
        for connection in (self._reads, self._writes):
            if connection is not None:
                connection.close()
        self._reads = self._writes = None
        self._problem = None

    def _failed(self, what: str, exc: sqlite3.Error) -> None:
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            # The file went bad under us (corrupted, replaced): stop using it in this process.
            self._problem = _describe(exc)
        self._warn(
            what,
            f"evaltrace: a {what} of the judge cache {self.path} failed ({_describe(exc)}); "
            f"the judge was asked without it",
        )

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning("%s", message)


_CACHES: weakref.WeakSet[JudgeCache] = weakref.WeakSet()
"""Every cache of this process, so that their writes are committed when it exits."""


@atexit.register
def flush_judge_caches() -> None:
    """Commit the pending writes of every judge cache of this process (never raises).

    Called when a run's entries are scored, so that a run leaves its judges' responses in the
    file when it returns (another process, or a worker that ends abruptly, finds them there),
    and when the process exits.

    Example:
        >>> flush_judge_caches()
    """
    for cache in list(_CACHES):
        cache.flush()


def _sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, _Unusable) else f"{type(exc).__name__}: {text}"


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, UTC)


_shared: dict[tuple[Path, int, float | None], JudgeCache] = {}
_shared_lock = threading.Lock()


def _shared_in_process(path: str, max_bytes: int, ttl: float | None) -> JudgeCache:
    return shared_judge_cache(path, max_bytes=max_bytes, ttl=ttl)


def shared_judge_cache(
    path: str | os.PathLike[str] | None = None,
    *,
    max_bytes: int = JUDGE_CACHE_MAX_BYTES,
    ttl: float | None = None,
) -> JudgeCache:
    """The process's one :class:`JudgeCache` for this file and these limits.

    The judge configuration resolves the cache on every judge call; this keeps one
    connection per file instead of opening one each time.

    Example:
        >>> shared_judge_cache("/tmp/j.sqlite3") is shared_judge_cache("/tmp/j.sqlite3")
        True
    """
    cache = JudgeCache(path, max_bytes=max_bytes, ttl=ttl)
    key = (cache.path.absolute(), cache.max_bytes, cache.ttl)
    with _shared_lock:
        return _shared.setdefault(key, cache)
