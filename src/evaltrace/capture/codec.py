"""The JSON-only codec that turns Python values into span attribute text.

Function arguments, return values and ``wrap(...)`` values can be anything, so the codec
accepts anything and never raises: values it knows (pydantic models, dataclasses, enums,
dates, bytes, numpy-like scalars and arrays, mappings, sequences, sets) become their natural
JSON shape; anything else becomes its ``repr``. Nothing here pickles, and :func:`decode` only
ever parses JSON.

Size limit. :meth:`Codec.encode` does work bounded by ``max_bytes``, not by the value: the walk
over a value keeps a running count of the JSON it has written and stops once past the limit (a
long string is cut, the rest of a long list, dict or set is not visited). A value that does not
fit becomes the truncation marker::

    {"__evaltrace_truncated__": true, "original_bytes": N, "original_bytes_exact": E,
     "preview": "..."}

whose ``preview`` is the start of the value's JSON text. When the walk saw the whole value,
``N`` is the exact UTF-8 size of that text and ``E`` is ``true``. When the walk stopped early,
``E`` is ``false`` and ``N`` is a lower bound: what was written plus at least one character
for each string character and two for each item left unwalked (escapes and multi-byte
characters not counted), so the value's JSON is at least ``N`` bytes. :func:`is_truncated`
recognises the marker either way.

Redaction. The value under a secret-like key (see :data:`DEFAULT_REDACT_KEYS`) is replaced by
:data:`REDACTED`, and so is the second item of a header pair such as
``("Authorization", "Bearer ...")`` and the ``value`` of a header object such as
``{"name": "Authorization", "value": "..."}``. In every string, the token after ``Bearer``
and the password of a URL (``postgresql://user:[REDACTED]@host/db``) are redacted too.

How. Most values are plain data (dicts with string keys, lists, strings, numbers, pydantic
models, dates) with nothing to redact. A quick scan checks that, counting the size as it goes
and stopping past the limit as the walk does (:func:`_native_room`), and pydantic_core then
writes the value as it is (each pydantic model replaced by its dump, taken once), several
times faster than building a converted copy first. Any other value is walked: the walk
converts it into a JSON-compatible copy (redacting, renaming keys, marking cycles, stopping
at the limit), which pydantic_core writes (``json`` when it refuses, as for lone
surrogates). pydantic_core is the writer only: it redacts nothing, and it would consume a
generator, write ``NaN``, refuse lone surrogates and write colliding keys twice, so what it
is given has always been checked or converted first. It is imported when the first value is
encoded, never by ``import evaltrace`` or an idle ``wrap``.

Keys. Mapping keys that are not strings become their text; when that text is already a key of
the mapping (``{1: "a", "1": "b"}``), the key is written as ``"1 (int)"`` (text and type name),
then ``"1 (int) #2"``, ``"1 (int) #3"``... until it is free, so no entry is lost and the names
do not depend on the order of the entries.

Example:
    >>> codec = Codec(max_bytes=1_000)
    >>> encoded = codec.encode({"question": "What is 2+2?", "openai_api_key": "sk-1"})
    >>> encoded.text
    '{"question":"What is 2+2?","openai_api_key":"[REDACTED]"}'
    >>> encoded.redacted
    True
"""

from __future__ import annotations

import binascii
import json
import logging
import math
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, ValuesView
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, NamedTuple
from uuid import UUID

from evaltrace._safe_text import exception_text, safe_repr, safe_str, type_name
from evaltrace.capture.conventions import MIME_JSON
from evaltrace.errors import ConfigurationError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "REDACTED",
    "Codec",
    "Encoded",
    "decode",
    "is_truncated",
    "json_text",
    "jsonable",
    "read_json",
]

_logger = logging.getLogger(__name__)

DEFAULT_REDACT_KEYS: frozenset[str] = frozenset(
    {
        "access_key",
        "access_keys",
        "api_key",
        "api_keys",
        "apikey",
        "apikeys",
        "auth",
        "authorization",
        "bearer",
        "client_secret",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "dsn",
        "jwt",
        "passphrase",
        "passwd",
        "password",
        "passwords",
        "private_key",
        "private_keys",
        "pwd",
        "secret",
        "secret_key",
        "secret_keys",
        "secrets",
        "session_id",
        "session_ids",
        "sessionid",
        "set-cookie",
        "token",
        "tokens",
        "x-api-key",
    }
)
"""Key names whose values are redacted unless the codec is given its own set.

A key matches a name when the key's last words are the name's words, ignoring case and
separators, so ``OpenAI-Api-Key``, ``refresh_token``, ``userSessionId`` and ``db_password``
match, while ``token_count`` and ``tokens_used`` do not. Under a name whose last word is a
plural noun (``tokens``, ``api_keys``, ``secrets``...), a number is a count, not a secret,
and is kept: ``{"max_tokens": 256}`` stays as it is, ``{"tokens": ["t-1"]}`` is redacted.
"""

REDACTED: Final = "[REDACTED]"
"""What a redacted value is replaced by."""

_CYCLE: Final = "<cycle>"
_MAX_DEPTH: Final = "<max depth>"
_TRUNCATED_KEY: Final = "__evaltrace_truncated__"
_BYTES_KEY: Final = "__bytes__"
# A marker with an empty preview and a 20-digit size takes 112 bytes.
_MIN_MAX_BYTES: Final = 128
# Ints below this magnitude always have fewer decimal digits than Python's default
# int-to-str limit (4300), so json can write them.
_INT_MAX: Final = 10**4000
_INT_MIN: Final = -_INT_MAX
_VERDICT_CACHE_SIZE: Final = 4096
_VERDICT_CACHE_KEY_LENGTH: Final = 100
_NO_LIMIT: Final = sys.maxsize

# Key verdicts: not secret, secret, secret unless the value is a number (a plural name).
_PLAIN: Final = 0
_SECRET: Final = 1
_PLURAL: Final = 2
_COUNT_NOUNS: Final = frozenset(
    {"apikeys", "cookies", "credentials", "ids", "keys", "passwords", "secrets", "tokens"}
)
# Header objects: {"name": "Authorization", "value": "..."} (HAR, Kubernetes env) or
# {"key": ..., "value": ...} (Postman).
_HEADER_LABELS: Final = ("name", "key")
_HEADER_VALUE: Final = "value"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")
# The patterns start with a literal so that re can search long text quickly; the letter
# before "earer" is checked by the replacement.
_BEARER_TAILS = (
    re.compile(r"earer(\s+)[A-Za-z0-9\-._~+/]+=*"),
    re.compile(r"EARER(\s+)[A-Za-z0-9\-._~+/]+=*"),
)
# Bounded repeats keep the search linear on hostile text.
_URL_PASSWORD = re.compile(r"://([^\s/?#@:]{0,256}):[^\s/?#@]{1,1024}@")
# name=value and name: value in free text (exception messages and tracebacks only: too slow
# for every value). The lookbehind and the bounded name keep it linear on long words.
_TEXT_PAIR = re.compile(
    r"(?<![A-Za-z0-9_\-])([A-Za-z_][A-Za-z0-9_\-]{0,63})([\"']?\s*[=:]\s*)"
    r"((?:(?:[Bb]earer|BEARER|[Bb]asic|BASIC)\s+)?(?:\"[^\"]*\"|'[^']*'|[^\s\"',;&)}\]]+))"
)
# Characters past a cut that are still scrubbed, so that a secret cut in half is recognised.
_SCRUB_MARGIN: Final = 1024
_REDACTED_SIZE: Final = len(REDACTED) + 2
# {"__bytes__":true,"base64":"","length":,"truncated":true} without the base64 and length.
_BYTES_OVERHEAD: Final = 57

_ASCII_WORD_CHARS: Final = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_JSON_TEXT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_encode_string: Final = json.encoder.encode_basestring  # JSON string literal, non-ASCII kept
_ASCII_JSON_TEXT = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)
_NONFINITE_NAMES: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}
_WARNED: set[tuple[str, str]] = set()
_WARNED_LIMIT: Final = 256

_PYDANTIC_CORE: ModuleType | None = None


def _core() -> ModuleType:
    """pydantic_core, imported when the first value is encoded or read.

    Not at import: it takes tens of milliseconds, and an app that records nothing (idle
    ``wrap``) never needs it.
    """
    global _PYDANTIC_CORE
    if _PYDANTIC_CORE is None:
        import pydantic_core

        _PYDANTIC_CORE = pydantic_core
    return _PYDANTIC_CORE


class Encoded(NamedTuple):
    """One value encoded as JSON text for a span attribute.

    A named tuple rather than a dataclass: one is built on every traced call, and a tuple is
    the cheapest immutable record to build.
    """

    text: str
    """The JSON text, or the truncation marker's JSON text when the value was too large."""
    mime_type: str
    """The media type of ``text``; always ``application/json``."""
    truncated: bool
    """Whether anything was cut: the whole value (a marker), a bytes preview or an array."""
    redacted: bool
    """Whether anything secret-like was replaced by :data:`REDACTED`."""
    original_bytes: int
    """The UTF-8 size of the value's JSON text; a lower bound when not ``original_bytes_exact``."""
    original_bytes_exact: bool = True
    """Whether the whole value was walked, so ``original_bytes`` is its exact size."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Codec:
    """Encoding policy. One instance is built by config at init; it is immutable.

    Example:
        >>> Codec(max_bytes=1_000).to_jsonable({"tokens_used": 12, "token": "t-1"})
        {'tokens_used': 12, 'token': '[REDACTED]'}

    Raises:
        ConfigurationError: When ``max_bytes`` is too small to hold a truncation marker or
            ``max_depth`` is below 1.
    """

    max_bytes: int = 1_000_000
    """Size limit of one encoded value, in UTF-8 bytes of the JSON text."""
    redact_keys: frozenset[str] = DEFAULT_REDACT_KEYS
    """Secret-like key names, matched on their trailing words, ignoring case and ``-``/``_``."""
    max_depth: int = 64
    """How many levels of nested containers are expanded; deeper ones become a marker."""
    _patterns: frozenset[tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _pattern_lengths: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _last_words: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _plain_ends: frozenset[str] = field(init=False, repr=False, compare=False)
    _verdicts: dict[str, int] = field(init=False, repr=False, compare=False, default_factory=dict)
    _plain_keys: set[str] = field(init=False, repr=False, compare=False, default_factory=set)
    _native_limit: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_bytes < _MIN_MAX_BYTES:
            raise ConfigurationError(
                f"Codec(max_bytes={self.max_bytes}) is too small: a truncated value is replaced "
                f"by a marker that needs up to {_MIN_MAX_BYTES} bytes; "
                f"pass max_bytes={_MIN_MAX_BYTES} or more"
            )
        if self.max_depth < 1:
            raise ConfigurationError(
                f"Codec(max_depth={self.max_depth}) must be at least 1 (the default is 64)"
            )
        patterns = frozenset(words for words in map(_key_words, self.redact_keys) if words)
        object.__setattr__(self, "_patterns", patterns)
        object.__setattr__(self, "_pattern_lengths", tuple(sorted({len(p) for p in patterns})))
        object.__setattr__(self, "_last_words", tuple(sorted({p[-1] for p in patterns})))
        # An ASCII letter or digit that ends no name: a key ending with one is not secret.
        last_letters = {p[-1][-1] for p in patterns}
        plain_ends = {c for c in _ASCII_WORD_CHARS if c.lower() not in last_letters}
        object.__setattr__(self, "_plain_ends", frozenset(plain_ends))
        object.__setattr__(self, "_native_limit", min(self.max_bytes, _NATIVE_ROOM))

    def to_jsonable(self, value: object) -> JsonValue:
        """Convert any value to JSON-compatible data, redacting secrets.

        Never raises: a value that cannot be converted becomes a descriptive string. The
        result is not size-limited (it is what in-memory captures keep for evaluation),
        except that bytes keep a base64 preview of at most ``max_bytes // 2`` bytes (with
        their full ``length``) and a numpy-like array with more than ``max_bytes // 2``
        elements becomes its summarising ``repr``. The result shares no container with
        ``value``: the app may change ``value`` afterwards.

        Args:
            value: Any Python value.

        Returns:
            Data made of ``dict`` (with ``str`` keys), ``list``, ``str``, ``int``, finite
            ``float``, ``bool`` and ``None``.

        Example:
            >>> Codec().to_jsonable({"when": date(2024, 5, 1), "scores": {0.5, 0.25}})
            {'when': '2024-05-01', 'scores': [0.25, 0.5]}
        """
        kind = type(value)
        if isinstance(value, str) and kind is str:
            return _scrub(value) if _may_hold_secret(value) else value
        if value is None or kind is bool or (kind is int and _INT_MIN < value < _INT_MAX):  # type: ignore[operator]
            return value  # type: ignore[return-value]
        models = _Models()
        try:
            native = _native_value(self, value, _NO_LIMIT, models)
            if native is not _NOT_NATIVE:
                return _core().to_jsonable_python(native)  # type: ignore[no-any-return]
        except Exception:  # a hostile key, say: the walk deals with it
            pass
        return _Walk(self, _NO_LIMIT, models).root(value)

    def encode(self, value: object) -> Encoded:
        """Encode any value as compact JSON text no larger than ``max_bytes``.

        Never raises, and stops walking ``value`` once past the limit. A value whose JSON is
        too large is replaced by the truncation marker described in this module's docstring;
        :func:`is_truncated` recognises it.

        Args:
            value: Any Python value.

        Returns:
            The JSON text and what happened on the way (truncation, redaction, size).

        Example:
            >>> Codec().encode({"question": "What is 2+2?", "k": 3}).text
            '{"question":"What is 2+2?","k":3}'
        """
        models = _Models()
        native = self._native_json(value, models)
        if native is not None:
            return self._written(native)
        return self._walked(value, models)

    def _written(self, native: bytes) -> Encoded:
        """What :meth:`encode` returns for JSON that pydantic_core wrote directly."""
        size = len(native)
        text = native.decode("utf-8")
        if size <= self.max_bytes:
            return Encoded(text, MIME_JSON, False, False, size)
        # Escapes took it past the limit: its whole text is at hand, its size exact.
        return Encoded(
            text=_truncation_marker(text, size, True, self.max_bytes),
            mime_type=MIME_JSON,
            truncated=True,
            redacted=False,
            original_bytes=size,
        )

    def _walked(self, value: object, models: _Models) -> Encoded:
        """What :meth:`encode` returns for a value the walk converts (bounded by the limit)."""
        walk = _Walk(self, self.max_bytes, models)
        data = walk.root(value)
        text, size = _json_text(data)
        exact = not walk.skipped
        if not exact:
            size = walk.size + walk.skipped
        elif size <= self.max_bytes:
            return Encoded(text, MIME_JSON, walk.clipped, walk.redacted, size)
        return Encoded(
            text=_truncation_marker(text, size, exact, self.max_bytes),
            mime_type=MIME_JSON,
            truncated=True,
            redacted=walk.redacted,
            original_bytes=size,
            original_bytes_exact=exact,
        )

    def encode_text(self, value: object) -> str:
        """The JSON text of :meth:`encode`, for callers that need nothing else.

        Example:
            >>> Codec().encode_text("Paris")
            '"Paris"'
        """
        if type(value) is str:
            if len(value) + 2 <= self.max_bytes and not (
                "earer" in value or "EARER" in value or ("://" in value and "@" in value)
            ):
                text = _encode_string(value)
                # Escapes can make the text longer than the string it was checked on.
                if len(text) <= self.max_bytes and text.isascii():
                    return text
            return self.encode(value).text
        # _native_json written out: this runs for the arguments of every traced call.
        models = _Models()
        try:
            if _native_room(self, value, 0, self._native_limit, models) >= 0:
                written: bytes = _core().to_json(
                    _with_dumps(value, models) if models.met else value
                )
                if len(written) <= self.max_bytes:
                    return written.decode("utf-8")
                return self._written(written).text
        except Exception:  # a hostile key or lone surrogates: the walk deals with them
            pass
        return self._walked(value, models).text

    def plain_keys(self, keys: Collection[str]) -> bool:
        """Whether the values under ``keys`` are written as they are, whatever they are.

        That is, no key is secret-like (nor a plural name such as ``max_tokens``, where the
        value decides) and none is the ``value`` of a header pair. A mapping whose keys are
        all plain can be written with :meth:`encode_plain_keyed`.

        Example:
            >>> Codec().plain_keys(["question", "k"]), Codec().plain_keys(["api_key"])
            (True, False)
        """
        return _HEADER_VALUE not in keys and all(
            type(key) is str and self._verdict(key) == _PLAIN for key in keys
        )

    def field_prefixes(self, names: Sequence[str]) -> tuple[str, ...] | None:
        """What :meth:`encode_fields` writes before each value of an object with these keys.

        ``None`` unless :meth:`plain_keys` accepts ``names`` (and there is at least one).

        Example:
            >>> Codec().field_prefixes(["question", "k"])
            ('{"question":', ',"k":')
        """
        if not names or not self.plain_keys(names):
            return None
        keys = [_encode_string(name) for name in names]
        return (f"{{{keys[0]}:", *(f",{key}:" for key in keys[1:]))

    def encode_fields(self, prefixes: tuple[str, ...], values: Sequence[Any]) -> str | None:
        """:meth:`encode_text` of the object of these keys and ``values``, written here.

        For ``prefixes`` from :meth:`field_prefixes`, and values that are ASCII strings with
        nothing to redact, integers, booleans or ``None``: the text pydantic_core would write
        for them, written without building the object (the recorded input of a decorated
        call: the captured ``@wrap`` figure of bench/README.md). ``None`` for any other value,
        or when the text is past the size under which the value is written as it is.

        Example:
            >>> codec = Codec()
            >>> codec.encode_fields(codec.field_prefixes(["question", "k"]), ("2+2?", 3))
            '{"question":"2+2?","k":3}'
        """
        parts: list[str] = []
        for prefix, item in zip(prefixes, values, strict=True):
            kind = type(item)
            if kind is str:
                if (
                    not item.isascii()
                    or "earer" in item
                    or "EARER" in item
                    or ("://" in item and "@" in item)
                ):
                    return None
                parts += (prefix, _encode_string(item))
            elif kind is int:
                if not _INT_MIN < item < _INT_MAX:
                    return None
                parts += (prefix, int.__repr__(item))
            elif item is None:
                parts += (prefix, "null")
            elif kind is bool:
                parts += (prefix, "true" if item else "false")
            else:
                return None
        parts.append("}")
        text = "".join(parts)
        # ASCII: its length is its size. At most the room that _native_room counts (a lower
        # bound of the size), the value is written as it is, as here.
        return text if len(text) <= self._native_limit else None

    def encode_plain_keyed(self, mapping: dict[str, Any]) -> str:
        """:meth:`encode_text` of a dict whose keys :meth:`plain_keys` accepted; the same text.

        The keys are not looked at again, and a mapping of leaves (strings, numbers,
        booleans, ``None``) is checked in one loop before pydantic_core writes it: the
        arguments of a decorated call, whose parameter names are checked once (the captured
        ``@wrap`` figure of bench/README.md). Anything else goes to :meth:`encode_text`.

        Example:
            >>> Codec().encode_plain_keyed({"question": "What is 2+2?", "k": 3})
            '{"question":"What is 2+2?","k":3}'
        """
        # The room counted as _native_items_room counts it, so that the same values are
        # written as they are.
        room = self._native_limit
        if 5 * len(mapping) > room:
            return self.encode_text(mapping)
        room -= 1
        for key, item in mapping.items():
            room -= len(key) + 4
            kind = type(item)
            if kind is str:
                room -= len(item) + 2
                if (
                    room < 0
                    or "earer" in item
                    or "EARER" in item
                    or ("://" in item and "@" in item)
                ):
                    return self.encode_text(mapping)
            elif kind is int:
                if not _INT_MIN < item < _INT_MAX:
                    return self.encode_text(mapping)
                room -= 1
            elif kind is float:
                if not _isfinite(item):
                    return self.encode_text(mapping)
                room -= 3
            elif item is None or kind is bool:
                room -= 4
            else:
                return self.encode_text(mapping)
        if room < 0:
            return self.encode_text(mapping)
        try:
            written: bytes = _core().to_json(mapping)
        except Exception:  # lone surrogates: the walk deals with them
            return self.encode_text(mapping)
        if len(written) <= self.max_bytes:
            return written.decode("utf-8")
        return self._written(written).text

    def encode_converted(self, data: JsonValue) -> str:
        """The JSON text of data that :meth:`to_jsonable` already produced.

        The walk over ``data`` is cheap (nothing left to convert) and bounded by the limit.

        Example:
            >>> codec = Codec()
            >>> codec.encode_converted(codec.to_jsonable({"when": date(2024, 5, 1)}))
            '{"when":"2024-05-01"}'
        """
        return self.encode_text(data)

    def redact_text(self, text: str) -> str:
        """Free text (an exception message, a traceback) with its secrets redacted.

        Besides the ``Bearer`` tokens and URL passwords redacted in every value, free text
        gets its ``name=value`` and ``name: value`` pairs redacted when the name is
        secret-like (``password=hunter2``, ``api_key: "sk-1"``). The text is cut to at most
        ``max_bytes`` UTF-8 bytes first.

        Args:
            text: The text to clean.

        Returns:
            The text, redacted and cut to the size limit.

        Example:
            >>> Codec().redact_text("login failed: password=hunter2 for postgresql://u:pw@db/x")
            'login failed: password=[REDACTED] for postgresql://u:[REDACTED]@db/x'
        """
        text = _cut_utf8(text, self.max_bytes)
        if "=" in text or ":" in text:
            text = self._redact_pairs(text)
        return _scrub(text) if _may_hold_secret(text) else text

    def _redact_pairs(self, text: str) -> str:
        parts: list[str] = []
        done = position = 0
        while (match := _TEXT_PAIR.search(text, position)) is not None:
            name, value = match.group(1), match.group(3)
            verdict = self._verdict(name)
            if verdict == _SECRET or (verdict == _PLURAL and not value.strip("\"'").isdigit()):
                parts += (text[done : match.start(3)], REDACTED)
                done = position = match.end()
            else:  # the value may itself start a pair: "failed: password=..."
                position = match.end(2)
        parts.append(text[done:])
        return "".join(parts)

    def _native_json(self, value: object, models: _Models) -> bytes | None:
        """``value``'s JSON written by pydantic_core when the walk would not change it.

        A value made only of what pydantic_core writes exactly as the walk would (see
        :func:`_native_room`), with nothing to redact, rename or mark, and whose JSON may
        fit the limit, is written as it is, without a converted copy built first.

        Returns:
            The UTF-8 JSON (possibly over ``max_bytes`` because of escapes), or ``None``
            when the walk must convert ``value``.
        """
        try:
            native = _native_value(self, value, self._native_limit, models)
            if native is _NOT_NATIVE:
                return None
            return _core().to_json(native)  # type: ignore[no-any-return]
        except Exception:  # a hostile key or lone surrogates: the walk deals with them
            return None

    def _learn_keys(self, mapping: dict[Any, Any]) -> bool:
        """Whether every key of ``mapping`` not yet known as plain keeps its value as it is.

        Plain keys (not secret-like) are remembered; a plural name with a count under it
        (``"max_tokens": 256``) keeps its value too, but is looked at again each time.
        """
        plain = self._plain_keys
        for key in mapping.keys() - plain:
            if type(key) is not str:
                return False
            verdict = self._verdict(key)
            if verdict == _PLAIN:
                if len(key) <= _VERDICT_CACHE_KEY_LENGTH:
                    if len(plain) >= _VERDICT_CACHE_SIZE:
                        plain.clear()
                    plain.add(key)
            elif verdict == _SECRET or not _is_count(mapping[key]):
                return False
        return True

    def _verdict(self, key: str) -> int:
        """Whether ``key`` names a secret: ``_PLAIN``, ``_SECRET`` or ``_PLURAL``."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            if key[-1:] in self._plain_ends:
                return _PLAIN
            verdict = self._classify(key)
            if len(key) <= _VERDICT_CACHE_KEY_LENGTH:
                if len(self._verdicts) >= _VERDICT_CACHE_SIZE:
                    self._verdicts.clear()
                self._verdicts[key] = verdict
        return verdict

    def _classify(self, key: str) -> int:
        lowered = key.lower()
        last = lowered[-1:]
        # A key whose last word is no name's last word matches nothing: most keys end here,
        # without being split into words.
        if ("a" <= last <= "z" or "0" <= last <= "9") and not lowered.endswith(self._last_words):
            return _PLAIN
        words = _key_words(key)
        verdict = _PLAIN
        for n in self._pattern_lengths:
            tail = words[-n:]
            if tail in self._patterns:
                if tail[-1] not in _COUNT_NOUNS:
                    return _SECRET
                verdict = _PLURAL
        return verdict


_DEFAULT_CODEC: Codec | None = None


def _default_codec() -> Codec:
    global _DEFAULT_CODEC
    if _DEFAULT_CODEC is None:
        _DEFAULT_CODEC = Codec()
    return _DEFAULT_CODEC


def json_text(value: object, *, spaced: bool = False) -> str:
    """The JSON text of any value, under the default policy; never raises.

    The one way to turn a value into JSON text for people or judges to read (reports,
    prompts, metadata): what JSON cannot show is converted as :class:`Codec` converts it
    (``repr`` as the last resort), secret-like keys and values are redacted with the
    default :data:`DEFAULT_REDACT_KEYS`, and a value over 1,000,000 bytes of JSON becomes
    the truncation marker. Use :meth:`Codec.encode_text` for another policy.

    Args:
        value: Any value.
        spaced: Write ``", "`` and ``": "`` between items, as ``json.dumps`` does by default
            (the text people write by hand, and compare model output with); compact otherwise.

    Example:
        >>> json_text({"question": "2+2?", "api_key": "sk-1", "asked": date(2024, 5, 1)})
        '{"question":"2+2?","api_key":"[REDACTED]","asked":"2024-05-01"}'
        >>> json_text({"city": "Paris"}, spaced=True)
        '{"city": "Paris"}'
    """
    codec = _default_codec()
    if not spaced:
        return codec.encode_text(value)
    data = codec.to_jsonable(value)
    try:
        return json.dumps(data, ensure_ascii=False)
    except ValueError:  # an int past the interpreter's digit limit: the compact path copes
        return codec.encode_text(value)


def jsonable(value: object) -> JsonValue:
    """Any value as JSON-compatible data, under the default policy; never raises.

    :func:`json_text` without the text: see :meth:`Codec.to_jsonable`.

    Example:
        >>> jsonable({"scores": (0.5, 1.0), "token": "t-1"})
        {'scores': [0.5, 1.0], 'token': '[REDACTED]'}
    """
    return _default_codec().to_jsonable(value)


def decode(text: str, mime_type: str | None = None) -> JsonValue:
    """Read a value back from span attribute text.

    Never raises: text that is not JSON is returned as it is.

    Args:
        text: The attribute text.
        mime_type: The attribute's media type, if recorded; ``text/plain`` text is returned
            unparsed.

    Returns:
        The parsed JSON value, or ``text`` itself.

    Example:
        >>> decode('{"k":3}')
        {'k': 3}
        >>> decode("not json")
        'not json'
    """
    if mime_type is not None and not mime_type.startswith(MIME_JSON):
        return text
    try:
        value: JsonValue = read_json(text)
    except (ValueError, RecursionError):
        return text
    return value


def read_json(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value, or the same exception; several times faster.

    pydantic_core's parser reads it first. Whatever that parser accepts, ``json.loads``
    reads to an equal value, and it refuses more (lone surrogates, a UTF-8 byte order mark,
    nesting deeper than 200 levels; a ``str`` holding a lone surrogate is a ``TypeError`` to
    it); what it refuses is read again by ``json.loads``, so bad JSON raises ``json.loads``'s
    exception, with its line and column.

    Example:
        >>> read_json(b'{"k":[1,2.5,null]}')
        {'k': [1, 2.5, None]}
    """
    try:
        return (_PYDANTIC_CORE or _core()).from_json(text)
    except (ValueError, TypeError):
        return json.loads(text)


def is_truncated(value: JsonValue) -> bool:
    """Whether a decoded value is the marker that replaced a value that was too large.

    Args:
        value: A value returned by :func:`decode`.

    Returns:
        ``True`` for the truncation marker object.

    Example:
        >>> is_truncated(decode(Codec(max_bytes=200).encode("x" * 500).text))
        True
    """
    return isinstance(value, dict) and value.get(_TRUNCATED_KEY) is True


# Values written as they are -------------------------------------------------------------

# Types that pydantic_core writes as text exactly as the walk converts them.
_NATIVE_TEXT_TYPES: Final = frozenset({datetime, date, time, UUID})
# The fewest bytes one of them takes in JSON: "08:05:00" with its quotes.
_NATIVE_TEXT_SIZE: Final = 10
# At most this many bytes of JSON are written straight by pydantic_core: past it, finding
# out late that a value does not fit would waste a scan as long as the walk's own work.
_NATIVE_ROOM: Final = 64 * 1024
_isfinite: Final = math.isfinite
_NOT_NATIVE: Final = object()
_NO_DUMP: Final[Any] = object()


def _native_room(codec: Codec, value: object, depth: int, room: int, models: _Models) -> int:
    """The room left once ``value`` is written as it is, or ``-1``.

    ``-1`` when the walk would change ``value`` (a secret to redact, a key that is not a
    plain string, a header pair, a cycle or the depth limit, a type that pydantic_core
    writes otherwise than the walk) or when its JSON cannot fit in ``room`` bytes. Sizes
    are counted as the walk counts them (a lower bound), so this stops, as the walk does,
    once past ``room``. A cycle ends at the depth limit.
    """
    kind = type(value)
    if kind is dict:
        if depth >= codec.max_depth:
            return -1
        return _native_items_room(codec, value, depth, room, models)  # type: ignore[arg-type]
    if kind is list or kind is tuple:
        if depth >= codec.max_depth:
            return -1
        return _native_each_room(codec, value, depth, room, models)  # type: ignore[arg-type]
    if kind is str:
        room -= len(value) + 2  # type: ignore[arg-type]
        if room < 0 or "earer" in value or "EARER" in value or ("://" in value and "@" in value):  # type: ignore[operator]
            return -1
        return room
    if kind is int:
        return room - 1 if _INT_MIN < value < _INT_MAX else -1  # type: ignore[operator]
    if kind is float:
        return room - 3 if math.isfinite(value) else -1  # type: ignore[arg-type]
    if value is None or kind is bool:
        return room - 4
    if kind in _NATIVE_TEXT_TYPES:
        return room - _NATIVE_TEXT_SIZE
    if depth >= codec.max_depth:
        return -1
    if isinstance(value, Enum):
        met = models.met
        room = _native_room(codec, value.value, depth, room, models)
        if models.met != met:
            models.holders.add(id(value))
        return room
    if _is_plain_model(kind):
        if not models.met:
            models.dumps = {}
            models.holders = set()
        models.met += 1
        # Dumped once, and the dump is what gets written: a second dump may differ (an
        # Iterable field is a generator that the first dump consumed).
        dumped = models.dumps.get(id(value), _NO_DUMP)
        if dumped is _NO_DUMP:
            try:
                dumped = models.dumps[id(value)] = value.model_dump(mode="json")  # type: ignore[attr-defined]
            except Exception:  # the walk falls back to the Python dump or the repr
                return -1
        return _native_room(codec, dumped, depth, room, models)
    return -1


def _native_items_room(
    codec: Codec, mapping: dict[Any, Any], depth: int, room: int, models: _Models
) -> int:
    if 5 * len(mapping) > room:  # each entry takes at least "":0 and a comma
        return -1
    if not codec._plain_keys.issuperset(mapping) and not codec._learn_keys(mapping):
        return -1
    if _HEADER_VALUE in mapping and _hidden_header_value(codec, mapping) is not None:
        return -1
    room -= 1
    depth += 1
    held = False
    for key, item in mapping.items():
        if type(key) is not str:  # a str subclass equal to a plain key: the walk renames it
            return -1
        room -= len(key) + 4  # quotes, colon and comma
        # Leaves, the bulk of most values, are checked here rather than in a call.
        kind = type(item)
        if kind is str:
            room -= len(item) + 2
            if room < 0 or "earer" in item or "EARER" in item or ("://" in item and "@" in item):
                return -1
        elif kind is int:
            if not _INT_MIN < item < _INT_MAX:
                return -1
            room -= 1
        elif kind is float:
            if not _isfinite(item):
                return -1
            room -= 3
        elif item is None or kind is bool:
            room -= 4
        else:
            met = models.met
            room = _native_room(codec, item, depth, room, models)
            if room < 0:
                return -1
            held = held or models.met != met
    if held:
        models.holders.add(id(mapping))
    return room


def _native_each_room(
    codec: Codec,
    items: list[Any] | tuple[Any, ...],
    depth: int,
    room: int,
    models: _Models,
) -> int:
    if 2 * len(items) > room:  # each item takes at least a character and a comma
        return -1
    if len(items) == 2 and _is_secret_pair(codec, items):
        return -1
    room -= 1
    depth += 1
    held = False
    for item in items:
        kind = type(item)
        if kind is str:
            room -= len(item) + 3  # quotes and comma
            if room < 0 or "earer" in item or "EARER" in item or ("://" in item and "@" in item):
                return -1
        elif kind is int:
            if not _INT_MIN < item < _INT_MAX:
                return -1
            room -= 2
        elif kind is float:
            if not _isfinite(item):
                return -1
            room -= 4
        elif item is None or kind is bool:
            room -= 5
        else:
            met = models.met
            room = _native_room(codec, item, depth, room - 1, models)
            if room < 0:
                return -1
            held = held or models.met != met
    if held:
        models.holders.add(id(items))
    return room


class _Models:
    """The pydantic models one scan met: their dumps, and what holds them."""

    __slots__ = ("dumps", "holders", "met")

    dumps: dict[int, JsonValue]
    """Each model's dump, by the model's ``id`` (set when the first model is met)."""
    holders: set[int]
    """The ``id`` of each container (or enum) with a model inside (set with ``dumps``)."""

    def __init__(self) -> None:
        # Only the count, for speed: most values hold no model.
        self.met = 0
        """How many times a model was met."""


def _native_value(codec: Codec, value: object, room: int, models: _Models) -> object:
    """What pydantic_core may write for ``value`` as it is, or :data:`_NOT_NATIVE`.

    That is ``value`` itself, or, when it holds pydantic models, a copy of the containers
    on the way to them, with each model replaced by its dump (see :func:`_native_room`).
    The dumps stay in ``models`` for the walk when ``value`` is not native.
    """
    if _native_room(codec, value, 0, room, models) < 0:
        return _NOT_NATIVE
    return _with_dumps(value, models) if models.met else value


def _with_dumps(value: object, models: _Models) -> object:
    """``value`` with each pydantic model in it replaced by its dump.

    The objects of ``value`` are all alive meanwhile, so an ``id`` names one of them only.
    """
    ident = id(value)
    dumped = models.dumps.get(ident, _NO_DUMP)
    if dumped is not _NO_DUMP:
        return dumped
    if ident not in models.holders:
        return value
    if type(value) is dict:
        return {key: _with_dumps(item, models) for key, item in value.items()}
    if isinstance(value, Enum):
        return _with_dumps(value.value, models)
    return [_with_dumps(item, models) for item in value]  # type: ignore[attr-defined]


def _is_plain_model(kind: type) -> bool:
    """Whether ``kind`` is a pydantic model whose JSON is the JSON of its ``model_dump``.

    Only pydantic's own ``model_dump`` qualifies: an override may leave out what
    pydantic_core would write (a secret field, say).
    """
    dump = getattr(kind, "model_dump", None)
    return (
        callable(dump)
        and getattr(dump, "__module__", None) == "pydantic.main"
        and hasattr(kind, "__pydantic_serializer__")
    )


_Converter = Callable[["_Walk", Any, int], "JsonValue"]


class _Walk:
    """One conversion: the containers on the current path, the size budget, what happened.

    ``size`` counts the JSON characters written so far, never more than the JSON text of the
    result will hold (brackets, quotes and separators included, escapes not). Once it passes
    ``limit`` the walk stops: ``stopped`` is set, the string being written is cut, and every
    container on the path returns what it has. ``skipped`` counts, the same way, at least
    the characters of what was left out.
    """

    __slots__ = (
        "clipped",
        "codec",
        "dumps",
        "limit",
        "max_depth",
        "path",
        "redacted",
        "size",
        "skipped",
        "stopped",
    )

    def __init__(self, codec: Codec, limit: int, models: _Models | None = None) -> None:
        self.codec = codec
        self.limit = limit
        self.max_depth = codec.max_depth
        self.path: set[int] = set()
        self.redacted = False
        self.clipped = False
        self.size = 0
        self.skipped = 0
        self.stopped = False
        # The dumps a scan took already: a model is dumped once per encoding.
        self.dumps: dict[int, Any] = models.dumps if models is not None and models.met else {}

    def root(self, value: object) -> JsonValue:
        try:
            return self.convert(value, 0)
        except Exception as exc:  # only if even the fallback failed; the app must go on
            _warn_once(f"a {type_name(value)} value", exc)
            return f"<unrepresentable {type_name(value)}>"

    def convert(self, value: object, depth: int) -> JsonValue:
        kind = type(value)
        if kind is str:
            return self.text(value)  # type: ignore[arg-type]
        if value is None or kind is bool:
            self.size += 4
            return value  # type: ignore[return-value]
        if kind is int:
            if _INT_MIN < value < _INT_MAX:  # type: ignore[operator]
                self.size += 1
                return value  # type: ignore[return-value]
            return self.text(_huge_int(value))  # type: ignore[arg-type]
        if kind is float:
            if math.isfinite(value):  # type: ignore[arg-type]
                self.size += 3
                return value  # type: ignore[return-value]
            return self.text(_nonfinite(value))  # type: ignore[arg-type]
        size, skipped = self.size, self.skipped
        try:
            converter = _EXACT_TYPES.get(kind)
            if converter is not None:
                return converter(self, value, depth)
            return self._convert_other(value, depth)
        except Exception as exc:  # a broken user object must not break the app
            _logger.debug(
                "evaltrace used repr() for a %s value: %s", type_name(value), exception_text(exc)
            )
            self.size, self.skipped, self.stopped = size, skipped, False
            return self.text(safe_repr(value))

    def _convert_other(self, value: object, depth: int) -> JsonValue:
        kind = type(value)
        if isinstance(value, Enum):
            return self.convert(value.value, depth)
        if isinstance(value, str):
            return self.text(str.__str__(value))
        if isinstance(value, int):
            return self.convert(int.__int__(value), depth)
        if isinstance(value, float):
            return self.convert(float.__float__(value), depth)
        if callable(getattr(kind, "model_dump", None)):
            return _convert_model(self, value, depth)
        if hasattr(kind, "__dataclass_fields__"):
            return _convert_dataclass(self, value, depth)
        if isinstance(value, (datetime, date, time)):
            return self.text(value.isoformat())
        if isinstance(value, timedelta):
            return self.convert(value.total_seconds(), depth)
        if isinstance(value, (UUID, Decimal)) or _is_path(value):
            return self.text(str(value))
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _convert_bytes(self, value, depth)
        if isinstance(value, Mapping):
            return _convert_mapping(self, value, depth)
        if hasattr(kind, "dtype"):
            return _convert_array_like(self, value, depth)
        if isinstance(value, range):
            return self.text(repr(value))
        if isinstance(value, AbstractSet):
            return _convert_set(self, value, depth)
        if isinstance(value, (Sequence, ValuesView)):
            return _convert_sequence(self, value, depth)
        return self.text(safe_repr(value))

    def text(self, text: str) -> str:
        """Write a string: scrubbed of secrets, and cut when it takes the size past the limit."""
        size = self.size + len(text) + 2
        if size > self.limit:
            return self._cut(text)
        if "earer" in text or "EARER" in text or ("://" in text and "@" in text):
            clean = _scrub(text)
            if clean != text:
                self.redacted = True
                size += len(clean) - len(text)
                text = clean
        self.size = size
        return text

    def _cut(self, text: str) -> str:
        room = self.limit - self.size  # characters after the opening quote that pass the limit
        length = len(text)
        end = room + _SCRUB_MARGIN
        while True:
            window = text[:end]
            clean = _scrub(window) if _may_hold_secret(window) else window
            if len(clean) > room or end >= length:
                break
            end *= 2  # redaction shortened the window below the cut: scrub a longer one
        if clean != window:
            self.redacted = True
        if len(clean) <= room:  # the whole (redacted) string, and the limit is reached with it
            self.size += len(clean) + 2
            self.stopped = self.size > self.limit
            return clean
        self.size += 1 + room
        self.skipped += len(clean) - room + max(length - end, 0) + 1
        self.stopped = True
        return clean[:room]

    def enter(self, container: object, depth: int) -> str | None:
        """Start expanding a container; a marker string means it must not be expanded."""
        if depth >= self.max_depth:
            return _MAX_DEPTH
        ident = id(container)
        if ident in self.path:
            return _CYCLE
        self.path.add(ident)
        return None


def _convert_mapping(walk: _Walk, value: Mapping[object, object], depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return walk.text(marker)
    try:
        return _convert_items(walk, value.items(), depth, value, _length(value))
    finally:
        walk.path.discard(id(value))


def _convert_items(
    walk: _Walk,
    items: Iterable[tuple[Any, Any]],
    depth: int,
    mapping: Mapping[Any, object] | None,
    total: int | None,
) -> dict[str, JsonValue]:
    codec = walk.codec
    verdicts = codec._verdicts
    plain_ends = codec._plain_ends
    hidden = _hidden_header_value(codec, mapping) if mapping is not None else None
    limit = walk.limit
    size = walk.size + 1  # the opening brace
    out: dict[str, JsonValue] = {}
    for key, item in items:
        name = key if type(key) is str else _key_name(key, mapping, out)
        size += len(name) + 3  # quotes and colon
        if size > limit:  # a key long enough to pass the limit on its own
            walk.size = size - len(name) - 3
            out[walk.text(name)] = None
            size = walk.size
            walk.stopped = True
            break
        verdict = verdicts.get(name)
        if verdict is None:
            verdict = _PLAIN if name[-1:] in plain_ends else codec._verdict(name)
        item_kind = type(item)
        if (
            verdict and (verdict == _SECRET or (item_kind is not int and item_kind is not float))
        ) or name == hidden:
            out[name] = REDACTED
            walk.redacted = True
            size += _REDACTED_SIZE + 1
        elif (
            item_kind is str
            and size + len(item) + 3 <= limit
            and not ("earer" in item or "EARER" in item or ("://" in item and "@" in item))
        ):
            out[name] = item
            size += len(item) + 3
            continue
        elif item_kind is int and _INT_MIN < item < _INT_MAX:
            out[name] = item
            size += 2 + ((item.bit_length() - 1) >> 2)  # at least its digits, and a comma
        else:
            walk.size = size
            out[name] = walk.convert(item, depth + 1)
            size = walk.size + 1  # the comma or the closing brace
        if size > limit:
            walk.stopped = True
            break
    else:
        walk.size = size
        return out
    walk.size = size
    if total is not None:
        walk.skipped += 2 * max(total - len(out), 0)
    return out


def _hidden_header_value(codec: Codec, mapping: Mapping[Any, object]) -> str | None:
    """``"value"`` when ``mapping`` is a header object naming a secret, else ``None``."""
    if not isinstance(mapping, dict) or _HEADER_VALUE not in mapping:
        return None
    for label_key in _HEADER_LABELS:
        label = mapping.get(label_key)
        if type(label) is str:
            verdict = codec._verdict(label)
            if verdict == _SECRET or (verdict == _PLURAL and not _is_count(mapping[_HEADER_VALUE])):
                return _HEADER_VALUE
            return None
    return None


def _convert_sequence(walk: _Walk, value: Iterable[object], depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return walk.text(marker)
    try:
        if (
            isinstance(value, (tuple, list))
            and len(value) == 2
            and _is_secret_pair(walk.codec, value)
        ):
            walk.redacted = True
            return _convert_each(walk, (value[0], REDACTED), depth + 1, 2)
        return _convert_each(walk, value, depth + 1, _length(value))
    finally:
        walk.path.discard(id(value))


def _is_secret_pair(codec: Codec, pair: tuple[object, ...] | list[object]) -> bool:
    """Whether ``pair`` is a header pair such as ``("Authorization", "Bearer ...")``."""
    name = pair[0]
    if isinstance(name, (bytes, bytearray)):  # raw HTTP headers, e.g. httpx's Headers.raw
        name = bytes(name[:_VERDICT_CACHE_KEY_LENGTH]).decode("latin-1")
    if type(name) is not str:
        return False
    verdict = codec._verdict(name)
    return verdict == _SECRET or (verdict == _PLURAL and not _is_count(pair[1]))


def _convert_each(
    walk: _Walk, items: Iterable[Any], depth: int, total: int | None
) -> list[JsonValue]:
    convert = walk.convert
    limit = walk.limit
    size = walk.size + 1  # the opening bracket
    out: list[JsonValue] = []
    append = out.append
    for item in items:
        kind = type(item)
        # Strings and ints, the bulk of long lists, are written inline: a few times faster.
        if kind is str:
            end = size + len(item) + 3
            if end <= limit and not (
                "earer" in item or "EARER" in item or ("://" in item and "@" in item)
            ):
                append(item)
                size = end
                continue
            walk.size = size
            append(walk.text(item))
            size = walk.size + 1
        elif kind is int and _INT_MIN < item < _INT_MAX:
            append(item)
            size += 2 + ((item.bit_length() - 1) >> 2)
        else:
            walk.size = size
            append(convert(item, depth))
            size = walk.size + 1  # the comma or the closing bracket
        if size > limit:
            walk.stopped = True
            break
    else:
        walk.size = size
        return out
    walk.size = size
    if total is not None:
        walk.skipped += 2 * max(total - len(out), 0)
    return out


def _convert_set(walk: _Walk, value: AbstractSet[Any], depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return walk.text(marker)
    try:
        total = len(value)
        if 2 * total > walk.limit:  # cannot fit: not worth sorting, written in its own order
            return _convert_each(walk, value, depth + 1, total)
        try:
            members: list[Any] = sorted(value)
        except Exception:  # unorderable members: ordered by their JSON text instead
            return sorted(_convert_each(walk, value, depth + 1, total), key=_JSON_TEXT.encode)
        return _convert_each(walk, members, depth + 1, total)
    finally:
        walk.path.discard(id(value))


def _convert_dataclass(walk: _Walk, value: Any, depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return walk.text(marker)
    try:
        data = dict(_dataclass_items(value))
        return _convert_items(walk, data.items(), depth, data, len(data))
    finally:
        walk.path.discard(id(value))


def _dataclass_items(value: Any) -> Iterable[tuple[str, object]]:
    # Walked field by field: dataclasses.asdict deep-copies and never ends on a cycle.
    for each in fields(value):
        try:
            yield each.name, getattr(value, each.name)
        except AttributeError:  # a slots field that was never set has no value to show
            continue


def _convert_model(walk: _Walk, value: Any, depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return walk.text(marker)
    try:
        # Dumped once (see _native_room): met again, it gets the same dump.
        dumped = walk.dumps.get(id(value), _NO_DUMP)
        if dumped is _NO_DUMP:
            try:
                dumped = value.model_dump(mode="json")
            except Exception:
                try:  # e.g. a field of an arbitrary type that has no JSON serializer
                    dumped = value.model_dump()
                except Exception:
                    return walk.text(safe_repr(value))
            walk.dumps[id(value)] = dumped
        if type(dumped) is dict:
            return _convert_items(walk, dumped.items(), depth, dumped, len(dumped))
        return walk.convert(dumped, depth)
    finally:
        walk.path.discard(id(value))


def _convert_bytes(walk: _Walk, value: bytes | bytearray | memoryview, depth: int) -> JsonValue:
    if isinstance(value, memoryview):
        view = value.cast("B") if value.c_contiguous else memoryview(value.tobytes())
    else:
        view = memoryview(value)
    length = view.nbytes
    # Whole 3-byte groups, so the base64 of the preview is a prefix of the full base64.
    limit = walk.codec.max_bytes // 2 // 3 * 3
    clipped = length > limit
    walk.clipped = walk.clipped or clipped
    preview = view[:limit] if clipped else view
    encoded = binascii.b2a_base64(preview, newline=False).decode("ascii")
    walk.size += _BYTES_OVERHEAD + len(encoded) + len(str(length))
    return {_BYTES_KEY: True, "base64": encoded, "length": length, "truncated": clipped}


def _convert_array_like(walk: _Walk, value: Any, depth: int) -> JsonValue:
    kind = type(value)
    if hasattr(kind, "tolist") and hasattr(kind, "shape") and value.shape:
        size = getattr(value, "size", 0)
        if isinstance(size, int) and size > walk.codec.max_bytes // 2:
            # Its JSON cannot fit anyway; numpy-like reprs summarise large arrays.
            walk.clipped = True
            return walk.text(safe_repr(value))
        return walk.convert(value.tolist(), depth)
    if hasattr(kind, "item"):
        return walk.convert(value.item(), depth)
    return walk.text(safe_repr(value))


def _isoformat(walk: _Walk, value: Any, depth: int) -> JsonValue:
    # pydantic_core's text (UTC as "Z"), so that it reads the same when pydantic_core writes
    # the value directly, or inside a pydantic model.
    try:
        text = _core().to_jsonable_python(value)
    except Exception:  # e.g. a tzinfo whose utcoffset() raises
        text = value.isoformat()
    return walk.text(text)


def _text_of(walk: _Walk, value: Any, depth: int) -> JsonValue:
    return walk.text(str(value))


def _seconds(walk: _Walk, value: Any, depth: int) -> JsonValue:
    return walk.convert(value.total_seconds(), depth)


def _is_path(value: object) -> bool:
    """Whether ``value`` is a ``pathlib`` path, without importing ``pathlib`` at import time.

    No value can be a path before something has imported ``pathlib``.
    """
    pathlib = sys.modules.get("pathlib")
    return pathlib is not None and isinstance(value, pathlib.PurePath)


_EXACT_TYPES: dict[type, _Converter] = {
    dict: _convert_mapping,
    list: _convert_sequence,
    tuple: _convert_sequence,
    set: _convert_set,
    frozenset: _convert_set,
    bytes: _convert_bytes,
    bytearray: _convert_bytes,
    memoryview: _convert_bytes,
    datetime: _isoformat,
    date: _isoformat,
    time: _isoformat,
    timedelta: _seconds,
    UUID: _text_of,
    Decimal: _text_of,
}


def _length(value: object) -> int | None:
    try:
        return len(value)  # type: ignore[arg-type]
    except Exception:  # not sized, or a broken __len__: the lower bound just counts less
        return None


def _is_count(value: object) -> bool:
    kind = type(value)
    return kind is int or kind is float


def _json_text(data: JsonValue) -> tuple[str, int]:
    """The compact JSON text of converted data and its size in UTF-8 bytes."""
    try:
        written: bytes = _core().to_json(data)
    except Exception:  # lone surrogates, or nesting deeper than pydantic_core writes
        pass
    else:
        return written.decode("utf-8"), len(written)
    try:
        # json escapes lone surrogates (e.g. file names decoded with surrogateescape) as
        # \udcxx, so the text stays valid UTF-8.
        text = _ASCII_JSON_TEXT.encode(data)
    except (ValueError, RecursionError) as exc:
        _warn_once("converted data as JSON", exc)
        text = _ASCII_JSON_TEXT.encode(f"<unencodable {type_name(data)}>")
    return text, len(text)


def _truncation_marker(text: str, size: int, exact: bool, max_bytes: int) -> str:
    budget = max(max_bytes - len(_marker_text(size, exact, '""')), 0)
    # The preview is the start of `text`, written as a JSON string: escaped once more, so
    # `text` is cut to the budget first, then the escaped preview is cut to it too.
    preview = _encode_string(text[:budget])
    if preview.isascii():
        if len(preview) - 2 <= budget:
            return _marker_text(size, exact, preview)
        cut = preview[: budget + 1]
    else:
        data = preview.encode("utf-8")
        if len(data) - 2 <= budget:
            return _marker_text(size, exact, preview)
        cut = data[: budget + 1].decode("utf-8", "ignore")  # a character cut in half is dropped
    return _marker_text(size, exact, _without_cut_escape(cut) + '"')


def _without_cut_escape(cut: str) -> str:
    """``cut`` (an opening quote and escaped text) without an escape sequence cut in half."""
    start = cut.rfind("\\", max(len(cut) - 6, 1))  # no escape is longer than \uXXXX
    if start == -1:
        return cut
    first = start
    while cut[first - 1] == "\\":  # cut[0] is the opening quote
        first -= 1
    if (start - first) % 2:  # the second half of an escaped backslash
        return cut
    length = 6 if cut[start + 1 : start + 2] == "u" else 2
    return cut[:start] if start + length > len(cut) else cut


def _marker_text(size: int, exact: bool, preview: str) -> str:
    """The truncation marker's JSON text, ``preview`` being already a JSON string."""
    return (
        f'{{"{_TRUNCATED_KEY}":true,"original_bytes":{size},'
        f'"original_bytes_exact":{"true" if exact else "false"},"preview":{preview}}}'
    )


def _cut_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes (a character cut in half is dropped)."""
    if len(text) <= max_bytes // 4:  # even four bytes per character fit
        return text
    return text[:max_bytes].encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore")


def _may_hold_secret(text: str) -> bool:
    """Whether ``text`` may hold a ``Bearer`` token or a URL password (a quick pre-check)."""
    return "earer" in text or "EARER" in text or ("://" in text and "@" in text)


def _scrub(text: str) -> str:
    """``text`` with ``Bearer`` tokens and URL passwords replaced by :data:`REDACTED`."""
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(_redact_url_password, text)
    if "earer" in text or "EARER" in text:
        for pattern in _BEARER_TAILS:
            text = pattern.sub(_redact_bearer, text)
    return text


def _redact_url_password(match: re.Match[str]) -> str:
    return f"://{match.group(1)}:{REDACTED}@"


def _redact_bearer(match: re.Match[str]) -> str:
    text, start = match.string, match.start()
    # "earer" must be the end of the word "Bearer" (any case) that starts a word.
    if start == 0 or text[start - 1] not in "Bb" or (start >= 2 and text[start - 2].isalnum()):
        return match.group(0)
    return f"{match.group(0)[:5]}{match.group(1)}{REDACTED}"


def _key_words(key: str) -> tuple[str, ...]:
    """Lower-case words of a key: ``"OpenAI-Api-Key"`` -> ``("open", "ai", "api", "key")``."""
    return tuple(word for word in _NON_WORD.split(_CAMEL_BOUNDARY.sub("_", key).lower()) if word)


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, Enum):
        return _key_text(key.value)
    return safe_str(key)


def _key_name(key: object, mapping: Mapping[Any, object] | None, taken: dict[str, Any]) -> str:
    """The JSON name of a key that is not a string, distinct from every other key's name."""
    text = _key_text(key)
    if text not in taken and not _holds(mapping, text):
        return text
    base = f"{text} ({type_name(key)})"
    name, number = base, 2
    while name in taken or _holds(mapping, name):
        name = f"{base} #{number}"
        number += 1
    return name


def _holds(mapping: Mapping[Any, object] | None, key: str) -> bool:
    if mapping is None:
        return False
    try:
        return key in mapping
    except Exception:  # a mapping whose lookup fails: no collision can be seen
        return False


def _nonfinite(value: float) -> str:
    return _NONFINITE_NAMES.get(value, "NaN")


def _huge_int(value: int) -> str:
    return f"<int of {value.bit_length()} bits>"


def _warn_once(what: str, exc: Exception) -> None:
    key = (what, type_name(exc))
    if key not in _WARNED and len(_WARNED) < _WARNED_LIMIT:
        _WARNED.add(key)
        _logger.warning(
            "evaltrace could not encode %s (%s); recorded a placeholder", what, exception_text(exc)
        )
