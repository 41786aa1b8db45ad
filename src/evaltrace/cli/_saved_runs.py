"""Reading the saved run a command is given, and saying what it takes when given another thing.

``evaltrace report`` and ``evaltrace diff`` take a run's folder or its ``result.json``. The two
things a new user gives them instead are a dataset file (the run's input, not its result) and
the folder that holds the runs (``evaltrace_results``); for those the error says what they are
and which command or paths to use.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from evaltrace.cli._discovery import is_dataset_file
from evaltrace.cli._terminal import CommandError

if TYPE_CHECKING:
    from evaltrace.llm.prices import PriceTable
    from evaltrace.results import RunResult

__all__ = ["load_run", "priced_run"]


def priced_run(run: RunResult, prices: PriceTable | None) -> RunResult:
    """``run`` with its cost by ``prices`` (``--prices``).

    Without ``prices``: by the table the run was given, else by the file
    ``EVALTRACE_PRICES`` names, else none (its cost is unknown).

    Raises:
        CommandError: The file ``EVALTRACE_PRICES`` names is not a price table.
    """
    from evaltrace.errors import PriceFileError
    from evaltrace.llm.prices import resolve_prices

    if prices is None:
        if run.prices is not None:
            return run
        try:
            prices = resolve_prices(None)
        except PriceFileError as exc:
            raise CommandError(str(exc)) from None
        if prices is None:
            return run
    return run.priced(prices)


def load_run(given: str, *, command: str, takes: str) -> RunResult:
    """Read the saved run at ``given`` (a run's folder or its ``result.json``).

    Args:
        given: The path as the user gave it.
        command: The command's name, such as ``"report"``.
        takes: What the command takes, such as ``"a run's folder or its result.json"``.

    Raises:
        CommandError: It cannot be read; for a dataset file or a folder of runs the message
            says what it is and what to give instead.
    """
    from evaltrace.results import ResultFileError, load_result

    try:
        return load_result(given)
    except ResultFileError as exc:
        path = Path(given)
        if path.is_file() and _looks_like_dataset(path):
            raise CommandError(
                f"{given} is a dataset file; `evaltrace {command}` takes {takes}; run the "
                f"dataset with `evaltrace test {shlex.quote(given)}`, which saves its run "
                "under evaltrace_results/"
            ) from None
        runs = _runs_in(path)
        if runs:
            raise CommandError(_holds_runs(given, runs, command)) from None
        raise CommandError(str(exc)) from None


def _looks_like_dataset(path: Path) -> bool:
    """Whether ``path`` is a dataset file: by name, YAML, or JSON naming a runnable.

    No saved run is YAML or names a runnable.
    """
    if is_dataset_file(path) or path.suffix.lower() in (".yaml", ".yml"):
        return True
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):  # unreadable: the loader's error stands
        return False
    return isinstance(data, dict) and "runnable" in data


def _runs_in(folder: Path) -> list[Path]:
    """The run folders with a result directly under ``folder``, oldest first (by run id)."""
    from evaltrace.results import RESULT_FILE, RUN_FILE

    if not folder.is_dir() or (folder / RUN_FILE).exists():
        return []  # not a folder, or a run's own folder (whose run may have been interrupted)
    return sorted(
        (child for child in folder.iterdir() if (child / RESULT_FILE).is_file()),
        key=lambda child: child.name,
    )


def _holds_runs(given: str, runs: list[Path], command: str) -> str:
    named = [shlex.quote(str(Path(given) / run.name)) for run in runs[-2:]]
    if len(runs) == 1:
        return (
            f"{given} holds 1 run, in a folder of its own: give that folder, as in "
            f"`evaltrace report {named[0]}`"
        )
    older, newer = named
    compare = f"`evaltrace diff {older} {newer}` compares them"
    hint = (
        compare
        if command == "diff"
        else f"`evaltrace report {newer}` reports the latest, {compare}"
    )
    return (
        f"{given} holds {len(runs)} runs, each in a folder of its own named by its run id; "
        f"give one of them: the latest two are {older} and {newer} ({hint})"
    )
