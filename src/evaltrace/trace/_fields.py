"""Reading the fields of span objects in trace files.

Each reader raises :class:`Invalid` naming the field, what was expected and what was found;
:func:`evaltrace.load_traces` adds the file and the line.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Invalid",
    "attributes_field",
    "hex_id",
    "int_field",
    "integer",
    "iso_time_ns",
    "join",
    "json_type",
    "list_field",
    "optional_str",
    "str_field",
]

_HEX = re.compile(r"[0-9a-fA-F]+")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SHOWN = 80
# An ISO 8601 time whose fraction of a second may be finer than the microseconds datetime holds.
_FRACTION = re.compile(r"(?P<head>[^.]*T[^.]*)\.(?P<digits>\d+)(?P<tail>.*)")


class Invalid(ValueError):
    """A problem in one span object; the caller adds the file and line."""


def hex_id(value: Any, digits: int, field: str) -> int:
    """Read a trace id (32 digits) or span id (16 digits) written in hex, or in base64."""
    if isinstance(value, str) and len(value) == digits and _HEX.fullmatch(value):
        return int(value, 16)
    # Some OTLP-JSON writers use base64 for ids, as protobuf's JSON mapping does for bytes.
    if isinstance(value, str) and value:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == digits // 2:
            return int.from_bytes(raw, "big")
    raise Invalid(f'field "{field}" must be a {digits}-character hex string, found {value!r}')


def integer(value: Any, field: str) -> int:
    """Read an integer written as a JSON number or as a string of decimal digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    digits = value.strip().removeprefix("-") if isinstance(value, str) else ""
    if digits.isascii() and digits.isdigit():
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            pass
    raise Invalid(f"{field} must be an integer (or a string of digits), found {_shown(value)}")


def iso_time_ns(value: Any, field: str) -> int:
    """Read an ISO 8601 time as nanoseconds since the Unix epoch; a time without zone is UTC."""
    if isinstance(value, str):
        extra_ns = 0
        text = value.strip()
        match = _FRACTION.fullmatch(text)
        if match is not None:  # datetime keeps microseconds: the rest is added as nanoseconds
            digits = match["digits"][:9].ljust(9, "0")
            extra_ns = int(digits[6:])
            text = f"{match['head']}.{digits[:6]}{match['tail']}"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            delta = moment - _EPOCH
            seconds = delta.days * 86_400 + delta.seconds
            return seconds * 1_000_000_000 + delta.microseconds * 1_000 + extra_ns
    raise Invalid(
        f'field "{field}" must be an ISO 8601 time such as "2025-01-01T12:00:00.000000+00:00", '
        f"found {_shown(value)}"
    )


def int_field(
    data: Mapping[str, Any], key: str, *, where: str = "", default: int | None = None
) -> int:
    """Read the integer ``data[key]`` (a JSON number)."""
    value = data.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise Invalid(f'field "{join(where, key)}" must be an integer, found {_shown(value)}')


def str_field(
    data: Mapping[str, Any], key: str, *, where: str = "", default: str | None = None
) -> str:
    """Read the string ``data[key]``."""
    value = data.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, str):
        return value
    raise Invalid(f'field "{join(where, key)}" must be a string, found {_shown(value)}')


def optional_str(value: Any, field: str) -> str | None:
    """Read a string that may be null."""
    if value is None or isinstance(value, str):
        return value
    raise Invalid(f'field "{field}" must be a string or null, found {_shown(value)}')


def list_field(data: Mapping[str, Any], key: str, *, where: str = "") -> list[Any]:
    """Read the list ``data[key]``; absent or null gives an empty list."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f'field "{join(where, key)}" must be a list, found {json_type(value)}')
    return value


def attributes_field(data: Mapping[str, Any], key: str, *, where: str = "") -> dict[str, Any]:
    """Read an attributes object; lists become tuples, as OpenTelemetry keeps sequences.

    An object without lists is returned as it is, not copied: it is the parsed JSON of a
    line, which nothing else holds.
    """
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f'field "{join(where, key)}" must be an object, found {json_type(value)}')
    for item in value.values():
        if isinstance(item, list):
            return {
                name: tuple(item) if isinstance(item, list) else item
                for name, item in value.items()
            }
    return value


def join(where: str, key: str) -> str:
    """The dotted path of ``key`` inside ``where``."""
    return f"{where}.{key}" if where else key


def json_type(value: Any) -> str:
    """What kind of JSON value ``value`` is, for messages."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    """``repr(value)`` cut to a readable length; a list or object is named by its type."""
    if isinstance(value, dict | list):
        return json_type(value)
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 20]}... ({len(text)} characters)"
