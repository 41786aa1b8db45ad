from __future__ import annotations

import base64
import dataclasses
import enum
import json
import random
import uuid
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from datetime import time as clock_time
from decimal import Decimal
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any

import pydantic
import pydantic_core
import pytest

from evaltrace.capture.codec import (
    DEFAULT_REDACT_KEYS,
    REDACTED,
    Codec,
    decode,
    is_truncated,
    json_text,
    jsonable,
    read_json,
)
from evaltrace.capture.conventions import MIME_JSON, MIME_TEXT
from evaltrace.errors import ConfigurationError

MB = 1_000_000
CODEC = Codec()


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def full_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Color(enum.Enum):
    RED = "red"
    PAIR = (1, 2)


class Level(enum.IntEnum):
    HIGH = 3


class Mode(enum.StrEnum):
    FAST = "fast"


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Node:
    name: str
    next: Node | None = None


@dataclasses.dataclass
class Connection:
    host: str
    password: str


class Question(pydantic.BaseModel):
    text: str
    asked_at: datetime
    api_key: str = "sk-model"


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class ModelWithArray(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    vector: Opaque


class BrokenModel(pydantic.BaseModel):
    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("cannot dump")

    def __repr__(self) -> str:
        return "BrokenModel(...)"


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class ExplodingMapping(Mapping[str, int]):
    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("cannot iterate")

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "ExplodingMapping()"


class ArrayLike:
    """Quacks like a numpy array without numpy."""

    dtype = "float64"
    shape = (2,)

    def tolist(self) -> list[float]:
        return [0.5, 1.5]


class ScalarLike:
    """Quacks like a numpy scalar without numpy."""

    dtype = "int64"

    def item(self) -> int:
        return 7


# Plain values


@pytest.mark.parametrize("value", [None, True, False, 0, -12, 3.25, "", "héllo"])
def test_json_scalars_pass_through(value: object) -> None:
    assert CODEC.to_jsonable(value) == value
    assert type(CODEC.to_jsonable(value)) is type(value)


def test_nan_becomes_the_string_nan() -> None:
    assert CODEC.to_jsonable(float("nan")) == "NaN"
    assert CODEC.encode(float("nan")).text == '"NaN"'


def test_infinities_become_strings() -> None:
    assert CODEC.to_jsonable([float("inf"), float("-inf")]) == ["Infinity", "-Infinity"]


def test_int_too_long_for_json_becomes_a_description() -> None:
    encoded = CODEC.encode(10**5000)

    assert json.loads(encoded.text) == f"<int of {(10**5000).bit_length()} bits>"


def test_str_int_and_float_subclasses_become_plain_values() -> None:
    class Name(str):
        def __str__(self) -> str:
            return "wrong"

    class Count(int):
        pass

    result = CODEC.to_jsonable([Name("ada"), Count(4), Level.HIGH])

    assert result == ["ada", 4, 3]
    assert [type(item) for item in result] == [str, int, int]


# Rich values


def test_pydantic_model_becomes_its_json_dump() -> None:
    question = Question(text="2+2?", asked_at=datetime(2024, 5, 1, 12, 30, tzinfo=UTC))

    assert CODEC.to_jsonable({"q": question}) == {
        "q": {"text": "2+2?", "asked_at": "2024-05-01T12:30:00Z", "api_key": REDACTED}
    }


def test_pydantic_model_without_json_serializer_uses_its_python_dump() -> None:
    assert CODEC.to_jsonable(ModelWithArray(vector=Opaque())) == {"vector": "Opaque()"}


def test_pydantic_model_whose_model_dump_raises_becomes_its_repr() -> None:
    assert CODEC.to_jsonable(BrokenModel()) == "BrokenModel(...)"


def test_pydantic_model_class_is_not_dumped() -> None:
    assert CODEC.to_jsonable(Question) == repr(Question)


def test_dataclass_becomes_dict_of_its_fields() -> None:
    assert CODEC.to_jsonable([Point(x=1, y=2)]) == [{"x": 1, "y": 2}]


def test_self_containing_dataclass_becomes_cycle_marker() -> None:
    node = Node(name="a")
    node.next = node

    assert CODEC.to_jsonable(node) == {"name": "a", "next": "<cycle>"}


def test_dataclass_class_is_not_expanded() -> None:
    assert CODEC.to_jsonable(Point) == repr(Point)


def test_enum_becomes_its_converted_value() -> None:
    assert CODEC.to_jsonable([Color.RED, Color.PAIR, Mode.FAST]) == ["red", [1, 2], "fast"]


def test_datetime_round_trips_as_iso_string() -> None:
    moment = datetime(2024, 5, 1, 12, 30, 15, 250, tzinfo=timezone(timedelta(hours=2)))

    decoded = decode(CODEC.encode({"at": moment}).text)

    assert decoded == {"at": "2024-05-01T12:30:15.000250+02:00"}
    assert isinstance(decoded, dict)
    assert datetime.fromisoformat(str(decoded["at"])) == moment


def test_date_and_time_become_iso_strings() -> None:
    assert CODEC.to_jsonable([date(2024, 2, 29), clock_time(8, 5)]) == ["2024-02-29", "08:05:00"]


def test_timedelta_becomes_total_seconds() -> None:
    assert CODEC.to_jsonable(timedelta(minutes=1, milliseconds=500)) == 60.5


def test_uuid_decimal_and_path_become_strings() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")

    assert CODEC.to_jsonable([ident, Decimal("1.10"), PurePosixPath("/data/a.txt")]) == [
        "12345678-1234-5678-1234-567812345678",
        "1.10",
        "/data/a.txt",
    ]


def test_bytes_become_a_base64_object() -> None:
    assert CODEC.to_jsonable(b"\x00\xffhi") == {
        "__bytes__": True,
        "base64": base64.b64encode(b"\x00\xffhi").decode(),
        "length": 4,
        "truncated": False,
    }


def test_bytearray_and_memoryview_become_base64_objects() -> None:
    result = CODEC.to_jsonable([bytearray(b"ab"), memoryview(b"cd")])

    assert [item["base64"] for item in result] == ["YWI=", "Y2Q="]


def test_non_contiguous_memoryview_becomes_its_bytes() -> None:
    view = memoryview(b"abcdef")[::2]

    assert CODEC.to_jsonable(view) == CODEC.to_jsonable(b"ace")


def test_set_becomes_sorted_list() -> None:
    assert CODEC.to_jsonable({"b", "c", "a"}) == ["a", "b", "c"]
    assert CODEC.to_jsonable(frozenset({3, 1, 2})) == [1, 2, 3]


def test_unsortable_set_becomes_list_in_a_stable_order() -> None:
    mixed = {1, "a", (2, 3)}

    result = CODEC.to_jsonable(mixed)

    assert result == CODEC.to_jsonable({(2, 3), "a", 1})
    assert sorted(map(str, result)) == sorted(["1", "a", "[2, 3]"])


def test_tuple_and_deque_become_lists() -> None:
    assert CODEC.to_jsonable((1, deque(["x", "y"]))) == [1, ["x", "y"]]


def test_dict_views_become_lists() -> None:
    data = {"a": 1, "b": 2}

    assert CODEC.to_jsonable([data.keys(), data.values()]) == [["a", "b"], [1, 2]]


def test_generator_is_described_and_not_consumed() -> None:
    numbers = (n for n in range(3))

    assert CODEC.to_jsonable(numbers).startswith("<generator object")
    assert list(numbers) == [0, 1, 2]


def test_iterator_is_described_and_not_consumed() -> None:
    letters = iter(["a", "b"])

    CODEC.to_jsonable(letters)

    assert list(letters) == ["a", "b"]


def test_range_is_described_not_expanded() -> None:
    assert CODEC.to_jsonable(range(10**12)) == "range(0, 1000000000000)"


def test_mapping_keys_become_strings() -> None:
    assert CODEC.to_jsonable({1: "a", None: "b", Color.RED: "c", (1, 2): "d"}) == {
        "1": "a",
        "None": "b",
        "red": "c",
        "(1, 2)": "d",
    }


def test_any_mapping_becomes_a_dict() -> None:
    proxy = MappingProxyType({"a": OrderedDict(b=1)})

    assert CODEC.to_jsonable(proxy) == {"a": {"b": 1}}


def test_numpy_scalars_become_python_scalars() -> None:
    np = pytest.importorskip("numpy")

    result = CODEC.to_jsonable([np.float32(1.5), np.int64(3), np.bool_(True), np.str_("a")])

    assert result == [1.5, 3, True, "a"]
    assert [type(item) for item in result] == [float, int, bool, str]


def test_numpy_arrays_become_nested_lists() -> None:
    np = pytest.importorskip("numpy")

    assert CODEC.to_jsonable({"m": np.arange(6).reshape(2, 3)}) == {"m": [[0, 1, 2], [3, 4, 5]]}


def test_numpy_array_too_large_for_the_limit_is_summarised() -> None:
    np = pytest.importorskip("numpy")
    codec = Codec(max_bytes=1_000)

    encoded = codec.encode(np.zeros(10_000))

    assert encoded.truncated
    assert "..." in json.loads(encoded.text)


def test_array_like_objects_are_recognised_without_numpy() -> None:
    assert CODEC.to_jsonable([ArrayLike(), ScalarLike()]) == [[0.5, 1.5], 7]


def test_unknown_object_becomes_its_repr() -> None:
    assert CODEC.to_jsonable({"o": Opaque()}) == {"o": "Opaque()"}


def test_object_whose_repr_raises_becomes_unprintable_marker() -> None:
    assert CODEC.to_jsonable([BadRepr()]) == ["<unprintable BadRepr>"]


def test_mapping_that_fails_to_iterate_becomes_its_repr() -> None:
    assert CODEC.to_jsonable({"m": ExplodingMapping()}) == {"m": "ExplodingMapping()"}


# Cycles and depth


def test_cyclic_list_becomes_cycle_marker() -> None:
    items: list[object] = [1]
    items.append(items)

    assert CODEC.to_jsonable(items) == [1, "<cycle>"]


def test_cyclic_dict_becomes_cycle_marker() -> None:
    data: dict[str, object] = {"name": "loop"}
    data["self"] = {"parent": data}

    assert CODEC.to_jsonable(data) == {"name": "loop", "self": {"parent": "<cycle>"}}


def test_shared_value_seen_twice_is_not_a_cycle() -> None:
    shared = [1, 2]

    assert CODEC.to_jsonable({"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}


def test_nesting_beyond_max_depth_becomes_marker() -> None:
    codec = Codec(max_depth=2)

    assert codec.to_jsonable([[["deep"]], "shallow"]) == [["<max depth>"], "shallow"]


def test_very_deep_nesting_encodes_within_default_depth() -> None:
    value: list[object] = []
    for _ in range(10_000):
        value = [value]

    assert "<max depth>" in CODEC.encode(value).text


# Redaction


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "APIKey",
        "openai_api_key",
        "OpenAI-Api-Key",
        "OPENAI_API_KEY",
        "X-Api-Key",
        "Authorization",
        "Proxy-Authorization",
        "password",
        "db_password",
        "token",
        "refresh_token",
        "accessToken",
        "secret",
        "client_secret",
        "AWS_SECRET_ACCESS_KEY",
        "Set-Cookie",
        "private_key",
    ],
)
def test_secret_like_key_is_redacted(key: str) -> None:
    assert CODEC.to_jsonable({key: "hunter2"}) == {key: REDACTED}


@pytest.mark.parametrize(
    "key",
    [
        "tokens_used",
        "token_count",
        "max_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "maxTokens",
        "token_type",
        "tokenizer",
        "passwordless",
        "secretary",
        "key",
        "question",
    ],
)
def test_count_like_and_ordinary_keys_are_kept(key: str) -> None:
    assert CODEC.to_jsonable({key: 12}) == {key: 12}


def test_nested_secret_key_is_redacted() -> None:
    encoded = CODEC.encode({"config": {"OpenAI-Api-Key": "sk-live-123", "model": "gpt-4o"}})

    assert json.loads(encoded.text) == {"config": {"OpenAI-Api-Key": REDACTED, "model": "gpt-4o"}}
    assert "sk-live-123" not in encoded.text
    assert encoded.redacted


def test_secret_keys_in_a_list_of_dicts_are_redacted() -> None:
    headers = [{"name": "a", "token": "t1"}, {"name": "b", "token": "t2"}]

    assert CODEC.to_jsonable({"rows": headers}) == {
        "rows": [{"name": "a", "token": REDACTED}, {"name": "b", "token": REDACTED}]
    }


def test_secret_value_is_redacted_whatever_its_type() -> None:
    assert CODEC.to_jsonable({"credentials": {"user": "ada", "pass": "x"}}) == {
        "credentials": REDACTED
    }


def test_dataclass_field_with_secret_name_is_redacted() -> None:
    assert CODEC.to_jsonable(Connection(host="db", password="pw")) == {
        "host": "db",
        "password": REDACTED,
    }


def test_encoded_says_when_nothing_was_redacted() -> None:
    assert not CODEC.encode({"token_count": 3}).redacted


def test_custom_redact_keys_replace_the_defaults() -> None:
    codec = Codec(redact_keys=frozenset({"ssn"}))

    assert codec.to_jsonable({"patient_ssn": "1", "password": "2"}) == {
        "patient_ssn": REDACTED,
        "password": "2",
    }


def test_default_redact_keys_cover_the_common_secret_names() -> None:
    for name in ("api_key", "authorization", "password", "token", "secret", "cookie"):
        assert name in DEFAULT_REDACT_KEYS


# Encoding and truncation


def test_encode_writes_compact_json_with_unicode_kept() -> None:
    encoded = CODEC.encode({"question": "Qu'est-ce que 2+2 ?", "k": 3, "emoji": "🙂"})

    assert encoded.text == '{"question":"Qu\'est-ce que 2+2 ?","k":3,"emoji":"🙂"}'
    assert encoded.mime_type == MIME_JSON
    assert not encoded.truncated


def test_encode_reports_size_in_utf8_bytes() -> None:
    encoded = CODEC.encode("é")

    assert encoded.original_bytes == utf8_size('"é"') == 4


def test_ten_megabyte_string_is_replaced_by_truncation_marker() -> None:
    text = "a" * (10 * MB)

    encoded = CODEC.encode(text)

    marker = decode(encoded.text)
    assert encoded.truncated
    assert is_truncated(marker)
    assert encoded.original_bytes == utf8_size(full_json(text)) == 10 * MB + 2
    assert isinstance(marker, dict)
    assert marker["original_bytes"] == encoded.original_bytes
    assert utf8_size(encoded.text) <= CODEC.max_bytes
    assert full_json(text).startswith(str(marker["preview"]))


def test_ten_megabyte_bytes_value_keeps_a_capped_preview_and_its_length() -> None:
    blob = bytes(range(256)) * (10 * MB // 256)

    encoded = CODEC.encode(blob)

    value = decode(encoded.text)
    assert isinstance(value, dict)
    assert encoded.truncated
    assert utf8_size(encoded.text) <= CODEC.max_bytes
    assert value["length"] == len(blob)
    assert value["truncated"] is True
    preview = base64.b64decode(str(value["base64"]))
    assert 0 < len(preview) <= CODEC.max_bytes // 2
    assert blob.startswith(preview)


def test_large_bytes_beside_other_data_are_truncated_with_the_marker() -> None:
    blob = b"\x01" * (10 * MB)
    value = {"image": blob, "thumbnail": blob}

    encoded = CODEC.encode(value)

    capped = full_json(CODEC.to_jsonable(value))
    marker = decode(encoded.text)
    assert is_truncated(marker)
    assert encoded.original_bytes == utf8_size(capped)
    assert utf8_size(encoded.text) <= CODEC.max_bytes


@pytest.mark.parametrize("max_bytes", [128, 129, 300, 1_000, 4_096])
@pytest.mark.parametrize("unit", ['"', "\\", "é", "🙂", 'a"é\\🙂\n', "\x00", "ab\\"])
def test_truncation_marker_fits_the_limit_whatever_the_text(max_bytes: int, unit: str) -> None:
    codec = Codec(max_bytes=max_bytes)
    value = [unit * 5_000]

    encoded = codec.encode(value)

    marker = decode(encoded.text)
    assert is_truncated(marker)
    assert utf8_size(encoded.text) <= max_bytes
    assert isinstance(marker, dict)
    assert full_json(value).startswith(str(marker["preview"]))


def test_truncation_preview_uses_most_of_the_limit() -> None:
    encoded = Codec(max_bytes=10_000).encode('"' * 100_000)

    assert utf8_size(encoded.text) > 9_000


def test_value_exactly_at_the_limit_is_not_truncated() -> None:
    codec = Codec(max_bytes=200)

    encoded = codec.encode("x" * 198)

    assert utf8_size(encoded.text) == 200
    assert not encoded.truncated


def test_lone_surrogate_is_escaped_so_the_text_is_valid_utf8() -> None:
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")

    encoded = CODEC.encode({"file": name})

    encoded.text.encode("utf-8")
    assert decode(encoded.text) == {"file": name}


def test_encode_never_raises_on_hostile_objects() -> None:
    class Hostile:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(name)

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("eq")

        __hash__ = object.__hash__

        def __repr__(self) -> str:
            raise RuntimeError("repr")

    encoded = CODEC.encode({"h": Hostile(), "s": {Hostile(), Hostile()}, "m": ExplodingMapping()})

    assert json.loads(encoded.text)["h"] == "<unprintable Hostile>"


def test_small_value_is_encoded_without_truncation_or_redaction() -> None:
    encoded = CODEC.encode({"question": "What is 2+2?", "k": 3})

    assert encoded.text == '{"question":"What is 2+2?","k":3}'
    assert (encoded.truncated, encoded.redacted, encoded.original_bytes) == (False, False, 33)


# The codec itself


def test_codec_rejects_a_limit_too_small_for_the_marker() -> None:
    with pytest.raises(ConfigurationError, match="max_bytes=64"):
        Codec(max_bytes=64)


def test_codec_rejects_a_depth_below_one() -> None:
    with pytest.raises(ConfigurationError, match="max_depth=0"):
        Codec(max_depth=0)


def test_codec_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CODEC.max_bytes = 5


def test_codecs_with_the_same_policy_are_equal() -> None:
    assert Codec(max_bytes=500) == Codec(max_bytes=500)


# Decoding


def test_decode_parses_json() -> None:
    assert decode('{"a":[1,2.5,null,true]}', MIME_JSON) == {"a": [1, 2.5, None, True]}


def test_decode_of_invalid_json_returns_the_text() -> None:
    assert decode("{not json") == "{not json"


def test_decode_of_plain_text_returns_it_unparsed() -> None:
    assert decode("42", MIME_TEXT) == "42"


def test_decode_reads_json_text_holding_a_lone_surrogate() -> None:
    assert decode('{"a":"\udc80"}', MIME_JSON) == {"a": "\udc80"}


def test_decode_of_json_nested_too_deeply_returns_the_text() -> None:
    text = "[" * 200_000

    assert decode(text) == text


@pytest.mark.parametrize(
    "text",
    [
        b'{"a":1,"b":[2.5,-0.0,1e400,NaN,-Infinity],"a":3}',
        b"\xef\xbb\xbf" + b'{"bom":true}',  # json.loads reads bytes opening with a UTF-8 BOM
        b'"\\ud800 lone surrogate"',
        '"\udc80 lone surrogate"',
        b"[" * 500 + b"]" * 500,  # deeper than pydantic_core reads
        "-" + "9" * 4300,
        b'"\\ud83d\\ude00"',
    ],
)
def test_read_json_reads_what_json_loads_reads_to_the_same_value(text: str | bytes) -> None:
    assert repr(read_json(text)) == repr(json.loads(text))


@pytest.mark.parametrize(
    "text", [b'{"a":1} x', b'{"a":1,}', b"[1 2]", b'"a\x01b"', b"", "1" * 4301, b'"\xff"']
)
def test_read_json_refuses_what_json_loads_refuses_with_its_exception(text: str | bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)

    with pytest.raises(type(expected.value)) as refused:
        read_json(text)

    assert str(refused.value) == str(expected.value)


def test_is_truncated_is_false_for_ordinary_values() -> None:
    assert not is_truncated({"original_bytes": 3})
    assert not is_truncated("__evaltrace_truncated__")
    assert not is_truncated(None)


@pytest.mark.parametrize(
    "value",
    [
        {"question": "What is 2+2?", "k": 3},
        {"a": None, "b": True, "c": False, "d": 1.5, "e": -7, "f": 1e-7, "g": 10**17},
        {"quote": 'say "hi"\n\t\\', "ünï": "çødé ✓", "emoji": "🙂"},
        {},
    ],
)
def test_text_of_flat_dicts_is_exactly_what_pydantic_core_writes(value: dict[str, object]) -> None:
    # Compact, non-ASCII kept; floats as pydantic_core writes them ("1e-7", json: "1e-07").
    expected = pydantic_core.to_json(value).decode()
    assert Codec().encode_text(value) == expected
    assert Codec().encode_text(value) == Codec().encode(value).text
    assert json.loads(expected) == value


def test_text_of_a_flat_dict_with_a_lone_surrogate_is_valid_utf8() -> None:
    text = Codec().encode_text({"name": "bad\udcff"})
    text.encode("utf-8")
    assert json.loads(text) == {"name": "bad\udcff"}


def test_text_of_a_flat_dict_over_the_limit_is_the_truncation_marker() -> None:
    text = Codec(max_bytes=200).encode_text({"long": "x" * 500})
    assert is_truncated(json.loads(text))


# Bounded work: the walk stops past the limit


class Watched:
    """An object whose every conversion to text is counted."""

    def __init__(self) -> None:
        self.conversions = 0

    def __repr__(self) -> str:
        self.conversions += 1
        return "Watched()"


class CountingSequence(Sequence[int]):
    """A long sequence that counts the items it hands out."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.handed_out = 0

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise TypeError("no slices")
        if not 0 <= index < self.length:
            raise IndexError(index)
        self.handed_out += 1
        return index


@pytest.mark.parametrize("shape", ["list", "tuple", "dict", "set of ints", "nested"])
def test_encoding_stops_walking_a_container_once_past_the_limit(shape: str) -> None:
    watched = Watched()
    n = 100_000
    value: object = {
        "list": [watched] * n,
        "tuple": (watched,) * n,
        "dict": {f"k{i}": watched for i in range(n)},
        "set of ints": {"ints": set(range(n)), "then": [watched] * n},
        "nested": [[[watched] * 100] for _ in range(n // 100)],
    }[shape]

    encoded = Codec(max_bytes=1_000).encode(value)

    assert is_truncated(decode(encoded.text))
    assert watched.conversions <= 1_000


def test_encoding_a_long_sequence_takes_only_the_items_up_to_the_limit() -> None:
    sequence = CountingSequence(1_000_000)

    encoded = Codec(max_bytes=1_000).encode({"items": sequence})

    assert encoded.truncated
    assert sequence.handed_out <= 1_000


def test_to_jsonable_still_converts_the_whole_value() -> None:
    watched = Watched()

    converted = Codec(max_bytes=1_000).to_jsonable([watched] * 5_000)

    assert converted == ["Watched()"] * 5_000
    assert watched.conversions == 5_000


def test_marker_of_a_value_cut_while_encoding_gives_a_lower_bound_of_its_size() -> None:
    value = ["é" * 50] * 10_000  # 100 bytes of UTF-8 per 50 characters

    encoded = Codec(max_bytes=1_000).encode(value)

    marker = decode(encoded.text)
    assert isinstance(marker, dict)
    assert marker["original_bytes_exact"] is False
    assert encoded.original_bytes_exact is False
    assert marker["original_bytes"] == encoded.original_bytes
    assert 1_000 < encoded.original_bytes <= utf8_size(full_json(value))


@pytest.mark.parametrize(
    "value",
    [{"text": "é" * 900}, {"text": "é" * 900, "set": {1}}],
    ids=["written by pydantic_core", "walked"],
)
def test_marker_of_a_value_walked_whole_gives_its_exact_size(value: object) -> None:
    # 900 characters fit the limit, their 1,800 bytes of UTF-8 do not.
    encoded = Codec(max_bytes=1_000).encode(value)

    marker = decode(encoded.text)
    assert isinstance(marker, dict)
    assert marker["original_bytes_exact"] is True
    assert marker["original_bytes"] == utf8_size(full_json(CODEC.to_jsonable(value)))


def test_ten_megabyte_string_is_cut_and_its_size_still_counted() -> None:
    encoded = CODEC.encode("a" * (10 * MB))

    marker = decode(encoded.text)
    assert isinstance(marker, dict)
    assert marker["original_bytes_exact"] is False
    assert marker["original_bytes"] == 10 * MB + 2


@pytest.mark.parametrize(
    "value",
    [
        ["x" * 300, {"a": "y" * 900}, list(range(500))],
        {"rows": [{"id": i, "text": f"row {i}"} for i in range(200)]},
        [[["deep" * 50] * 10] * 10],
        "q" * 5_000,
    ],
)
def test_preview_of_a_value_cut_while_encoding_is_the_start_of_its_json(value: object) -> None:
    encoded = Codec(max_bytes=1_000).encode(value)

    marker = decode(encoded.text)
    assert isinstance(marker, dict)
    assert utf8_size(encoded.text) <= 1_000
    assert len(str(marker["preview"])) > 700
    assert full_json(value).startswith(str(marker["preview"]))


def test_value_just_within_the_limit_is_kept_whole() -> None:
    value = ["x" * 100] * 9  # 9 * 103 - 1 + 2 = 928 bytes

    encoded = Codec(max_bytes=928).encode(value)

    assert encoded.text == full_json(value)
    assert not encoded.truncated


def test_secret_cut_at_the_end_of_the_preview_is_still_redacted() -> None:
    codec = Codec(max_bytes=1_000)
    url = "postgresql://admin:hunter2hunter2@db.internal/app"
    for offset in range(850, 1_000, 7):  # the cut falls before, inside and after the URL
        value = "a" * offset + url + "b" * 5_000

        marker = decode(codec.encode(value).text)

        assert isinstance(marker, dict)
        assert "hunter" not in str(marker["preview"])


# Keys that are not strings


def test_int_key_and_string_key_with_the_same_text_are_both_kept() -> None:
    assert CODEC.to_jsonable({1: "a", "1": "b"}) == {"1 (int)": "a", "1": "b"}


def test_colliding_key_names_do_not_depend_on_the_order_of_the_entries() -> None:
    assert CODEC.to_jsonable({"1": "b", 1: "a"}) == {"1": "b", "1 (int)": "a"}


def test_colliding_key_takes_a_number_when_its_typed_name_is_taken_too() -> None:
    value = {1: "a", "1": "b", "1 (int)": "c", None: "d", "None": "e"}

    assert CODEC.to_jsonable(value) == {
        "1 (int) #2": "a",
        "1": "b",
        "1 (int)": "c",
        "None (NoneType)": "d",
        "None": "e",
    }


def test_colliding_keys_survive_encoding() -> None:
    assert json.loads(CODEC.encode({True: 1, "True": 2}).text) == {"True (bool)": 1, "True": 2}


# Redaction: more names, header shapes, value patterns


@pytest.mark.parametrize(
    "key",
    [
        "session_id",
        "sessionId",
        "X-Session-Id",
        "sessionid",
        "auth",
        "basic_auth",
        "pwd",
        "DB_PWD",
        "jwt",
        "id_jwt",
        "bearer",
        "dsn",
        "SENTRY_DSN",
        "api_keys",
        "OPENAI_API_KEYS",
        "apiKeys",
        "tokens",
        "access_tokens",
        "githubTokens",
    ],
)
def test_more_secret_like_keys_are_redacted(key: str) -> None:
    assert CODEC.to_jsonable({key: "hunter2", "n": 1}) == {key: REDACTED, "n": 1}


@pytest.mark.parametrize(
    "key", ["max_tokens", "tokens", "num_tokens", "cached_tokens", "api_keys", "session_ids"]
)
def test_a_number_under_a_plural_name_is_a_count_and_is_kept(key: str) -> None:
    assert CODEC.to_jsonable({key: 256, "temperature": 0.2}) == {key: 256, "temperature": 0.2}


@pytest.mark.parametrize("key", ["author", "oauth_provider", "dsn_count", "authority", "pwd_hint"])
def test_names_that_only_contain_a_secret_word_are_kept(key: str) -> None:
    assert CODEC.to_jsonable({key: "x"}) == {key: "x"}


def test_a_list_under_a_plural_name_is_redacted() -> None:
    assert CODEC.to_jsonable({"tokens": ["ghp_1", "ghp_2"]}) == {"tokens": REDACTED}


def test_header_pairs_have_their_secret_values_redacted() -> None:
    headers = [("Authorization", "Bearer sk-1"), ("Accept", "application/json"), ["Cookie", "s=1"]]

    assert CODEC.to_jsonable({"headers": headers}) == {
        "headers": [
            ["Authorization", REDACTED],
            ["Accept", "application/json"],
            ["Cookie", REDACTED],
        ]
    }


def test_raw_header_pairs_in_bytes_have_their_secret_values_redacted() -> None:
    encoded = CODEC.encode([(b"x-api-key", b"sk-live-1"), (b"host", b"example.com")])

    assert encoded.redacted
    assert base64.b64encode(b"sk-live-1").decode() not in encoded.text
    assert base64.b64encode(b"example.com").decode() in encoded.text


def test_header_objects_have_their_secret_values_redacted() -> None:
    headers = [
        {"name": "Authorization", "value": "Bearer sk-1"},
        {"key": "X-Api-Key", "value": "sk-2"},
        {"name": "Accept", "value": "application/json"},
    ]

    encoded = CODEC.encode(headers)

    assert json.loads(encoded.text) == [
        {"name": "Authorization", "value": REDACTED},
        {"key": "X-Api-Key", "value": REDACTED},
        {"name": "Accept", "value": "application/json"},
    ]
    assert encoded.redacted


def test_a_flat_header_object_is_redacted_on_the_fast_path_too() -> None:
    assert CODEC.encode_text({"name": "OPENAI_API_KEY", "value": "sk-1"}) == (
        '{"name":"OPENAI_API_KEY","value":"[REDACTED]"}'
    )


@dataclasses.dataclass
class EnvVar:
    name: str
    value: str


def test_a_dataclass_header_object_is_redacted() -> None:
    assert CODEC.to_jsonable(EnvVar(name="DB_PASSWORD", value="pw")) == {
        "name": "DB_PASSWORD",
        "value": REDACTED,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer sk-abc.def_1", "Authorization: Bearer [REDACTED]"),
        (
            "curl -H 'authorization: bearer eyJhbGciOi.x.y=='",
            "curl -H 'authorization: bearer [REDACTED]'",
        ),
        ("BEARER abc", "BEARER [REDACTED]"),
        ("postgresql://u:secret@host/db", "postgresql://u:[REDACTED]@host/db"),
        ("see redis://:pw@cache:6379/0 now", "see redis://:[REDACTED]@cache:6379/0 now"),
        ("https://api.example.com:8443/v1?q=1", "https://api.example.com:8443/v1?q=1"),
        ("mail ada@example.com", "mail ada@example.com"),
        ("the forbearer rests", "the forbearer rests"),
    ],
)
def test_secrets_inside_strings_are_redacted(text: str, expected: str) -> None:
    assert CODEC.to_jsonable(text) == expected
    assert CODEC.to_jsonable([text]) == [expected]
    assert json.loads(CODEC.encode_text({"arg": text})) == {"arg": expected}
    assert json.loads(CODEC.encode_text(text)) == expected


def test_a_secret_inside_a_string_marks_the_value_as_redacted() -> None:
    assert CODEC.encode(["postgresql://u:secret@host/db"]).redacted
    assert not CODEC.encode(["https://host/db"]).redacted


def test_redact_text_redacts_secret_name_value_pairs_in_free_text() -> None:
    text = (
        "connect failed: password=hunter2 api_key='sk-1' headers={'Authorization': 'Bearer x'}"
        " max_tokens=256 url=https://h/cb?token=abc&state=ok"
    )

    assert CODEC.redact_text(text) == (
        "connect failed: password=[REDACTED] api_key=[REDACTED] "
        "headers={'Authorization': [REDACTED]} max_tokens=256 "
        "url=https://h/cb?token=[REDACTED]&state=ok"
    )


def test_redact_text_cuts_the_text_to_the_limit() -> None:
    assert utf8_size(Codec(max_bytes=1_000).redact_text("é" * 5_000)) <= 1_000


def _random_value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice(
            [
                rng.randint(-(10 ** rng.randint(0, 20)), 10 ** rng.randint(0, 20)),
                rng.random() * 1e6,
                "é" * rng.randint(0, 30),
                "x" * rng.randint(0, 50),
                'a"b\\c\n\x00',
                None,
                True,
            ]
        )
    if roll < 0.6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 12))]
    return {
        f"k{rng.randint(0, 10**6)}": _random_value(rng, depth + 1)
        for _ in range(rng.randint(0, 12))
    }


def test_encoding_agrees_with_the_whole_json_text_on_random_values() -> None:
    rng = random.Random(7)
    codec = Codec(max_bytes=2_000)
    for _ in range(500):
        value = _random_value(rng)
        whole = full_json(CODEC.to_jsonable(value))

        encoded = codec.encode(value)

        if utf8_size(whole) <= 2_000:
            assert encoded.text == whole
            continue
        marker = decode(encoded.text)
        assert isinstance(marker, dict)
        assert utf8_size(encoded.text) <= 2_000
        assert whole.startswith(str(marker["preview"]))
        if marker["original_bytes_exact"]:
            assert marker["original_bytes"] == utf8_size(whole)
        else:
            assert 2_000 < int(str(marker["original_bytes"])) <= utf8_size(whole)


# Values written straight by pydantic_core read exactly as walked ones


class Reading(pydantic.BaseModel):
    sensor: str
    at: datetime
    values: list[float]
    mode: Mode = Mode.FAST


class MaskedModel(pydantic.BaseModel):
    shown: str
    hidden: str

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"shown": self.shown}


def _random_native(rng: random.Random, depth: int = 0) -> object:
    """A value of the kinds pydantic_core may write directly, nested at random."""
    leaves: list[object] = [
        rng.randint(-(10 ** rng.randint(0, 30)), 10 ** rng.randint(0, 30)),
        rng.random() * 10 ** rng.randint(-12, 20),
        "é" * rng.randint(0, 5) + "x" * rng.randint(0, 20),
        'a"b\\c\n\x00\u2028🙂',
        None,
        rng.random() < 0.5,
        datetime(2024, 5, 1, 12, 30, rng.randint(0, 59), rng.randint(0, 999_999), tzinfo=UTC),
        datetime(2024, 5, 1, 12, 30),
        date(2024, 2, 29),
        clock_time(8, 5, 1, 500),
        uuid.UUID(int=rng.getrandbits(128)),
        Color.RED,
        Color.PAIR,
        Mode.FAST,
        Level.HIGH,
        Reading(sensor="s1", at=datetime(2024, 5, 1, tzinfo=UTC), values=[0.5, 1e-7]),
    ]
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(leaves)
    if roll < 0.6:
        return [_random_native(rng, depth + 1) for _ in range(rng.randint(0, 8))]
    if roll < 0.7:
        return tuple(_random_native(rng, depth + 1) for _ in range(rng.randint(0, 8)))
    keys = ["question", "k", "max_tokens", "name", "items", "note", "value", "label"]
    return {rng.choice(keys) + str(i): _random_native(rng, depth + 1) for i in range(8)}


def test_values_read_the_same_whether_pydantic_core_writes_them_or_the_walk() -> None:
    rng = random.Random(11)
    for _ in range(300):
        value = _random_native(rng)

        # A set beside the value makes the codec walk it.
        walked = json.loads(CODEC.encode({"v": value, "walk": {1}}).text)["v"]

        assert json.loads(CODEC.encode(value).text) == walked
        assert CODEC.to_jsonable(value) == walked
        assert CODEC.to_jsonable({"v": value, "walk": {1}})["v"] == walked


def test_a_model_that_overrides_model_dump_is_written_as_its_model_dump() -> None:
    model = MaskedModel(shown="a", hidden="never on a span")

    assert CODEC.encode(model).text == '{"shown":"a"}'
    assert CODEC.to_jsonable([model]) == [{"shown": "a"}]


def test_a_datetime_reads_the_same_alone_and_inside_a_model() -> None:
    reading = Reading(sensor="s", at=datetime(2024, 5, 1, 12, tzinfo=UTC), values=[])

    assert CODEC.to_jsonable(reading.at) == CODEC.to_jsonable(reading)["at"]  # type: ignore[index]
    assert CODEC.to_jsonable({"at": reading.at, "s": {1}})["at"] == "2024-05-01T12:00:00Z"  # type: ignore[index]


def test_converted_value_does_not_change_when_the_app_changes_its_value() -> None:
    value = {"question": "What is 2+2?", "k": 3}

    converted = CODEC.to_jsonable(value)
    value["question"] = "changed"

    assert converted == {"question": "What is 2+2?", "k": 3}


def test_a_str_subclass_key_equal_to_a_known_key_is_named_as_the_walk_names_it() -> None:
    CODEC.to_jsonable({"fast": 1})  # "fast" is now a key the codec knows as plain
    walked = CODEC.to_jsonable({Mode.FAST: 1, "walk": {1}})
    assert isinstance(walked, dict)
    del walked["walk"]

    assert json.loads(CODEC.encode({Mode.FAST: 1}).text) == walked
    assert CODEC.to_jsonable({Mode.FAST: 1}) == walked


def test_an_int_enum_alone_becomes_a_plain_int() -> None:
    assert type(CODEC.to_jsonable(Level.HIGH)) is int


# One entry point for JSON text of any value


def test_json_text_of_any_value_is_redacted_json_and_never_raises() -> None:
    value = {"who": BadRepr(), "token": "t-1", "when": date(2024, 5, 1), "loop": []}
    value["loop"].append(value["loop"])  # type: ignore[attr-defined]

    assert json.loads(json_text(value)) == {
        "who": "<unprintable BadRepr>",
        "token": REDACTED,
        "when": "2024-05-01",
        "loop": ["<cycle>"],
    }


def test_json_text_of_a_huge_value_is_the_truncation_marker() -> None:
    assert is_truncated(json.loads(json_text("x" * (2 * MB))))


def test_jsonable_of_any_value_is_json_compatible_data() -> None:
    assert jsonable({"pair": (1, Color.RED), "password": "pw"}) == {
        "pair": [1, "red"],
        "password": REDACTED,
    }


class Stream(pydantic.BaseModel):
    items: Iterable[int]


@pytest.mark.parametrize("where", ["alone", "in a dict", "twice in a list"])
def test_a_model_whose_dump_consumes_a_generator_keeps_its_items(where: str) -> None:
    model = Stream(items=(n for n in range(3)))
    value = {"alone": model, "in a dict": {"s": model}, "twice in a list": [model, model]}[where]
    dumped = {"items": [0, 1, 2]}
    expected = {
        "alone": dumped,
        "in a dict": {"s": dumped},
        "twice in a list": [dumped, dumped],
    }[where]

    assert json.loads(CODEC.encode_text(value)) == expected


def test_a_walked_model_met_twice_is_dumped_once() -> None:
    model = Stream(items=(n for n in range(3)))

    assert CODEC.to_jsonable([model, model, {1}]) == [{"items": [0, 1, 2]}] * 2 + [[1]]


@pytest.mark.parametrize(
    "mapping",
    [
        {"question": "What is the capital of France?", "k": 3},
        {"question": "café", "n": None, "ok": True, "t": 0.5},
        {"note": "Bearer abc.def", "k": 1},
        {"url": "postgresql://user:pw@db/x"},
        {"big": 10**30, "k": 1},
        {"nan": float("nan")},
        {"nested": {"password": "hunter2"}},
        {"model": Question(text="q", asked_at=datetime(2024, 5, 1))},
        {"point": Point(x=1, y=2)},
        {"surrogate": "\ud800"},
        {"long": "x" * 5_000},
        {},
    ],
    ids=[
        "plain",
        "leaves",
        "bearer",
        "url password",
        "big int",
        "nan",
        "nested secret",
        "model",
        "dataclass",
        "lone surrogate",
        "over the limit",
        "empty",
    ],
)
def test_text_of_a_mapping_with_plain_keys_is_the_text_of_encode_text(
    mapping: dict[str, object],
) -> None:
    codec = Codec(max_bytes=1_024)

    assert codec.plain_keys(mapping)
    assert codec.encode_plain_keyed(mapping) == codec.encode_text(mapping)


@pytest.mark.parametrize(
    "keys",
    [("password",), ("question", "api_key"), ("name", "value"), ("max_tokens",)],
    ids=["secret", "one secret among plain", "header pair", "plural name"],
)
def test_keys_whose_values_may_change_are_not_plain(keys: tuple[str, ...]) -> None:
    assert not Codec().plain_keys(keys)


@pytest.mark.parametrize(
    "values",
    [("What is 2+2?", 3), ('a"b\\c\n\x01', -7), (True, None)],
    ids=["leaves", "escapes", "bool and None"],
)
def test_fields_text_is_the_text_of_encode_text(values: tuple[object, ...]) -> None:
    codec = Codec()
    prefixes = codec.field_prefixes(["question", "k"])
    assert prefixes is not None

    text = codec.encode_fields(prefixes, values)

    assert text == codec.encode_text(dict(zip(["question", "k"], values, strict=True)))


def test_fields_past_the_size_written_as_it_is_are_left_to_encode_text() -> None:
    codec = Codec(max_bytes=1_024)
    prefixes = codec.field_prefixes(["question"])
    assert prefixes is not None

    assert codec.encode_fields(prefixes, ("x" * 2_000,)) is None


@pytest.mark.parametrize(
    "value",
    ["café", "Bearer abc", "postgresql://u:pw@db/x", 0.5, 10**4000, [1], {"a": 1}],
    ids=["non-ascii", "bearer", "url password", "float", "huge int", "list", "dict"],
)
def test_fields_leave_values_that_need_more_to_encode_text(value: object) -> None:
    codec = Codec()
    prefixes = codec.field_prefixes(["question"])
    assert prefixes is not None

    assert codec.encode_fields(prefixes, (value,)) is None


def test_fields_of_secret_keys_have_no_prefixes() -> None:
    assert Codec().field_prefixes(["question", "password"]) is None
