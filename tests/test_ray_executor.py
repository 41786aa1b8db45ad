"""The Ray executor against a real local Ray, started once for this module on 127.0.0.1."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaltrace import load_traces
from evaltrace.datasets import RayExecutor, RayExecutorError, dataset_from_data, run_dataset
from evaltrace.llm import RateLimiter, configure_judge
from evaltrace.results import CompletionStatus
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
from evaltrace.llm import judge_config


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
