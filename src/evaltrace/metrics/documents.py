"""How retrieval metrics tell documents apart: the document key.

A document may be given in any of the shapes that retrievers produce:

* a plain string, whose content is the string itself;
* a mapping with ``"content"`` (or ``"page_content"``, ``"text"``), ``"id"`` and ``"metadata"``
  (or ``"meta"``) keys, including OpenInference's ``"document.content"``, ``"document.id"`` and
  ``"document.metadata"`` (whose value may be a JSON object encoded as a string, as the
  OpenInference conventions store it);
* an object with ``content`` / ``page_content`` / ``text``, ``id`` and ``metadata`` / ``meta``
  attributes (a LangChain or Haystack document, a dataclass, a pydantic model, ...).

Two documents are the same document when their keys are equal. The key is chosen with a
:data:`DocumentKey`: ``"content"`` (the default), ``"id"``, or a dotted metadata path such as
``"metadata.url"`` or ``"metadata.source.page"``.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal, TypeAlias

from evaltrace.capture.conventions import DOCUMENT_CONTENT, DOCUMENT_ID, DOCUMENT_METADATA
from evaltrace.errors import ConfigurationError, EvaltraceError

__all__ = ["DocumentKey", "DocumentKeyError", "document_key", "document_keys"]

DocumentKey: TypeAlias = Literal["content", "id"] | str
"""Which part of a document identifies it: ``"content"``, ``"id"`` or ``"metadata.<path>"``."""

_CONTENT_FIELDS: Final = ("content", "page_content", "text", DOCUMENT_CONTENT)
_ID_FIELDS: Final = ("id", DOCUMENT_ID)
_METADATA_FIELDS: Final = ("metadata", "meta", DOCUMENT_METADATA)
_METADATA_PREFIX: Final = "metadata."


class DocumentKeyError(EvaltraceError, ValueError):
    """A document lacks the part that the chosen :data:`DocumentKey` compares."""


@dataclass(frozen=True, kw_only=True)
class _ParsedKey:
    text: str
    """The key as the caller wrote it, for messages."""
    fields: tuple[str, ...]
    """The mapping keys / attribute names that may hold the top-level value, in order."""
    path: tuple[str, ...]
    """The metadata path below the top-level value (empty for content and id)."""


@lru_cache(maxsize=64)
def _parse_key(key: str) -> _ParsedKey:
    if key == "content":
        return _ParsedKey(text=key, fields=_CONTENT_FIELDS, path=())
    if key == "id":
        return _ParsedKey(text=key, fields=_ID_FIELDS, path=())
    if key.startswith(_METADATA_PREFIX):
        path = tuple(key[len(_METADATA_PREFIX) :].split("."))
        if all(path):
            return _ParsedKey(text=key, fields=_METADATA_FIELDS, path=path)
    raise ConfigurationError(
        f"invalid document key {key!r}: use 'content', 'id' or a metadata path such as "
        "'metadata.url' (dot-separated, no empty parts)"
    )


def _lookup(document: object, fields: tuple[str, ...]) -> Any:
    """Return the first non-``None`` value among ``fields`` of ``document``, else ``None``."""
    if isinstance(document, Mapping):
        for field in fields:
            value = document.get(field)
            if value is not None:
                return value
        return None
    for field in fields:
        if "." in field:
            continue
        value = getattr(document, field, None)
        if value is not None:
            return value
    return None


def _as_metadata(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, Mapping) else None


def _freeze(value: Any) -> Hashable:
    """Make ``value`` usable in a set: lists become tuples, mappings sorted item tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Hashable):
        return value
    raise TypeError(f"a document key must be hashable, got {type(value).__name__}")


def _resolve(document: object, parsed: _ParsedKey) -> Any:
    if isinstance(document, str):
        return document if parsed.text == "content" else None
    value = _lookup(document, parsed.fields)
    if not parsed.path or value is None:
        return value
    for part in parsed.path:
        metadata = _as_metadata(value)
        if metadata is None:
            return None
        value = metadata.get(part)
        if value is None:
            return None
    return value


def document_key(
    document: object, key: DocumentKey = "content", *, where: str = "document"
) -> Hashable:
    """Return the value that identifies ``document`` under ``key``.

    Args:
        document: A string, a mapping or an object (see the module documentation).
        key: ``"content"``, ``"id"`` or a metadata path such as ``"metadata.url"``.
        where: How error messages name the document, e.g. ``"retrieved[3]"``.

    Returns:
        The content, id or metadata value; lists and mappings are turned into tuples so that
        the value can be compared in a set.

    Raises:
        DocumentKeyError: The document has no such part (a plain string has only content).
        ConfigurationError: ``key`` is not one of the accepted forms.

    Example:
        >>> document_key({"id": "d1", "metadata": {"url": "https://a"}}, "metadata.url")
        'https://a'
    """
    parsed = _parse_key(key)
    value = _resolve(document, parsed)
    if value is None:
        if isinstance(document, str):
            raise DocumentKeyError(
                f"{where} is a plain string, which has only content, so it has no {key!r}; "
                "pass documents as mappings or objects that carry it, or use key='content'"
            )
        looked = ", ".join(repr(f) for f in parsed.fields)
        below = f" then the path {'.'.join(parsed.path)!r}" if parsed.path else ""
        raise DocumentKeyError(
            f"{where} has no {key!r} (looked for {looked}{below}) in a "
            f"{type(document).__name__}; give every document a {key!r} or compare by another key"
        )
    try:
        return _freeze(value)
    except TypeError as exc:
        raise DocumentKeyError(f"{where}: the value of {key!r} cannot be compared: {exc}") from exc


def document_keys(
    documents: Iterable[object], key: DocumentKey = "content", *, what: str = "documents"
) -> list[Hashable]:
    """Return the key of every document, in order; errors name ``what[index]``.

    Args:
        documents: The documents, in rank order for a retrieved list.
        key: ``"content"``, ``"id"`` or a metadata path such as ``"metadata.url"``.
        what: How error messages name the list, e.g. ``"retrieved"``.

    Returns:
        One key per document (duplicates kept, so that ranks are preserved).

    Raises:
        DocumentKeyError: A document has no such part; the message names its index.
        TypeError: ``documents`` is a single string rather than a list of documents.

    Example:
        >>> document_keys(["a", {"content": "b"}])
        ['a', 'b']
    """
    if isinstance(documents, str | bytes):
        raise TypeError(
            f"{what} must be a list of documents, got a single string; wrap it in a list"
        )
    return [
        document_key(document, key, where=f"{what}[{index}]")
        for index, document in enumerate(documents)
    ]
