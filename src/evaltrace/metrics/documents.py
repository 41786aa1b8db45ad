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
:data:`DocumentKey`: ``key="content"`` (the default), ``key="id"``, or a dotted metadata path
such as ``key="metadata.url"`` or ``key="metadata.source.page"``. Any other key is refused
(:func:`check_document_key`), so a mistake shows when an evaluator is built.

A document that lacks the compared part (no id, no such metadata entry, a plain string
compared by id) *matches nothing*, as in Haystack: :func:`document_keys` gives ``None`` for it.
A relevant document may also carry a ``score`` (``"score"`` / ``"document.score"`` key, or
``score`` attribute): graded NDCG reads it as the document's relevance
(:func:`relevance_scores`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from numbers import Real
from typing import Any, Final, Literal, TypeAlias

from evaltrace._safe_text import safe_repr, type_name
from evaltrace.capture.conventions import (
    DOCUMENT_CONTENT,
    DOCUMENT_ID,
    DOCUMENT_METADATA,
    DOCUMENT_SCORE,
)
from evaltrace.errors import ConfigurationError, EvaltraceError

__all__ = [
    "DocumentKey",
    "DocumentKeyError",
    "DocumentScoreError",
    "check_document_key",
    "document_key",
    "document_keys",
    "relevance_scores",
]

DocumentKey: TypeAlias = Literal["content", "id"] | str
"""Which part of a document identifies it: ``"content"``, ``"id"`` or ``"metadata.<path>"``."""

_CONTENT_FIELDS: Final = ("content", "page_content", "text", DOCUMENT_CONTENT)
_ID_FIELDS: Final = ("id", DOCUMENT_ID)
_METADATA_FIELDS: Final = ("metadata", "meta", DOCUMENT_METADATA)
_SCORE_FIELDS: Final = ("score", DOCUMENT_SCORE)
_METADATA_PREFIX: Final = "metadata."
_HAYSTACK_META_PREFIX: Final = "meta."
_VALID_KEYS: Final = 'key="content", key="id" or a metadata path such as key="metadata.url"'


class DocumentKeyError(EvaltraceError, ValueError):
    """A document's value under the chosen :data:`DocumentKey` is missing or not comparable."""


class DocumentScoreError(EvaltraceError, ValueError):
    """A relevant document's ``score`` cannot serve as its graded relevance."""


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
    hint = ""
    if key.startswith(_HAYSTACK_META_PREFIX):
        hint = f' (did you mean key="{_METADATA_PREFIX}{key[len(_HAYSTACK_META_PREFIX) :]}"?)'
    raise ConfigurationError(
        f"invalid document key {key!r}{hint}: documents are compared by {_VALID_KEYS} "
        "(dot-separated, no empty parts)"
    )


def check_document_key(key: object) -> DocumentKey:
    """Return ``key`` when it is a valid :data:`DocumentKey`, else raise.

    Evaluators and metrics call it when they are built, so that a key that can never be
    compared fails once, at once, rather than on every entry.

    Args:
        key: The key to check.

    Returns:
        ``key`` itself.

    Raises:
        ConfigurationError: ``key`` is not a string, or not ``"content"``, ``"id"`` or
            ``"metadata.<path>"``; the message lists the valid forms.

    Example:
        >>> check_document_key("metadata.url")
        'metadata.url'
    """
    if not isinstance(key, str):
        raise ConfigurationError(
            f"a document key must be a string, got {type_name(key)} {safe_repr(key)}: "
            f"write {_VALID_KEYS}"
        )
    _parse_key(key)
    return key


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
    parsed = _parse_key(check_document_key(key))
    value = _resolve(document, parsed)
    if value is None:
        raise DocumentKeyError(_missing_message(document, parsed, where))
    return _frozen(value, key, where)


def _missing_message(document: object, parsed: _ParsedKey, where: str) -> str:
    key = parsed.text
    if isinstance(document, str):
        return (
            f"{where} is a plain string, which has only content, so it has no {key!r}; pass "
            f'documents as mappings or objects that carry it (e.g. {{"{parsed.fields[0]}": '
            '...}), or compare by content with key="content"'
        )
    looked = ", ".join(repr(f) for f in parsed.fields)
    below = f" then the path {'.'.join(parsed.path)!r}" if parsed.path else ""
    others = [f'key="{other}"' for other in ("content", "id") if other != key]
    if not parsed.path:
        others.append('key="metadata.<name>"')
    return (
        f"{where} has no {key!r} (looked for {looked}{below}) in a {type_name(document)}; "
        f"give every document that part, or compare by another: {' or '.join(others)}"
    )


def _frozen(value: Any, key: str, where: str) -> Hashable:
    try:
        return _freeze(value)
    except TypeError as exc:
        raise DocumentKeyError(
            f"{where}: the value of {key!r} cannot be compared: {exc}; compare by another "
            'part, e.g. key="id"'
        ) from exc


def document_keys(
    documents: Iterable[object], key: DocumentKey = "content", *, what: str = "documents"
) -> list[Hashable | None]:
    """Return the key of every document, in order; ``None`` for a document without one.

    A ``None`` key matches nothing: a retrieved document without the compared part still
    occupies its rank, and a relevant one can never be found (the metrics leave it out of the
    relevant set, as Haystack does).

    Args:
        documents: The documents, in rank order for a retrieved list.
        key: ``"content"``, ``"id"`` or a metadata path such as ``"metadata.url"``.
        what: How error messages name the list, e.g. ``"retrieved"``.

    Returns:
        One key per document (duplicates kept, so that ranks are preserved).

    Raises:
        DocumentKeyError: A document's value cannot be compared (e.g. a set); the message
            names its index.
        ConfigurationError: ``key`` is not one of the accepted forms.
        TypeError: ``documents`` is a single string rather than a list of documents.

    Example:
        >>> document_keys(["a", {"content": "b"}, {"id": "c"}])
        ['a', 'b', None]
    """
    if isinstance(documents, str | bytes):
        raise TypeError(
            f"{what} must be a list of documents, got a single string; wrap it in a list"
        )
    parsed = _parse_key(check_document_key(key))
    keys: list[Hashable | None] = []
    for index, document in enumerate(documents):
        value = _resolve(document, parsed)
        keys.append(None if value is None else _frozen(value, key, f"{what}[{index}]"))
    return keys


def relevance_scores(documents: Sequence[object], *, what: str = "relevant") -> list[float] | None:
    """Return every document's ``score`` as a graded relevance, or ``None`` when none has one.

    A score is read from a mapping's ``"score"`` (or OpenInference ``"document.score"``) key or
    an object's ``score`` attribute (a Haystack ``Document``); plain strings have none.

    Args:
        documents: The relevant documents.
        what: How error messages name the list.

    Returns:
        One relevance per document, or ``None`` when no document carries a score (binary
        relevance).

    Raises:
        DocumentScoreError: Some documents have a score and others none, or a score is not a
            finite number ``>= 0``.

    Example:
        >>> relevance_scores([{"content": "a", "score": 3}, {"content": "b", "score": 1}])
        [3.0, 1.0]
    """
    raw = [None if isinstance(doc, str) else _lookup(doc, _SCORE_FIELDS) for doc in documents]
    if all(score is None for score in raw):
        return None
    scores: list[float] = []
    for index, score in enumerate(raw):
        if score is None:
            scored = next(i for i, other in enumerate(raw) if other is not None)
            raise DocumentScoreError(
                f"{what}[{scored}] has a score but {what}[{index}] has none: for graded "
                "relevance give every relevant document a score (0 for not relevant), or "
                "remove the scores for binary relevance"
            )
        scores.append(_relevance(score, f"{what}[{index}]"))
    return scores


def _relevance(score: object, where: str) -> float:
    """``score`` as a relevance: a real number (numpy's included), finite and ``>= 0``."""
    if isinstance(score, Real) and not isinstance(score, bool):
        value = float(score)
        if math.isfinite(value) and value >= 0:
            return value
    raise DocumentScoreError(
        f"{where} has the score {safe_repr(score)} ({type_name(score)}); a graded relevance "
        "must be a finite number >= 0"
    )
