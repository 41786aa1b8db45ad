"""The history page opened in headless Chromium (Debian's ``chromium``, driven by Playwright).

Every test routes all requests and checks, when it ends, that the page asked for nothing but
files of the folder of runs, logged no console error, raised no script error and opened no
dialog. Without Chromium or Playwright these tests skip, except under CI, where they fail
(the ``browser`` fixture of ``test_scorecard_browser``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaltrace.results import run_history, save_history_page, write_scorecard
from test_history import HOSTILE, save_run
from test_scorecard_browser import browser  # noqa: F401  (a fixture)


@dataclass
class Watched:
    """A page and everything it did that a self-contained page must not do."""

    page: Any
    root: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[[Path], Watched]]:  # noqa: F811
    opened: list[Watched] = []

    def open_(path: Path) -> Watched:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        watched = Watched(page=page, root=path.parent.resolve().as_uri() + "/")

        def route(request_route: Any) -> None:
            watched.requests.append(request_route.request.url)
            if request_route.request.url.startswith(watched.root):
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
        page.goto(path.resolve().as_uri())
        opened.append(watched)
        return watched

    yield open_
    for watched in opened:
        watched.page.close()
        assert all(url.startswith(watched.root) for url in watched.requests), watched.requests
        assert watched.console_errors == []
        assert watched.page_errors == []
        assert watched.dialogs == []


@pytest.fixture(scope="module")
def history_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history") / "evaltrace_results"
    for day, failing in ((0, ()), (1, range(6)), (2, range(5))):
        write_scorecard(save_run(root, day, failing))
    write_scorecard(save_run(root, 3, [1], name=HOSTILE))
    return save_history_page(run_history([root], resamples=200), root / "history.html")


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests leave screenshots of the page, to look at (the path is printed)."""
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"history screenshots: {folder}")
    return folder


def test_each_dataset_shows_its_charts_and_its_runs(
    open_page: Callable[[Path], Watched], history_file: Path, screenshots: Path
) -> None:
    page = open_page(history_file).page

    assert page.locator("section.dataset h2").all_inner_texts() == [HOSTILE, "qa"]
    qa = page.locator("#dataset-2")
    figures = qa.locator("figure")
    keys = [figures.nth(i).get_attribute("data-figure") for i in range(figures.count())]
    assert keys == ["evaluator:exact", "pass-rate", "measure:p95 latency"]
    for i in range(3):
        assert figures.nth(i).locator("circle.point").count() == 3
    assert qa.locator("figure polygon.band").count() == 2  # the mean's and the pass rate's
    assert qa.locator("table.runs tbody tr").count() == 3
    page.screenshot(path=str(screenshots / "history.png"), full_page=True)


def test_a_run_significantly_worse_than_the_one_before_is_marked(
    open_page: Callable[[Path], Watched], history_file: Path
) -> None:
    qa = open_page(history_file).page.locator("#dataset-2")

    rings = qa.locator("circle.ring.worse")
    assert rings.count() == 2  # on the evaluator's chart and on the pass rate's
    assert all(rings.nth(i).is_visible() for i in range(2))
    colour = qa.locator("circle.point.worse").first.evaluate("c => getComputedStyle(c).fill")
    assert colour == "rgb(209, 69, 59)"
    rows = qa.locator("table.runs tbody tr")
    assert [rows.nth(i).get_attribute("class") for i in range(3)] == [None, "worse", None]
    assert rows.nth(1).locator("td.change").inner_text().startswith("worse: exact -0.100, p = ")
    assert rows.nth(2).locator("td.change").inner_text() == "no significant change"


def test_a_dots_tooltip_gives_its_run_its_interval_and_n(
    open_page: Callable[[Path], Watched], history_file: Path
) -> None:
    qa = open_page(history_file).page.locator("#dataset-2")

    title = qa.locator('figure[data-figure="evaluator:exact"] circle.point title').nth(1)
    text = title.text_content()

    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "20261121T090000.000000Z (2026-11-21T09:00:00+00:00)"
    assert lines[1].startswith("mean 0.900 [") and lines[1].endswith("], n = 60")
    assert lines[2].startswith("worse than the run before, p = ")


def test_clicking_a_dot_opens_its_runs_scorecard(
    open_page: Callable[[Path], Watched], history_file: Path
) -> None:
    page = open_page(history_file).page
    dot = page.locator('#dataset-2 figure[data-figure="evaluator:exact"] a').nth(1)

    dot.click()
    page.wait_for_selector("#grid tbody tr")

    scorecard = history_file.parent / "20261121T090000.000000Z" / "scorecard.html"
    assert page.url == scorecard.resolve().as_uri()
    assert page.locator("#pass-rate").inner_text() == "90.0%"


def test_hostile_names_show_as_text_and_run_nothing(
    open_page: Callable[[Path], Watched], history_file: Path
) -> None:
    page = open_page(history_file).page

    assert page.locator("#dataset-1 h2").inner_text() == HOSTILE
    assert page.locator("img").count() == 0
