"""``evaltrace merge``: the result folders of shards, merged into one run's folder."""

from __future__ import annotations

from collections.abc import Sequence

import click

from evaltrace.cli._terminal import CommandError, err, out, printable
from evaltrace.constants import RESULTS_DIR
from evaltrace.errors import EvaltraceError

__all__ = ["merge"]


@click.command("merge", short_help="Merge the result folders of shards into one run.")
@click.argument("folders", nargs=-1, required=True, metavar="DIR...")
@click.option(
    "--output-dir",
    type=click.Path(),
    default=RESULTS_DIR,
    show_default=True,
    help="Where the merged run's folder (<run-id>/result.json, ...) is written.",
)
@click.option("--no-scorecard", is_flag=True, help="Do not write the merged run's scorecard.html.")
@click.option(
    "--force",
    is_flag=True,
    help="Merge shards whose fingerprints differ (evaluators, threshold, dataset, code, ...) "
    "or that lack their traces.jsonl; what differed is recorded in the merged run.",
)
def merge(folders: Sequence[str], output_dir: str, no_scorecard: bool, force: bool) -> int:
    """Merge the run folders of every shard of one run (evaltrace test --shard K/N) into one.

    The merged folder holds result.json (every entry, in entry order; the dataset-level
    metrics computed again over every entry), entries.jsonl, traces.jsonl and scorecard.html.
    Shards of different datasets or entry filters, overlapping or missing shards, a shard
    that was interrupted or lacks its traces.jsonl, and shards whose fingerprints differ
    (run with other evaluators, threshold, timeout, dataset entries or code) are refused
    (exit code 2), naming the folders and what differs; --force merges the last two kinds.
    """
    from evaltrace.results import (
        MergeError,
        ResultFileError,
        ResultsFolderError,
        merge_results,
        write_scorecard,
    )

    try:
        folder = merge_results(folders, output_dir, force=force)
    except (MergeError, ResultFileError, ResultsFolderError) as exc:
        raise CommandError(str(exc)) from None
    out(f"merged {len(folders)} shards: {folder}")
    if not no_scorecard:
        try:
            out(f"scorecard: {write_scorecard(folder)}")
        except (OSError, EvaltraceError) as exc:
            err(f"evaltrace merge: the scorecard was not written: {printable(str(exc))}")
    return 0
