"""Which sample a judge call is: its epoch and its repetition index.

A judge asked the same question twice is sampled twice: with a judge cache, each sample must
be a key of its own, or a repeated judge would get its first answer back ``n`` times and
measure no variance at all. Code above the judges says which sample a call is:
:class:`~evaltrace.judges.Repeated` wraps its k-th run in :func:`judge_sample` ``(k)``, and a
run of the app's k-th epoch wraps its evaluations in :func:`judge_epoch` ``(k)``. The judge
cache keys each request by both.

Samples nest: a repeated judge inside a repeated judge gives each of its runs the path of
indices from the outermost to the innermost. Index 0 is the default, so the first sample of
a repeated judge is the same sample as the one call of the plain judge (a trailing 0 is
dropped from the path).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["JudgeSample", "current_judge_sample", "judge_epoch", "judge_sample"]


@dataclass(kw_only=True, frozen=True, slots=True)
class JudgeSample:
    """The sample a judge call is, as the judge cache keys it.

    Example:
        >>> with judge_epoch(1), judge_sample(3):
        ...     current_judge_sample()
        JudgeSample(epoch=1, path=(3,))
    """

    epoch: int = 0
    """The epoch of the run whose output is judged (0: the first, or the only one)."""
    path: tuple[int, ...] = ()
    """The repetition index of each repeated judge the call is in, outermost first, without
    trailing zeros (empty: the first sample)."""


_EPOCH: ContextVar[int] = ContextVar("evaltrace_judge_epoch", default=0)
_PATH: ContextVar[tuple[int, ...]] = ContextVar("evaltrace_judge_sample", default=())


def _check_index(index: object, what: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"{what} must be a whole number >= 0, got {index!r}")
    return index


@contextmanager
def judge_sample(index: int) -> Iterator[None]:
    """Make the judge calls of the block the ``index``-th sample (0-based) of a repetition.

    Inside another ``judge_sample`` block the index is added to the outer one's path, so a
    repetition nested in another gives each of its calls a sample of its own.

    Args:
        index: The repetition index, 0 for the first.

    Raises:
        ValueError: ``index`` is not a whole number >= 0.

    Example:
        >>> with judge_sample(2):
        ...     current_judge_sample().path
        (2,)
    """
    token = _PATH.set((*_PATH.get(), _check_index(index, "judge_sample(index)")))
    try:
        yield
    finally:
        _PATH.reset(token)


@contextmanager
def judge_epoch(index: int) -> Iterator[None]:
    """Make the judge calls of the block judge the ``index``-th epoch (0-based) of the app.

    Args:
        index: The epoch, 0 for the first.

    Raises:
        ValueError: ``index`` is not a whole number >= 0.

    Example:
        >>> with judge_epoch(1):
        ...     current_judge_sample().epoch
        1
    """
    token = _EPOCH.set(_check_index(index, "judge_epoch(index)"))
    try:
        yield
    finally:
        _EPOCH.reset(token)


def current_judge_sample() -> JudgeSample:
    """The sample a judge call made now is.

    Example:
        >>> current_judge_sample()
        JudgeSample(epoch=0, path=())
    """
    path = _PATH.get()
    end = len(path)
    while end and path[end - 1] == 0:
        end -= 1
    return JudgeSample(epoch=_EPOCH.get(), path=path[:end])
