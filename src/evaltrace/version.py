"""The installed evaltrace's version, read once, on first use."""

from __future__ import annotations

import functools

__all__ = ["version"]


@functools.cache
def version() -> str:
    """The installed distribution's version (``"0+unknown"`` in a source tree never installed).

    ``importlib.metadata`` (with ``email``, ``zipfile``, ``csv``, ``pathlib``) costs more to
    import than the capture floor itself, so it is imported here, when first asked.

    Example:
        >>> version().count(".") >= 1 or version() == "0+unknown"
        True
    """
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("evaltrace")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
