"""The smallest JSON value that satisfies a JSON schema, for structured judge replies.

The fake judge answers a forced tool call, or a request for a ``json_schema`` response
format, with an instance of the schema the request gives: the common parts of JSON Schema
(``$ref``, ``const``, ``enum``, ``default``, ``anyOf``/``oneOf``/``allOf``, objects with
their required properties, arrays, scalars) are honoured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["schema_instance"]

_MAX_DEPTH: Final = 32


def schema_instance(schema: Mapping[str, Any]) -> Any:
    """Build the smallest value that satisfies the common parts of ``schema``.

    Arrays get one item rather than none (judges that average over a list divide by its
    length); a string is ``""``, a number ``0``; nesting deeper than 32 levels (a recursive
    ``$ref``) ends in ``None``.

    Example:
        >>> schema_instance({"type": "object", "properties": {"choice": {"enum": ["A", "B"]}}})
        {'choice': 'A'}
    """
    return _instance(schema, schema)


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/") if ref.startswith("#/") else ():
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _instance(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Any:
    """Build the smallest value that satisfies the common parts of a JSON schema."""
    if depth > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        return _instance(_resolve_ref(str(schema["$ref"]), root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for combinator in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list) and branches and isinstance(branches[0], Mapping):
            return _instance(branches[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        wanted = set(required) if isinstance(required, list) else set(properties)
        return {
            name: _instance(sub if isinstance(sub, Mapping) else {}, root, depth + 1)
            for name, sub in properties.items()
            if name in wanted
        }
    if kind == "array":
        # One item rather than none: judges that average over a list (ragas statements,
        # verdicts) divide by its length.
        items = schema.get("items")
        count = max(1, int(schema.get("minItems", 1)))
        if isinstance(schema.get("maxItems"), int):
            count = min(count, schema["maxItems"])
        item_schema = items if isinstance(items, Mapping) else {}
        return [_instance(item_schema, root, depth + 1) for _ in range(count)]
    return _SCALARS.get(str(kind), "")


_SCALARS: Final[Mapping[str, Any]] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "null": None,
}
