"""``evaltrace``: the command line entry point and its commands.

Commands: ``evaltrace trace FILE`` prints the outline of each trace in a stored trace file
(JSONL written by :func:`evaltrace.save_traces`, an OTLP-JSON export, or Arize Phoenix span
JSON), optionally with the evaluable a selector makes of each; ``evaltrace demo`` runs the
bundled demo. Trace content is printed with its terminal control characters escaped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evaltrace import __version__
from evaltrace.cli._terminal import CLOSED_PIPE, printable, silence_stdout
from evaltrace.errors import EvaltraceError

if TYPE_CHECKING:
    from evaltrace.trace import ObservationNode

__all__ = ["main"]

_SELECTORS = ("root", "last_llm_call", "first_llm_call")


def _trace(args: argparse.Namespace) -> int:
    from evaltrace import trace as trace_module
    from evaltrace.evals import selectors

    path = Path(args.file)
    if not path.is_file():
        _error(f"evaltrace trace: {path} is not a file")
        return 2
    traces = trace_module.split_traces(trace_module.load_traces(path))
    if not traces:
        _error(f"evaltrace trace: {path} holds no spans")
        return 1
    if args.trace_id:
        wanted = args.trace_id.lower()
        traces = [one for one in traces if _trace_id(one) == wanted]
        if not traces:
            _error(f"evaltrace trace: no trace {wanted} in {path}")
            return 1
    code = 0
    for position, one in enumerate(traces):
        _out(("\n" if position else "") + f"trace {_trace_id(one)}")
        _out(trace_module.trace_to_text(one))
        if not args.select:
            continue
        try:
            evaluable = getattr(selectors, args.select)(one)
        except EvaltraceError as exc:
            _error(f"evaltrace trace: trace {_trace_id(one)}: {exc}")
            code = 1
            continue
        try:
            shown = json.dumps(evaluable.model_dump(mode="json"), indent=2, ensure_ascii=False)
        except (RecursionError, ValueError) as exc:  # nested past pydantic's serialization depth
            _error(f"evaltrace trace: trace {_trace_id(one)}: cannot print {args.select}: {exc}")
            code = 1
            continue
        _out(f"\n{args.select}:")
        _out(shown)
    return code


def _trace_id(trace: list[ObservationNode]) -> str:
    return f"{trace[0].span.trace_id:032x}"


def _out(text: str) -> None:
    print(printable(text))


def _error(text: str) -> None:
    print(printable(text), file=sys.stderr)


def _demo(args: argparse.Namespace) -> int:
    from evaltrace.demo import run

    return run()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evaltrace", description="Trace capture and evaluation for LLM applications."
    )
    parser.add_argument("--version", action="version", version=f"evaltrace {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    trace = commands.add_parser(
        "trace", help="print the outline of each trace in a stored trace file"
    )
    trace.add_argument(
        "file",
        help="a JSONL trace file (save_traces), an OTLP-JSON export or Phoenix span JSON",
    )
    trace.add_argument("--trace-id", help="only this trace (32 hex digits)")
    trace.add_argument(
        "--select",
        choices=_SELECTORS,
        help="also print the evaluable this selector makes of each trace",
    )
    trace.set_defaults(run=_trace)
    demo = commands.add_parser("demo", help="run the demo on the bundled example app")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``evaltrace`` command; returns the exit code.

    A failure of evaltrace gives its message on standard error and code 1. When the reader of
    the output goes away (``evaltrace trace big.jsonl | head -1``), the command stops quietly
    with code 141, as a command ended by SIGPIPE does.
    """
    args = _parser().parse_args(argv)
    try:
        try:
            code: int = args.run(args)
        except EvaltraceError as exc:
            _error(f"evaltrace {args.command}: {exc}")
            code = 1
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return CLOSED_PIPE
    return code
