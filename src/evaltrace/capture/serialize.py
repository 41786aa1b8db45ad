"""The JSON-only codec that turns Python values into span attribute text.

Function arguments, return values and ``wrap(...)`` values can be anything, so the codec
accepts anything and never raises: values it knows (pydantic models, dataclasses, enums,
dates, bytes, numpy-like scalars and arrays, mappings, sequences, sets) become their natural
JSON shape; anything else becomes its ``repr``. Values under secret-like keys are replaced by
:data:`REDACTED`, and an encoded value larger than the size limit is replaced by a truncation
marker that keeps a preview. Nothing here pickles, and :func:`decode` only ever parses JSON.

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
from collections.abc import Callable, Iterable, Mapping, Sequence, ValuesView
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Final, NamedTuple
from uuid import UUID

from evaltrace.capture.conventions import MIME_JSON
from evaltrace.errors import ConfigurationError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = ["DEFAULT_REDACT_KEYS", "REDACTED", "Codec", "Encoded", "decode", "is_truncated"]

_logger = logging.getLogger(__name__)

DEFAULT_REDACT_KEYS: frozenset[str] = frozenset(
    {
        "access_key",
        "api_key",
        "apikey",
        "authorization",
        "client_secret",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "passphrase",
        "passwd",
        "password",
        "passwords",
        "private_key",
        "secret",
        "secret_key",
        "secrets",
        "set-cookie",
        "token",
        "x-api-key",
    }
)
"""Key names whose values are redacted unless the codec is given its own set.

A key matches a name when the key's last words are the name's words, so ``OpenAI-Api-Key``,
``refresh_token`` and ``db_password`` match, while ``token_count`` and ``max_tokens`` do not.
"""

REDACTED: Final = "[REDACTED]"
"""What a redacted value is replaced by."""

_CYCLE: Final = "<cycle>"
_MAX_DEPTH: Final = "<max depth>"
_TRUNCATED_KEY: Final = "__evaltrace_truncated__"
_BYTES_KEY: Final = "__bytes__"
# A marker with an empty preview and a 20-digit size takes about 80 bytes.
_MIN_MAX_BYTES: Final = 128
# Ints below this magnitude always have fewer decimal digits than Python's default
# int-to-str limit (4300), so json can write them.
_INT_MAX: Final = 10**4000
_INT_MIN: Final = -_INT_MAX
_VERDICT_CACHE_SIZE: Final = 4096
_VERDICT_CACHE_KEY_LENGTH: Final = 100

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")

_JSON_TEXT = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)
_encode_string: Final = json.encoder.encode_basestring  # JSON string literal, non-ASCII kept
_FLAT_DICT_ITEMS: Final = 16
_INT_PLAIN_LIMIT: Final = 10**18
_ASCII_JSON_TEXT = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)
_NONFINITE_NAMES: Final = {math.inf: "Infinity", -math.inf: "-Infinity"}
_WARNED: set[tuple[str, str]] = set()
_WARNED_LIMIT: Final = 256


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
    """Whether the value of any secret-like key was replaced by :data:`REDACTED`."""
    original_bytes: int
    """The UTF-8 size of the JSON text before the size limit was applied."""


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
    _verdicts: dict[str, bool] = field(init=False, repr=False, compare=False, default_factory=dict)

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

    def to_jsonable(self, value: object) -> JsonValue:
        """Convert any value to JSON-compatible data, redacting secret-like keys.

        Never raises: a value that cannot be converted becomes a descriptive string. The
        result is not size-limited, except that bytes keep a base64 preview of at most
        ``max_bytes // 2`` bytes (with their full ``length``) and a numpy-like array with more
        than ``max_bytes // 2`` elements becomes its summarising ``repr``.

        Args:
            value: Any Python value.

        Returns:
            Data made of ``dict`` (with ``str`` keys), ``list``, ``str``, ``int``, finite
            ``float``, ``bool`` and ``None``.

        Example:
            >>> Codec().to_jsonable({"when": date(2024, 5, 1), "scores": {0.5, 0.25}})
            {'when': '2024-05-01', 'scores': [0.25, 0.5]}
        """
        if type(value) is str or value is None or type(value) is bool:
            return value
        if self._is_flat_plain(value):
            return value  # type: ignore[return-value]
        return _Walk(self).root(value)

    def encode(self, value: object) -> Encoded:
        """Encode any value as compact JSON text no larger than ``max_bytes``.

        Never raises. A value whose JSON is too large is replaced by a marker object
        ``{"__evaltrace_truncated__": true, "original_bytes": N, "preview": "..."}`` whose
        preview is the start of the full JSON text; :func:`is_truncated` recognises it.

        Args:
            value: Any Python value.

        Returns:
            The JSON text and what happened on the way (truncation, redaction, size).

        Example:
            >>> Codec().encode({"question": "What is 2+2?", "k": 3}).text
            '{"question":"What is 2+2?","k":3}'
        """
        if type(value) is str or value is None or type(value) is bool:
            return self._fit(value, truncated=False, redacted=False)
        if self._is_flat_plain(value):
            return self._fit(value, truncated=False, redacted=False)  # type: ignore[arg-type]
        walk = _Walk(self)
        return self._fit(walk.root(value), walk.clipped, walk.redacted)

    def encode_text(self, value: object) -> str:
        """The JSON text of :meth:`encode`, for callers that need nothing else.

        Example:
            >>> Codec().encode_text("Paris")
            '"Paris"'
        """
        if type(value) is dict and self._is_flat_plain(value):
            text = _flat_json(value)
            if text.isascii():
                if len(text) <= self.max_bytes:
                    return text
            else:
                try:
                    if len(text.encode("utf-8")) <= self.max_bytes:
                        return text
                except UnicodeEncodeError:  # lone surrogates: the general path escapes them
                    pass
        elif (
            type(value) is str or value is None or type(value) is bool or self._is_flat_plain(value)
        ):
            text, size = _json_text(value)  # type: ignore[arg-type]
            if size <= self.max_bytes:
                return text
        return self.encode(value).text

    def encode_converted(self, data: JsonValue) -> str:
        """The JSON text of data that :meth:`to_jsonable` already produced (no second walk).

        Example:
            >>> codec = Codec()
            >>> codec.encode_converted(codec.to_jsonable({"when": date(2024, 5, 1)}))
            '{"when":"2024-05-01"}'
        """
        return self._fit(data, truncated=False, redacted=False).text

    def _fit(self, data: JsonValue, truncated: bool, redacted: bool) -> Encoded:
        text, size = _json_text(data)
        if size > self.max_bytes:
            text = _truncation_marker(text, size, self.max_bytes)
            truncated = True
        return Encoded(
            text=text,
            mime_type=MIME_JSON,
            truncated=truncated,
            redacted=redacted,
            original_bytes=size,
        )

    def _is_flat_plain(self, value: object) -> bool:
        """Whether ``value`` is JSON as it is, so the general walk can be skipped.

        That is: an int, a finite float, or a small flat dict of such values, strings, bools
        and ``None`` under string keys, none of them secret (the common shape of arguments).
        """
        kind = type(value)
        if kind is int:
            return -_INT_PLAIN_LIMIT < value < _INT_PLAIN_LIMIT  # type: ignore[operator]
        if kind is float:
            return math.isfinite(value)  # type: ignore[arg-type]
        if kind is not dict or len(value) > _FLAT_DICT_ITEMS:  # type: ignore[arg-type]
            return False
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or self._is_secret(key):
                return False
            item_kind = type(item)
            if item_kind is str or item is None or item_kind is bool:
                continue
            if item_kind is int and -_INT_PLAIN_LIMIT < item < _INT_PLAIN_LIMIT:
                continue
            if item_kind is float and math.isfinite(item):
                continue
            return False
        return True

    def _is_secret(self, key: str) -> bool:
        verdict = self._verdicts.get(key)
        if verdict is None:
            words = _key_words(key)
            verdict = any(words[-n:] in self._patterns for n in self._pattern_lengths)
            if len(key) <= _VERDICT_CACHE_KEY_LENGTH:
                if len(self._verdicts) >= _VERDICT_CACHE_SIZE:
                    self._verdicts.clear()
                self._verdicts[key] = verdict
        return verdict


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
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value


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


_Converter = Callable[["_Walk", Any, int], "JsonValue"]


class _Walk:
    """One conversion: the containers on the current path and what happened on the way."""

    __slots__ = ("clipped", "codec", "max_depth", "path", "redacted")

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.max_depth = codec.max_depth
        self.path: set[int] = set()
        self.redacted = False
        self.clipped = False

    def root(self, value: object) -> JsonValue:
        try:
            return self.convert(value, 0)
        except Exception as exc:  # only if even the fallback failed; the app must go on
            _warn_once(f"a {_type_name(value)} value", exc)
            return f"<unrepresentable {_type_name(value)}>"

    def convert(self, value: object, depth: int) -> JsonValue:
        if type(value) is str or value is None or type(value) is bool:
            return value
        if type(value) is int:
            return value if _INT_MIN < value < _INT_MAX else _huge_int(value)
        if type(value) is float:
            return value if math.isfinite(value) else _nonfinite(value)
        try:
            converter = _EXACT_TYPES.get(type(value))
            if converter is not None:
                return converter(self, value, depth)
            return self._convert_other(value, depth)
        except Exception as exc:  # a broken user object must not break the app
            _logger.debug("evaltrace used repr() for a %s value: %r", _type_name(value), exc)
            return _safe_repr(value)

    def _convert_other(self, value: object, depth: int) -> JsonValue:
        kind = type(value)
        if isinstance(value, Enum):
            return self.convert(value.value, depth)
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, int):
            return self.convert(int.__int__(value), depth)
        if isinstance(value, float):
            return self.convert(float.__float__(value), depth)
        if callable(getattr(kind, "model_dump", None)):
            return _convert_model(self, value, depth)
        if hasattr(kind, "__dataclass_fields__"):
            return _convert_dataclass(self, value, depth)
        if isinstance(value, (datetime, date, time)):
            return value.isoformat()
        if isinstance(value, timedelta):
            return value.total_seconds()
        if isinstance(value, (UUID, Decimal, PurePath)):
            return str(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _convert_bytes(self, value, depth)
        if isinstance(value, Mapping):
            return _convert_mapping(self, value, depth)
        if hasattr(kind, "dtype"):
            return _convert_array_like(self, value, depth)
        if isinstance(value, range):
            return repr(value)
        if isinstance(value, AbstractSet):
            return _convert_set(self, value, depth)
        if isinstance(value, (Sequence, ValuesView)):
            return _convert_sequence(self, value, depth)
        return _safe_repr(value)

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
        return marker
    try:
        return _convert_items(walk, value.items(), depth)
    finally:
        walk.path.discard(id(value))


def _convert_items(
    walk: _Walk, items: Iterable[tuple[object, object]], depth: int
) -> dict[str, JsonValue]:
    is_secret = walk.codec._is_secret
    out: dict[str, JsonValue] = {}
    for key, item in items:
        name = key if type(key) is str else _key_text(key)
        if is_secret(name):
            out[name] = REDACTED
            walk.redacted = True
        elif type(item) is str or (type(item) is int and _INT_MIN < item < _INT_MAX):
            out[name] = item
        else:
            out[name] = walk.convert(item, depth + 1)
    return out


def _convert_sequence(walk: _Walk, value: Iterable[object], depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return marker
    try:
        return _convert_each(walk, value, depth + 1)
    finally:
        walk.path.discard(id(value))


def _convert_each(walk: _Walk, items: Iterable[object], depth: int) -> list[JsonValue]:
    convert = walk.convert
    # Strings and ints, the bulk of long lists, skip the call: a few times faster.
    return [
        item
        if type(item) is str or (type(item) is int and _INT_MIN < item < _INT_MAX)
        else convert(item, depth)
        for item in items
    ]


def _convert_set(walk: _Walk, value: AbstractSet[Any], depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return marker
    try:
        try:
            members: list[Any] = sorted(value)
        except Exception:  # unorderable members: ordered by their JSON text instead
            return sorted(_convert_each(walk, value, depth + 1), key=_JSON_TEXT.encode)
        return _convert_each(walk, members, depth + 1)
    finally:
        walk.path.discard(id(value))


def _convert_dataclass(walk: _Walk, value: Any, depth: int) -> JsonValue:
    marker = walk.enter(value, depth)
    if marker is not None:
        return marker
    try:
        return _convert_items(walk, _dataclass_items(value), depth)
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
        return marker
    try:
        try:
            dumped = value.model_dump(mode="json")
        except Exception:
            try:  # e.g. a field of an arbitrary type that has no JSON serializer
                dumped = value.model_dump()
            except Exception:
                return _safe_repr(value)
        if type(dumped) is dict:
            return _convert_items(walk, dumped.items(), depth)
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
    return {
        _BYTES_KEY: True,
        "base64": binascii.b2a_base64(preview, newline=False).decode("ascii"),
        "length": length,
        "truncated": clipped,
    }


def _convert_array_like(walk: _Walk, value: Any, depth: int) -> JsonValue:
    kind = type(value)
    if hasattr(kind, "tolist") and hasattr(kind, "shape") and value.shape:
        size = getattr(value, "size", 0)
        if isinstance(size, int) and size > walk.codec.max_bytes // 2:
            # Its JSON cannot fit anyway; numpy-like reprs summarise large arrays.
            walk.clipped = True
            return _safe_repr(value)
        return walk.convert(value.tolist(), depth)
    if hasattr(kind, "item"):
        return walk.convert(value.item(), depth)
    return _safe_repr(value)


_EXACT_TYPES: dict[type, _Converter] = {
    dict: _convert_mapping,
    list: _convert_sequence,
    tuple: _convert_sequence,
    set: _convert_set,
    frozenset: _convert_set,
    bytes: _convert_bytes,
    bytearray: _convert_bytes,
    memoryview: _convert_bytes,
    datetime: lambda _walk, value, _depth: value.isoformat(),
    date: lambda _walk, value, _depth: value.isoformat(),
    time: lambda _walk, value, _depth: value.isoformat(),
    timedelta: lambda _walk, value, _depth: value.total_seconds(),
    UUID: lambda _walk, value, _depth: str(value),
    Decimal: lambda _walk, value, _depth: str(value),
}


def _flat_json(data: dict[str, Any]) -> str:
    """Compact JSON of a flat dict of plain values (see ``Codec._is_flat_plain``).

    The same text ``json`` writes, without building an encoder for each call: this runs for
    the arguments of every traced call.
    """
    parts = []
    for key, item in data.items():
        kind = type(item)
        if kind is str:
            text = _encode_string(item)
        elif item is None:
            text = "null"
        elif kind is bool:
            text = "true" if item else "false"
        else:  # int or finite float: their repr is their JSON
            text = repr(item)
        parts.append(f"{_encode_string(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def _json_text(data: JsonValue) -> tuple[str, int]:
    """The compact JSON text of converted data and its size in UTF-8 bytes."""
    try:
        text = _JSON_TEXT.encode(data)
    except ValueError as exc:  # e.g. an int over a lowered sys.set_int_max_str_digits
        _warn_once("converted data as JSON", exc)
        text = _JSON_TEXT.encode(f"<unencodable {_type_name(data)}>")
    if text.isascii():
        return text, len(text)
    try:
        return text, len(text.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogates, e.g. file names decoded with surrogateescape
        text = _ASCII_JSON_TEXT.encode(data)
        return text, len(text)


def _truncation_marker(text: str, size: int, max_bytes: int) -> str:
    empty = _JSON_TEXT.encode({_TRUNCATED_KEY: True, "original_bytes": size, "preview": ""})
    budget = max(max_bytes - len(empty), 0)
    # At most `budget` UTF-8 bytes of the text; a character cut in half is dropped.
    head = text[:budget].encode("utf-8")[:budget].decode("utf-8", "ignore")
    # The preview's quotes and backslashes are escaped once more inside the marker, so the
    # head is shortened in proportion, then by the bytes still over: every character dropped
    # shrinks the escaped preview by at least one byte, so that always fits.
    escaped = _escaped_size(head)
    if escaped > budget:
        head = head[: len(head) * budget // escaped]
        escaped = _escaped_size(head)
    if escaped > budget:
        head = head[: max(len(head) - (escaped - budget), 0)]
    return _JSON_TEXT.encode({_TRUNCATED_KEY: True, "original_bytes": size, "preview": head})


def _escaped_size(text: str) -> int:
    """UTF-8 size of ``text`` as a JSON string, without its quotes."""
    return len(_JSON_TEXT.encode(text).encode("utf-8")) - 2


def _key_words(key: str) -> tuple[str, ...]:
    """Lower-case words of a key: ``"OpenAI-Api-Key"`` -> ``("open", "ai", "api", "key")``."""
    return tuple(word for word in _NON_WORD.split(_CAMEL_BOUNDARY.sub("_", key).lower()) if word)


def _key_text(key: object) -> str:
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, Enum):
        return _key_text(key.value)
    try:
        return str(key)
    except Exception:
        return _safe_repr(key)


def _nonfinite(value: float) -> str:
    return _NONFINITE_NAMES.get(value, "NaN")


def _huge_int(value: int) -> str:
    return f"<int of {value.bit_length()} bits>"


def _warn_once(what: str, exc: Exception) -> None:
    key = (what, type(exc).__qualname__)
    if key not in _WARNED and len(_WARNED) < _WARNED_LIMIT:
        _WARNED.add(key)
        _logger.warning("evaltrace could not encode %s (%r); recorded a placeholder", what, exc)


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # the marker names the type instead
        return f"<unrepresentable {_type_name(value)}>"


def _type_name(value: object) -> str:
    return type(value).__name__
