"""Reading YAML dataset files: safe, and with JSON's scalars.

The loader is PyYAML's safe loader (on libyaml's parser when it is present): it builds only
plain data, and a tag that would construct a Python object (``!!python/object:...``) is an error.
Its scalars follow the YAML 1.2 core schema, the one that agrees with JSON, instead of
YAML 1.1's: only ``true``/``false`` are booleans (``no``, ``on``, ``y`` stay strings), ``010`` is
ten, ``1:20`` and dates stay strings, and ``.inf``/``.nan`` stay strings because JSON has no
such numbers.

Before anything is built, the document is checked for keys given twice in one mapping, and
for aliases that would expand it beyond what a file of the size limit could spell out (the
"billion laughs" document).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Final

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

__all__ = ["YamlProblem", "parse_yaml", "yaml_position"]

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    _BaseLoader: type = yaml.SafeLoader
else:

    class _CLoader(Composer, CParser, SafeConstructor, Resolver):
        """libyaml's parser under PyYAML's own composer.

        libyaml's composer recurses in C and overflows the stack (a crash) on deeply nested
        input; PyYAML's recurses in Python, which stops with a ``RecursionError``.
        """

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _BaseLoader = _CLoader

_INT_DECIMAL: Final = re.compile(r"^[-+]?[0-9]+$")
_INT_OCTAL: Final = re.compile(r"^0o[0-7]+$")
_INT_HEX: Final = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT: Final = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_BOOL: Final = re.compile(r"^(true|True|TRUE|false|False|FALSE)$")
_NULL: Final = re.compile(r"^(~|null|Null|NULL|)$")
_MERGE: Final = re.compile(r"^(<<)$")

_INT_TAG: Final = "tag:yaml.org,2002:int"
_FLOAT_TAG: Final = "tag:yaml.org,2002:float"
_BOOL_TAG: Final = "tag:yaml.org,2002:bool"
_NULL_TAG: Final = "tag:yaml.org,2002:null"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"


class _DatasetLoader(_BaseLoader):  # type: ignore[misc]
    """The safe loader with the YAML 1.2 core schema's implicit scalars."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {}


for _tag, _pattern, _first in (
    (_BOOL_TAG, _BOOL, "tTfF"),
    (_NULL_TAG, _NULL, ["~", "n", "N", ""]),
    (_INT_TAG, _INT_DECIMAL, "-+0123456789"),
    (_INT_TAG, _INT_OCTAL, "0"),
    (_INT_TAG, _INT_HEX, "0"),
    (_FLOAT_TAG, _FLOAT, "-+.0123456789"),
    (_MERGE_TAG, _MERGE, "<"),
):
    _DatasetLoader.add_implicit_resolver(_tag, _pattern, list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    try:
        if _INT_OCTAL.match(text):
            return int(text[2:], 8)
        if _INT_HEX.match(text):
            return int(text[2:], 16)
        return int(text, 10)
    except ValueError:  # longer than sys.get_int_max_str_digits(), or an explicit bad !!int
        raise yaml.constructor.ConstructorError(
            None, None, f"the integer {text[:12]}... cannot be read", node.start_mark
        ) from None


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


_DatasetLoader.add_constructor(_INT_TAG, _construct_int)
_DatasetLoader.add_constructor(_BOOL_TAG, _construct_bool)


class YamlProblem(Exception):
    """A YAML document that cannot be read, with where in the text it goes wrong.

    Args:
        message: What is wrong.
        line: 1-based line, when known.
        column: 1-based column, when known.
        hint: How to fix it.
    """

    def __init__(
        self, message: str, *, line: int | None, column: int | None, hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        """What is wrong."""
        self.line = line
        """1-based line, when known."""
        self.column = column
        """1-based column, when known."""
        self.hint = hint
        """How to fix it."""


def parse_yaml(text: str, *, max_nodes: int) -> Any:
    """Parse one YAML document into plain data.

    Args:
        text: The document.
        max_nodes: The most values the document may hold once its aliases are expanded.

    Raises:
        YamlProblem: Syntax error, several documents, a duplicate key, a Python tag, or a
            document whose aliases expand beyond ``max_nodes``.
        RecursionError: The document nests deeper than Python can follow.
        ValueError: An integer too long to convert.
    """
    loader = _DatasetLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            raise _problem(exc) from None
        if node is None:
            return None
        _check_nodes(node, max_nodes)
        try:
            return loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            raise _problem(exc) from None
    finally:
        loader.dispose()


def yaml_position(text: str, path: Sequence[str | int]) -> tuple[int, int] | None:
    r"""The 1-based line and column where the value at ``path`` starts in a YAML document.

    Args:
        text: The document (valid YAML, as :func:`parse_yaml` read it).
        path: Keys and indexes from the top, e.g. ``["evaluators", 1, "value"]``.

    Returns:
        The line and column, or ``None`` when there is no value at ``path``.

    Example:
        >>> yaml_position("a:\n  - 1\n  - b: two\n", ["a", 1, "b"])
        (3, 8)
    """
    loader = _DatasetLoader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    for part in path:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            node = next((value for key, value in node.value if key.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if 0 <= part < len(node.value) else None
        else:
            return None
    if node is None:
        return None
    return node.start_mark.line + 1, node.start_mark.column + 1


def _problem(exc: yaml.MarkedYAMLError) -> YamlProblem:
    mark = exc.problem_mark or exc.context_mark
    text = " ".join(part for part in (exc.context, exc.problem) if part) or "invalid YAML"
    message = f"not valid YAML: {text}"
    hint = None
    if isinstance(exc, yaml.constructor.ConstructorError) and "python/" in (exc.problem or ""):
        message = "not valid YAML: a YAML tag that would construct a Python object is not allowed"
        hint = "a dataset holds plain data (strings, numbers, lists, mappings); remove the tag"
    elif isinstance(exc, yaml.constructor.ConstructorError) and "tag" in (exc.problem or ""):
        hint = "a dataset holds plain data; remove the tag"
    elif "nesting depth" in text:  # PyYAML 6.0.3 and later stop at a depth limit of their own
        message = "the data nests too deeply to be read"
        hint = "flatten the nested values"
    return YamlProblem(
        message,
        line=mark.line + 1 if mark else None,
        column=mark.column + 1 if mark else None,
        hint=hint,
    )


def _check_nodes(root: yaml.Node, max_nodes: int) -> None:
    """Refuse duplicate keys, and aliases expanding the document beyond ``max_nodes``."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE_TAG:
                    if (key.tag, key.value) in seen:
                        raise YamlProblem(
                            f"not valid YAML: the key {key.value!r} appears twice in one mapping",
                            line=key.start_mark.line + 1,
                            column=key.start_mark.column + 1,
                            hint="keep one; the later one would silently replace the first",
                        )
                    seen.add((key.tag, key.value))
                total += size(key) + size(value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        if total > max_nodes:
            raise YamlProblem(
                f"the document's aliases expand it to more than {max_nodes} values",
                line=node.start_mark.line + 1,
                column=node.start_mark.column + 1,
                hint="use fewer nested aliases (*name), or write the values out",
            )
        sizes[id(node)] = total
        return total

    size(root)
