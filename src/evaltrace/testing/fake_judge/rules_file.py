"""Rules files: the fake judge's script written as YAML or JSON, for ``evaltrace fake-llm``.

A rules file is a mapping with one key, ``rules``: a list of rules tried in order, the first
whose conditions all hold answering the request. Each rule is a mapping:

=================  ======================================================================
key                meaning
=================  ======================================================================
``match``          a substring of the request's whole text (every message)
``match_regex``    a regular expression searched for in it
``user``           a substring of the last user message
``user_regex``     a regular expression searched for in it
``system``         a substring of the system (or developer) prompt
``system_regex``   a regular expression searched for in it
``model``          the model the request names, exactly
``content``        the text of the reply
``choice``         the choice of a forced tool call (autoevals' ``select_choice``)
``reasons``        the ``reasons`` of that tool call
``json``           a JSON object: a forced tool call's arguments, or a structured reply
``sequence``       answers for successive calls (text or objects), the last repeating
``tool_call``      ``{name: TOOL, arguments: {...}}``: the model calls an offered tool
``latency``        seconds to wait before answering
``status``         an HTTP error status (400-599) to answer with instead
``endpoint``       ``chat/completions``, ``responses``, ``embeddings`` or ``moderations``
=================  ======================================================================

A rule without conditions matches every request. The keys are those of
:meth:`FakeJudgeServer.add_rule <evaltrace.testing.fake_judge.FakeJudgeServer.add_rule>`,
except that a pattern is a ``*_regex`` key and a scripted tool call names its tool and its
arguments together. YAML is read with the YAML 1.2 booleans (only ``true`` and ``false``), so
an unquoted ``Y`` or ``no`` stays text, as a judge's choice should.

Example:
    >>> from evaltrace.testing.fake_judge import FakeJudgeServer
    >>> judge = FakeJudgeServer()  # doctest: +SKIP
    >>> judge.add_rules(read_rules("rules.yaml"))  # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import yaml

from evaltrace.errors import ConfigurationError, EvaltraceError
from evaltrace.testing.fake_judge._wire import Endpoint
from evaltrace.testing.fake_judge.server import Rule, TextMatch

__all__ = ["RULE_KEYS", "RulesFileError", "read_rules"]

_CONDITIONS: Final = ("match", "user", "system")
RULE_KEYS: Final = (
    *(key for name in _CONDITIONS for key in (name, f"{name}_regex")),
    "model",
    "content",
    "choice",
    "reasons",
    "json",
    "sequence",
    "tool_call",
    "latency",
    "status",
    "endpoint",
)
"""The keys a rule of a rules file may have."""
_TOOL_CALL_KEYS: Final = ("name", "arguments")


class RulesFileError(EvaltraceError, ValueError):
    """A rules file cannot be read, or one of its rules is not valid.

    The message names the file, the rule (``rules[2]``) and the key.
    """


class _YamlLoader(yaml.SafeLoader):
    """The safe loader with YAML 1.2's booleans: ``Y``, ``yes``, ``on`` and ``no`` stay text."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def read_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """Read the rules of a rules file (YAML, or JSON when its name ends in ``.json``).

    Args:
        path: The rules file.

    Returns:
        The rules in file order, each checked; give them to
        :meth:`~evaltrace.testing.fake_judge.FakeJudgeServer.add_rules`.

    Raises:
        RulesFileError: The file cannot be read or parsed, or a rule has an unknown key, a
            value of the wrong type, an invalid regular expression or contradicting keys; the
            message names the file, the rule's index and the key.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise RulesFileError(f"{file}: cannot be read: {reason or error}") from None
    document = _parse(file, text)
    if not isinstance(document, dict) or set(document) != {"rules"}:
        found = sorted(document) if isinstance(document, dict) else _kind(document)
        raise RulesFileError(
            f"{file}: expected a mapping with the key rules (a list of rules), found {found}; "
            "write `rules:` and the rules below it, each a mapping such as "
            "`- {user: hello, content: hi}`"
        )
    listed = document["rules"]
    if not isinstance(listed, list):
        raise RulesFileError(f"{file}: rules: expected a list of rules, found {_kind(listed)}")
    return [_rule(file, index, given) for index, given in enumerate(listed)]


def _parse(file: Path, text: str) -> Any:
    if file.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise RulesFileError(
                f"{file}: not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
            ) from None
    try:
        return yaml.load(text, Loader=_YamlLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise RulesFileError(f"{file}: not valid YAML: {problem}{where}") from None


def _rule(file: Path, index: int, given: Any) -> Rule:
    place = f"{file}: rules[{index}]"
    if not isinstance(given, dict):
        raise RulesFileError(
            f"{place}: expected a mapping of keys such as user and content, found {_kind(given)}"
        )
    for key in given:
        if key not in RULE_KEYS:
            raise RulesFileError(f"{place}: unknown key {key!r}{_suggestion(key, RULE_KEYS)}")
    read = _Reader(place, given)
    conditions = {name: read.condition(name) for name in _CONDITIONS}
    tool_call, arguments = read.tool_call()
    answer = read.json("json")
    if arguments is not None and answer is not None:
        raise RulesFileError(
            f"{place}: give the tool call's arguments in tool_call.arguments or json, not both"
        )
    try:
        return Rule(
            match=conditions["match"] or "",
            user=conditions["user"],
            system=conditions["system"],
            model=read.text("model"),
            content=read.text("content"),
            choice=read.text("choice"),
            reasons=read.text("reasons"),
            json=arguments if arguments is not None else answer,
            sequence=read.sequence(),
            tool_call=tool_call,
            latency=read.seconds("latency"),
            status=read.status(),
            endpoint=cast("Endpoint | None", read.text("endpoint")),  # Rule checks it
        )
    except ConfigurationError as error:
        raise RulesFileError(f"{place}: {error}") from None


class _Reader:
    """Reads the keys of one rule, each checked for its type; errors name the rule and key."""

    def __init__(self, place: str, given: Mapping[str, Any]) -> None:
        self._place = place
        self._given = given

    def _wrong(self, key: str, expected: str) -> RulesFileError:
        value = self._given[key]
        return RulesFileError(f"{self._place}.{key}: expected {expected}, found {value!r}")

    def text(self, key: str) -> str | None:
        value = self._given.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self._wrong(key, "text")

    def condition(self, name: str) -> TextMatch | None:
        plain, pattern = self.text(name), self.text(f"{name}_regex")
        if plain is not None and pattern is not None:
            raise RulesFileError(f"{self._place}: give {name} or {name}_regex, not both")
        if pattern is None:
            return plain
        try:
            return re.compile(pattern)
        except re.error as error:
            raise RulesFileError(
                f"{self._place}.{name}_regex: not a regular expression: {error} in {pattern!r}"
            ) from None

    def json(self, key: str) -> dict[str, Any] | None:
        value = self._given.get(key)
        if value is None or isinstance(value, dict):
            return value
        raise self._wrong(key, "a mapping (a JSON object)")

    def sequence(self) -> tuple[str | dict[str, Any], ...]:
        value = self._given.get("sequence")
        if value is None:
            return ()
        if not isinstance(value, list) or not value:
            raise self._wrong("sequence", "a list of answers (text or mappings)")
        for position, item in enumerate(value):
            if not isinstance(item, str | dict):
                raise RulesFileError(
                    f"{self._place}.sequence[{position}]: expected text or a mapping, found "
                    f"{item!r}"
                )
        return tuple(value)

    def tool_call(self) -> tuple[str | None, dict[str, Any] | None]:
        value = self._given.get("tool_call")
        if value is None:
            return None, None
        if not isinstance(value, dict):
            raise self._wrong("tool_call", "a mapping with name and arguments")
        for key in value:
            if key not in _TOOL_CALL_KEYS:
                raise RulesFileError(
                    f"{self._place}.tool_call: unknown key {key!r}"
                    f"{_suggestion(key, _TOOL_CALL_KEYS)}; a tool call has name and arguments"
                )
        name, arguments = value.get("name"), value.get("arguments")
        if not isinstance(name, str) or not name:
            raise RulesFileError(
                f"{self._place}.tool_call.name: expected the name of a tool the request "
                f"offers, found {name!r}"
            )
        if arguments is not None and not isinstance(arguments, dict):
            raise RulesFileError(
                f"{self._place}.tool_call.arguments: expected a mapping (the JSON object of "
                f"arguments), found {arguments!r}"
            )
        return name, arguments

    def seconds(self, key: str) -> float | None:
        value = self._given.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._wrong(key, "a number of seconds")
        return float(value)

    def status(self) -> int | None:
        value = self._given.get("status")
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise self._wrong("status", "an HTTP error status such as 503")


def _suggestion(key: Any, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    keys = ", ".join(known)
    return f" (did you mean {close[0]!r}?)" if close else f"; the keys are {keys}"


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    kinds: dict[type, str] = {dict: "a mapping", list: "a list", str: "text"}
    return kinds.get(type(value), type(value).__name__)
