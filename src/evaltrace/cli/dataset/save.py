"""``evaltrace dataset save``: add entries made from stored traces to a dataset file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evaltrace.cli._discovery import DATASET_SUFFIXES
from evaltrace.cli._selectors import SELECTOR_HELP, SelectorType, selector
from evaltrace.cli._terminal import CommandError, err, out
from evaltrace.cli.dataset.create import SCHEMA_FILE, document_text, write_schema_beside

if TYPE_CHECKING:
    from evaltrace.trace import ObservationNode

__all__ = ["save"]

_DATA_SUFFIXES = (".json", ".yaml", ".yml", ".jsonl")


@click.command("save", short_help="Add entries made from stored traces to a dataset.")
@click.argument("name")
@click.option(
    "--from-trace",
    "trace_file",
    required=True,
    type=click.Path(),
    metavar="TRACES.JSONL",
    help="A trace file: a run folder's traces.jsonl, or one `evaltrace trace` wrote.",
)
@click.option(
    "--select",
    "select",
    type=SelectorType(),
    default="root",
    show_default=True,
    help=f"The span whose output becomes the draft expectation: {SELECTOR_HELP}.",
)
@click.option("--trace-id", help="Only this trace of the file (32 hex digits).")
@click.option(
    "--runnable",
    metavar="REF",
    help="The app's entry point, for a dataset that names none: 'path/to/app.py:name' or "
    "'module:name'. Never taken from the traces: without it, the dataset names none.",
)
def save(
    name: str, trace_file: str, select: str, trace_id: str | None, runnable: str | None
) -> int:
    """Append one entry per trace of TRACES.JSONL to the dataset NAME.

    NAME is a dataset file, or a name: NAME.evaltrace.json (or .yaml, .yml, .jsonl) in the
    current folder, created when there is none. Each entry takes the trace's root span input as its
    entry_kwargs, the values the app read with wrap(purpose="input") as its eval_input, and
    the selected span's output as a draft expectation to review. The file is checked before
    it is replaced (a YAML file loses its comments). A new dataset is scored by ExactMatch and
    runs --runnable. What to run is never read from the traces (a span's name is data, not
    code to run): without --runnable, a dataset that names no runnable still names none. Traces
    from a run's folder keep the names its entries had.
    """
    from evaltrace.datasets import parse_reference
    from evaltrace.errors import TraceFormatError
    from evaltrace.trace import load_traces, split_traces

    path, data = _dataset(name)
    try:
        traces = split_traces(load_traces(trace_file))
    except FileNotFoundError:
        raise CommandError(f"--from-trace: {trace_file}: no such file") from None
    except (OSError, TraceFormatError) as exc:
        raise CommandError(f"--from-trace: {exc}") from None
    if trace_id:
        traces = [one for one in traces if f"{one[0].span.trace_id:032x}" == trace_id.lower()]
    if not traces:
        raise CommandError(
            f"--from-trace: no trace {trace_id} in {trace_file}"
            if trace_id
            else f"--from-trace: {trace_file} holds no spans"
        )
    if runnable is not None and parse_reference(runnable) is None:
        raise CommandError(
            f"--runnable: {runnable!r} is not a reference; give 'path/to/app.py:name' or "
            "'module:name'"
        )
    if "runnable" not in data:
        if runnable is None:
            err(
                f"evaltrace dataset save: {path} names no runnable; add one "
                '("runnable": "app.py:run") or pass --runnable before running it'
            )
        else:
            data["runnable"] = runnable
    entries = data.setdefault("entries", [])
    taken = {entry.get("name") for entry in entries if isinstance(entry, dict)}
    recorded = _recorded_names(Path(trace_file))
    added = []
    for one in traces:
        entry = _entry(one, select, taken, trace_file, recorded)
        if entry is not None:
            entries.append(entry)
            taken.add(entry["name"])
            added.append(entry["name"])
    if not added:
        return 1
    _write(path, data)
    out(
        f"added {len(added)} {'entry' if len(added) == 1 else 'entries'} to {path}: "
        f"{', '.join(added)}; review each expectation (a draft: the output of this run)"
    )
    return 0


def _dataset(name: str) -> tuple[Path, dict[str, Any]]:
    """The dataset file NAME stands for, and its data (a new dataset's when there is none)."""
    from evaltrace.datasets import DatasetError, load_dataset
    from evaltrace.datasets.convert import dataset_header, entry_data

    given = Path(name)
    if given.name.lower().endswith(DATASET_SUFFIXES) or given.suffix in _DATA_SUFFIXES:
        candidates = [given]
    else:
        candidates = [given.with_name(given.name + suffix) for suffix in DATASET_SUFFIXES]
    existing = [path for path in candidates if path.exists()]
    if not existing:
        # Scored like `dataset create`'s: each output against its draft expectation.
        return candidates[0], {
            "$schema": f"./{SCHEMA_FILE}",
            "name": given.name,
            "evaluators": ["ExactMatch"],
            "entries": [],
        }
    path = existing[0]
    try:
        loaded = load_dataset(path)
    except DatasetError as exc:
        raise CommandError(f"{exc}\nfix the dataset before adding entries to it") from None
    if path.suffix.lower() == ".json":
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8-sig"))
        return path, document
    # YAML is read by evaltrace's own rules (`no` is a string, ...): the loaded dataset, not a
    # second YAML parse, is what is written back. A JSONL dataset is read entry by entry.
    return path, {**dataset_header(loaded), "entries": list(entry_data(loaded))}


def _recorded_names(trace_file: Path) -> dict[str, str]:
    """The entry name of each trace id, when ``trace_file`` is a run folder's ``traces.jsonl``."""
    from evaltrace.results import ENTRIES_FILE, ResultFileError, iter_entries

    entries_file = trace_file.parent / ENTRIES_FILE
    if trace_file.name != "traces.jsonl" or not entries_file.is_file():
        return {}
    names: dict[str, str] = {}
    try:
        for entry in iter_entries(entries_file):
            for trace_id in entry.trace_ids:
                names.setdefault(trace_id, entry.name)
    except ResultFileError as exc:
        err(f"evaltrace dataset save: the entry names of the run are not used: {exc}")
        return {}
    return names


def _entry(
    trace: list[ObservationNode],
    select: str,
    taken: set[Any],
    trace_file: str,
    recorded: dict[str, str],
) -> dict[str, Any] | None:
    from evaltrace.errors import EvaltraceError
    from evaltrace.trace import walk_trace

    trace_id = f"{trace[0].span.trace_id:032x}"
    try:
        evaluable = selector(select)(trace)
    except EvaltraceError as exc:
        err(f"evaltrace dataset save: trace {trace_id}: {exc}")
        return None
    arguments = trace[0].span.input
    if not isinstance(arguments, dict):
        err(
            f"evaltrace dataset save: trace {trace_id}: its root span's input is not a mapping "
            "of arguments; entry_kwargs are left empty for you to fill in"
        )
        arguments = {}
    inputs: dict[str, Any] = {}
    for node in walk_trace(trace):
        for value in node.span.named_values:
            if value.purpose == "input":
                inputs.setdefault(value.name, value.value)
    base = recorded.get(trace_id) or f"trace-{trace_id[:8]}"
    name = base
    number = 1
    while name in taken:
        number += 1
        name = f"{base}-{number}"
    entry: dict[str, Any] = {"name": name, "entry_kwargs": arguments}
    if inputs:
        entry["eval_input"] = [{"name": key, "value": value} for key, value in inputs.items()]
    entry["description"] = f"from trace {trace_id} of {trace_file}"
    entry["expectation"] = evaluable.output_value()
    return entry


def _write(path: Path, data: dict[str, Any]) -> None:
    from evaltrace.datasets import DatasetError, dataset_from_data
    from evaltrace.results import ResultsFolderError, write_atomically

    try:
        dataset_from_data(data, file=str(path), path=path)
    except DatasetError as exc:
        raise CommandError(
            f"the entries made from the traces do not fit the dataset:\n{exc}"
        ) from None
    text = document_text(path, data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
        if data.get("$schema") == f"./{SCHEMA_FILE}":
            write_schema_beside(path)
    except (OSError, ResultsFolderError) as exc:
        raise CommandError(str(exc)) from None
