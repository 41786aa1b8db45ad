"""``evaltrace``: the command line entry point and its commands.

Commands: ``evaltrace trace FILE`` prints the outline of a stored trace (JSONL written by
:func:`evaltrace.save_traces`, or an OTLP-JSON export), optionally with the evaluable a
selector makes of it; ``evaltrace demo`` runs the bundled demo.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from evaltrace import __version__
from evaltrace.errors import EvaltraceError

__all__ = ["main"]

_SELECTORS = ("root", "last_llm_call", "first_llm_call")


def _trace(args: argparse.Namespace) -> int:
    from evaltrace import trace as trace_module

    path = Path(args.file)
    if not path.is_file():
        print(f"evaltrace trace: {path} is not a file", file=sys.stderr)
        return 2
    nodes = trace_module.load_traces(path)
    if args.trace_id:
        wanted = args.trace_id.lower()
        nodes = [n for n in nodes if f"{n.span.trace_id:032x}" == wanted]
        if not nodes:
            print(f"evaltrace trace: no trace {wanted} in {path}", file=sys.stderr)
            return 1
    if not nodes:
        print(f"evaltrace trace: {path} holds no spans", file=sys.stderr)
        return 1
    for node in nodes:
        print(node.to_text())
    if args.select:
        evaluable = getattr(trace_module, args.select)(nodes)
        print(f"\n{args.select}:")
        print(json.dumps(evaluable.model_dump(mode="json"), indent=2, ensure_ascii=False))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from evaltrace.demo import run

    return run()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evaltrace", description="Trace capture and evaluation for LLM applications."
    )
    parser.add_argument("--version", action="version", version=f"evaltrace {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    trace = commands.add_parser("trace", help="print the outline of a stored trace file")
    trace.add_argument("file", help="a JSONL trace file (save_traces) or an OTLP-JSON export")
    trace.add_argument("--trace-id", help="only this trace (32 hex digits)")
    trace.add_argument(
        "--select", choices=_SELECTORS, help="also print the evaluable this selector makes"
    )
    trace.set_defaults(run=_trace)
    demo = commands.add_parser("demo", help="run the demo on the bundled example app")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``evaltrace`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except EvaltraceError as exc:
        print(f"evaltrace {args.command}: {exc}", file=sys.stderr)
        return 1
    return code
