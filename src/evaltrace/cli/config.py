"""``evaltrace config``: what evaltrace takes from the environment, and its problems."""

from __future__ import annotations

import json
import os

import click

from evaltrace.cli._options import output_format
from evaltrace.cli._terminal import out

__all__ = ["config"]


@click.command("config", short_help="Print the configuration the environment gives evaltrace.")
@output_format(
    text="each variable and its problems",
    json="the same as one JSON object with 'variables' and 'problems'",
)
def config(output_format: str) -> int:
    """Print every variable evaltrace reads, what it uses and why, then the problems.

    For each EVALTRACE_* and OTEL_* variable: the value evaltrace uses for what it
    configures and where that comes from: environment (its value), default (not set),
    fallback (its value cannot be used) or unused (another variable wins). Header values are
    masked. A problem is a value that cannot be used: the app warns about it once and runs
    with the fallback; this command lists them all, for deploy checks.

    Exit code 0 when there is no problem, 1 when there is any.
    """
    from evaltrace.capture.environment import read_environment

    environment = read_environment(os.environ)
    if output_format == "json":
        report = {
            "variables": [
                {
                    "name": variable.name,
                    "value": variable.value,
                    "effective": variable.effective,
                    "source": variable.source,
                }
                for variable in environment.variables
            ],
            "problems": [
                {
                    "variable": problem.variable,
                    "value": problem.value,
                    "reason": problem.reason,
                    "used": problem.used,
                    "message": str(problem),
                }
                for problem in environment.problems
            ],
        }
        out(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        rows = [("variable", "effective", "source")]
        rows += [(v.name, v.effective, v.source) for v in environment.variables]
        name_width = max(len(name) for name, _, _ in rows)
        value_width = max(len(value) for _, value, _ in rows)
        for name, value, source in rows:
            out(f"{name:<{name_width}}  {value:<{value_width}}  {source}")
        out("")
        count = len(environment.problems)
        if count == 0:
            out("no problems")
        else:
            out(f"{count} problem{'s' if count > 1 else ''}:")
            for problem in environment.problems:
                out(f"  {problem}")
    return 1 if environment.problems else 0
