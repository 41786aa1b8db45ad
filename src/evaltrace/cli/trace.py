"""``evaltrace trace``: print the traces of a stored file, or run an app once and store its trace.

``evaltrace trace FILE`` prints the outline of each trace in a trace file (JSONL written by
:func:`evaltrace.save_traces`, an OTLP-JSON export, or Arize Phoenix span JSON), optionally
with the evaluable a selector makes of each. ``evaltrace trace --runnable REF --input
kwargs.json`` runs the app once under capture, stores its trace and prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evaltrace._safe_text import exception_text
from evaltrace.cli._selectors import SELECTOR_HELP, SelectorType, selector
from evaltrace.cli._terminal import CommandError, err, out

if TYPE_CHECKING:
    from evaltrace.trace import ObservationNode

__all__ = ["trace"]


@click.command("trace", short_help="Print stored traces, or run an app once and store its trace.")
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--trace-id", help="Only this trace of FILE (32 hex digits).")
@click.option(
    "--select",
    "select",
    type=SelectorType(),
    help=f"Also print the evaluable this selector makes of each trace: {SELECTOR_HELP}.",
)
@click.option(
    "--runnable",
    metavar="REF",
    help="Run this app once instead of reading FILE: 'path/to/app.py:name' or 'module:name'.",
)
@click.option(
    "--input",
    "input_file",
    type=click.Path(),
    metavar="KWARGS.JSON",
    help="With --runnable: a JSON object of the app's arguments (an entry's entry_kwargs).",
)
@click.option(
    "--output",
    type=click.Path(),
    default="trace.jsonl",
    show_default=True,
    help="With --runnable: where to store the trace.",
)
def trace(
    file: str | None,
    trace_id: str | None,
    select: str | None,
    runnable: str | None,
    input_file: str | None,
    output: str,
) -> int:
    """Print the outline of each trace in FILE, or run --runnable once and store its trace.

    Trace content is printed with its terminal control characters escaped. Exit code 0, 1
    when a trace cannot be read or the selector finds nothing in one (or the app raised), 2
    on bad usage or when FILE holds no span (it is empty, or no line of it is a span: it
    may be a dataset file, which `evaltrace test FILE` runs).
    """
    if runnable is not None:
        if file is not None:
            raise CommandError("give FILE or --runnable, not both")
        if input_file is None:
            raise CommandError("--runnable needs --input KWARGS.JSON (the app's arguments)")
        return _run_once(runnable, input_file, output, select)
    if file is None:
        raise CommandError("give a trace FILE, or --runnable REF --input KWARGS.JSON")
    if input_file is not None:
        raise CommandError("--input goes with --runnable")
    return _print_file(Path(file), trace_id, select)


def _print_file(path: Path, trace_id: str | None, select: str | None) -> int:
    from evaltrace import trace as trace_module
    from evaltrace.errors import NotATraceFileError, TraceFormatError

    if not path.exists():
        raise CommandError(f"{path}: no such file")
    try:
        traces = trace_module.split_traces(trace_module.load_traces(path))
    except NotATraceFileError as exc:
        raise CommandError(str(exc)) from None
    except (OSError, TraceFormatError) as exc:
        err(f"evaltrace trace: {exc}")
        return 1
    if not traces:
        raise CommandError(f"{path} holds no span, so there is nothing to print")
    if trace_id:
        wanted = trace_id.lower()
        traces = [one for one in traces if _trace_id(one) == wanted]
        if not traces:
            err(f"evaltrace trace: no trace {wanted} in {path}")
            return 1
    code = 0
    for position, one in enumerate(traces):
        out(("\n" if position else "") + f"trace {_trace_id(one)}")
        if not _print_trace(one, select):
            code = 1
    return code


def _print_trace(one: list[ObservationNode], select: str | None) -> bool:
    """Print a trace's outline and, with ``select``, its evaluable; whether that worked."""
    from evaltrace import trace as trace_module
    from evaltrace.errors import EvaltraceError

    out(trace_module.trace_to_text(one))
    if not select:
        return True
    try:
        evaluable = selector(select)(one)
    except EvaltraceError as exc:
        err(f"evaltrace trace: trace {_trace_id(one)}: {exc}")
        return False
    try:
        shown = json.dumps(evaluable.model_dump(mode="json"), indent=2, ensure_ascii=False)
    except (RecursionError, ValueError) as exc:  # nested past pydantic's serialization depth
        err(f"evaltrace trace: trace {_trace_id(one)}: cannot print {select}: {exc}")
        return False
    out(f"\n{select}:")
    out(shown)
    return True


def _trace_id(trace: list[ObservationNode]) -> str:
    return f"{trace[0].span.trace_id:032x}"


def _run_once(reference: str, input_file: str, output: str, select: str | None) -> int:
    import anyio

    from evaltrace.datasets import DatasetError, NotRunnableError, ReferenceLoader, RunnableAdapter
    from evaltrace.engine import run_captured
    from evaltrace.trace import save_traces

    try:
        target = ReferenceLoader().load(reference, file="--runnable", location="", base_dir=None)
        adapter = RunnableAdapter(target, name=reference)
    except DatasetError as exc:
        raise CommandError("; ".join(str(problem) for problem in exc.problems)) from None
    except NotRunnableError as exc:
        raise CommandError(f"--runnable {reference}: {exc}") from None
    arguments = _arguments(Path(input_file))
    problems = adapter.check_arguments(arguments, file=input_file, location="")
    if problems:
        raise CommandError("\n".join(str(problem) for problem in problems))

    async def run_app(entry_kwargs: dict[str, Any]) -> Any:
        return await adapter.run(entry_kwargs)

    run_app.__name__ = reference

    async def run_once() -> Any:
        async with adapter.session():
            return await run_captured(run_app, arguments)

    try:
        outcome = anyio.run(run_once)
    except Exception as exc:  # the app's setup or teardown raised: reported, not a traceback
        err(f"evaltrace trace: the runnable's setup or teardown raised {exception_text(exc)}")
        return 1
    try:
        count = save_traces(outcome.trace, output)
    except OSError as exc:
        raise CommandError(f"--output: cannot write {output}: {exc.strerror or exc}") from None
    for position, one in enumerate(_split(outcome.trace)):
        out(("\n" if position else "") + f"trace {_trace_id(one)}")
        _print_trace(one, select)
    err(f"evaltrace trace: {count} spans written to {output}")
    if outcome.error is not None:
        err(f"evaltrace trace: the runnable raised {exception_text(outcome.error)}")
        return 1
    return 0


def _split(roots: list[ObservationNode]) -> list[list[ObservationNode]]:
    from evaltrace.trace import split_traces

    return split_traces(roots)


def _arguments(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CommandError(f"--input: {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--input: {path}: cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"--input: {path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    except (RecursionError, ValueError) as exc:
        raise CommandError(f"--input: {path}: cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise CommandError(
            f"--input: {path}: expected a JSON object of the app's arguments, "
            f"found {type(data).__name__}"
        )
    return data
