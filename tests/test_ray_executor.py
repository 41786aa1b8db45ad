"""The Ray executor against a real local Ray, started once for this module on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaltrace import load_traces
from evaltrace.datasets import RayExecutor, RayExecutorError, dataset_from_data, run_dataset
from evaltrace.llm import RateLimiter, configure_judge
from evaltrace.llm.prices import ModelPrice, PriceTable
from evaltrace.results import CompletionStatus, RunResult
from evaltrace.testing import FakeJudgeServer
from evaltrace.trace import split_traces

try:
    # A node started here listens on the loopback address only (Ray's macOS/Windows default).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray
except ImportError:  # pragma: no cover - depends on the platform
    if os.environ.get("CI"):
        raise
    pytest.skip("Ray does not install on this platform (pip install ray)", allow_module_level=True)

APP = """\
from evaltrace import wrap


class App:
    async def setup(self) -> None:
        self.prefix = "A:"

    async def run(self, question: str, number: int) -> str:
        if number == 3:
            raise ValueError("three is not allowed")
        answer = f"{self.prefix}{question.upper()} {number * 2}"
        return wrap(answer, purpose="output", name="answer")
"""

CHECKS = """\
from evaltrace import Evaluation
from evaltrace.judges import create_llm_evaluator
from evaltrace.llm import judge_config

graded = create_llm_evaluator("graded", "Answer: {eval_output}", choice_scores={"A": 1.0, "B": 0.0})


def exact(evaluable):
    return evaluable.output_value("answer") == evaluable.expectation


def parity(evaluable):
    number = int(evaluable.output_value("answer").split()[-1]) // 2
    actual = "even" if number % 2 == 0 else "odd"
    expected = evaluable.eval_metadata["parity"]
    return Evaluation(score=float(actual == expected),
                      details={"expected": expected, "actual": actual})


async def paced(evaluable):
    # What every judge call does before it calls the model (evaltrace.llm.isolation).
    await judge_config().rate_limiter.acquire(7)
    return 1.0
"""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[str]:
    context = ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        address = context.address_info["address"]
        assert address.startswith("127.0.0.1:")
        yield address
    finally:
        ray.shutdown()


def write_project(folder: Path, evaluators: list[Any], count: int = 24) -> Path:
    (folder / "app.py").write_text(APP)
    (folder / "checks.py").write_text(CHECKS)
    entries = [
        {
            "name": f"n{i:02d}",
            "entry_kwargs": {"question": f"q{i}", "number": i},
            "expectation": f"A:Q{i} {2 * i}" if i % 5 else "wrong",
            "eval_metadata": {"parity": ("even" if i % 2 == 0 else "odd") if i % 7 else "odd"},
        }
        for i in range(count)
    ]
    path = folder / "numbers.evaltrace.json"
    document = {"name": "numbers", "runnable": "app.py:App", "evaluators": evaluators}
    path.write_text(json.dumps({**document, "entries": entries}))
    return path


EVALUATORS = [
    "checks.py:exact",
    {"name": "checks.py:parity", "aggregators": [{"type": "fscore", "classes": ["even", "odd"]}]},
]


@pytest.mark.anyio
async def test_the_ray_executor_gives_the_results_of_the_local_executor(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_project(tmp_path, EVALUATORS)

    local = await run_dataset(dataset, output_dir=tmp_path / "local")
    remote = await run_dataset(
        dataset, output_dir=tmp_path / "ray", executor=RayExecutor(batch_size=5)
    )

    def seen(entry: Any) -> Any:
        evaluations = [(e.evaluator, e.score, e.details) for e in entry.evaluations]
        error = entry.error and (entry.error.type, entry.error.message)
        return (entry.index, entry.name, entry.status, entry.output, evaluations, error)

    assert [seen(entry) for entry in remote.entries] == [seen(entry) for entry in local.entries]
    assert remote.entries[3].status is CompletionStatus.ERROR
    assert remote.dataset_results == local.dataset_results
    traces = split_traces(load_traces(tmp_path / "ray" / remote.run_id / "traces.jsonl"))
    assert sorted(f"{one[0].span.trace_id:032x}" for one in traces) == sorted(
        trace_id for entry in remote.entries for trace_id in entry.trace_ids
    )
    assert {one[0].span.name for one in traces} == {"app.py:App"}
    assert remote.settings["executor"] == "RayExecutor"


@pytest.mark.anyio
async def test_judge_calls_in_every_worker_wait_for_one_shared_rate_limiter(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_project(tmp_path, ["checks.py:paced"], count=12)
    executor = RayExecutor(batch_size=3)

    with configure_judge(rate_limiter=RateLimiter(requests_per_second=1000)):
        result = await run_dataset(dataset, executor=executor)

    assert all(entry.evaluations[0].score == 1.0 for entry in result.entries if entry.output)
    ran = sum(1 for entry in result.entries if entry.error is None)
    assert executor.judge_calls == (ran, 7 * ran)


@pytest.mark.anyio
async def test_ray_workers_on_one_machine_share_the_drivers_judge_cache(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_project(tmp_path, ["checks.py:graded"], count=12)

    with (
        FakeJudgeServer() as judge,
        configure_judge(
            base_url=judge.base_url, api_key="k", model="m", cache=tmp_path / "judges.sqlite3"
        ),
    ):
        first = await run_dataset(dataset, executor=RayExecutor(batch_size=3))
        sent = len(judge.requests)
        again = await run_dataset(dataset, executor=RayExecutor(batch_size=3))

    judged = sum(1 for entry in first.entries if entry.error is None)
    assert sent == judged == first.judge_usage["m"].cache_misses
    assert len(judge.requests) == sent  # the second run's workers asked nothing
    assert again.judge_usage["m"].cache_hits == judged
    assert [e.evaluations[0].score for e in again.entries] == [
        e.evaluations[0].score for e in first.entries
    ]


@pytest.mark.anyio
async def test_a_dataset_built_in_code_cannot_run_on_ray(local_ray: str) -> None:
    dataset = dataset_from_data(
        {
            "runnable": "json:dumps",
            "evaluators": ["ExactMatch"],
            "entries": [{"entry_kwargs": {"obj": 1}}],
        }
    )

    with pytest.raises(RayExecutorError, match="a dataset loaded from a file"):
        await run_dataset(dataset, executor=RayExecutor())


FAULTY_APP = """\
def double(number: int) -> int:
    return 2 * number
"""

FAULTY_CHECKS = """\
import os
import threading
import time
from pathlib import Path

from evaltrace import Evaluation


def doubled(evaluable):
    # Each evaluation leaves a line, so a test can count how often each entry ran.
    with open(Path(__file__).with_name("runs.log"), "a") as log:
        log.write(f"{evaluable.expectation}\\n")
    fault = (evaluable.eval_metadata or {}).get("fault")
    if fault == "exit":
        time.sleep(0.5)  # the entries finished before this one have been handed back
        os._exit(1)
    if fault == "lock":
        return Evaluation(score=1.0, details={"guard": threading.Lock()})
    return evaluable.output_value() == evaluable.expectation
"""


DIES_IN_TEARDOWN = """\
import os
import time


class Doubler:
    async def run(self, number: int) -> int:
        return 2 * number

    async def teardown(self) -> None:
        time.sleep(0.5)  # the entries have been handed back
        os._exit(1)
"""


def write_faulty_project(
    folder: Path,
    faults: dict[int, str],
    count: int = 40,
    app: str = FAULTY_APP,
    runnable: str = "app.py:double",
) -> Path:
    """A dataset of ``count`` entries that pass, but for the ``faults`` of some entries."""
    (folder / "app.py").write_text(app)
    (folder / "checks.py").write_text(FAULTY_CHECKS)
    entries = [
        {
            "name": f"n{i:02d}",
            "entry_kwargs": {"number": i},
            "expectation": 2 * i,
            "eval_metadata": {"fault": faults[i]} if i in faults else None,
        }
        for i in range(count)
    ]
    path = folder / "faulty.evaltrace.json"
    document = {"name": "faulty", "runnable": runnable, "evaluators": ["checks.py:doubled"]}
    path.write_text(json.dumps({**document, "entries": entries}))
    return path


def runs_per_entry(folder: Path) -> dict[int, int]:
    """How often each entry's evaluator ran, by entry number."""
    counts: dict[int, int] = {}
    for line in (folder / "runs.log").read_text().splitlines():
        counts[int(line) // 2] = counts.get(int(line) // 2, 0) + 1
    return counts


def test_evaltrace_test_finishes_the_run_when_an_entry_kills_its_worker(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_faulty_project(tmp_path, {7: "exit"})
    evaltrace = Path(sys.executable).with_name("evaltrace")

    done = subprocess.run(
        [
            str(evaltrace),
            "test",
            dataset.name,
            "--executor",
            "ray",
            "--address",
            local_ray,
            "--output-dir",
            "out",
            "--no-scorecard",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 1, done.stderr
    (run,) = (tmp_path / "out").iterdir()
    result = RunResult.model_validate_json((run / "result.json").read_text())
    assert not result.interrupted
    assert [entry.index for entry in result.entries] == list(range(40))
    killed = result.entries[7]
    assert killed.status is CompletionStatus.ERROR
    assert killed.error is not None and killed.error.where == "worker"
    assert "died" in killed.error.message
    assert [e.error and e.error.where for e in killed.evaluations] == ["worker"]
    others = [entry for entry in result.entries if entry.index != 7]
    assert all(entry.status is CompletionStatus.SUCCESS for entry in others)


@pytest.mark.anyio
async def test_the_entries_of_a_batch_whose_worker_died_run_once_more_each(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_faulty_project(tmp_path, {7: "exit"}, count=12)

    result = await run_dataset(
        dataset,
        output_dir=tmp_path / "out",
        concurrency=1,
        executor=RayExecutor(batch_size=12),
    )

    # One at a time in one batch: 0-6 came back, 7 killed the worker (and again alone),
    # 8-11 ran only after it.
    assert runs_per_entry(tmp_path) == {i: 2 if i == 7 else 1 for i in range(12)}
    assert [entry.status for entry in result.entries] == [
        CompletionStatus.ERROR if i == 7 else CompletionStatus.SUCCESS for i in range(12)
    ]
    assert (tmp_path / "out" / result.run_id / "result.json").is_file()


@pytest.mark.anyio
async def test_an_entry_whose_details_hold_a_lock_comes_back_with_the_locks_text(
    local_ray: str, tmp_path: Path
) -> None:
    # Details are encoded as JSON data when the evaluation is made: nothing is left that
    # could not be sent back from a worker.
    dataset = write_faulty_project(tmp_path, {5: "lock"}, count=12)

    result = await run_dataset(dataset, executor=RayExecutor(batch_size=12))

    locked = result.entries[5]
    assert locked.status is CompletionStatus.SUCCESS
    details = locked.evaluations[0].details
    assert isinstance(details, dict) and "lock" in details["guard"]
    assert all(entry.status is CompletionStatus.SUCCESS for entry in result.entries)


@pytest.mark.anyio
async def test_a_worker_that_dies_after_its_entries_came_back_is_the_runs_error(
    local_ray: str, tmp_path: Path
) -> None:
    dataset = write_faulty_project(
        tmp_path, {}, count=6, app=DIES_IN_TEARDOWN, runnable="app.py:Doubler"
    )

    result = await run_dataset(dataset, executor=RayExecutor(batch_size=3))

    assert [entry.status for entry in result.entries] == [CompletionStatus.SUCCESS] * 6
    assert runs_per_entry(tmp_path) == dict.fromkeys(range(6), 1)
    assert [error.where for error in result.errors] == ["worker"]
    assert "after the 3 entries of its batch had come back" in result.errors[0].message


COSTLY_APP = """\
from opentelemetry import trace


def answer(question: str) -> str:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100,
    }
    with trace.get_tracer("app").start_as_current_span("chat", attributes=attributes):
        pass
    return question.upper()
"""


@pytest.mark.anyio
async def test_ray_workers_count_the_apps_tokens_and_price_them_with_the_runs_table(
    local_ray: str, tmp_path: Path
) -> None:
    (tmp_path / "costly.py").write_text(COSTLY_APP)
    document = {
        "name": "costly",
        "runnable": "costly.py:answer",
        "evaluators": [{"type": "max-cost", "value": 0.0005}],
        "entries": [{"name": f"e{i}", "entry_kwargs": {"question": f"q{i}"}} for i in range(6)],
    }
    dataset = tmp_path / "costly.evaltrace.json"
    dataset.write_text(json.dumps(document))
    prices = PriceTable(models={"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)})

    remote = await run_dataset(
        dataset, output_dir=tmp_path / "ray", executor=RayExecutor(batch_size=2), prices=prices
    )

    assert [entry.usage["gpt-4o-mini"].input_tokens for entry in remote.entries] == [1000] * 6
    assert all(entry.evaluations[0].score == 1.0 for entry in remote.entries), [
        entry.evaluations[0] for entry in remote.entries
    ]
    assert remote.usage["gpt-4o-mini"].calls == 6
    assert remote.cost is not None and remote.cost.total == pytest.approx(6 * 210 / 1e6)
