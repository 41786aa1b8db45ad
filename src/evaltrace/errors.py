"""Exception classes raised by evaltrace.

Every error evaltrace raises derives from :class:`EvaltraceError`, so callers can catch the
library's failures without catching unrelated ones. Each also derives from the builtin that
fits the situation, and where pixie-qa raised a builtin for the same situation, from that one
too: code written for pixie-qa keeps catching with ``except ValueError``, ``except KeyError``
or ``except FileNotFoundError`` (see docs/migration.md).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CaptureBlockError",
    "ConfigurationError",
    "DuplicateWrapNameError",
    "EvaltraceError",
    "EvaluatorTimeoutError",
    "InvalidEvaluatorResultError",
    "MissingEvalInputError",
    "MissingExtraError",
    "MultipleTracesError",
    "NoTraceError",
    "NotATraceFileError",
    "ResultFileError",
    "ResultFileNotFoundError",
    "ResultsFolderError",
    "ResumeError",
    "RunFolderBusyError",
    "RunnableTimeoutError",
    "StopIterationError",
    "TraceFormatError",
    "UnknownEvaluatorError",
]


class EvaltraceError(Exception):
    """Base class of every error raised by evaltrace."""


class ConfigurationError(EvaltraceError, ValueError):
    """A configuration value (argument or environment variable) is invalid."""


class CaptureBlockError(EvaltraceError, RuntimeError):
    """A ``capture_traces()`` block was entered or exited out of order or in another context.

    Raised when a block is entered while it is open, exited without being entered, exited
    before a block nested in it, or exited in another task or thread than the one that
    entered it.
    """


class _MessageKeyError(KeyError):
    """A ``KeyError`` whose text is its message (``KeyError`` shows the repr of its argument)."""

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MissingEvalInputError(EvaltraceError, _MessageKeyError):
    """A ``wrap(..., purpose="input")`` name has no value in the active evaluation inputs.

    A ``KeyError``, as pixie-qa's error for a name missing from the served inputs was.
    """

    def __init__(self, name: str, available: list[str], entry: str | None = None) -> None:
        self.name = name
        self.available = available
        self.entry = entry
        where = f" for entry {entry!r}" if entry else ""
        names = ", ".join(repr(n) for n in available) or "none"
        super().__init__(
            f"wrap(purpose='input', name={name!r}) has no value in the evaluation inputs{where}. "
            f"Available names: {names}. Add an eval_input item named {name!r} to the entry, "
            "or rename the wrap call to one of the available names."
        )


class DuplicateWrapNameError(EvaltraceError, ValueError):
    """A run recorded two values under one name without ``many=True``."""


class NoTraceError(EvaltraceError, LookupError, ValueError):
    """A selector found no span it could use in the captured trace.

    A ``LookupError``, and a ``ValueError`` as pixie-qa's ``root`` and ``last_llm_call``
    raised for an empty trace or one without a model call.
    """


class MultipleTracesError(EvaltraceError, ValueError):
    """A selector that reads one run was given several traces it cannot read as one."""

    trace_ids: list[str]
    """The traces given, as 32-digit hex ids, earliest first."""

    def __init__(self, message: str, *, trace_ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.trace_ids = list(trace_ids)


class TraceFormatError(EvaltraceError, ValueError):
    """A stored trace file could not be read."""


class NotATraceFileError(TraceFormatError):
    """A file given as a trace file is none: not a regular file, or no line of it is a span.

    The message names the file and, when it can tell, what the file is instead (a dataset
    file, a saved run, binary data).
    """


class InvalidEvaluatorResultError(EvaltraceError, TypeError):
    """An evaluator returned something that is not a valid score or :class:`Evaluation`."""


class UnknownEvaluatorError(EvaltraceError, _MessageKeyError, ValueError):
    """No evaluator is registered under a name (``evaltrace.datasets.lookup_evaluator``).

    A ``KeyError`` (the name is a registry key), and a ``ValueError`` as pixie-qa raised for
    an unknown evaluator name.
    """


class EvaluatorTimeoutError(EvaltraceError, TimeoutError):
    """An evaluator did not finish within its timeout."""


class RunnableTimeoutError(EvaltraceError, TimeoutError):
    """A runnable (the app under evaluation) did not finish within its timeout."""


class StopIterationError(EvaltraceError, RuntimeError):
    """A sync evaluator or runnable raised ``StopIteration``, raised in its place.

    ``StopIteration`` cannot travel through async code (a coroutine turns it into a bare
    ``RuntimeError``, and an asyncio future refuses it), so the call's ``StopIteration`` is
    this error's ``__cause__``. It usually means ``next()`` on an empty iterator.
    """


class ResultFileError(EvaltraceError, ValueError):
    """A saved result cannot be read: missing, not JSON, not a saved result, or damaged."""


class ResultFileNotFoundError(ResultFileError, FileNotFoundError):
    """A saved result (``result.json``, ``entries.jsonl``) is not there.

    A ``FileNotFoundError`` too, as pixie-qa raised for a result it could not find.
    """


class ResultsFolderError(EvaltraceError, OSError):
    """A results folder cannot be created or written; the message names the path and why."""


class ResumeError(EvaltraceError, ValueError):
    """A run cannot be resumed in the folder given.

    It holds a run of another dataset, selection or shard, or one whose fingerprint
    (evaluators, threshold, code, ...) differs, or it is damaged; it is left as it was.
    """


class RunFolderBusyError(EvaltraceError, RuntimeError):
    """Another process is writing the run folder (it holds its lock)."""

    def __init__(self, folder: object, holder: str) -> None:
        super().__init__(
            f"{folder} is being written by process {holder}; wait for that run to end (or "
            "stop it), then try again"
        )
        self.folder = folder
        """The folder."""
        self.holder = holder
        """The id of the process writing it, as it wrote it (``"unknown"`` if it did not)."""


class MissingExtraError(EvaltraceError, ImportError):
    """A feature needs an optional dependency that is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the optional dependency {package!r}, which is not installed. "
            f"Install it with: pip install 'evaltrace[{extra}]'"
        )
        self.package = package
        """The missing package."""
        self.extra = extra
        """The evaltrace extra that installs it."""
