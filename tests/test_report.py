"""The text report of runs: tables, failures, dataset-level metrics, statuses, plain output."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evaltrace.engine import Listing
from evaltrace.evals import Evaluation, EvaluationError, NamedData
from evaltrace.metrics import compute_dataset_evaluator_results
from evaltrace.results import EntryResult, RunResult, print_report, render_report
from evaltrace.results.model import CompletionStatus

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def scored(score: float, evaluator: str = "exact", reasoning: str = "") -> Evaluation:
    return Evaluation(score=score, evaluator=evaluator, reasoning=reasoning)


def item(index: int, name: str, *evaluations: Evaluation, **more: object) -> EntryResult:
    return EntryResult(index=index, name=name, evaluations=list(evaluations), **more)  # type: ignore[arg-type]


def faq_run() -> RunResult:
    boom = EvaluationError(type="RuntimeError", message="kaboom", where="runnable")
    return RunResult(
        run_id="20261123T104107.123456Z",
        name="faq",
        source="faq.evaltrace.json",
        evaluators=["exact", "tone"],
        duration_s=1.25,
        entries=[
            item(0, "hello", scored(1.0), scored(0.9, "tone")),
            item(
                1,
                "bye",
                scored(0.0, reasoning="said 'BYE', expected 'Goodbye'"),
                scored(0.8, "tone"),
                input={"question": "bye"},
                eval_output=[NamedData(name="answer", value="BYE")],
                expectation="Goodbye",
            ),
            item(
                2,
                "boom",
                Evaluation.errored(boom, evaluator="exact"),
                Evaluation.errored(boom, evaluator="tone"),
                error=boom,
            ),
            item(3, "only-tone", Evaluation.skip("no expectation", evaluator="tone")),
        ],
    )


def test_the_plain_report_lays_out_entries_against_evaluators() -> None:
    text = render_report([faq_run()], plain=True)

    assert "faq (faq.evaltrace.json)  run 20261123T104107.123456Z  4 entries  1.25 s" in text
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.count("|") > 3}
    assert re.search(r"\| SUCCESS +\| 1\.00 pass +\| 0\.90 pass", rows["hello"])
    assert re.search(r"\| FAILED_PARTIAL_SCORE +\| 0\.00 FAIL +\| 0\.80 pass", rows["bye"])
    assert re.search(r"\| ERROR +\| error +\| error", rows["boom"])
    assert re.search(r"\| NO_SCORE_LOGGED +\| - +\| skipped", rows["only-tone"])
    assert "SUCCESS 1  FAILED_PARTIAL_SCORE 1  NO_SCORE_LOGGED 1  ERROR 1" in text
    assert "4 entries in 1 dataset: 1 passed, 3 did not pass, in 1.25 s" in text


def test_each_failure_shows_its_reasoning_or_error() -> None:
    text = render_report([faq_run()], plain=True)
    failures = text.split("Entries that did not pass", 1)[1]

    assert "bye  FAILED_PARTIAL_SCORE" in failures
    assert "  output: BYE" in failures and "  expected: Goodbye" in failures
    assert "  exact: 0.00: said 'BYE', expected 'Goodbye'" in failures
    assert "  runnable error: RuntimeError: kaboom" in failures
    assert failures.count("kaboom") == 1  # the run's error is not repeated per evaluator
    assert "  tone: skipped: no expectation" in failures
    assert "hello" not in failures


def test_a_plain_report_is_ascii_without_colour() -> None:
    text = render_report([faq_run()], plain=True)
    assert text.isascii()
    assert not ANSI.search(text)


def test_a_terminal_report_has_colour_and_no_color_turns_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = Terminal()
    print_report([faq_run()], file=coloured)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    print_report([faq_run()], file=plain)

    assert ANSI.search(coloured.getvalue())
    assert not ANSI.search(plain.getvalue()) and plain.getvalue().isascii()


def test_a_report_written_to_a_pipe_is_plain() -> None:
    code = (
        "from evaltrace.results import RunResult, EntryResult\n"
        "from evaltrace.evals import Evaluation\n"
        "from evaltrace.results import print_report\n"
        "entry = EntryResult(index=0, name='a', evaluations=[Evaluation(score=1.0)])\n"
        "print_report([RunResult(name='x', entries=[entry])])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "| a " in done.stdout and not ANSI.search(done.stdout)


def test_user_text_cannot_drive_the_terminal() -> None:
    hostile = "\x1b[2J\x1b]0;pwned\x07\rnice\x9b1m"
    run = RunResult(
        name=f"faq{hostile}",
        evaluators=[f"e{hostile}"],
        entries=[
            item(
                0,
                f"entry{hostile}",
                scored(0.0, f"e{hostile}", reasoning=f"why{hostile}"),
                expectation=hostile,
            )
        ],
    )
    for plain in (True, False):
        text = render_report([run], plain=plain)
        shown = ANSI.sub("", text) if not plain else text
        assert not CONTROL.findall(re.sub(r"\x1b\[[0-9;]*m", "", text))
        assert "\\u001b[2J" in shown


def test_a_large_run_lists_only_the_entries_that_did_not_pass() -> None:
    entries = [item(i, f"q{i}", scored(0.0 if i == 7 else 1.0)) for i in range(100)]
    run = RunResult(name="big", evaluators=["exact"], entries=entries)

    text = render_report([run], plain=True)
    verbose = render_report([run], plain=True, verbose=True)

    table_rows = [line for line in text.splitlines() if re.match(r"\| q\d+ ", line)]
    assert [row.split("|")[1].strip() for row in table_rows] == ["q7"]
    assert "99 entries that passed are not listed (-v lists every entry)" in text
    assert len([line for line in verbose.splitlines() if re.match(r"\| q\d+ ", line)]) == 100


def test_dataset_level_results_show_per_class_metrics_and_the_confusion_matrix() -> None:
    pairs = [("book", "book"), ("book", "cancel"), ("cancel", "cancel"), ("cancel", "cancel")]
    results = compute_dataset_evaluator_results(
        {"intent": pairs},
        {
            "intent": [
                {"type": "fscore", "classes": ["book", "cancel"], "averaging": "macro"},
                {"type": "confusion_matrix", "classes": ["book", "cancel"]},
            ]
        },
    )
    run = RunResult(
        name="intents",
        evaluators=["intent"],
        entries=[item(0, "a", scored(1.0, "intent"))],
        dataset_results=results,
    )
    text = render_report([RunResult.model_validate_json(run.model_dump_json())], plain=True)

    assert re.search(r"\| intent::fscore +\| 0\.7333 +\| 4 scored, 0 skipped", text)
    assert re.search(r"\| book +\| 1\.0000 +\| 0\.5000 +\| 0\.6667 +\| 2 ", text)
    assert re.search(r"\| cancel +\| 0\.6667 +\| 1\.0000 +\| 0\.8000 +\| 2 ", text)
    assert "intent::confusion_matrix (accuracy 0.7500)" in text
    assert re.search(r"\| predicted \\ expected \| book \| cancel \|", text)
    assert re.search(r"\| book +\| 1 +\| 0 +\|", text)  # predicted book: expected book once
    assert re.search(r"\| cancel +\| 1 +\| 2 +\|", text)


def test_run_errors_and_interruptions_are_reported() -> None:
    run = faq_run().model_copy(
        update={
            "errors": [EvaluationError(type="OSError", message="db gone", where="teardown")],
            "interrupted": True,
        }
    )
    text = render_report([run], plain=True)
    assert "interrupted: only the entries that finished are shown" in text
    assert "the runnable's teardown raised OSError: db gone" in text
    assert text.rstrip().endswith("(interrupted)")


def test_several_runs_are_totalled() -> None:
    one = RunResult(name="a", entries=[item(0, "x", scored(1.0))], duration_s=1.0)
    two = RunResult(name="b", entries=[item(0, "y", scored(1.0))], duration_s=2.5)
    text = render_report([one, two], plain=True)
    assert text.rstrip().endswith("2 entries in 2 datasets: 2 passed, 0 did not pass, in 3.50 s")


# -- tables in a log: one line per row, names whole -------------------------------------------

LONG_NAMES = ["DocumentRecall", "AnswerExactMatch", "LevenshteinMatch", "DocumentNDCG"]


def wide_run(*names: str) -> RunResult:
    evaluations = [scored(1.0, name) for name in LONG_NAMES[:-1]] + [scored(0.0, LONG_NAMES[-1])]
    return RunResult(
        name="wide",
        evaluators=LONG_NAMES,
        entries=[item(index, name, *evaluations) for index, name in enumerate(names)],
    )


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("|", "+"))]


def test_a_plain_report_takes_the_width_its_tables_need() -> None:
    text = render_report([wide_run("italy")], plain=True)

    header, _, row = table_lines(text)[1:4]
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "entry",
        "status",
        *LONG_NAMES,
    ]
    assert "| FAILED_PARTIAL_SCORE |" in row
    assert len(table_lines(text)) == 5  # border, header, rule, the one row, border


@pytest.mark.parametrize("plain", [True, False])
def test_a_narrow_width_widens_the_table_rather_than_cutting_a_status_or_a_name(
    plain: bool,
) -> None:
    text = re.sub(r"\x1b\[[0-9;]*m", "", render_report([wide_run("italy")], plain=plain, width=50))

    header = next(line for line in text.splitlines() if "status" in line)
    assert header.replace("|", " ").split() == ["entry", "status", *LONG_NAMES]
    row = next(line for line in text.splitlines() if line.strip(" |").startswith("italy"))
    assert row.replace("|", " ").split() == ["italy", "FAILED_PARTIAL_SCORE"] + [
        "1.00",
        "pass",
    ] * 3 + ["0.00", "FAIL"]


def test_long_entry_names_in_a_table_are_cut_with_an_ascii_ellipsis() -> None:
    name = ("why " * 40).strip()
    text = render_report([wide_run(name)], plain=True)

    first_cells = [line.split("|")[1].strip() for line in table_lines(text)[3:-1]]
    assert first_cells == [name[:57] + "..."]  # 60 wide
    assert f"{name}  FAILED_PARTIAL_SCORE" in text  # whole in the failures


def test_a_width_given_narrows_only_the_entry_names() -> None:
    name = "a-long-entry-name-" * 3
    natural = render_report([wide_run(name)], plain=True)
    narrowed = render_report([wide_run(name)], plain=True, width=len(table_lines(natural)[0]) - 20)

    assert len(table_lines(narrowed)[0]) == len(table_lines(natural)[0]) - 20
    assert f"| {name[:31]}... | FAILED_PARTIAL_SCORE |" in narrowed


def test_entries_named_by_trace_ids_show_as_few_digits_as_keep_them_apart() -> None:
    ids = ["5f1e2d3c4b5a69788796a5b4c3d2e1f0", "5f1e2d3c9b8a79685746352413021f0e"]
    lone = "c0ffee00d15ea5e0b0a710ad5ca1ab1e"

    apart = render_report([wide_run(*ids, lone)], plain=True)
    alone = render_report([wide_run(lone, "c0ffee0")], plain=True)

    assert [line.split("|")[1].strip() for line in table_lines(apart)[3:-1]] == [
        "5f1e2d3c4",
        "5f1e2d3c9",
        "c0ffee00d",
    ]
    assert [line.split("|")[1].strip() for line in table_lines(alone)[3:-1]] == [
        "c0ffee00",  # seven digits would read as the other entry's name
        "c0ffee0",
    ]


def test_a_long_error_in_the_dataset_level_table_is_cut() -> None:
    boom = EvaluationError(type="ValueError", message="no labels " * 30, where="aggregator")
    run = RunResult(
        name="intents",
        evaluators=["intent"],
        entries=[item(0, "a", scored(1.0, "intent"))],
        dataset_results={"intent::fscore": Evaluation.errored(boom, evaluator="intent")},
    )
    text = render_report([run], plain=True)

    (row,) = [line for line in text.splitlines() if line.startswith("| intent::fscore")]
    assert row.split("|")[2].strip().endswith("...") and len(row) < 120


# -- the status precedence, documented twice -------------------------------------------------


def _rows(text: str, pattern: str) -> list[tuple[str, str]]:
    return [
        (status, " ".join(when.split()))
        for status, when in re.findall(pattern, text, flags=re.MULTILINE | re.DOTALL)
    ]


def test_the_status_guide_and_the_model_give_one_precedence() -> None:
    from evaltrace.results import model as result

    assert result.__doc__ is not None
    in_code = [
        (status, " ".join(when.split()).replace("``", "`"))
        for status, when in re.findall(
            r"^([A-Z_]{5,}) +(.+?)(?=^[A-Z_]{5,} |^=)", result.__doc__, re.M | re.S
        )
    ]
    guide = (ROOT / "docs" / "statuses.md").read_text()
    in_docs = [
        (status, " ".join(when.split()))
        for status, when in re.findall(r"^\| ([A-Z_]+) \| (.+?) \|$", guide, re.M)
    ]
    assert in_code == in_docs
    assert [status for status, _ in in_docs] == [
        "LOG_FILE_ERROR",
        "ERROR",
        "TIMED_OUT",
        "NO_SCORE_LOGGED",
        "SUCCESS",
        "FAILED_SCORE_ZERO",
        "FAILED_PARTIAL_SCORE",
    ]
    assert sorted(status for status, _ in in_docs) == sorted(s.value for s in CompletionStatus)


def test_the_status_guide_examples_print_what_their_comments_say() -> None:
    guide = (ROOT / "docs" / "statuses.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", guide, re.S)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = re.findall(r"# ([A-Z_]+)$", code, re.M)
    assert done.stdout.split() == expected


@pytest.mark.anyio
async def test_the_failure_table_of_assert_pass_escapes_control_characters() -> None:
    from evaltrace import EvalAssertionError, assert_pass

    def app(text: str) -> str:
        return f"evil\x1b[2J{text}\x9b"

    with pytest.raises(EvalAssertionError) as info:
        await assert_pass(app, ["\x1b]0;title\x07"], [lambda evaluable: 0.0])

    message = str(info.value)
    assert not CONTROL.findall(message)
    assert "evil\\u001b[2J\\u001b]0;title\\u0007\\u009b" in message


def test_progress_is_a_bar_on_a_terminal_and_plain_lines_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evaltrace.results import RunProgress

    monkeypatch.delenv("CI", raising=False)
    entries = [item(i, f"e{i}", scored(0.0 if i == 3 else 1.0)) for i in range(20)]
    bar, lines = Terminal(), io.StringIO()
    for stream in (bar, lines):
        with RunProgress("faq", total=20, stream=stream) as progress:
            for entry in entries:
                progress.advance(entry)

    assert "━" in bar.getvalue() and "faq:" not in bar.getvalue()
    plain = lines.getvalue().splitlines()
    assert plain == [
        "faq: 1/20 entries, 0 not passed",
        "faq: 3/20 entries, 0 not passed",
        "faq: entry 'e3' FAILED_SCORE_ZERO",
        "faq: 5/20 entries, 1 not passed",
        *[f"faq: {n}/20 entries, 1 not passed" for n in range(7, 20, 2)],
        "faq: 20/20 entries, 1 not passed",
    ]
    monkeypatch.setenv("CI", "true")
    in_ci = Terminal()
    with RunProgress("faq", total=1, stream=in_ci) as progress:
        progress.advance(entries[0])
    assert in_ci.getvalue() == "faq: 1/1 entries, 0 not passed\n"


@pytest.mark.parametrize(
    ("count", "failing_every"), [(5, 2), (20, 3), (21, 3), (300, 2), (300, 1000)]
)
@pytest.mark.parametrize("verbose", [False, True])
def test_a_run_keeping_the_listed_entries_reports_as_the_whole_run_does(
    count: int, failing_every: int, verbose: bool
) -> None:
    # What `evaltrace test` prints of a run it did not hold: the entries read back in the
    # order they finished, only those the report lists kept.
    from evaltrace.results.report import ALL_ROWS_UP_TO, MAX_LISTED_ENTRIES

    entries = [
        item(index, f"e{index}", scored(0.0 if index % failing_every == 0 else 1.0))
        for index in range(count)
    ]
    whole = RunResult(name="big", evaluators=["exact"], entries=entries)
    finished_order = entries[1::2] + entries[::2]
    listing = Listing(
        all_up_to=count if verbose else ALL_ROWS_UP_TO,
        failing_up_to=None if verbose else MAX_LISTED_ENTRIES,
    )
    summary = whole.model_copy(
        update={"entries": listing.select(finished_order), "counts": whole.counts}
    )

    assert render_report([summary], verbose=verbose) == render_report([whole], verbose=verbose)
    assert (summary.entry_count, summary.status_counts, summary.passed) == (
        count,
        whole.status_counts,
        whole.passed,
    )
    assert len(summary.entries) <= (count if verbose else max(ALL_ROWS_UP_TO, MAX_LISTED_ENTRIES))
