"""Agent and task outcomes read from agents' logs (multi-agent task runs, Mindcraft experiments).

A *task run* is one attempt at a task by one or more agents; each agent leaves one log in the
run's folder. Two kinds of log are read, told apart by their content:

- a **chat transcript**, as Mindcraft writes it: a JSON list of ``{"role", "content"}``
  messages, or an object whose ``turns`` is that list (a bot's ``memory.json``);
- a **trace file**: the JSONL of :func:`~evaltrace.save_traces`, OTLP-JSON, or Phoenix span
  JSON.

:func:`analyze_agent_log` reads one log into an :class:`AgentOutcome`;
:func:`extract_task_outcomes` reads a task folder into one :class:`TaskOutcome` per
repetition, with the task's type, agent count and difficulty taken from its
:class:`TaskDefinition` (never guessed from folder names); :func:`collect_task_outcomes` does
that for every task folder under one or several experiment folders, and
:func:`format_outcome_summary` prints the success rates.

What a chat transcript must hold (only ``system`` messages are read):

- **its score**: a message matching the score pattern (:data:`DEFAULT_SCORE_PATTERN`,
  ``Task ended with score : X``), whose group is a number in ``[0, 1]``; when several match,
  the last counts;
- **a timeout**: a message containing the timeout marker (:data:`DEFAULT_TIMEOUT_MARKER`,
  ``Task timeout reached``);
- its final message is its last system message.

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
LOG_FILE_ERROR         the file is missing, unreadable, empty, or not a whole log (cut
                       off, a corrupt line), or its score is not a number in [0, 1]
SUCCESS                its score is 1.0 (even if it also timed out)
TIMED_OUT              it timed out (a score below 1 it logged is kept as ``raw_score``)
FAILED_PARTIAL_SCORE   its score is between 0 and 1
FAILED_SCORE_ZERO      its score is 0
NO_SCORE_LOGGED        it logged no score
====================== ===============================================================

A task's status comes from its agents' statuses, by :func:`combine_agent_statuses`: with no
agent log at all it is NO_SCORE_LOGGED (the run left nothing); with more logs than the
definition's ``agent_count`` it is LOG_FILE_ERROR (logs of another run may be mixed in);
otherwise it is the first status of :data:`TASK_STATUS_PRECEDENCE` that any agent has, a
missing log counting as a LOG_FILE_ERROR agent. The agents of a task share its score, so one
agent's success settles the task: a success beside an unreadable or missing log is SUCCESS,
with the problem listed. Any other status could be overruled by what the unreadable log
holds, so beside one the task is LOG_FILE_ERROR: an unreadable log is never dropped, and
never hides a failure as a success.

Several runs of a task may share its folder, each agent's log named ``<agent>_<n>.json`` for
repetition ``n`` (``andy_0.json``, ``jill_0.json``, ``andy_1.json``, ...): the logs are one
repetition per ``n`` when every log is named so and either two or more agent names occur or
the task has one agent. (Logs numbered ``agent_0``, ``agent_1`` of a task of two agents are
the agents of one run.)
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue, ValidationError

from evaltrace._safe_text import exception_message, safe_repr
from evaltrace.errors import ConfigurationError, TraceFormatError
from evaltrace.results.model import TIMEOUT_ERROR_TYPES, CompletionStatus
from evaltrace.trace import LLMSpan, ObservationNode, load_traces, walk_trace

__all__ = [
    "AGENT_FILE_SUFFIXES",
    "DEFAULT_SCORE_PATTERN",
    "DEFAULT_TIMEOUT_MARKER",
    "TASK_STATUS_PRECEDENCE",
    "TIMEOUT_EVENT",
    "AgentOutcome",
    "TaskDefinition",
    "TaskDefinitions",
    "TaskOutcome",
    "TaskOutcomes",
    "analyze_agent_log",
    "collect_task_outcomes",
    "combine_agent_statuses",
    "extract_task_outcome",
    "extract_task_outcomes",
    "format_outcome_summary",
    "load_task_definitions",
]

S = CompletionStatus

TIMEOUT_EVENT: Final = "evaltrace.timeout"
"""A span event with this name marks the agent's run as timed out."""

DEFAULT_SCORE_PATTERN: Final = r"Task ended with score : (\S+)"
"""The system message of a chat transcript that gives the agent's score (Mindcraft's); the
first group (or the group named ``score``) is the score."""

DEFAULT_TIMEOUT_MARKER: Final = "Task timeout reached"
"""A system message of a chat transcript containing this text marks a timeout (Mindcraft's)."""

AGENT_FILE_SUFFIXES: Final = (".jsonl", ".json")
"""The files of a task run folder read as agents' logs (other files are left alone)."""

TASK_STATUS_PRECEDENCE: Final = (
    S.SUCCESS,
    S.LOG_FILE_ERROR,
    S.ERROR,
    S.TIMED_OUT,
    S.FAILED_PARTIAL_SCORE,
    S.FAILED_SCORE_ZERO,
    S.NO_SCORE_LOGGED,
)
"""A task's status is the first of these that any of its agents has."""

_FINAL_MESSAGE = "final_message"
_SCORED_PURPOSES = frozenset({"output", "state"})
_REPETITION = re.compile(r"(?P<agent>.+)_(?P<repetition>\d+)")
_SHOWN_PROBLEMS = 20
_LOG_SHAPES = (
    'An agent log is a chat transcript (a JSON list of {"role", "content"} messages, or an '
    'object with "turns") or a trace file (JSON lines, OTLP-JSON or Phoenix span JSON).'
)


class AgentOutcome(BaseModel):
    """What one agent's log says about its run of a task."""

    model_config = ConfigDict(frozen=True)

    path: str | None
    """The log file; ``None`` for an agent whose log is missing from the run folder."""
    raw_score: float | None = None
    """The score the agent logged, in ``[0, 1]``; ``None`` when it logged none."""
    completion_status: CompletionStatus
    """How the agent's run ended (see the module documentation for the precedence)."""
    final_message: str | None = None
    """A transcript's last system message; a trace's ``final_message`` value, else its last
    model answer."""
    log_processed: bool = True
    """Whether the file was read as a whole log."""
    parse_errors: list[str] = Field(default_factory=list)
    """Why the file (or its score) could not be read; empty when it could."""
    timed_out: bool = False
    """Whether the run timed out (the timeout marker, a timeout error out of a root span, or
    a timeout event)."""
    error: str | None = None
    """The error a trace's root span ended with (``"Type: message"``), if any."""
    models: list[str] = Field(default_factory=list)
    """The models of the agent's model calls in a trace, sorted (a transcript names none)."""


class TaskDefinition(BaseModel):
    """What is known of a task before it runs: read from the task definitions file.

    Other keys of a definition (goals, inventories, recipes, ...) are accepted and ignored.

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
    agent_count: int = Field(default=1, ge=1)
    """How many agents take part: the number of logs a run leaves (1 when not given)."""
    difficulty: JsonValue = None
    """The task's difficulty as the definition gives it (a label or a number), if any."""
    difficulty_metrics: dict[str, JsonValue] = Field(default_factory=dict)
    """Measures of the task's difficulty (``total_recipe_steps``, ...)."""


@dataclass(frozen=True, kw_only=True, eq=False)
class TaskDefinitions(Mapping[str, TaskDefinition]):
    """The definitions of a task definitions file by task id, and the tasks it had to skip.

    A mapping: ``definitions["cooking_1"]``, ``list(definitions)``, ``len(definitions)``.
    """

    definitions: dict[str, TaskDefinition]
    """The valid definitions by task id, in file order."""
    problems: list[str] = field(default_factory=list)
    """One line per task that was skipped: the file, the task and what is wrong with it."""

    def __getitem__(self, task_id: str) -> TaskDefinition:
        """The definition of ``task_id``."""
        return self.definitions[task_id]

    def __iter__(self) -> Iterator[str]:
        """The task ids, in file order."""
        return iter(self.definitions)

    def __len__(self) -> int:
        """How many tasks are defined."""
        return len(self.definitions)


class TaskOutcome(BaseModel):
    """The outcome of one run of a task, from all its agents' logs."""

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
    repetition: int | None = None
    """The run's number ``n`` when the folder holds repetitions (logs ``<agent>_<n>``)."""
    model_name: str | None = None
    """The model the agents called (several are joined with ``", "``), else the one read
    from the folder's path (``model_from_path``); ``None`` when neither names one."""
    overall_raw_score: float | None = None
    """The best score any agent logged; ``None`` when none logged a score."""
    overall_is_successful: bool
    """Whether the task status is SUCCESS."""
    overall_completion_status: CompletionStatus
    """The task's status, from its agents' (see :func:`combine_agent_statuses`)."""
    total_agent_logs_found: int
    """How many agent logs the run left (in its folder, or of its repetition)."""
    agent_outcomes: list[AgentOutcome]
    """One outcome per agent: the logs in name order, then one per missing log."""
    problems: list[str] = Field(default_factory=list)
    """What is wrong with the run as a whole (logs missing or too many, a path that does
    not fit ``model_from_path``)."""

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
            "repetition": self.repetition,
            "overall_raw_score": self.overall_raw_score,
            "overall_is_successful": self.overall_is_successful,
            "overall_completion_status": self.overall_completion_status.value,
            "total_agent_logs_found": self.total_agent_logs_found,
            "agent_statuses": ";".join(a.completion_status.value for a in self.agent_outcomes),
            "agents_timed_out": sum(agent.timed_out for agent in self.agent_outcomes),
            "agent_log_errors": statuses[S.LOG_FILE_ERROR],
            "problems": "; ".join(self.problems),
            "parse_errors": "; ".join(self.parse_errors),
            "folder": self.folder,
            **{f"metric_{key}": value for key, value in self.difficulty_metrics.items()},
        }

    @property
    def parse_errors(self) -> list[str]:
        """Why each agent log that was found could not be read (missing logs are problems)."""
        return [
            error
            for agent in self.agent_outcomes
            if agent.path is not None
            for error in agent.parse_errors
        ]


class TaskOutcomes(BaseModel):
    """Every task run under some experiment folders, and what could not be matched."""

    model_config = ConfigDict(frozen=True)

    folders: list[str]
    """The experiment folders that were read, as given."""
    outcomes: list[TaskOutcome]
    """One outcome per task run (per repetition), folders in natural name order."""
    unknown_folders: list[str] = Field(default_factory=list)
    """Folders holding agent logs whose name is no task id of the definitions (not counted)."""
    tasks_without_run: list[str] = Field(default_factory=list)
    """Defined tasks with no run folder."""
    definition_problems: list[str] = Field(default_factory=list)
    """The tasks of the definitions file that were skipped, and why."""


@dataclass(frozen=True, kw_only=True)
class _Reading:
    """How agents' logs say their score and timeout."""

    score_name: str
    """The ``wrap`` name of the score in a trace."""
    score_pattern: re.Pattern[str]
    """The system message of a transcript that gives the score."""
    score_group: int | str
    """The group of ``score_pattern`` that is the score."""
    timeout_marker: str
    """The text of a transcript's system message that marks a timeout."""


@dataclass(frozen=True, kw_only=True)
class _ModelTemplate:
    """Where the model's name is in a task run folder's path (``model_from_path``)."""

    template: str
    """The template as given (``{model}/{task}``)."""
    pattern: re.Pattern[str]
    """The template as a regular expression over the path's last ``depth`` folders."""
    depth: int
    """How many folders, the task run folder included, the template spans."""

    def model(self, folder: str | os.PathLike[str]) -> tuple[str | None, str | None]:
        """The model named by ``folder``'s path, or the problem when its path does not fit."""
        parts = Path(os.path.abspath(folder)).parts[1:]
        if len(parts) >= self.depth:
            found = self.pattern.fullmatch("/".join(parts[-self.depth :]))
            if found is not None:
                return found["model"], None
        return None, (
            f"{os.fspath(folder)}: its path does not fit --model-from-path {self.template!r}, "
            "so no model was read from it"
        )


def analyze_agent_log(
    path: str | os.PathLike[str],
    *,
    score_name: str = "score",
    score_pattern: str | re.Pattern[str] = DEFAULT_SCORE_PATTERN,
    timeout_marker: str = DEFAULT_TIMEOUT_MARKER,
) -> AgentOutcome:
    """Read one agent's log into its outcome; never raises for a bad file.

    The log is a chat transcript (a JSON list of ``{"role", "content"}`` messages, or an
    object whose ``turns`` is that list) or a trace file (JSONL, OTLP-JSON, Phoenix span
    JSON), told apart by its content.

    Args:
        path: The log file.
        score_name: The ``wrap`` name under which a traced agent recorded its score.
        score_pattern: A regular expression matching the system message of a transcript that
            gives the score; its first group (or its group named ``score``) is the score.
        timeout_marker: A transcript's system message containing this text marks a timeout.

    Returns:
        The agent's score, status, final message and timeout; a file that cannot be read as
        a whole log gives ``LOG_FILE_ERROR`` with the reason in ``parse_errors``.

    Raises:
        ConfigurationError: ``score_pattern`` is not a regular expression with a group, or
            ``timeout_marker`` is empty.

    Example:
        >>> analyze_agent_log("experiments/gpt-4o/t1/andy_0.json").raw_score  # doctest: +SKIP
        1.0
    """
    return _analyze(path, _reading(score_name, score_pattern, timeout_marker))


def combine_agent_statuses(
    statuses: Sequence[CompletionStatus], *, missing_agents: int = 0, extra_files: int = 0
) -> CompletionStatus:
    """A task's status from its agents' statuses (see the module documentation).

    Args:
        statuses: The status of each agent log that was found.
        missing_agents: How many agents the definition names beyond the logs found; each
            counts as a ``LOG_FILE_ERROR`` agent.
        extra_files: How many logs were found beyond the definition's agent count.

    Returns:
        ``NO_SCORE_LOGGED`` when no log was found; ``LOG_FILE_ERROR`` when there are too many;
        else the first status of :data:`TASK_STATUS_PRECEDENCE` any agent has.

    Example:
        >>> combine_agent_statuses([CompletionStatus.LOG_FILE_ERROR, CompletionStatus.SUCCESS])
        <CompletionStatus.SUCCESS: 'SUCCESS'>
    """
    if not statuses:
        return S.NO_SCORE_LOGGED
    if extra_files:
        return S.LOG_FILE_ERROR
    present = set(statuses) | ({S.LOG_FILE_ERROR} if missing_agents else set())
    return next(status for status in TASK_STATUS_PRECEDENCE if status in present)


def extract_task_outcomes(
    folder: str | os.PathLike[str],
    task_definition: TaskDefinition | Mapping[str, Any],
    *,
    score_name: str = "score",
    score_pattern: str | re.Pattern[str] = DEFAULT_SCORE_PATTERN,
    timeout_marker: str = DEFAULT_TIMEOUT_MARKER,
    model_from_path: str | None = None,
) -> list[TaskOutcome]:
    """Read every agent log of one task folder: one outcome per run of the task.

    The agent logs are the folder's files ending in ``.jsonl`` or ``.json`` (not hidden,
    subfolders left alone), read in natural name order (``agent_2`` before ``agent_10``).
    Logs named ``<agent>_<n>`` are one repetition per ``n`` (see the module documentation);
    otherwise the folder is one run.

    Args:
        folder: The task folder.
        task_definition: The task's definition (a :class:`TaskDefinition` or its mapping);
            its type, agent count and difficulty are carried into the outcomes.
        score_name: The ``wrap`` name under which traced agents recorded their score.
        score_pattern: The system message of a transcript that gives the score (see
            :func:`analyze_agent_log`).
        timeout_marker: The text of a transcript's system message that marks a timeout.
        model_from_path: Where the model's name is in the folder's path, for logs that name
            none: ``"{model}/{task}"`` reads ``experiments/<model>/<task id>``; ``*`` stands
            for any one folder name (``"{model}/*/{task}"``), and ``{model}`` may be part of
            a name (``"run_{model}/{task}"``).

    Returns:
        One outcome per repetition, in repetition order (one outcome when the folder is one
        run); see the module documentation for how a status is derived.

    Raises:
        ConfigurationError: ``folder`` is not a folder, the definition is invalid, or a
            pattern or ``model_from_path`` is malformed.

    Example:
        >>> definition = {"task_id": "t1", "type": "cooking", "agent_count": 2}
        >>> runs = extract_task_outcomes("experiments/gpt-4o/t1", definition)  # doctest: +SKIP
        >>> [run.overall_completion_status.value for run in runs]  # doctest: +SKIP
        ['SUCCESS', 'TIMED_OUT']
    """
    return _extract(
        folder,
        _definition(task_definition, "task_definition"),
        _reading(score_name, score_pattern, timeout_marker),
        _model_template(model_from_path),
    )


def extract_task_outcome(
    folder: str | os.PathLike[str],
    task_definition: TaskDefinition | Mapping[str, Any],
    *,
    score_name: str = "score",
    score_pattern: str | re.Pattern[str] = DEFAULT_SCORE_PATTERN,
    timeout_marker: str = DEFAULT_TIMEOUT_MARKER,
    model_from_path: str | None = None,
) -> TaskOutcome:
    """Read the agent logs of one task run folder into the task's outcome.

    As :func:`extract_task_outcomes`, for a folder that holds one run of the task.

    Raises:
        ConfigurationError: As :func:`extract_task_outcomes`; also when the folder holds
            several repetitions (read those with :func:`extract_task_outcomes`).

    Example:
        >>> definition = {"task_id": "t1", "type": "cooking", "agent_count": 2}
        >>> extract_task_outcome("runs/t1", definition).overall_is_successful  # doctest: +SKIP
        True
    """
    definition = _definition(task_definition, "task_definition")
    runs = _extract(
        folder,
        definition,
        _reading(score_name, score_pattern, timeout_marker),
        _model_template(model_from_path),
    )
    if len(runs) > 1:
        raise ConfigurationError(
            f"{os.fspath(folder)}: holds {len(runs)} repetitions of task "
            f"{definition.task_id!r} (logs named <agent>_<repetition>); read them with "
            "extract_task_outcomes(), which gives one outcome per repetition"
        )
    return runs[0]


def load_task_definitions(path: str | os.PathLike[str]) -> TaskDefinitions:
    """Read a task definitions file: a JSON object keyed by task id, or a list of objects.

    In the object form (Mindcraft's: ``{"cooking_1": {"type": "cooking", "agent_count": 2,
    "goal": ...}, ...}``) each key is the task id; in the list form each object has a
    ``task_id``. ``agent_count`` is 1 when not given. A task that is not a valid definition
    (no ``type``, an ``agent_count`` below 1, a ``task_id`` other than its key, an id defined
    twice) is skipped and listed in the result's ``problems``; the other tasks are read.

    Args:
        path: The JSON file.

    Returns:
        The valid definitions by task id, in file order, and the problems of the others.

    Raises:
        ConfigurationError: The file cannot be read, or is not JSON of either form.
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
    if not isinstance(data, dict | list):
        raise ConfigurationError(
            f"task definitions file {name!r} must hold a JSON object keyed by task id or a "
            f"list of definitions; found {type(data).__name__}"
        )
    return _task_definitions(data, name)


def collect_task_outcomes(
    folders: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    tasks: Mapping[str, TaskDefinition | Mapping[str, Any]] | str | os.PathLike[str],
    *,
    score_name: str = "score",
    score_pattern: str | re.Pattern[str] = DEFAULT_SCORE_PATTERN,
    timeout_marker: str = DEFAULT_TIMEOUT_MARKER,
    model_from_path: str | None = None,
) -> TaskOutcomes:
    """Read every task folder under one or several experiment folders.

    A task folder is a folder named by a task id of the definitions; it is read with
    :func:`extract_task_outcomes`. Any other folder is searched in turn (an experiment folder
    of experiment folders: ``experiments/<model>/<task id>/``), except that a folder holding
    agent logs is listed in ``unknown_folders``. Hidden folders are left alone, and a folder
    reached twice is read once.

    Args:
        folders: The experiment folder, or several (a given folder named by a task id is read
            as that task's folder).
        tasks: The path of a task definitions file, or its definitions by task id
            (:class:`TaskDefinition` objects, or the file's objects as parsed); invalid ones
            are skipped and listed, as :func:`load_task_definitions` does.
        score_name: The ``wrap`` name under which traced agents recorded their score.
        score_pattern: The system message of a transcript that gives the score (see
            :func:`analyze_agent_log`).
        timeout_marker: The text of a transcript's system message that marks a timeout.
        model_from_path: Where the model's name is in a task folder's path, for logs that
            name none (see :func:`extract_task_outcomes`): ``"{model}/{task}"``.

    Returns:
        The outcome of each run, the folders with logs that match no task, the tasks with no
        folder, and the tasks the definitions file had to skip.

    Raises:
        ConfigurationError: A folder is not a folder, the definitions cannot be read, or a
            pattern or ``model_from_path`` is malformed.

    Example:
        >>> found = collect_task_outcomes(  # doctest: +SKIP
        ...     "experiments", "example_tasks.json", model_from_path="{model}/{task}"
        ... )
        >>> print(format_outcome_summary(found))  # doctest: +SKIP
    """
    if isinstance(tasks, TaskDefinitions):
        definitions = tasks
    elif isinstance(tasks, Mapping):
        definitions = _task_definitions(tasks, "tasks")
    else:
        definitions = load_task_definitions(tasks)
    reading = _reading(score_name, score_pattern, timeout_marker)
    template = _model_template(model_from_path)
    roots = [folders] if isinstance(folders, str | os.PathLike) else list(folders)
    if not roots:
        raise ConfigurationError("no experiment folder given; give at least one folder")
    runs: list[Path] = []
    unknown: list[Path] = []
    seen: set[str] = set()
    for root in roots:
        where = _folder(root, "experiment folder", "the task folders (one per task id)")
        if where.name in definitions:
            _add_once(where, runs, seen)
        else:
            _search(where, definitions, runs, unknown, seen)
    found_tasks = {path.name for path in runs}
    return TaskOutcomes(
        folders=[os.fspath(root) for root in roots],
        outcomes=[
            outcome
            for path in runs
            for outcome in _extract(path, definitions[path.name], reading, template)
        ],
        unknown_folders=[os.fspath(path) for path in unknown],
        tasks_without_run=[task for task in definitions if task not in found_tasks],
        definition_problems=(
            list(definitions.problems) if isinstance(definitions, TaskDefinitions) else []
        ),
    )


def format_outcome_summary(outcomes: TaskOutcomes | Iterable[TaskOutcome]) -> str:
    """The success rate overall, by task type and by model, the statuses, and the problems.

    The models are shown when the runs are of more than one. Under ``problems:`` come the
    agent logs that could not be read and what is wrong with a run as a whole (the first
    20; every one is in the DataFrame's ``parse_errors`` and ``problems`` columns).

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
    if runs:
        lines += _rates("by task type:", runs, lambda outcome: outcome.task_type)
        models = {outcome.model_name for outcome in runs}
        if len(models) > 1:
            lines += _rates("by model:", runs, lambda outcome: outcome.model_name or "(none)")
        counts = Counter(outcome.overall_completion_status for outcome in runs)
        lines.append(
            "statuses: "
            + ", ".join(f"{s.value} {counts[s]}" for s in TASK_STATUS_PRECEDENCE if counts[s])
        )
    problems = list(
        dict.fromkeys(
            problem for outcome in runs for problem in (*outcome.problems, *outcome.parse_errors)
        )
    )
    if problems:
        lines.append("problems:")
        lines += [f"  {problem}" for problem in problems[:_SHOWN_PROBLEMS]]
        if len(problems) > _SHOWN_PROBLEMS:
            lines.append(
                f"  ... and {len(problems) - _SHOWN_PROBLEMS} more: the problems and "
                "parse_errors columns of the DataFrame (or --csv) list them all"
            )
    if collected is not None:
        lines += [
            f"task definitions skipped: {problem}" for problem in collected.definition_problems
        ]
        if collected.unknown_folders:
            lines.append(
                "folders with no task definition (not counted): "
                + ", ".join(collected.unknown_folders)
            )
        if collected.tasks_without_run:
            lines.append("tasks with no run folder: " + ", ".join(collected.tasks_without_run))
    return "\n".join(lines)


# --- reading one agent's log ------------------------------------------------------------------


def _reading(
    score_name: str, score_pattern: str | re.Pattern[str], timeout_marker: str
) -> _Reading:
    if isinstance(score_pattern, re.Pattern):
        compiled = score_pattern
    else:
        try:
            compiled = re.compile(score_pattern)
        except re.error as exc:
            raise ConfigurationError(
                f"score_pattern {score_pattern!r} is not a regular expression ({exc}); give "
                f"one whose group is the score, e.g. {DEFAULT_SCORE_PATTERN!r}"
            ) from None
    if "score" in compiled.groupindex:
        group: int | str = "score"
    elif compiled.groups:
        group = 1
    else:
        raise ConfigurationError(
            f"score_pattern {compiled.pattern!r} must capture the score in a group, e.g. "
            f"{DEFAULT_SCORE_PATTERN!r}"
        )
    if not timeout_marker:
        raise ConfigurationError(
            "timeout_marker is empty; give the text of the system message that marks a "
            f"timeout, e.g. {DEFAULT_TIMEOUT_MARKER!r}"
        )
    return _Reading(
        score_name=score_name,
        score_pattern=compiled,
        score_group=group,
        timeout_marker=timeout_marker,
    )


def _analyze(path: str | os.PathLike[str], reading: _Reading) -> AgentOutcome:
    name = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return _unreadable(name, f"{name}: cannot be read ({exception_message(exc)})")
    try:
        messages, one_document = _transcript(name, data)
    except TraceFormatError as exc:
        return _unreadable(name, exception_message(exc))
    if messages is not None:
        return _transcript_outcome(name, messages, reading)
    try:
        trace = load_traces(path)
    except TraceFormatError as exc:
        # A JSON document that is neither a transcript nor a trace: say what a log may be.
        hint = f" {_LOG_SHAPES}" if one_document else ""
        return _unreadable(name, exception_message(exc) + hint)
    except OSError as exc:
        return _unreadable(name, f"{name}: cannot be read ({exception_message(exc)})")
    if not trace:
        return _unreadable(name, f"{name}: holds no span (a trace file without spans)")
    score, score_error = _trace_score(trace, reading.score_name)
    timed_out = _timed_out(trace)
    models = {node.span.model for node in walk_trace(trace) if isinstance(node.span, LLMSpan)}
    return AgentOutcome(
        path=name,
        raw_score=score,
        completion_status=_agent_status(score, score_error, timed_out),
        final_message=_final_message(trace),
        parse_errors=[] if score_error is None else [f"{name}: {score_error}"],
        timed_out=timed_out,
        error=_root_error(trace),
        models=sorted(model for model in models if model),
    )


def _agent_status(score: float | None, score_error: str | None, timed_out: bool) -> S:
    if score_error is not None:
        return S.LOG_FILE_ERROR
    if score is not None and score >= 1.0:
        return S.SUCCESS
    if timed_out:
        return S.TIMED_OUT
    if score is None:
        return S.NO_SCORE_LOGGED
    return S.FAILED_SCORE_ZERO if score == 0.0 else S.FAILED_PARTIAL_SCORE


def _transcript(name: str, data: bytes) -> tuple[list[Any] | None, bool]:
    """A chat-transcript log's messages (``None`` if not one), and if the file is one document.

    Raises:
        TraceFormatError: The file is empty, a JSON document cut off or corrupt, or an
            object whose ``turns`` is not a list.
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, False  # load_traces says where the bytes are wrong
    if not text.strip():
        raise TraceFormatError(f"{name}: the file is empty")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return None, False  # JSON lines: a trace file, its lines checked as it is read
        raise TraceFormatError(
            f"{name}, line {exc.lineno}: not valid JSON (column {exc.colno}: {exc.msg}): "
            "the file is cut off or corrupt"
        ) from None
    except (RecursionError, ValueError):
        return None, False  # too deep or too long a number: load_traces names the line
    if isinstance(document, dict) and "turns" in document:
        turns = document["turns"]
        if not isinstance(turns, list):
            raise TraceFormatError(
                f'{name}: "turns" must be a list of messages; found {type(turns).__name__}'
            )
        return turns, True
    if isinstance(document, list) and (
        not document or (isinstance(document[0], dict) and "role" in document[0])
    ):
        return document, True
    return None, True


def _transcript_outcome(name: str, messages: list[Any], reading: _Reading) -> AgentOutcome:
    score_message: tuple[int, str | None] | None = None
    timed_out = False
    final: str | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return _unreadable(
                name,
                f'{name}, message {index} is not an object with a "role" and a "content"; '
                f"found {safe_repr(message)[:200]}",
            )
        content = message.get("content")
        if message["role"] != "system" or not isinstance(content, str):
            continue
        final = content
        timed_out = timed_out or reading.timeout_marker in content
        found = reading.score_pattern.search(content)
        if found is not None:
            score_message = (index, found.group(reading.score_group))
    score, score_error = (None, None) if score_message is None else _text_score(*score_message)
    return AgentOutcome(
        path=name,
        raw_score=score,
        completion_status=_agent_status(score, score_error, timed_out),
        final_message=final,
        parse_errors=[] if score_error is None else [f"{name}, {score_error}"],
        timed_out=timed_out,
    )


def _text_score(index: int, text: str | None) -> tuple[float | None, str | None]:
    """The score a transcript's message gives, or why it is not a score."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return None, f"message {index}: the score {text!r} is not a number in [0, 1]"
    if not 0.0 <= value <= 1.0:
        return None, f"message {index}: the score {value!r} is outside [0, 1]"
    return value, None


def _unreadable(path: str, reason: str) -> AgentOutcome:
    return AgentOutcome(
        path=path,
        completion_status=S.LOG_FILE_ERROR,
        log_processed=False,
        parse_errors=[reason],
    )


def _trace_score(trace: list[ObservationNode], score_name: str) -> tuple[float | None, str | None]:
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


# --- one task folder: its runs --------------------------------------------------------------


def _extract(
    folder: str | os.PathLike[str],
    definition: TaskDefinition,
    reading: _Reading,
    template: _ModelTemplate | None,
) -> list[TaskOutcome]:
    where = _folder(folder, f"task run folder of task {definition.task_id!r}", "the agents' logs")
    return [
        _run_outcome(folder, definition, repetition, files, missing_names, reading, template)
        for repetition, files, missing_names in _repetitions(
            _agent_files(where), definition.agent_count
        )
    ]


def _agent_files(folder: Path) -> list[Path]:
    return sorted(
        (
            path
            for path in folder.iterdir()
            if path.is_file()
            and path.suffix in AGENT_FILE_SUFFIXES
            and not path.name.startswith(".")
        ),
        key=lambda path: _natural_key(path.name),
    )


def _repetitions(
    files: list[Path], agent_count: int
) -> list[tuple[int | None, list[Path], list[str]]]:
    """``(repetition, its logs, the agents whose log it lacks)`` for each run of a folder."""
    named: list[tuple[str, int, Path]] = []
    for path in files:
        found = _REPETITION.fullmatch(path.stem)
        if found is None:
            return [(None, files, [])]
        named.append((found["agent"], int(found["repetition"]), path))
    agents = {agent for agent, _, _ in named}
    if not named or (len(agents) == 1 and agent_count > 1):
        return [(None, files, [])]  # agent_0, agent_1, ...: the agents of one run
    groups: dict[int, list[tuple[str, Path]]] = {}
    for agent, repetition, path in named:
        groups.setdefault(repetition, []).append((agent, path))
    return [
        (
            repetition,
            [path for _, path in members],
            sorted(agents - {agent for agent, _ in members}) if len(agents) > 1 else [],
        )
        for repetition, members in sorted(groups.items())
    ]


def _run_outcome(
    folder: str | os.PathLike[str],
    definition: TaskDefinition,
    repetition: int | None,
    files: list[Path],
    missing_names: list[str],
    reading: _Reading,
    template: _ModelTemplate | None,
) -> TaskOutcome:
    agents = [_analyze(path, reading) for path in files]
    expected = definition.agent_count
    missing = max(expected - len(files), 0) if files else 0
    extra = max(len(files) - expected, 0)
    run = os.fspath(folder) + ("" if repetition is None else f", repetition {repetition}")
    problems: list[str] = []
    if missing:
        who = ", ".join(missing_names) if missing_names else f"{missing} log(s)"
        problems.append(
            f"{run}: {len(files)} agent log(s) for the {expected} agents of task "
            f"{definition.task_id!r}; missing: {who}"
        )
        agents.extend(
            AgentOutcome(
                path=None,
                completion_status=S.LOG_FILE_ERROR,
                log_processed=False,
                parse_errors=[problems[-1]],
            )
            for _ in range(missing)
        )
    if extra:
        problems.append(
            f"{run}: {len(files)} agent logs, but task {definition.task_id!r} has "
            f"{expected} agent(s); remove the logs that are not this run's, or give the "
            "task's agent_count"
        )
    status = combine_agent_statuses(
        [agent.completion_status for agent in agents[: len(files)]],
        missing_agents=missing,
        extra_files=extra,
    )
    scores = [agent.raw_score for agent in agents if agent.raw_score is not None]
    model = ", ".join(sorted({model for agent in agents for model in agent.models})) or None
    if model is None and template is not None:
        model, problem = template.model(folder)
        if problem is not None:
            problems.append(problem)
    return TaskOutcome(
        task_id=definition.task_id,
        task_type=definition.task_type,
        agent_count=expected,
        difficulty=definition.difficulty,
        difficulty_metrics=definition.difficulty_metrics,
        folder=os.fspath(folder),
        repetition=repetition,
        model_name=model,
        overall_raw_score=max(scores) if scores else None,
        overall_is_successful=status is S.SUCCESS,
        overall_completion_status=status,
        total_agent_logs_found=len(files),
        agent_outcomes=agents,
        problems=problems,
    )


def _model_template(template: str | None) -> _ModelTemplate | None:
    if template is None:
        return None
    segments = template.strip("/").split("/")
    if segments[-1] != "{task}" or template.count("{task}") != 1 or template.count("{model}") != 1:
        raise ConfigurationError(
            f"model_from_path {template!r} must name the model once and end with the task "
            "folder: '{model}/{task}' reads experiments/<model>/<task id>; '*' is any one "
            "folder name ('{model}/*/{task}'), and {model} may be part of a name "
            "('run_{model}/{task}')"
        )
    return _ModelTemplate(
        template=template,
        pattern=re.compile("/".join(_segment_pattern(segment) for segment in segments)),
        depth=len(segments),
    )


def _segment_pattern(segment: str) -> str:
    if segment == "{task}":
        return "[^/]+"
    return "".join(
        "(?P<model>[^/]+)" if piece == "{model}" else "[^/]*" if piece == "*" else re.escape(piece)
        for piece in re.split(r"(\{model\}|\*)", segment)
    )


# --- experiment folders ---------------------------------------------------------------------


def _search(
    folder: Path,
    definitions: Mapping[str, TaskDefinition],
    runs: list[Path],
    unknown: list[Path],
    seen: set[str],
) -> None:
    """Add the task folders under ``folder`` to ``runs``, other folders with logs to ``unknown``."""
    real = os.path.realpath(folder)
    if real in seen:
        return
    seen.add(real)
    children = sorted(
        (path for path in folder.iterdir() if path.is_dir() and not path.name.startswith(".")),
        key=lambda path: _natural_key(path.name),
    )
    for child in children:
        if child.name in definitions:
            _add_once(child, runs, seen)
        elif _agent_files(child):
            _add_once(child, unknown, seen)
        else:
            _search(child, definitions, runs, unknown, seen)


def _add_once(folder: Path, found: list[Path], seen: set[str]) -> None:
    real = os.path.realpath(folder)
    if real not in seen:
        seen.add(real)
        found.append(folder)


def _rates(title: str, runs: list[TaskOutcome], key: Callable[[TaskOutcome], str]) -> list[str]:
    groups: dict[str, list[TaskOutcome]] = {}
    for outcome in runs:
        groups.setdefault(key(outcome), []).append(outcome)
    width = max(len(name) for name in groups)
    lines = [title]
    for name in sorted(groups):
        group = groups[name]
        won = sum(outcome.overall_is_successful for outcome in group)
        lines.append(
            f"  {name:<{width}}  {len(group):>5} runs  {won:>5} successful  "
            f"{_rate(won, len(group)):>6}"
        )
    return lines


def _folder(folder: str | os.PathLike[str], what: str, holds: str) -> Path:
    where = Path(folder)
    if not where.is_dir():
        raise ConfigurationError(
            f"{what} {os.fspath(folder)!r} is not a folder; give the folder that holds {holds}"
        )
    return where


def _rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``agent_2`` before ``agent_10``: digit runs compare as numbers."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part
    )


def _task_definitions(data: Mapping[str, Any] | list[Any], name: str) -> TaskDefinitions:
    """The valid definitions of ``data`` (keyed by task id, or a list), and the others' problems."""
    problems: list[str] = []
    items: list[tuple[str, Any]] = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            if isinstance(value, Mapping) and value.get("task_id", key) != key:
                problems.append(
                    f"{name}: task {key!r} has task_id {value['task_id']!r}; the key of a "
                    "definition is its task id, so drop task_id or make the two the same"
                )
                continue
            items.append((key, {**value, "task_id": key} if isinstance(value, Mapping) else value))
    else:
        items = [(f"[{index}]", value) for index, value in enumerate(data)]
    definitions: dict[str, TaskDefinition] = {}
    for key, value in items:
        try:
            definition = _definition(value, f"{name}: task {key}")
        except ConfigurationError as exc:
            problems.append(str(exc))
            continue
        if definition.task_id in definitions:
            problems.append(
                f"{name}: task id {definition.task_id!r} is defined twice; the first "
                "definition is kept (task ids are unique)"
            )
            continue
        definitions[definition.task_id] = definition
    return TaskDefinitions(definitions=definitions, problems=problems)


def _definition(value: Any, where: str) -> TaskDefinition:
    if isinstance(value, TaskDefinition):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{where}: a task definition must be an object with a type (and an agent_count "
            f"when more than one agent takes part); found {type(value).__name__}"
        )
    try:
        return TaskDefinition.model_validate(dict(value))
    except ValidationError as exc:
        problems = "; ".join(
            f"{_field_name(error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise ConfigurationError(
            f"{where}: invalid task definition ({problems}). A definition needs a type (or "
            'task_type) and, for more than one agent, agent_count: {"type": "cooking", '
            '"agent_count": 2}'
        ) from None


def _field_name(location: tuple[int | str, ...]) -> str:
    """The field as a definition names it (``type``, not the model's ``task_type``)."""
    name = ".".join(str(part) for part in location) or "definition"
    return "type" if name == "task_type" else name
