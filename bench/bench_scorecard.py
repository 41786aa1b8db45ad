"""The HTML scorecard at 10,000 entries: file size and time to first render in Chromium.

    .venv-bench/bin/python bench/bench_scorecard.py [--entries 10000] [--rounds 5]

A synthetic run of N entries (three evaluators, one of them a repeated judge with three runs;
metadata; a 3-span trace per entry: agent, retriever, model call with two messages) is saved
as ``result.json`` and ``traces.jsonl``; the scorecard is built from them (``load_traces``,
then ``DatasetScorecard.from_run``, each timed), rendered and written. Then, in headless
Chromium (Debian's ``/usr/bin/chromium``, driven by Playwright), each page is loaded
``--rounds`` times in alternation and the best time to first render is kept:

* ours: the scorecard of N entries, from navigation start to the end of the script's first
  render of the grid (the ``data-rendered-ms`` mark it sets);
* baseline 1: a plain, script-free HTML table of the same N rows (entry, status, one column
  per evaluator), to its ``load`` event: what showing the same rows costs without a scorecard;
* baseline 2: the scorecard of the first 100 entries (same code, 1% of the data).

It also times filtering (one keystroke in the filter box) and sorting (a click on an
evaluator's column) over the N entries inside the page. Goal: the N-entry scorecard renders
within 2x of the plain table. Without Chromium or Playwright it prints why and exits 0.
"""

from __future__ import annotations

import html
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evaltrace import load_traces, save_traces
from evaltrace.evals import Evaluation
from evaltrace.results import DatasetScorecard, generate_dataset_scorecard_html
from evaltrace.results.model import EntryResult, RunResult
from evaltrace.trace import SpanEventRecord, SpanRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
GOAL = 2.0
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def make_run(n: int, folder: Path) -> RunResult:
    entries: list[EntryResult] = []
    spans: list[SpanRecord] = []
    for i in range(n):
        trace_id = 0x1000 + i
        start = T0 + i * 50 * MS
        question = f"question {i}: which river flows through city {i % 97}?"
        answer = f"The river of city {i % 97} is river {i % 13}."
        runs = [((i * k) % 10) / 10 for k in (3, 5, 7)]
        evaluations = [
            Evaluation(score=float(i % 3 != 0), reasoning="exact comparison", evaluator="exact"),
            Evaluation(score=(i % 11) / 10, reasoning="token overlap", evaluator="f1"),
            Evaluation(
                score=sorted(runs)[1],
                reasoning="median of three runs",
                evaluator="judge x3 (median)",
                details={
                    "num_judges": 3,
                    "num_valid": 3,
                    "method": "median",
                    "runs": [
                        {"index": k, "status": "scored", "score": s, "reasoning": "ok"}
                        for k, s in enumerate(runs)
                    ],
                },
            ),
        ]
        entries.append(
            EntryResult(
                index=i,
                name=f"entry-{i:05d}",
                description=f"river question {i}",
                input={"question": question},
                output=answer,
                expectation=f"river {i % 13}",
                eval_metadata={"topic": ["rivers", "cities", "lakes"][i % 3], "difficulty": i % 5},
                evaluations=evaluations,
                duration_s=0.02 + (i % 7) / 100,
                trace_ids=[f"{trace_id:032x}"],
            )
        )
        messages = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": f'[{{"role":"user","content":"{question}"}}]',
            "gen_ai.output.messages": f'[{{"role":"assistant","content":"{answer}"}}]',
        }
        spans += [
            SpanRecord(
                trace_id=trace_id,
                span_id=3 * i + 1,
                name="answer",
                start_time_ns=start,
                end_time_ns=start + 30 * MS,
                attributes={"openinference.span.kind": "AGENT", "input.value": question},
                events=(
                    SpanEventRecord(
                        name="evaltrace.wrap",
                        timestamp_ns=start + 29 * MS,
                        attributes={
                            "evaltrace.wrap.name": "answer",
                            "evaltrace.wrap.purpose": "output",
                            "evaltrace.wrap.value": f'"{answer}"',
                        },
                    ),
                ),
            ),
            SpanRecord(
                trace_id=trace_id,
                span_id=3 * i + 2,
                parent_span_id=3 * i + 1,
                name="retrieve",
                start_time_ns=start + MS,
                end_time_ns=start + 5 * MS,
                attributes={"openinference.span.kind": "RETRIEVER"},
            ),
            SpanRecord(
                trace_id=trace_id,
                span_id=3 * i + 3,
                parent_span_id=3 * i + 1,
                name="chat gpt-4o-mini",
                start_time_ns=start + 6 * MS,
                end_time_ns=start + 28 * MS,
                attributes=messages,
            ),
        ]
    folder.mkdir(parents=True, exist_ok=True)
    save_traces(spans, folder / "traces.jsonl")
    run = RunResult(
        name="rivers",
        run_id="bench",
        evaluators=["exact", "f1", "judge x3 (median)"],
        entries=entries,
        settings={"judge_model": "gpt-4o-mini", "concurrency": 16},
    )
    (folder / "result.json").write_text(run.model_dump_json(), encoding="utf-8")
    return run


def plain_table(run: RunResult) -> str:
    """The same rows as a static table with no script: the baseline page."""
    head = "".join(
        f"<th>{html.escape(name)}</th>" for name in ["#", "entry", "status", *run.evaluators]
    )
    rows = []
    for entry in run.entries:
        scores = {e.evaluator: e.score for e in entry.evaluations}
        cells = [str(entry.index), entry.name, entry.status.value] + [
            "" if scores.get(name) is None else f"{scores[name]:.3f}" for name in run.evaluators
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>plain</title></head><body>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "</body></html>"
    )


def load_ms(browser: Any, path: Path, scorecard: bool) -> float:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(path.as_uri(), wait_until="load")
        if scorecard:
            page.wait_for_selector("html[data-rendered-ms]", state="attached")
            return float(page.get_attribute("html", "data-rendered-ms"))
        timing = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        return float(timing)
    finally:
        page.close()


def interaction_ms(browser: Any, path: Path) -> tuple[float, float]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(path.as_uri())
        page.wait_for_selector("html[data-rendered-ms]", state="attached")
        filtering = page.evaluate(
            """() => { const input = document.getElementById('filter');
            const started = performance.now(); input.value = 'rivers';
            input.dispatchEvent(new Event('input')); return performance.now() - started; }"""
        )
        page.evaluate(
            "() => { const i = document.getElementById('filter'); i.value = '';"
            " i.dispatchEvent(new Event('input')); }"
        )
        sorting = page.evaluate(
            """() => { const b = document.querySelector('#grid thead button[data-key="ev:f1"]');
            const started = performance.now(); b.click(); return performance.now() - started; }"""
        )
        return float(filtering), float(sorting)
    finally:
        page.close()


def main() -> int:
    command = parser(__doc__)
    command.add_argument("--entries", type=positive, default=10_000, help="entries (10,000)")
    command.add_argument("--rounds", type=positive, default=5, help="rounds in alternation (5)")
    args = command.parse_args()
    n = args.entries
    print(f"Python {platform.python_version()} on {platform.machine()}, {n:,} entries")

    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        run = make_run(n, where / "run")
        started = time.perf_counter()
        traces = load_traces(where / "run" / "traces.jsonl")
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        card = DatasetScorecard.from_run(run, traces=traces)
        built = time.perf_counter() - started
        started = time.perf_counter()
        page = generate_dataset_scorecard_html(card)
        rendered = time.perf_counter() - started
        ours = where / "scorecard.html"
        ours.write_text(page, encoding="utf-8")
        small = where / "scorecard-100.html"
        small_run = run.model_copy(update={"entries": run.entries[:100]})
        small.write_text(
            generate_dataset_scorecard_html(
                DatasetScorecard.from_run(small_run, traces=where / "run" / "traces.jsonl")
            ),
            encoding="utf-8",
        )
        plain = where / "plain.html"
        plain.write_text(plain_table(run), encoding="utf-8")
        size, plain_size = ours.stat().st_size, plain.stat().st_size
        print(
            f"load_traces of {3 * n:,} spans: {loaded:.2f} s; scorecard from the run and its "
            f"traces: {built:.2f} s; render to HTML: {rendered:.2f} s"
        )
        print(
            f"file size: scorecard {size / 1e6:.1f} MB ({size / n:,.0f} B per entry); "
            f"plain table {plain_size / 1e6:.1f} MB; 100-entry scorecard "
            f"{small.stat().st_size / 1e3:.0f} kB"
        )

        if not CHROMIUM.exists():
            print(f"skipped the browser figures: {CHROMIUM} is missing (apt-get install chromium)")
            return 0
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            print("skipped the browser figures: the playwright package is missing")
            return 0
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            best = {"ours": float("inf"), "plain": float("inf"), "small": float("inf")}
            for _ in range(args.rounds):
                best["ours"] = min(best["ours"], load_ms(browser, ours, scorecard=True))
                best["plain"] = min(best["plain"], load_ms(browser, plain, scorecard=False))
                best["small"] = min(best["small"], load_ms(browser, small, scorecard=True))
            filtering, sorting = interaction_ms(browser, ours)
            browser.close()
    ratio = best["ours"] / best["plain"]
    verdict = "ok" if ratio <= GOAL else "OVER GOAL"
    print(
        f"time to first render: scorecard of {n:,} {best['ours']:.0f} ms; plain table "
        f"{best['plain']:.0f} ms; scorecard of 100 {best['small']:.0f} ms"
    )
    print(
        f"ratio to the plain table {ratio:.2f}x (goal <= {GOAL}x) {verdict}; "
        f"to the 100-entry scorecard {best['ours'] / best['small']:.2f}x"
    )
    print(f"in the page, over {n:,} entries: filter {filtering:.0f} ms, sort {sorting:.0f} ms")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
