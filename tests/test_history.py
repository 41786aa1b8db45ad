"""A history of runs: every run folder read, grouped by dataset, compared with the run before."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import pytest

from evaltrace.cli import main
from evaltrace.errors import ResultFileError
from evaltrace.evals import Evaluation
from evaltrace.results import EntryResult, RunResult, save_result
from evaltrace.results.folder import RUN_FILE, find_runs
from evaltrace.results.history import (
    HISTORY_MEASURES,
    HistoryMeasure,
    generate_history_html,
    register_history_measure,
    render_history,
    run_history,
    save_history_page,
)
from evaltrace.results.model import EntrySelection
from evaltrace.results.run_statistics import run_statistics
from evaltrace.results.scorecard import SCORECARD_FILE
from test_comparison import write_runs

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
HOSTILE = '<img src=x onerror="alert(1)">&amp;</script>'


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() puts the current folder on it


def save_run(
    root: Path,
    day: int,
    failing: Sequence[int] = (),
    *,
    name: str = "qa",
    entries: int = 60,
    durations: bool = True,
    statistics: bool = True,
    scorecard: bool = False,
    folder: str | None = None,
    selection: EntrySelection | None = None,
) -> Path:
    """Save a run of ``name`` started ``day`` days after START, its ``failing`` entries at 0."""
    run_id = (START + timedelta(days=day)).strftime("%Y%m%dT%H%M%S.%fZ")
    result = RunResult(
        name=name,
        run_id=run_id,
        started_at=START + timedelta(days=day),
        evaluators=["exact"],
        selection=selection,
        entries=[
            EntryResult(
                index=i,
                name=f"q{i}",
                duration_s=(0.5 + i / 100) if durations else 0.0,
                evaluations=[Evaluation(score=float(i not in failing), evaluator="exact")],
            )
            for i in range(entries)
        ],
    )
    if statistics:
        figures = run_statistics(result, confidence=0.95, resamples=200, seed=0)
        result = result.model_copy(update={"statistics": figures})
    where = root / (folder or run_id)
    where.mkdir(parents=True)
    save_result(where / "result.json", result)
    if scorecard:
        (where / SCORECARD_FILE).write_text("<!DOCTYPE html><title>card</title>")
    return where


@pytest.fixture
def _no_extra_measures() -> Iterator[None]:
    before = dict(HISTORY_MEASURES)
    yield
    HISTORY_MEASURES.clear()
    HISTORY_MEASURES.update(before)


# -- reading the runs ------------------------------------------------------------------------


def test_a_datasets_runs_are_listed_oldest_first_with_their_means_and_intervals(
    tmp_path: Path,
) -> None:
    save_run(tmp_path, 2, [1, 2])
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, [1])

    (dataset,) = run_history([tmp_path], resamples=200).datasets

    assert dataset.name == "qa"
    assert [run.started_at for run in dataset.runs] == [START + timedelta(days=d) for d in range(3)]
    assert [run.passed for run in dataset.runs] == [60, 59, 58]
    assert dataset.evaluators == ["exact"]
    last = dataset.runs[-1].statistics
    assert last is not None
    (exact,) = last.evaluators
    assert exact.n == 60 and exact.mean_interval is not None
    assert exact.mean == pytest.approx(58 / 60)
    assert exact.mean_interval.low < exact.mean < exact.mean_interval.high


def test_a_run_six_failures_worse_than_the_run_before_is_marked_worse(tmp_path: Path) -> None:
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, range(6))

    first, second = run_history([tmp_path], resamples=200).datasets[0].runs

    assert first.previous is None and first.changes == [] and first.mark == ""
    assert second.previous == first.run_id
    (change,) = second.significant
    assert (change.name, change.verdict) == ("exact", "worse")
    assert change.adjusted_p_value is not None and change.adjusted_p_value < 0.05
    assert change.difference == pytest.approx(-0.1)
    assert second.mark == "worse"


def test_a_run_that_fixed_entries_is_marked_better(tmp_path: Path) -> None:
    save_run(tmp_path, 0, range(8))
    save_run(tmp_path, 1)

    runs = run_history([tmp_path], resamples=200).datasets[0].runs

    assert runs[1].mark == "better"


def test_a_small_change_is_not_marked(tmp_path: Path) -> None:
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, [3])

    runs = run_history([tmp_path], resamples=200).datasets[0].runs

    assert [change.verdict for change in runs[1].changes] == ["no significant change"]
    assert runs[1].mark == ""


def test_runs_of_different_datasets_are_kept_apart_and_compared_with_their_own(
    tmp_path: Path,
) -> None:
    save_run(tmp_path, 0, name="qa")
    save_run(tmp_path, 1, range(10), name="chat")
    save_run(tmp_path, 2, name="qa")

    history = run_history([tmp_path], resamples=200)

    assert [dataset.name for dataset in history.datasets] == ["chat", "qa"]
    chat, qa = history.datasets
    assert len(chat.runs) == 1 and chat.runs[0].previous is None
    assert qa.runs[1].previous == qa.runs[0].run_id and qa.runs[1].mark == ""


def _shard(shard: int, shards: int, entry_filter: str | None = None) -> EntrySelection:
    return EntrySelection(
        entries=60, digest="ab" * 32, shard=shard, shards=shards, entry_filter=entry_filter
    )


def test_runs_of_a_shard_are_kept_apart_from_whole_runs_of_the_same_dataset(
    tmp_path: Path,
) -> None:
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, range(10), selection=_shard(1, 2))
    save_run(tmp_path, 2, selection=_shard(1, 1))  # a selection of one shard: the whole run
    save_run(tmp_path, 3, range(10), selection=_shard(1, 2))
    save_run(tmp_path, 4, selection=_shard(2, 2))

    history = run_history([tmp_path], resamples=200)

    assert [(d.name, d.part, d.title) for d in history.datasets] == [
        ("qa", None, "qa"),
        ("qa", "shard 1/2", "qa (shard 1/2)"),
        ("qa", "shard 2/2", "qa (shard 2/2)"),
    ]
    whole, first, second = history.datasets
    assert [run.started_at for run in whole.runs] == [START, START + timedelta(days=2)]
    assert whole.runs[1].mark == ""  # not compared with the shard's run, 10 failures worse
    assert len(first.runs) == 2 and first.runs[1].previous == first.runs[0].run_id
    assert len(second.runs) == 1 and second.runs[0].previous is None


def test_runs_given_an_entry_filter_are_kept_apart_and_named_by_it(tmp_path: Path) -> None:
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, range(10), selection=_shard(1, 1, "smoke"))
    save_run(tmp_path, 2, selection=_shard(2, 3, "smoke"))

    history = run_history([tmp_path], resamples=0)

    assert [d.title for d in history.datasets] == [
        "qa",
        "qa (entries matching -k 'smoke')",
        "qa (entries matching -k 'smoke', shard 2/3)",
    ]
    text = render_history(history)
    assert "qa (entries matching -k 'smoke'): 1 runs" in text
    page = generate_history_html(history, page=str(tmp_path / "history.html"))
    assert "qa (entries matching -k &#39;smoke&#39;, shard 2/3)</h2>" in page


def test_a_run_saved_without_statistics_gets_them_from_its_entries(tmp_path: Path) -> None:
    save_run(tmp_path, 0, [1, 2, 3], statistics=False)

    (run,) = run_history([tmp_path], resamples=200, confidence=0.9).datasets[0].runs

    assert run.statistics is not None
    assert run.statistics.confidence == 0.9
    assert run.statistics.evaluators[0].mean == pytest.approx(57 / 60)


def test_no_resamples_means_no_comparison(tmp_path: Path) -> None:
    save_run(tmp_path, 0, statistics=False)
    save_run(tmp_path, 1, range(20), statistics=False)

    runs = run_history([tmp_path], resamples=0).datasets[0].runs

    assert [run.changes for run in runs] == [[], []]
    assert runs[1].statistics is None


def test_p95_latency_is_shown_only_when_the_runs_timed_their_entries(tmp_path: Path) -> None:
    timed = save_run(tmp_path / "timed", 0)
    save_run(tmp_path / "untimed", 0, name="stored", durations=False)

    timed_history = run_history([timed], resamples=0)
    untimed_history = run_history([tmp_path / "untimed"], resamples=0)

    (run,) = timed_history.datasets[0].runs
    durations = [0.5 + i / 100 for i in range(60)]
    assert run.measures["p95 latency"] == pytest.approx(sorted(durations)[56] + 0.05 * 0.01)
    assert timed_history.datasets[0].measures == ["p95 latency"]
    assert untimed_history.datasets[0].measures == []
    assert "p95 latency" not in render_history(untimed_history)


@pytest.mark.usefixtures("_no_extra_measures")
def test_a_registered_measure_gets_its_column_and_chart(tmp_path: Path) -> None:
    save_run(tmp_path, 0)
    register_history_measure(
        HistoryMeasure(name="cost", unit="USD", read=lambda result: 0.25 * len(result.entries))
    )

    history = run_history([tmp_path], resamples=0)

    assert history.datasets[0].measures == ["p95 latency", "cost"]
    assert "15 USD" in render_history(history, width=300)
    assert 'data-figure="measure:cost"' in generate_history_html(history, page=tmp_path / "h.html")


# -- finding the runs and refusing what is not one -------------------------------------------


def test_run_folders_are_found_at_every_depth_and_unfinished_runs_left_out(
    tmp_path: Path,
) -> None:
    first = save_run(tmp_path, 0)
    nested = save_run(tmp_path / "nightly", 1)
    unfinished = tmp_path / "20261130T000000.000000Z"
    unfinished.mkdir()
    (unfinished / RUN_FILE).write_text("{}")

    found = find_runs([tmp_path, first / "result.json"])
    history = run_history([tmp_path], resamples=0)

    assert found.finished == [first, nested]
    assert found.unfinished == [unfinished]
    assert history.unfinished == [str(unfinished)]
    assert str(unfinished) in render_history(history, width=300)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda root: root / "missing", r"missing: no such folder; give evaltrace_results/"),
        (
            lambda root: _file(root / "notes.txt"),
            r"notes.txt is a file, not a run's folder; give evaltrace_results/",
        ),
        (
            lambda root: _folder(root / "empty"),
            r"empty holds no run's folder \(no result.json under it\); give evaltrace_results/",
        ),
        (
            lambda root: _unfinished(root / "runs" / "a").parent,
            r"runs holds no run's folder \(no result.json under it\) and 1 run\(s\) that did not "
            r"end \(.*runs/a: take one up again with `evaltrace test --resume .*runs/a`\); give ",
        ),
        (
            lambda root: _unfinished(root / "run"),
            r"run is the folder of a run that did not end .*`evaltrace test --resume .*run`",
        ),
    ],
    ids=["missing", "file", "no-runs", "only-unfinished-runs", "unfinished-run"],
)
def test_a_path_that_is_not_a_folder_of_runs_is_refused_saying_what_to_give(
    tmp_path: Path, make: object, expected: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]

    with pytest.raises(ResultFileError, match=expected):
        run_history([path])


def _file(path: Path) -> Path:
    path.write_text("notes")
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _unfinished(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / RUN_FILE).write_text("{}")
    return path


def test_a_run_that_cannot_be_read_is_left_out_naming_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    save_run(tmp_path, 0)
    damaged = save_run(tmp_path, 1)
    (damaged / "result.json").write_text("{not json")

    history = run_history([tmp_path], resamples=0)
    monkeypatch.chdir(tmp_path)
    code = main(["history", ".", "--no-html"])

    assert [len(dataset.runs) for dataset in history.datasets] == [1]
    (problem,) = history.unreadable
    assert problem.startswith(f"{damaged / 'result.json'}: not valid JSON")
    assert code == 0
    assert "evaltrace history: left out " in capsys.readouterr().err


# -- the page --------------------------------------------------------------------------------


def test_the_page_loads_nothing_and_runs_no_script(tmp_path: Path) -> None:
    save_run(tmp_path, 0)
    save_run(tmp_path, 1, range(6))

    html = generate_history_html(run_history([tmp_path], resamples=200), page=tmp_path / "h.html")

    (policy,) = [
        unescape(found)
        for found in re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    ]
    assert policy.startswith("default-src 'none'; style-src 'sha256-")
    assert "script-src" not in policy
    assert "<script" not in html and "http://" not in html and "https://" not in html


def test_names_and_sources_are_escaped_on_the_page(tmp_path: Path) -> None:
    save_run(tmp_path, 0, name=HOSTILE)

    html = generate_history_html(run_history([tmp_path], resamples=0), page=tmp_path / "h.html")

    assert HOSTILE not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&amp;amp;&lt;/script&gt;" in html


def test_each_dot_links_to_its_runs_scorecard_relative_to_the_page(tmp_path: Path) -> None:
    save_run(tmp_path / "runs", 0, scorecard=True, folder="javascript:alert(1)#?")
    save_run(tmp_path / "runs", 1, scorecard=False)

    html = generate_history_html(
        run_history([tmp_path / "runs"], resamples=0), page=tmp_path / "pages" / "h.html"
    )

    link = "../runs/javascript%3Aalert%281%29%23%3F/scorecard.html"
    # The dots of the score, the pass rate and the latency, and the run's row in the table.
    assert html.count(f'<a href="{link}">') == 4
    assert html.count(f'<td class="run"><a href="{link}">') == 1
    assert "no scorecard.html in" in html  # the second run's tooltips say why it has no link


def test_names_in_the_printed_table_are_text_not_markup(tmp_path: Path) -> None:
    save_run(tmp_path, 0, name="[red]qa[/red]")

    printed = render_history(run_history([tmp_path], resamples=0), width=200)

    assert "[red]qa[/red]: 1 runs" in printed


def test_save_history_page_writes_the_page(tmp_path: Path) -> None:
    save_run(tmp_path, 0)

    page = save_history_page(run_history([tmp_path], resamples=0), tmp_path / "out" / "h.html")

    assert page.read_text().startswith("<!DOCTYPE html>")


# -- the command -----------------------------------------------------------------------------


def test_evaltrace_history_over_real_runs_marks_the_run_six_failures_worse(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI", "true")
    write_runs(tmp_path)
    for version in ("old", "new"):
        assert main(["test", f"{version}.evaltrace.json", "--exit-zero"]) == 0
    capsys.readouterr()

    assert main(["history"]) == 0

    printed = capsys.readouterr().out
    assert "qa: 2 runs" in printed
    assert "worse: ExactMatch -0.100, p = 0.031" in printed
    assert "history: evaltrace_results/history.html" in printed
    page = (tmp_path / "evaltrace_results" / "history.html").read_text()
    assert page.count('class="ring worse"') == 2  # on the evaluator's chart and the pass rate's
    runs = sorted(path.name for path in (tmp_path / "evaltrace_results").iterdir() if path.is_dir())
    for run in runs:
        assert f'<a href="{run}/scorecard.html">{run}</a>' in page


def test_evaltrace_history_prints_json_and_writes_the_page_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run = save_run(tmp_path / "results", 0)

    assert main(["history", str(run), "--html", "pages/h.html", "--format", "json"]) == 0

    data = json.loads(capsys.readouterr().out)
    assert [dataset["name"] for dataset in data["datasets"]] == ["qa"]
    assert (tmp_path / "pages" / "h.html").is_file()
    assert not (tmp_path / "results" / "history.html").exists()


def test_evaltrace_history_of_a_run_folder_writes_the_page_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = save_run(tmp_path / "results", 0)

    assert main(["history", str(run)]) == 0
    assert main(["history", str(tmp_path / "results"), "--no-html"]) == 0

    assert (tmp_path / "results" / "history.html").is_file()


def test_evaltrace_history_without_runs_says_to_run_evaltrace_test_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)

    assert main(["history"]) == 2

    message = capsys.readouterr().err
    assert "evaltrace_results: no such folder" in message
    assert "run `evaltrace test` first" in message
    assert not list(tmp_path.iterdir())


def test_evaltrace_history_names_a_run_that_did_not_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    save_run(tmp_path / "evaltrace_results", 0)
    _unfinished(tmp_path / "evaltrace_results" / "20261130T000000.000000Z")

    assert main(["history", "--no-html"]) == 0

    assert "left out evaltrace_results/20261130T000000.000000Z: its run did not end" in (
        capsys.readouterr().err
    )
