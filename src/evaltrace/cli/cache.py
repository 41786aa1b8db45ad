"""``evaltrace cache``: the judge cache's file, what it holds, and clearing it.

Also the judge cache options of ``evaltrace test`` (``--judge-cache PATH``,
``--no-judge-cache``) and what they configure: ``evaltrace test`` keeps judge responses in the
default file unless told otherwise by an option or ``EVALTRACE_JUDGE_CACHE``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from evaltrace.cli._options import output_format
from evaltrace.cli._terminal import CommandError, out

if TYPE_CHECKING:
    from evaltrace.llm import JudgeCache

__all__ = ["cache", "judge_cache_option", "no_judge_cache_option", "using_judge_cache"]

F = TypeVar("F", bound=Callable[..., Any])


def judge_cache_option(help_text: str) -> Callable[[F], F]:
    """``--judge-cache PATH`` (``judge_cache`` in the command)."""
    return click.option(
        "--judge-cache",
        "judge_cache",
        type=click.Path(dir_okay=False),
        metavar="PATH",
        help=help_text,
    )


def no_judge_cache_option() -> Callable[[F], F]:
    """``--no-judge-cache`` (``no_judge_cache`` in the command)."""
    return click.option(
        "--no-judge-cache",
        is_flag=True,
        help="Ask every judge afresh and keep nothing (overrides EVALTRACE_JUDGE_CACHE).",
    )


def using_judge_cache(path: str | None, off: bool) -> contextlib.AbstractContextManager[Any]:
    """The judge cache ``evaltrace test`` runs with, configured for the block.

    ``--no-judge-cache``: none; ``--judge-cache PATH``: that file; neither: what
    ``EVALTRACE_JUDGE_CACHE`` says, else the default file.

    Raises:
        CommandError: Both options were given.
    """
    from evaltrace.llm import configure_judge, environment_judge_cache

    if off and path is not None:
        raise CommandError("--judge-cache PATH and --no-judge-cache contradict each other")
    if off:
        return configure_judge(cache=False)
    if path is not None:
        return configure_judge(cache=path)
    if environment_judge_cache() is not None:
        return contextlib.nullcontext()  # the environment says, as it does for the library
    return configure_judge(cache=True)


def _chosen(path: str | None) -> JudgeCache:
    """The cache a command works on: ``--judge-cache``, the environment's, or the default."""
    from evaltrace.llm import JudgeCache, environment_judge_cache

    if path is not None:
        return JudgeCache(path)
    setting = environment_judge_cache()
    return JudgeCache(setting.path if isinstance(setting, JudgeCache) else None)


_WHICH: Final = (
    "The judge cache file (default: EVALTRACE_JUDGE_CACHE when it names a file, else the "
    "default file in the user's cache directory)."
)


@click.group("cache", short_help="Show or clear the judge cache.")
def cache() -> None:
    """The judge cache: complete, successful judge responses kept between runs.

    `evaltrace test` asks the cache before each judge request and stores the answers of the
    requests it sent; each sample of a repeated judge is kept apart. These commands show
    where it is, what it holds, and clear it.
    """


@cache.command("path", short_help="Print the judge cache file.")
@judge_cache_option(_WHICH)
def path(judge_cache: str | None) -> int:
    """Print the judge cache file (whether it exists yet or not)."""
    out(str(_chosen(judge_cache).path))
    return 0


@cache.command("stats", short_help="Print what the judge cache holds.")
@judge_cache_option(_WHICH)
@output_format(text="one line per figure", json="the same as one JSON object")
def stats(judge_cache: str | None, output_format: str) -> int:
    """Print the responses the judge cache holds, its size and limit, and its models.

    Exit code 0, or 1 when the file exists but cannot be used (it is bypassed by runs;
    `evaltrace cache clear` starts it afresh).
    """
    chosen = _chosen(judge_cache)
    try:
        figures = chosen.stats()
    finally:
        chosen.close()
    models = dict(figures.models or {})
    if output_format == "json":
        report = {
            "path": str(figures.path),
            "entries": figures.entries,
            "bytes": figures.bytes,
            "max_bytes": figures.max_bytes,
            "ttl": figures.ttl,
            "file_bytes": figures.file_bytes,
            "oldest": figures.oldest.isoformat() if figures.oldest else None,
            "newest": figures.newest.isoformat() if figures.newest else None,
            "models": {
                model: {"entries": count, "tokens": tokens}
                for model, (count, tokens) in models.items()
            },
            "problem": figures.problem,
        }
        out(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        out(f"file: {figures.path}{'' if figures.path.exists() else ' (not created yet)'}")
        out(f"responses: {figures.entries:,}")
        out(
            f"size: {_size(figures.bytes)} of {_size(figures.max_bytes)} "
            f"({_size(figures.file_bytes)} on disk)"
        )
        if figures.oldest is not None and figures.newest is not None:
            out(f"stored: {figures.oldest:%Y-%m-%d %H:%M} to {figures.newest:%Y-%m-%d %H:%M} UTC")
        for model, (count, tokens) in models.items():
            out(f"  {model}: {count:,} responses, {tokens:,} tokens when asked")
        if figures.problem is not None:
            out(
                f"problem: {figures.problem} (runs bypass it; `evaltrace cache clear` starts "
                "it afresh)"
            )
    return 0 if figures.problem is None else 1


@cache.command("clear", short_help="Remove every response from the judge cache.")
@judge_cache_option(_WHICH)
def clear(judge_cache: str | None) -> int:
    """Remove every stored response (a file that is not a usable cache is deleted)."""
    chosen = _chosen(judge_cache)
    try:
        removed = chosen.clear()
    except OSError as exc:
        raise CommandError(str(exc)) from None
    finally:
        chosen.close()
    out(f"removed {removed:,} response{'' if removed == 1 else 's'} from {chosen.path}")
    return 0


def _size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GB"
