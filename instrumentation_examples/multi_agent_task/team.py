"""Two agents on Minecraft-like crafting tasks: a planner that plans and reviews, a worker.

The planner reads the task's goal and the chest's contents and asks its model for a plan (a
list of steps, as structured output). The worker carries the steps out one by one: for each it
asks its model which tool to call (``collect`` from the chest, or ``craft`` from the
inventory) and calls it on the :class:`World`, within the task's time limit. The planner then
reviews the result and logs the task's score.

Each agent's run is stored as its own trace file, as each Mindcraft agent writes its own log:
``<runs folder>/<task id>/planner.jsonl`` and ``worker.jsonl``. evaltrace reads them back into
task outcomes (``extract_task_outcome``, ``collect_task_outcomes``, ``evaltrace outcomes``).
In the files:

* ``wrap(score, purpose="output", name="score", many=True)``: the task's score, logged by each
  agent (``many=True`` because the dataset run's capture sees both agents log it);
* ``wrap(message, purpose="state", name="final_message")``: the planner's closing message;
* a worker past the task's time limit raises ``TimeoutError`` out of its ``@wrap`` span, which
  the outcome reads as ``TIMED_OUT``.

:class:`TaskTeamRunnable` is how ``multi_agent_task.evaltrace.json`` runs the team, offline.
Run this file to print the outcomes of the stored runs, by task type:
``python instrumentation_examples/multi_agent_task/team.py [RUNS_FOLDER]``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import openai
import yaml
from openai.types.chat import ChatCompletion, ChatCompletionToolParam
from openai.types.shared_params import ResponseFormatJSONSchema

from evaltrace import capture_traces, save_traces, wrap
from evaltrace.results import (
    aggregate_results_to_dataframe,
    collect_task_outcomes,
    extract_task_outcome,
    format_outcome_summary,
)
from evaltrace.testing import FakeJudgeServer

MODEL = "gpt-4o-mini"
HERE = Path(__file__).parent
TASKS_FILE = HERE / "tasks.json"
RUNS_VARIABLE = "MULTI_AGENT_RUNS"
"""The environment variable naming the folder where task runs are stored."""
DEFAULT_RUNS = Path(tempfile.gettempdir()) / "evaltrace-multi-agent-runs"
"""Where task runs are stored when ``MULTI_AGENT_RUNS`` is not set (outside the repository)."""

RECIPES: dict[str, tuple[dict[str, int], int]] = {
    "bread": ({"wheat": 3}, 1),
    "cake": ({"wheat": 3, "milk": 1, "egg": 1, "sugar": 1}, 1),
    "planks": ({"oak_log": 1}, 4),
    "stick": ({"planks": 2}, 4),
    "wooden_pickaxe": ({"planks": 3, "stick": 2}, 1),
    "lantern": ({"iron_nugget": 8, "torch": 1}, 1),
    "wall": ({"planks": 6}, 1),
    "shelter": ({"wall": 4}, 1),
}
"""What each item takes, and how many one crafting makes."""

PLANNER_PROMPT = (
    "You are the planner of a two-agent crafting team. Recipes:\n"
    + "\n".join(
        f"- {item}: {', '.join(f'{n} {name}' for name, n in needs.items())} (makes {makes})"
        for item, (needs, makes) in RECIPES.items()
    )
    + (
        "\nWrite the shortest list of steps that reaches the goal. Each step is either "
        "'collect <count> <item>' (take from the chest) or 'craft <item>'."
    )
)
WORKER_PROMPT = (
    "You are the worker of a two-agent crafting team. Carry out the step you are given by "
    "calling exactly one tool."
)
PLAN_FORMAT: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {
        "name": "plan",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"steps": {"type": "array", "items": {"type": "string"}}},
            "required": ["steps"],
            "additionalProperties": False,
        },
    },
}
WORKER_TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "collect",
            "description": "Take items from the chest into the inventory.",
            "parameters": {
                "type": "object",
                "properties": {"item": {"type": "string"}, "count": {"type": "integer"}},
                "required": ["item", "count"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "craft",
            "description": "Craft an item from the inventory, by its recipe.",
            "parameters": {
                "type": "object",
                "properties": {"item": {"type": "string"}},
                "required": ["item"],
            },
        },
    },
]


@dataclass(kw_only=True)
class Task:
    """One task of ``tasks.json``: what the agents get to know about it."""

    task_id: str
    goal: str
    chest: dict[str, int]
    target: str
    timeout_s: float


@dataclass(kw_only=True)
class World:
    """The task's world: a chest to collect from, the team's inventory, the steps done."""

    chest: Counter[str]
    inventory: Counter[str] = field(default_factory=Counter)
    steps_done: int = 0

    @wrap(kind="tool")
    def collect(self, item: str, count: int) -> str:
        """Move ``count`` of ``item`` from the chest to the inventory."""
        if self.chest[item] < count:
            return f"failed: the chest holds {self.chest[item]} {item}, not {count}"
        self.chest[item] -= count
        self.inventory[item] += count
        self.steps_done += 1
        return f"collected {count} {item}"

    @wrap(kind="tool")
    def craft(self, item: str) -> str:
        """Craft ``item`` from the inventory."""
        if item not in RECIPES:
            return f"failed: there is no recipe for {item}"
        needs, makes = RECIPES[item]
        missing = {
            name: n - self.inventory[name] for name, n in needs.items() if self.inventory[name] < n
        }
        if missing:
            return "failed: missing " + ", ".join(f"{n} {name}" for name, n in missing.items())
        self.inventory -= Counter(needs)
        self.inventory[item] += makes
        self.steps_done += 1
        return f"crafted {makes} {item}"


class Planner:
    """Plans a task with its model, then reviews what the worker achieved."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL) -> None:
        self.client = client
        self.model = model

    @wrap(kind="agent")
    async def plan(self, task: Task) -> list[str]:
        """The steps towards the task's goal."""
        completion = await self.call_model(task)
        steps: list[str] = json.loads(completion.choices[0].message.content or "{}")["steps"]
        return wrap(steps, purpose="state", name="plan")

    @wrap(kind="llm")
    async def call_model(self, task: Task) -> ChatCompletion:
        """Ask for a plan, as structured output."""
        chest = ", ".join(f"{n} {item}" for item, n in task.chest.items())
        return await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": PLANNER_PROMPT},
                {"role": "user", "content": f"Goal: {task.goal}\nChest: {chest}"},
            ],
            response_format=PLAN_FORMAT,
        )

    @wrap(kind="agent")
    def review(self, task: Task, world: World, planned: int) -> float:
        """Score the task (1.0 once the target exists, else the share of steps done); log it."""
        reached = world.inventory[task.target] > 0
        score = 1.0 if reached else round(world.steps_done / max(planned, 1), 2)
        wrap(score, purpose="output", name="score", many=True)
        outcome = f"{task.target} made" if reached else f"no {task.target}"
        message = f"Task ended with score {score}: {world.steps_done}/{planned} steps, {outcome}"
        wrap(message, purpose="state", name="final_message")
        return score


class Worker:
    """Carries a plan out, one tool call per step, within the task's time limit."""

    def __init__(self, client: openai.AsyncOpenAI, model: str = MODEL) -> None:
        self.client = client
        self.model = model

    @wrap(kind="agent")
    async def execute(self, task: Task, steps: list[str], world: World) -> float:
        """Do each step; raises ``TimeoutError`` past ``task.timeout_s``."""
        with anyio.fail_after(task.timeout_s):
            for step in steps:
                completion = await self.call_model(task, step)
                for call in completion.choices[0].message.tool_calls or []:
                    if call.type != "function":
                        continue
                    arguments = json.loads(call.function.arguments)
                    if call.function.name == "collect":
                        world.collect(str(arguments["item"]), int(arguments["count"]))
                    elif call.function.name == "craft":
                        world.craft(str(arguments["item"]))
        reached = world.inventory[task.target] > 0
        score = 1.0 if reached else round(world.steps_done / max(len(steps), 1), 2)
        return wrap(score, purpose="output", name="score", many=True)

    @wrap(kind="llm")
    async def call_model(self, task: Task, step: str) -> ChatCompletion:
        """Ask which tool does the step."""
        return await self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": WORKER_PROMPT},
                {"role": "user", "content": f"Task: {task.goal}\nDo this step now: {step}"},
            ],
            tools=WORKER_TOOLS,
        )


def load_tasks() -> tuple[dict[str, Task], dict[str, Any]]:
    """The tasks of ``tasks.json``, and their definitions as written (for the outcomes)."""
    definitions: dict[str, Any] = json.loads(TASKS_FILE.read_text("utf-8"))
    tasks = {
        task_id: Task(
            task_id=task_id,
            goal=item["goal"],
            chest=item["chest"],
            target=item["target"],
            timeout_s=item["timeout_s"],
        )
        for task_id, item in definitions.items()
    }
    return tasks, definitions


def runs_folder() -> Path:
    """Where task runs are stored: ``$MULTI_AGENT_RUNS``, else a folder in the temp folder."""
    return Path(os.environ.get(RUNS_VARIABLE) or DEFAULT_RUNS)


class TaskTeamRunnable:
    """Runs one task per dataset entry, stores each agent's trace, and reads the outcome back.

    A real deployment points the ``openai`` client at its provider through ``OPENAI_BASE_URL``
    and ``OPENAI_API_KEY`` (``openai.AsyncOpenAI()``) and starts nothing. Here a
    FakeJudgeServer plays both agents' model, answering by the rules of ``fake_model.yaml``.
    The dataset's evaluator calls no judge, so no judge is configured.
    """

    async def setup(self) -> None:
        """Start the scripted model, load the tasks, make the runs folder."""
        self.model_server = FakeJudgeServer().start()
        for rule in yaml.safe_load((HERE / "fake_model.yaml").read_text("utf-8")):
            self.model_server.add_rule(**rule)
        self.client = openai.AsyncOpenAI(base_url=self.model_server.base_url, api_key="offline")
        self.planner = Planner(self.client)
        self.worker = Worker(self.client)
        self.tasks, self.definitions = load_tasks()
        self.runs = runs_folder()
        self.runs.mkdir(parents=True, exist_ok=True)

    async def run(self, task_id: str, crash_while_logging: str | None = None) -> str:
        """Run the task, store both agents' traces, return the task's outcome status.

        ``crash_while_logging`` names an agent whose trace file is cut off half-way, as when
        its process is killed while writing: a fault to check that the outcome reports it.
        """
        task = self.tasks[task_id]
        folder = self.runs / task_id
        shutil.rmtree(folder, ignore_errors=True)  # a run replaces the task's previous run
        folder.mkdir()
        world = World(chest=Counter(task.chest))
        with capture_traces() as planning:
            steps = await self.planner.plan(task)
        with capture_traces() as working:
            try:
                await self.worker.execute(task, steps, world)
            except TimeoutError:
                pass  # the worker's trace keeps the timeout; the planner still reviews
        with capture_traces() as reviewing:
            self.planner.review(task, world, len(steps))
        save_traces(planning.trace + reviewing.trace, folder / "planner.jsonl")
        save_traces(working.trace, folder / "worker.jsonl")
        if crash_while_logging is not None:
            log = folder / f"{crash_while_logging}.jsonl"
            log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
        outcome = extract_task_outcome(folder, self.definitions[task_id] | {"task_id": task_id})
        agents = {
            Path(agent.path or "missing").stem: agent.completion_status.value
            for agent in outcome.agent_outcomes
        }
        wrap(agents, purpose="state", name="agent_statuses")
        wrap(str(folder), purpose="state", name="task_folder")
        return wrap(outcome.overall_completion_status.value, purpose="output", name="task_status")

    async def teardown(self) -> None:
        """Close the client and stop the server (which cuts short the stalled request)."""
        await self.client.close()
        self.model_server.stop()


def main(runs: Path) -> None:
    """Print the outcomes of the task runs stored under ``runs``, overall and by task type."""
    outcomes = collect_task_outcomes(runs, TASKS_FILE)
    print(format_outcome_summary(outcomes))
    frame = aggregate_results_to_dataframe(outcomes)
    by_type = frame.groupby("task_type").agg(
        runs=("task_id", "count"),
        success_rate=("overall_is_successful", "mean"),
        best_score=("overall_raw_score", "max"),
    )
    print(by_type.to_string())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else runs_folder())
