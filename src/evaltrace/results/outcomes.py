"""Agent and task outcomes read from stored traces (multi-agent task runs).

A *task run* is one attempt at a task by one or more agents; each agent leaves one trace file
(the JSONL of :func:`~evaltrace.save_traces`, or OTLP-JSON) in the run's folder.
:func:`analyze_agent_log` reads one file into an :class:`AgentOutcome`;
:func:`extract_task_outcome` reads every file of a run folder into a :class:`TaskOutcome`,
with the task's type, agent count and difficulty taken from its :class:`TaskDefinition`
(never guessed from folder names); :func:`collect_task_outcomes` does that for every run
folder of an experiment, and :func:`format_outcome_summary` prints the success rates.

What an agent's trace must record:

- **its score**: a value recorded with ``wrap(score, purpose="output", name="score")`` (or
  ``purpose="state"``), a number in ``[0, 1]``; 1.0 is a success. When the name is recorded
  more than once, the last value recorded counts. Another name can be given as
  ``score_name``.
- **a timeout**: a root span that ended with a timeout error (an exception of one of the
  types :data:`~evaltrace.results.model.TIMEOUT_ERROR_TYPES`, such as ``TimeoutError``, raised
  out of the agent's ``@wrap`` function), or an event named :data:`TIMEOUT_EVENT` on any span
  (for a harness that stops the agent: ``span.add_event("evaltrace.timeout")``). A timeout
  inside the run that the agent recovered from (a retried model call) is not the agent's
  timeout.
- **its final message** (optional): a value recorded with ``name="final_message"``; else the
  text of the last model answer in the trace.

An agent's status, first match wins:

====================== ===============================================================
LOG_FILE_ERROR         the file is missing, unreadable, empty, or not a whole trace (a
                       corrupt or truncated line), or its score is not a number in [0, 1]
SUCCESS                its score is 1.0 (even if it then timed out)
TIMED_OUT              it timed out (a score below 1 it logged is kept as ``raw_score``)
FAILED_PARTIAL_SCORE   its score is between 0 and 1
FAILED_SCORE_ZERO      its score is 0
NO_SCORE_LOGGED        it logged no score
====================== ===============================================================

A task's status comes from its agents' statuses, by :func:`combine_agent_statuses`: with no
agent file at all it is NO_SCORE_LOGGED (the run left nothing); otherwise the first status of
:data:`TASK_STATUS_PRECEDENCE` that any agent has, where a missing agent file (fewer files than
the definition's ``agent_count``) counts as a LOG_FILE_ERROR agent, and more files than agents
make the task LOG_FILE_ERROR. (``ERROR`` is in the precedence for outcomes built by hand; a
trace file never gives it.) So an unreadable log is never dropped: it makes the task
LOG_FILE_ERROR and the run is not counted a success until the log is fixed. A score of 1.0 from
any agent makes the task a success (agents report the task's own score, so the success rate is
the one of "any agent logged a score of 1"), ahead of another agent's timeout.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, ValidationError

from evaltrace._safe_text import exception_message, safe_repr
from evaltrace.errors import ConfigurationError, TraceFormatError
from evaltrace.results.model import TIMEOUT_ERROR_TYPES, CompletionStatus
from evaltrace.trace import LLMSpan, ObservationNode, load_traces, walk_trace

__all__ = [
    "AGENT_FILE_SUFFIXES",
    "TASK_STATUS_PRECEDENCE",
    "TIMEOUT_EVENT",
    "AgentOutcome",
    "TaskDefinition",
    "TaskOutcome",
    "TaskOutcomes",
    "analyze_agent_log",
    "collect_task_outcomes",
    "combine_agent_statuses",
    "extract_task_outcome",
    "format_outcome_summary",
    "load_task_definitions",
]

S = CompletionStatus

TIMEOUT_EVENT: Final = "evaltrace.timeout"
"""A span event with this name marks the agent's run as timed out."""

AGENT_FILE_SUFFIXES: Final = (".jsonl", ".json")
"""The files of a task run folder read as agents' traces (other files are left alone)."""

TASK_STATUS_PRECEDENCE: Final = (
    S.LOG_FILE_ERROR,
    S.ERROR,
    S.SUCCESS,
    S.TIMED_OUT,
    S.FAILED_PARTIAL_SCORE,
    S.FAILED_SCORE_ZERO,
    S.NO_SCORE_LOGGED,
)
"""A task's status is the first of these that any of its agents has."""

_FINAL_MESSAGE = "final_message"
_SCORED_PURPOSES = frozenset({"output", "state"})


class AgentOutcome(BaseModel):
    """What one agent's trace file says about its run of a task."""

    model_config = ConfigDict(frozen=True)

    path: str | None
    """The trace file; ``None`` for an agent whose file is missing from the run folder."""
    raw_score: float | None = None
    """The score the agent logged, in ``[0, 1]``; ``None`` when it logged none."""
    completion_status: CompletionStatus
    """How the agent's run ended (see the module documentation for the precedence)."""
    final_message: str | None = None
    """The agent's ``final_message`` value, else its last model answer."""
    log_processed: bool = True
    """Whether the file was read as a whole trace."""
    parse_errors: list[str] = Field(default_factory=list)
    """Why the file (or its score) could not be read; empty when it could."""
    timed_out: bool = False
    """Whether the run timed out (a timeout error out of a root span, or a timeout event)."""
    error: str | None = None
    """The error a root span ended with (``"Type: message"``), if any."""
    models: list[str] = Field(default_factory=list)
    """The models of the agent's model calls, sorted."""


class TaskDefinition(BaseModel):
    """What is known of a task before it runs: read from the task definitions file.

    Other keys of a definition (goals, inventories, ...) are accepted and ignored.

    Example:
        >>> task = {"task_id": "t1", "type": "cooking", "agent_count": 2}
        >>> TaskDefinition.model_validate(task).task_type
        'cooking'
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    task_id: str = Field(min_length=1)
    """The task's id; a task run folder named this way holds a run of it."""
    task_type: str = Field(validation_alias=AliasChoices("task_type", "type"), min_length=1)
    """The kind of task (``cooking``, ``crafting``, ...), given as ``type`` or ``task_type``."""
    agent_count: int = Field(ge=1)
    """How many agents take part: the number of trace files a run must leave."""
    difficulty: JsonValue = None
    """The task's difficulty as the definition gives it (a label or a number), if any."""
    difficulty_metrics: dict[str, JsonValue] = Field(default_factory=dict)
    """Measures of the task's difficulty (``total_recipe_steps``, ...)."""


class TaskOutcome(BaseModel):
    """The outcome of one run of a task, from all its agents' trace files."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    """The task's id (from its definition)."""
    task_type: str
    """The kind of task (from its definition)."""
    agent_count: int
    """How many agents the definition says take part."""
    difficulty: JsonValue = None
    """The task's difficulty (from its definition)."""
    difficulty_metrics: dict[str, JsonValue] = Field(default_factory=dict)
    """Measures of the task's difficulty (from its definition)."""
    folder: str
    """The task run folder that was read."""
    model_name: str | None = None
    """The model the agents called (several are joined with ``", "``); ``None`` if no call."""
    overall_raw_score: float | None = None
    """The best score any agent logged; ``None`` when none logged a score."""
    overall_is_successful: bool
    """Whether the task status is SUCCESS."""
    overall_completion_status: CompletionStatus
    """The task's status, from its agents' (see :func:`combine_agent_statuses`)."""
    total_agent_logs_found: int
    """How many agent trace files the folder holds."""
    agent_outcomes: list[AgentOutcome]
    """One outcome per agent: the files in name order, then one per missing file."""
    problems: list[str] = Field(default_factory=list)
    """What is wrong with the run folder as a whole (files missing or too many)."""

    def to_record(self) -> dict[str, Any]:
        """The outcome as one flat row (``metric_<name>`` per difficulty metric).

        Example:
            >>> outcome.to_record()["overall_completion_status"]  # doctest: +SKIP
            'SUCCESS'
        """
        statuses = Counter(agent.completion_status for agent in self.agent_outcomes)
        return {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "agent_count": self.agent_count,
            "difficulty": self.difficulty,
            "model_name": self.model_name,
            "overall_raw_score": self.overall_raw_score,
            "overall_is_successful": self.overall_is_successful,
            "overall_completion_status": self.overall_completion_status.value,
            "total_agent_logs_found": self.total_agent_logs_found,
            "agent_statuses": ";".join(a.completion_status.value for a in self.agent_outcomes),
            "agents_timed_out": sum(agent.timed_out for agent in self.agent_outcomes),
            "agent_log_errors": statuses[S.LOG_FILE_ERROR],
            "problems": "; ".join(self.problems),
            "folder": self.folder,
            **{f"metric_{key}": value for key, value in self.difficulty_metrics.items()},
        }


class TaskOutcomes(BaseModel):
    """Every task run of an experiment folder, and what could not be matched."""

    model_config = ConfigDict(frozen=True)

    folder: str
    """The experiment folder that was read."""
    outcomes: list[TaskOutcome]
    """One outcome per task run folder with a definition, in folder name order."""
    unknown_folders: list[str] = Field(default_factory=list)
    """Run folders whose name is no task id of the definitions (not counted)."""
    tasks_without_run: list[str] = Field(default_factory=list)
    """Defined tasks with no run folder."""


def analyze_agent_log(path: str | os.PathLike[str], *, score_name: str = "score") -> AgentOutcome:
    """Read one agent's trace file into its outcome; never raises for a bad file.

    Args:
        path: A trace file: the JSONL of :func:`~evaltrace.save_traces`, or OTLP-JSON.
        score_name: The ``wrap`` name under which the agent recorded its score.

    Returns:
        The agent's score, status, final message and timeout; a file that cannot be read as
        a whole trace gives ``LOG_FILE_ERROR`` with the reason in ``parse_errors``.

    Example:
        >>> analyze_agent_log("runs/t1/agent_0.jsonl").completion_status  # doctest: +SKIP
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """
    name = os.fspath(path)
    try:
        trace = load_traces(path)
    except TraceFormatError as exc:
        return _unreadable(name, exception_message(exc))
    except OSError as exc:
        return _unreadable(name, f"{name}: cannot be read ({exception_message(exc)})")
    if not trace:
        return _unreadable(name, f"{name}: holds no span (an empty file)")
    score, score_error = _score(trace, score_name)
    timed_out = _timed_out(trace)
    if score_error is not None:
        status = S.LOG_FILE_ERROR
    elif score is not None and score >= 1.0:
        status = S.SUCCESS
    elif timed_out:
        status = S.TIMED_OUT
    elif score is None:
        status = S.NO_SCORE_LOGGED
    else:
        status = S.FAILED_SCORE_ZERO if score == 0.0 else S.FAILED_PARTIAL_SCORE
    models = {node.span.model for node in walk_trace(trace) if isinstance(node.span, LLMSpan)}
    return AgentOutcome(
        path=name,
        raw_score=score,
        completion_status=status,
        final_message=_final_message(trace),
        parse_errors=[] if score_error is None else [f"{name}: {score_error}"],
        timed_out=timed_out,
        error=_root_error(trace),
        models=sorted(model for model in models if model),
    )


def combine_agent_statuses(
    statuses: Sequence[CompletionStatus], *, missing_agents: int = 0, extra_files: int = 0
) -> CompletionStatus:
    """A task's status from its agents' statuses (see the module documentation).

    Args:
        statuses: The status of each agent file that was found.
        missing_agents: How many agents the definition names beyond the files found.
        extra_files: How many files were found beyond the definition's agent count.

    Returns:
        ``NO_SCORE_LOGGED`` when no file was found; ``LOG_FILE_ERROR`` when files are missing
        or too many; else the first status of :data:`TASK_STATUS_PRECEDENCE` any agent has.

    Example:
        >>> combine_agent_statuses([CompletionStatus.TIMED_OUT, CompletionStatus.SUCCESS])
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """
    if not statuses:
        return S.NO_SCORE_LOGGED
    if missing_agents or extra_files:
        return S.LOG_FILE_ERROR
    present = set(statuses)
    return next(status for status in TASK_STATUS_PRECEDENCE if status in present)


def extract_task_outcome(
    folder: str | os.PathLike[str],
    task_definition: TaskDefinition | Mapping[str, Any],
    *,
    score_name: str = "score",
) -> TaskOutcome:
    """Read every agent trace file of one task run folder into the task's outcome.

    The agent files are the folder's files ending in ``.jsonl`` or ``.json`` (not hidden,
    subfolders left alone), read in natural name order (``agent_2`` before ``agent_10``).

    Args:
        folder: The task run folder.
        task_definition: The task's definition (a :class:`TaskDefinition` or its mapping);
            its type, agent count and difficulty are carried into the outcome.
        score_name: The ``wrap`` name under which agents recorded their score.

    Returns:
        The task's outcome; see the module documentation for how its status is derived.

    Raises:
        ConfigurationError: ``folder`` is not a folder, or the definition is invalid.

    Example:
        >>> definition = {"task_id": "t1", "type": "cooking", "agent_count": 2}
        >>> extract_task_outcome("runs/t1", definition).overall_is_successful  # doctest: +SKIP
        True
    """
    definition = _definition(task_definition, "task_definition")
    where = _folder(folder, f"task run folder of task {definition.task_id!r}", "the agents' traces")
    files = sorted(
        (
            path
            for path in where.iterdir()
            if path.is_file()
            and path.suffix in AGENT_FILE_SUFFIXES
            and not path.name.startswith(".")
        ),
        key=lambda path: _natural_key(path.name),
    )
    agents = [analyze_agent_log(path, score_name=score_name) for path in files]
    missing = max(definition.agent_count - len(files), 0) if files else 0
    extra = max(len(files) - definition.agent_count, 0)
    problems: list[str] = []
    if missing:
        problems.append(
            f"{where}: {len(files)} agent trace file(s) for the {definition.agent_count} agents "
            f"of task {definition.task_id!r}; {missing} missing"
        )
        agents.extend(
            AgentOutcome(
                path=None,
                completion_status=S.LOG_FILE_ERROR,
                log_processed=False,
                parse_errors=[problems[0]],
            )
            for _ in range(missing)
        )
    if extra:
        problems.append(
            f"{where}: {len(files)} agent trace files, but task {definition.task_id!r} has "
            f"{definition.agent_count} agent(s); remove the files that are not this run's"
        )
    status = combine_agent_statuses(
        [agent.completion_status for agent in agents[: len(files)]],
        missing_agents=missing,
        extra_files=extra,
    )
    scores = [agent.raw_score for agent in agents if agent.raw_score is not None]
    models = sorted({model for agent in agents for model in agent.models})
    return TaskOutcome(
        task_id=definition.task_id,
        task_type=definition.task_type,
        agent_count=definition.agent_count,
        difficulty=definition.difficulty,
        difficulty_metrics=definition.difficulty_metrics,
        folder=os.fspath(folder),
        model_name=", ".join(models) or None,
        overall_raw_score=max(scores) if scores else None,
        overall_is_successful=status is S.SUCCESS,
        overall_completion_status=status,
        total_agent_logs_found=len(files),
        agent_outcomes=agents,
        problems=problems,
    )


def load_task_definitions(path: str | os.PathLike[str]) -> dict[str, TaskDefinition]:
    """Read a task definitions file: a JSON object keyed by task id, or a list of objects.

    In the object form (``{"cooking_1": {"type": "cooking", "agent_count": 2}, ...}``) each
    key is the task id; in the list form each object has a ``task_id``.

    Args:
        path: The JSON file.

    Returns:
        The definitions by task id, in file order.

    Raises:
        ConfigurationError: The file cannot be read, is not JSON of either form, repeats a
            task id, or a definition is invalid; the message names the file and the task.
    """
    name = os.fspath(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(
            f"task definitions file {name!r} cannot be read: {exception_message(exc)}"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigurationError(
            f"task definitions file {name!r} is not JSON: {exception_message(exc)}"
        ) from None
    items: list[tuple[str, Any]]
    if isinstance(data, dict):
        items = []
        for key, value in data.items():
            if isinstance(value, dict) and value.get("task_id", key) != key:
                raise ConfigurationError(
                    f"{name}: task {key!r} has task_id {value['task_id']!r}; the key of a "
                    "definition is its task id, so drop task_id or make the two the same"
                )
            items.append((key, {**value, "task_id": key} if isinstance(value, dict) else value))
    elif isinstance(data, list):
        items = [(f"[{index}]", value) for index, value in enumerate(data)]
    else:
        raise ConfigurationError(
            f"task definitions file {name!r} must hold a JSON object keyed by task id or a "
            f"list of definitions; found {type(data).__name__}"
        )
    definitions: dict[str, TaskDefinition] = {}
    for key, value in items:
        definition = _definition(value, f"{name}: task {key}")
        if definition.task_id in definitions:
            raise ConfigurationError(
                f"{name}: task id {definition.task_id!r} is defined twice; task ids are unique"
            )
        definitions[definition.task_id] = definition
    return definitions


def collect_task_outcomes(
    folder: str | os.PathLike[str],
    tasks: Mapping[str, TaskDefinition] | str | os.PathLike[str],
    *,
    score_name: str = "score",
) -> TaskOutcomes:
    """Read every task run folder of an experiment folder (``FOLDER/<task_id>/<agent files>``).

    Args:
        folder: The experiment folder: one subfolder per task run, named by its task id.
        tasks: The task definitions by task id, or the path of a task definitions file.
        score_name: The ``wrap`` name under which agents recorded their score.

    Returns:
        The outcome of each subfolder named by a task id, with the subfolders that match
        no task and the tasks that have no subfolder.

    Raises:
        ConfigurationError: ``folder`` is not a folder, or the definitions cannot be read.

    Example:
        >>> found = collect_task_outcomes("runs", "tasks.json")  # doctest: +SKIP
        >>> print(format_outcome_summary(found))  # doctest: +SKIP
    """
    definitions = tasks if isinstance(tasks, Mapping) else load_task_definitions(tasks)
    where = _folder(folder, "experiment folder", "one subfolder per task run")
    runs = sorted(
        (path for path in where.iterdir() if path.is_dir() and not path.name.startswith(".")),
        key=lambda path: _natural_key(path.name),
    )
    outcomes = [
        extract_task_outcome(path, definitions[path.name], score_name=score_name)
        for path in runs
        if path.name in definitions
    ]
    run_names = {path.name for path in runs}
    return TaskOutcomes(
        folder=os.fspath(folder),
        outcomes=outcomes,
        unknown_folders=[path.name for path in runs if path.name not in definitions],
        tasks_without_run=[task for task in definitions if task not in run_names],
    )


def format_outcome_summary(outcomes: TaskOutcomes | Iterable[TaskOutcome]) -> str:
    """The success rate overall and by task type, the statuses, and what was not counted.

    Example:
        >>> print(format_outcome_summary(found))  # doctest: +SKIP
        4 task runs, 3 successful: success rate 75.0%
        ...
    """
    collected = outcomes if isinstance(outcomes, TaskOutcomes) else None
    runs: list[TaskOutcome] = (
        collected.outcomes if collected is not None else list(cast(Iterable[TaskOutcome], outcomes))
    )
    successes = sum(outcome.overall_is_successful for outcome in runs)
    lines = [
        f"{len(runs)} task runs, {successes} successful: success rate {_rate(successes, len(runs))}"
    ]
    by_type: dict[str, list[TaskOutcome]] = {}
    for outcome in runs:
        by_type.setdefault(outcome.task_type, []).append(outcome)
    if by_type:
        width = max(len(task_type) for task_type in by_type)
        lines.append("by task type:")
        for task_type in sorted(by_type):
            group = by_type[task_type]
            won = sum(outcome.overall_is_successful for outcome in group)
            lines.append(
                f"  {task_type:<{width}}  {len(group):>5} runs  {won:>5} successful  "
                f"{_rate(won, len(group)):>6}"
            )
        counts = Counter(outcome.overall_completion_status for outcome in runs)
        lines.append(
            "statuses: "
            + ", ".join(f"{s.value} {counts[s]}" for s in TASK_STATUS_PRECEDENCE if counts[s])
        )
    if collected is not None and collected.unknown_folders:
        lines.append(
            "folders with no task definition (not counted): " + ", ".join(collected.unknown_folders)
        )
    if collected is not None and collected.tasks_without_run:
        lines.append("tasks with no run folder: " + ", ".join(collected.tasks_without_run))
    return "\n".join(lines)


def _folder(folder: str | os.PathLike[str], what: str, holds: str) -> Path:
    where = Path(folder)
    if not where.is_dir():
        raise ConfigurationError(
            f"{what} {os.fspath(folder)!r} is not a folder; give the folder that holds {holds}"
        )
    return where


def _rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _unreadable(path: str, reason: str) -> AgentOutcome:
    return AgentOutcome(
        path=path,
        completion_status=S.LOG_FILE_ERROR,
        log_processed=False,
        parse_errors=[reason],
    )


def _score(trace: list[ObservationNode], score_name: str) -> tuple[float | None, str | None]:
    """The last score recorded under ``score_name``, or why it is not a valid score."""
    values = [
        value
        for node in walk_trace(trace)
        for value in node.span.named_values
        if value.name == score_name and value.purpose in _SCORED_PURPOSES
    ]
    if not values:
        return None, None
    raw = max(values, key=lambda value: value.timestamp_ns).value
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None, f"the {score_name!r} value {safe_repr(raw)} is not a number in [0, 1]"
    if not 0.0 <= raw <= 1.0:
        return None, f"the {score_name!r} value {raw!r} is outside [0, 1]"
    return float(raw), None


def _timed_out(trace: list[ObservationNode]) -> bool:
    for node in trace:
        error = node.span.error
        if node.span.status == "error" and error is not None and error.type in TIMEOUT_ERROR_TYPES:
            return True
    return any(
        event.name == TIMEOUT_EVENT
        for node in walk_trace(trace)
        for event in node.span.record.events
    )


def _root_error(trace: list[ObservationNode]) -> str | None:
    for node in trace:
        error = node.span.error
        if node.span.status == "error" and error is not None:
            return f"{error.type}: {error.message}" if error.type else error.message
    return None


def _final_message(trace: list[ObservationNode]) -> str | None:
    nodes = list(walk_trace(trace))
    recorded = [
        value for node in nodes for value in node.span.named_values if value.name == _FINAL_MESSAGE
    ]
    if recorded:
        value = max(recorded, key=lambda item: item.timestamp_ns).value
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    answers = [
        node.span
        for node in nodes
        if isinstance(node.span, LLMSpan) and node.span.output_text is not None
    ]
    if not answers:
        return None
    return max(answers, key=lambda span: span.record.end_time_ns).output_text


def _natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``agent_2`` before ``agent_10``: digit runs compare as numbers."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part
    )


def _definition(value: Any, where: str) -> TaskDefinition:
    if isinstance(value, TaskDefinition):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{where}: a task definition must be an object with task_id, type and "
            f"agent_count; found {type(value).__name__}"
        )
    try:
        return TaskDefinition.model_validate(dict(value))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'definition'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigurationError(
            f"{where}: invalid task definition ({problems}). A definition needs task_id, "
            'type (or task_type) and agent_count, e.g. {"type": "cooking", "agent_count": 2}'
        ) from None
