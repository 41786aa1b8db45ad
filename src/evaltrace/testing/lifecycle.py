"""What the loopback servers of this package share: ``start()``/``stop()`` and ``with``."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Started"]


class Started:
    """Started by :meth:`start`, stopped by :meth:`stop`, or both around a ``with`` block."""

    def start(self) -> Self:
        """Start, and return the object itself."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop; stopping what is not running does nothing."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
