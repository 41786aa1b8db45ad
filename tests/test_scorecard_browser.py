"""The scorecard opened in headless Chromium (Debian's ``chromium``, driven by Playwright).

Every test routes all requests and checks, when it ends, that the page asked for nothing but
its own file, logged no console error, raised no script error and opened no dialog.

Without ``/usr/bin/chromium`` or the ``playwright`` package these tests skip, except under CI
(the ``CI`` environment variable set), where they fail: CI must install both.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaltrace.constants import SCORECARD_TRACE_SPANS
from evaltrace.evals import Evaluation
from evaltrace.llm.calls import ModelUsage
from evaltrace.llm.prices import ModelPrice, PriceTable
from evaltrace.results import (
    DatasetEntryResult,
    DatasetScorecard,
    ScorecardWriter,
    save_dataset_scorecard,
)
from evaltrace.results.model import EntryResult, RunResult, entry_status
from evaltrace.results.trace_tree import TraceSpan
from evaltrace.results.usage import latency_summary
from test_scorecard import HOSTILE, build_run

CHROMIUM = Path(os.environ.get("EVALTRACE_TEST_CHROMIUM", "/usr/bin/chromium"))
"""Debian's Chromium; the variable exists so that a test can check what happens without it."""
DASH = "\u2013"
"""The en dash the page writes between the first and last row shown."""
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser tests: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A page and everything it did that a self-contained, safe page must not do."""

    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def rows(self) -> list[str]:
        names: list[str] = self.page.locator("#grid tbody tr td.name").all_inner_texts()
        return names

    def in_entry_order(self) -> Watched:
        """Sort the grid by entry number (it opens with failures first)."""
        self.page.click('#grid thead button[data-key="index"]')
        return self


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[[Path], Watched]]:
    opened: list[Watched] = []

    def open_(path: Path) -> Watched:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watched = Watched(page=page, url=path.resolve().as_uri())

        def route(request_route: Any) -> None:
            watched.requests.append(request_route.request.url)
            if request_route.request.url == watched.url:
                request_route.continue_()
            else:
                request_route.abort()

        def on_console(message: Any) -> None:
            if message.type == "error":
                watched.console_errors.append(message.text)

        def on_dialog(dialog: Any) -> None:
            watched.dialogs.append(dialog.message)
            dialog.dismiss()

        page.route("**/*", route)
        page.on("console", on_console)
        page.on("pageerror", lambda error: watched.page_errors.append(str(error)))
        page.on("dialog", on_dialog)
        page.goto(watched.url)
        page.wait_for_selector("#grid tbody tr, #count")
        opened.append(watched)
        return watched

    yield open_
    for watched in opened:
        watched.page.close()
        assert watched.requests == [watched.url]
        assert watched.console_errors == []
        assert watched.page_errors == []
        assert watched.dialogs == []


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests leave screenshots of the page, to look at (the path is printed)."""
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"scorecard screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def scorecard_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built in a thread of its own: Playwright's sync API keeps an event loop running in this
    # one, and the runner starts its own.
    with ThreadPoolExecutor(max_workers=1) as pool:
        folder = tmp_path_factory.mktemp("browser") / "run"
        pool.submit(build_run, folder).result()
        names = ("capital", "boom", "old", "x")
        baseline = pool.submit(build_run, tmp_path_factory.mktemp("base") / "run", names=names)
        old = baseline.result()
    first = old.entries[0]
    lower = [
        e.model_copy(update={"score": 0.5}) if e.evaluator == "mentions_paris" else e
        for e in first.evaluations
    ]
    entries = [first.model_copy(update={"evaluations": lower}), *old.entries[1:]]
    card = DatasetScorecard.from_folder(
        folder, baseline=old.model_copy(update={"entries": entries})
    )
    return save_dataset_scorecard(card, folder / "scorecard.html")


def test_the_grid_shows_every_entry_and_the_summary_its_counts(
    open_page: Callable[[Path], Watched], scorecard_file: Path, screenshots: Path
) -> None:
    watched = open_page(scorecard_file).in_entry_order()
    page = watched.page
    assert watched.rows() == ["capital", "boom", "xss", "river"]
    assert page.inner_text("#count") == f"1{DASH}4 of 4 entries"
    assert page.inner_text("#pass-rate") == "25.0%"
    counts = page.locator("#status-counts li").all_inner_texts()
    assert counts == ["SUCCESS 1", "FAILED_PARTIAL_SCORE 2", "ERROR 1"]
    headers = page.locator("#grid thead th").all_inner_texts()
    assert [h.replace(" ▲", "") for h in headers] == [
        "#", "Entry", "Status", "Time", "mentions_paris", "judge x3", "label", "short", "Cost",
    ]  # fmt: skip
    river = page.locator("#grid tbody tr").nth(3).locator("td").all_inner_texts()
    assert river[6] == "·"  # label was not applied to this entry
    assert river[7] == "1.000new"  # short was applied to this entry only; not in the baseline
    page.screenshot(path=str(screenshots / "scorecard-page.png"), full_page=True)


def test_cells_are_coloured_by_score_and_show_the_baseline_delta(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    page = open_page(scorecard_file).in_entry_order().page
    first = page.locator("#grid tbody tr").first.locator("td")
    assert first.nth(4).inner_text() == "1.000+0.50"
    colour = first.nth(4).evaluate("cell => getComputedStyle(cell).backgroundColor")
    assert colour.startswith("rgb(") and colour != "rgba(0, 0, 0, 0)"
    river = page.locator("#grid tbody tr").nth(3).locator("td")
    assert river.nth(4).inner_text() == "0.250new"
    assert page.locator("#grid tbody tr").nth(1).locator("td").nth(4).inner_text() == "error(was —)"


def test_clicking_an_entry_shows_its_detail_and_trace(
    open_page: Callable[[Path], Watched], scorecard_file: Path, screenshots: Path
) -> None:
    page = open_page(scorecard_file).in_entry_order().page
    page.locator("#grid tbody tr").first.click()
    page.wait_for_selector("#detail[open]")
    assert page.inner_text("#detail-title") == "#0 capital"
    assert page.inner_text("#detail-body pre.d-input") == "capital of France"
    assert page.inner_text("#detail-body pre.d-output") == "Paris, capital of France"
    assert page.inner_text("#detail-body pre.d-expectation") == "Paris"
    assert '"topic": "cities"' in page.inner_text("#detail-body pre.d-metadata")
    evaluations = page.locator("#detail-body table.evaluations tbody tr")
    assert evaluations.count() == 3
    assert evaluations.nth(0).inner_text().split("\t")[:4] == [
        "mentions_paris",
        "1.000",
        "0.500",
        "passed",
    ]
    assert evaluations.nth(1).locator(".runs li").all_inner_texts() == ["0.600", "0.800", "1.000"]
    trace = page.locator("#detail-trace")
    assert trace.locator("details").count() == 4  # runner span, agent, retriever, model call
    chat = trace.locator("details", has_text="chat gpt-4o-mini").last
    assert chat.get_attribute("open") is None  # spans below the second level start collapsed
    chat.locator("summary").click()
    assert chat.get_attribute("open") == ""
    text = trace.inner_text()
    assert "chat gpt-4o-mini llm" in text and "model gpt-4o-mini · tokens in 12, out 3" in text
    assert "→ user\ncapital of France" in text and "← assistant\nParis" in text
    assert "ms" in trace.locator("summary").first.inner_text()
    page.screenshot(path=str(screenshots / "scorecard-detail.png"))


def test_the_keyboard_opens_and_closes_an_entry(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    page = open_page(scorecard_file).in_entry_order().page
    page.locator("#grid tbody tr").first.focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.index") == "1"
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail[open]")
    assert page.inner_text("#detail-title") == "#1 boom"
    assert "ValueError: the app failed (in runnable)" in page.inner_text("#detail-body")
    page.keyboard.press("Escape")
    page.wait_for_selector("#detail:not([open])", state="attached")
    # the dialog's close event, which puts the focus back, comes in a task of its own
    page.wait_for_function("document.activeElement.dataset.index === '1'")


def test_filter_and_status_narrow_the_grid(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    watched = open_page(scorecard_file)
    page = watched.page
    page.fill("#filter", "longest river")
    assert watched.rows() == ["river"]
    assert page.inner_text("#count") == f"1{DASH}1 of 1 entries (filtered from 4)"
    page.fill("#filter", "")
    page.select_option("#status-filter", "FAILED_PARTIAL_SCORE")
    assert watched.rows() == ["xss", "river"]
    page.fill("#filter", "nothing like this")
    assert (
        watched.rows() == [] and page.inner_text("#count") == "no entry matches (filtered from 4)"
    )


def test_clicking_a_column_sorts_by_it(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    watched = open_page(scorecard_file)
    page = watched.page
    page.click('#grid thead button[data-key="ev:mentions_paris"]')
    # highest score first; the errored entry after the scored ones
    assert watched.rows() == ["capital", "xss", "river", "boom"]
    assert page.get_attribute("#grid thead th:nth-child(5)", "aria-sort") == "descending"
    page.click('#grid thead button[data-key="ev:mentions_paris"]')
    assert watched.rows() == ["boom", "xss", "river", "capital"]
    page.click('#grid thead button[data-key="ev:label"]')
    assert watched.rows()[-1] == "river"  # no label evaluation: last either way
    page.click('#grid thead button[data-key="name"]')
    assert watched.rows() == ["boom", "capital", "river", "xss"]


def test_hostile_output_shows_as_text_and_runs_nothing(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    watched = open_page(scorecard_file).in_entry_order()
    page = watched.page
    page.locator("#grid tbody tr").nth(2).click()
    page.wait_for_selector("#detail[open]")
    assert page.inner_text("#detail-body pre.d-output") == f"Paris {HOSTILE}"
    assert page.inner_text("#detail-body pre.d-input") == HOSTILE
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2  # the data element and the page's own script
    assert "49" not in page.inner_text("#detail-body pre.d-output")
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0


def test_a_large_run_is_paged(open_page: Callable[[Path], Watched], tmp_path: Path) -> None:
    entries = [
        EntryResult(
            index=i,
            name=f"entry {i:03d}",
            evaluations=[Evaluation(score=(i % 11) / 10, evaluator="e")],
        )
        for i in range(250)
    ]
    path = save_dataset_scorecard(RunResult(name="big", entries=entries), tmp_path / "big.html")
    watched = open_page(path).in_entry_order()
    page = watched.page
    assert page.locator("#grid tbody tr").count() == 100
    assert page.inner_text("#count") == f"1{DASH}100 of 250 entries"
    page.click("#next")
    assert watched.rows()[0] == "entry 100" and page.inner_text("#page") == "page 2 of 3"
    page.select_option("#page-size", "500")
    assert page.locator("#grid tbody tr").count() == 250


def test_evaluator_names_are_data_even_when_they_name_object_properties(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    def entry(index: int, names: list[str]) -> EntryResult:
        evaluations = [Evaluation(score=1.0, evaluator=name) for name in names]
        return EntryResult(index=index, name=f"e{index}", evaluations=evaluations)

    run = RunResult(name="r", entries=[entry(0, ["constructor", "__proto__"]), entry(1, ["x"])])
    baseline = RunResult(name="r", entries=[entry(1, ["toString"])])
    card = DatasetScorecard.from_run(run, baseline=baseline)
    page = open_page(save_dataset_scorecard(card, tmp_path / "names.html")).page
    second = page.locator("#grid tbody tr").nth(1).locator("td").all_inner_texts()
    assert second[4:] == ["·", "·", "1.000new"]
    page.locator("#grid tbody tr").nth(1).click()
    assert page.locator("#detail-body table.evaluations tbody tr").inner_text().split("\t")[:3] == [
        "x",
        "1.000",
        "—",
    ]


def spending_run(*, priced: bool) -> RunResult:
    """A run whose app called a model: two entries of one and three calls, one of none."""
    calls = {"cheap": 1, "dear": 3, "none": 0}
    entries = [
        EntryResult(
            index=index,
            name=name,
            evaluations=[Evaluation(score=1.0, evaluator="ok")],
            duration_s=0.2 * (index + 1),
            usage=(
                {
                    "gpt-4o-mini": ModelUsage(
                        calls=count, input_tokens=1000 * count, output_tokens=100 * count
                    )
                }
                if count
                else {}
            ),
        )
        for index, (name, count) in enumerate(calls.items())
    ]
    usage = {"gpt-4o-mini": ModelUsage(calls=4, input_tokens=4000, output_tokens=400)}
    run = RunResult(
        name="spending", entries=entries, usage=usage, latency=latency_summary([0.2, 0.4, 0.6])
    )
    table = PriceTable(models={"gpt-4o-mini": ModelPrice(input=1.0, output=10.0)})
    return run.priced(table) if priced else run


def test_the_cost_column_and_tiles_show_what_the_app_spent(
    open_page: Callable[[Path], Watched], tmp_path: Path, screenshots: Path
) -> None:
    path = save_dataset_scorecard(spending_run(priced=True), tmp_path / "spend.html")
    watched = open_page(path)
    page = watched.page

    headers = page.locator("#grid thead th").all_inner_texts()
    assert [h.replace(" ▲", "") for h in headers] == ["#", "Entry", "Status", "Time", "ok", "Cost"]
    costs = page.locator("#grid tbody tr td:nth-child(6)").all_inner_texts()
    assert costs == ["$0.002", "$0.006", "·"]
    assert page.get_attribute("#grid tbody tr:nth-child(2) td:nth-child(6)", "title") == (
        "3,300 tokens in 3 model calls"
    )
    assert page.inner_text("#cost") == "$0.008"
    assert page.inner_text("#tokens") == "4,400"
    assert page.inner_text("#latency") == "580 ms"
    page.click('#grid thead button[data-key="cost"]')
    assert watched.rows() == ["cheap", "dear", "none"]  # an entry without a cost goes last
    page.click('#grid thead button[data-key="cost"]')
    assert watched.rows() == ["dear", "cheap", "none"]
    page.screenshot(path=str(screenshots / "scorecard-cost.png"), full_page=True)


def test_without_a_price_table_the_cost_shows_as_unknown(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    path = save_dataset_scorecard(spending_run(priced=False), tmp_path / "unpriced.html")
    page = open_page(path).page

    assert page.locator("#grid tbody tr td:nth-child(6)").all_inner_texts() == [
        "unknown", "unknown", "·",
    ]  # fmt: skip
    assert page.inner_text("#cost") == "unknown"


def test_a_run_without_model_calls_has_no_cost_column(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    run = RunResult(name="plain", entries=[EntryResult(index=0, name="a", duration_s=0.1)])
    page = open_page(save_dataset_scorecard(run, tmp_path / "plain.html")).page

    assert "Cost" not in page.locator("#grid thead th").all_inner_texts()
    assert page.locator("#cost").count() == 0


def test_failed_and_errored_entries_come_first_and_the_sort_says_so(
    open_page: Callable[[Path], Watched], scorecard_file: Path
) -> None:
    watched = open_page(scorecard_file)
    page = watched.page
    assert watched.rows() == ["boom", "xss", "river", "capital"]  # ERROR, 2 failed, SUCCESS
    assert page.get_attribute("#grid thead th:nth-child(3)", "aria-sort") == "ascending"
    assert page.inner_text("#sort-label") == "status, failures first"
    assert page.is_hidden("#sort-reset")
    watched.in_entry_order()
    assert watched.rows() == ["capital", "boom", "xss", "river"]
    assert page.inner_text("#sort-label") == "entry number, ascending"
    page.click("#sort-reset")
    assert watched.rows() == ["boom", "xss", "river", "capital"]
    assert page.is_hidden("#sort-reset")


def many_entries(count: int, failing: dict[int, str]) -> list[EntryResult]:
    """``count`` passing entries, but those in ``failing``: ``"error"`` or ``"fail"``."""
    entries = []
    for i in range(count):
        how = failing.get(i)
        if how == "error":
            evaluation = Evaluation(error={"type": "ValueError", "message": "judge down"})
        else:
            evaluation = Evaluation(score=0.0 if how == "fail" else 1.0, reasoning="checked")
        evaluation = evaluation.with_evaluator("accuracy")
        entries.append(
            EntryResult(
                index=i,
                name=f"entry {i:03d}",
                output=f"answer number {i}",
                evaluations=[evaluation],
                status=entry_status([evaluation]),
            )
        )
    return entries


def test_a_run_with_failures_shows_them_in_view_at_1400_by_900(
    open_page: Callable[[Path], Watched], tmp_path: Path, screenshots: Path
) -> None:
    failing = {147: "fail", 261: "error", 298: "fail"}
    run = RunResult(name="many", entries=many_entries(300, failing))
    watched = open_page(save_dataset_scorecard(run, tmp_path / "many.html"))
    page = watched.page
    page.set_viewport_size({"width": 1400, "height": 900})
    shot = screenshots / "scorecard-failures-first.png"
    page.screenshot(path=str(shot))  # as opened: nothing scrolled
    assert shot.stat().st_size > 0
    assert page.evaluate("window.scrollY") == 0
    listed = page.locator("#failing button.open-entry").all()
    assert [item.inner_text() for item in listed] == ["entry 147", "entry 261", "entry 298"]
    for item in listed:  # each failing entry is in view without scrolling
        box = item.bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= 900
    listed[1].click()
    page.wait_for_selector("#detail[open]")
    assert "entry 261" in page.inner_text("#detail")
    page.keyboard.press("Escape")
    assert watched.rows()[:3] == ["entry 261", "entry 147", "entry 298"]  # the grid too


def test_a_large_run_reads_each_entry_from_its_chunk_when_needed(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    entries = many_entries(12, {9: "fail"})
    run = RunResult(name="chunked", entries=entries)
    with ScorecardWriter(inline_entries=5, chunk_entries=4) as writer:
        for entry in entries:
            writer.add_entry(entry)
        path = writer.write(tmp_path / "chunked.html", run)
    watched = open_page(path)
    page = watched.page
    assert page.locator("script[id^=scorecard-chunk-]").count() == 3
    assert watched.rows()[0] == "entry 009"
    page.locator("#grid tbody tr").first.click()
    page.wait_for_selector("#detail[open]")
    assert page.inner_text("#detail-body pre.d-output") == "answer number 9"
    page.keyboard.press("Escape")
    page.fill("#filter", "answer number 11")
    assert watched.rows() == ["entry 011"]


def test_a_trace_past_the_size_cap_is_drawn_when_asked_for(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    leaves = [
        TraceSpan(name=f"step {i}", kind="tool", status="ok", start_ms=i, duration_ms=1)
        for i in range(SCORECARD_TRACE_SPANS)
    ]
    root = TraceSpan(
        name="agent", kind="agent", status="ok", start_ms=0, duration_ms=300, children=leaves
    )
    row = DatasetEntryResult(index=0, name="deep", status="SUCCESS", trace=[root])
    with ScorecardWriter() as writer:
        writer.add(row)
        path = writer.write(tmp_path / "deep.html", RunResult(name="deep"))
    page = open_page(path).page
    page.locator("#grid tbody tr").first.click()
    page.wait_for_selector("#detail[open]")
    trace = page.locator("#detail-trace")
    assert trace.locator("details").count() == 0
    trace.get_by_role("button", name=f"Show the trace ({SCORECARD_TRACE_SPANS + 1} spans)").click()
    assert trace.locator("details").count() == SCORECARD_TRACE_SPANS + 1


def test_a_run_without_entries_renders(
    open_page: Callable[[Path], Watched], tmp_path: Path
) -> None:
    path = save_dataset_scorecard(RunResult(name="empty"), tmp_path / "empty.html")
    page = open_page(path).page
    assert page.inner_text("#count") == "no entry matches"


@pytest.mark.parametrize(("ci", "outcome"), [("", "1 skipped"), ("true", "1 error")])
def test_without_chromium_the_tests_skip_but_fail_under_ci(ci: str, outcome: str) -> None:
    environment = {**os.environ, "CI": ci, "EVALTRACE_TEST_CHROMIUM": "/nonexistent/chromium"}
    if not ci:
        environment.pop("CI")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            __file__,
            "-k",
            "a_run_without_entries",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        env=environment,
        cwd=Path(__file__).parent.parent,
    )
    assert outcome in result.stdout, result.stdout
    if ci:
        assert "CI must run the browser tests: /nonexistent/chromium is missing" in result.stdout
