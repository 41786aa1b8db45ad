"""The noisy judge: the same five verdicts per summary, aggregated by each strategy."""

from __future__ import annotations

from html import escape
from pathlib import Path

import pytest

from evaltrace import RunResult, run_dataset
from evaltrace.results import CompletionStatus, DatasetScorecard, generate_dataset_scorecard_html

DATASET = Path(__file__).with_name("noisy_judge.evaltrace.json")
STRATEGIES = ["mean", "median", "majority", "min", "max", "2+ >= 0.75", "pass@2"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
async def run(results: Path) -> RunResult:
    return await run_dataset(DATASET, output_dir=results)


def table(run: RunResult) -> dict[str, list[float | None]]:
    return {
        entry.name: [round(e.score, 4) if e.score is not None else None for e in entry.evaluations]
        for entry in run.entries
    }


@pytest.mark.anyio
async def test_each_strategy_reads_the_same_five_verdicts_its_own_way(run: RunResult) -> None:
    assert run.evaluators == STRATEGIES
    assert table(run) == {
        # mean, median, majority, min, max, 2+ >= 0.75, pass@2
        "tent": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "boots": [0.85, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0],
        "jacket": [0.7, 0.75, 0.75, 0.5, 1.0, 1.0, 0.9],
        "stove": [0.65, 0.5, 0.5, 0.5, 1.0, 1.0, 0.7],
        "socks": [0.85, 0.75, 0.75, 0.75, 1.0, 1.0, 1.0],
    }
    assert {entry.status for entry in run.entries} == {CompletionStatus.SUCCESS}


@pytest.mark.anyio
async def test_a_tied_majority_vote_falls_back_to_the_median_and_says_so(run: RunResult) -> None:
    [jacket] = [entry for entry in run.entries if entry.name == "jacket"]
    majority = jacket.evaluations[STRATEGIES.index("majority")].details
    assert isinstance(majority, dict)

    assert majority["method"] == "median"
    assert majority["fallback_from"] == "majority_vote"
    assert majority["score_distribution"] == {"0.5": 2, "0.75": 2, "1.0": 1}
    assert sorted(item["score"] for item in majority["runs"]) == [0.5, 0.5, 0.75, 0.75, 1.0]


@pytest.mark.anyio
async def test_the_scorecard_draws_the_spread_of_every_repeated_judge(
    run: RunResult, results: Path
) -> None:
    page = generate_dataset_scorecard_html(DatasetScorecard.from_folder(results / run.run_id))

    for name in STRATEGIES:
        assert f"{escape(name)}: spread of the repeated runs" in page
