"""References from a dataset to user code: ``"path/to/file.py:name"`` and ``"package.module:name"``.

A reference is a target and a (possibly dotted) attribute separated by the last ``:``. The
target is a **file** when it ends with ``.py`` or contains a path separator, else a **module**
name imported the usual way (from ``sys.path``).

A file is looked up relative to the dataset file's folder first, then relative to the current
folder (where pixie-qa datasets written relative to the project root find their files). It is
executed once per :class:`ReferenceLoader`, that is once per run, under a stable name in
``sys.modules`` (``_evaltrace_user_<stem>_<hash of the path>``), so that what needs its module
to be importable works: ``from __future__ import annotations``, dataclasses, pydantic models
referring to other models, pickling. A later loader executes the file afresh (edits are seen)
and replaces the module under that name.

Whatever goes wrong is a :class:`~evaltrace.datasets.DatasetError` naming the reference's
place in the dataset: a missing file (also a ``FileNotFoundError``) or module, a missing
attribute (with the closest name; also an ``AttributeError``), or a module that raised while
being imported (its exception, and the file and line where it was raised).

An entry's ``trace`` refers to a stored trace file (:func:`trace_file_path`): a relative path
starts from the dataset file's folder and must stay inside it (after ``..`` and symbolic
links are followed), an absolute path may name any file; :func:`trace_reference_problem`
says what is wrong with one (leading out of the folder, missing, not a regular file).

Example:
    >>> parse_reference("evals/checks.py:tone")
    Reference(text='evals/checks.py:tone', target='evals/checks.py', attribute='tone', is_path=True)
    >>> parse_reference("Factuality") is None
    True
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

from evaltrace._safe_text import exception_message, exception_text, safe_repr, type_name
from evaltrace.datasets.problems import DatasetError, DatasetProblem, Missing, closest
from evaltrace.errors import NotATraceFileError
from evaltrace.trace.trace_file import open_trace_file

__all__ = [
    "Reference",
    "ReferenceLoader",
    "describe_object",
    "module_name_for",
    "parse_reference",
    "reference_file",
    "trace_file_path",
    "trace_reference_problem",
]

_IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_MODULE_PREFIX: Final = "_evaltrace_user_"


@dataclass(frozen=True, kw_only=True)
class Reference:
    """A parsed reference to a Python object in user code."""

    text: str
    """The reference as written."""
    target: str
    """The file path or the module name."""
    attribute: str
    """The attribute of the module, dotted for a nested one (``"App.create"``)."""
    is_path: bool
    """Whether ``target`` is a file path (else a module name)."""


def parse_reference(text: str) -> Reference | None:
    """Split ``"target:attribute"``; ``None`` for a plain name without ``:``.

    The target and the attribute are not checked here (see :meth:`ReferenceLoader.load`).

    Example:
        >>> parse_reference("my_pkg.evals:Tone.strict").attribute
        'Tone.strict'
    """
    if ":" not in text:
        return None
    target, _, attribute = text.rpartition(":")
    is_path = target.endswith(".py") or "/" in target or "\\" in target
    return Reference(text=text, target=target, attribute=attribute, is_path=is_path)


class _Unresolved(Exception):
    """Why a reference could not be resolved; located by the caller."""

    def __init__(
        self,
        message: str,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
        missing: Missing | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.expected = expected
        self.found = found
        self.hint = hint
        self.missing = missing


class ReferenceLoader:
    """Imports the code a run's datasets refer to, each file once.

    Use one loader per run: every dataset of the run then shares the modules (a file named by
    two datasets, or by the runnable and an evaluator, is executed once).

    Example:
        >>> loader = ReferenceLoader()
        >>> loader.load("json:dumps", file="faq.json", location="runnable").__name__
        'dumps'
    """

    def __init__(self) -> None:
        self._files: dict[Path, ModuleType | _Unresolved] = {}

    def load(self, text: str, *, file: str, location: str, base_dir: Path | None = None) -> object:
        """The object ``text`` refers to.

        Args:
            text: A reference, ``"path/to/file.py:name"`` or ``"package.module:name"``.
            file: How problems name the dataset file.
            location: Where the reference is in the dataset (``"entries[2].evaluators[0]"``).
            base_dir: The dataset file's folder; relative paths are tried there first.

        Raises:
            DatasetError: The reference is malformed, or its file, module or attribute
                cannot be loaded.
        """
        try:
            return self._load(text, base_dir)
        except _Unresolved as exc:
            raise DatasetError(
                [
                    DatasetProblem(
                        file=file,
                        location=location,
                        message=exc.message,
                        expected=exc.expected,
                        found=exc.found,
                        hint=exc.hint,
                        missing=exc.missing,
                    )
                ]
            ) from None

    def _load(self, text: str, base_dir: Path | None) -> object:
        reference = parse_reference(text)
        if reference is None or not reference.target or not _IDENTIFIER.match(reference.attribute):
            raise _Unresolved(
                f"{text!r} is not a reference",
                expected="'path/to/file.py:name' or 'package.module:name'",
                found=repr(text),
            )
        if reference.is_path:
            module = self._module_from_file(reference.target, base_dir)
        else:
            module = _import_module(reference.target)
        return _attribute(module, reference)

    def _module_from_file(self, target: str, base_dir: Path | None) -> ModuleType:
        path = _locate(target, base_dir)
        known = self._files.get(path)
        if known is None:
            try:
                known = _execute_file(path)
            except _Unresolved as exc:
                known = exc
            self._files[path] = known
        if isinstance(known, _Unresolved):
            raise known.with_traceback(None)
        return known


def reference_file(text: str, base_dir: Path | None) -> Path | None:
    """The file of the user's code a reference leads to, if it leads to one.

    A file reference gives its file; a module reference the file of its module once imported,
    when that lies in the current folder (the project's own module, not an installed one).

    Args:
        text: The reference as written.
        base_dir: The dataset file's folder.

    Example:
        >>> reference_file("json:dumps", None) is None
        True
    """
    reference = parse_reference(text)
    if reference is None:
        return None
    if reference.is_path:
        try:
            return _locate(reference.target, base_dir)
        except _Unresolved:
            return None
    module = sys.modules.get(reference.target)
    origin = getattr(module, "__file__", None)
    if not isinstance(origin, str):
        return None
    path = Path(origin).resolve()
    return path if path.is_relative_to(Path.cwd().resolve()) else None


def module_name_for(path: Path) -> str:
    """The name under which the file at ``path`` is registered in ``sys.modules``.

    Example:
        >>> module_name_for(Path("/project/evals/checks.py")).startswith("_evaltrace_user_checks_")
        True
    """
    resolved = path.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stem = re.sub(r"\W", "_", resolved.stem)
    return f"{_MODULE_PREFIX}{stem}_{digest}"


def _locate(target: str, base_dir: Path | None) -> Path:
    given = Path(target)
    candidates = [given] if given.is_absolute() else []
    if not given.is_absolute():
        if base_dir is not None:
            candidates.append(base_dir / given)
        candidates.append(Path.cwd() / given)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    tried = ", ".join(str(candidate) for candidate in dict.fromkeys(candidates))
    raise _Unresolved(
        f"no such file {target!r}",
        hint=f"tried {tried}; paths are relative to the dataset file's folder, else to the "
        "current folder",
        missing="file",
    )


def _execute_file(path: Path) -> ModuleType:
    name = module_name_for(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _Unresolved(
            f"{str(path)!r} cannot be imported as a Python module", expected="a .py file"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's module failed: a problem to report
        del sys.modules[name]
        raise _import_failure(str(path), exc) from None
    return module


def _import_module(name: str) -> ModuleType:
    if not _IDENTIFIER.match(name):
        raise _Unresolved(
            f"{name!r} is not a module name",
            expected="a dotted module name such as 'my_pkg.evals', or a path ending in .py",
        )
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            raise _Unresolved(
                f"no module named {missing!r}",
                hint="check the spelling; install the package, or run from the folder that "
                "holds it (or add that folder to PYTHONPATH); a file is written as "
                "'path/to/file.py:name'",
            ) from None
        raise _import_failure(name, exc) from None
    except (Exception, SystemExit) as exc:  # the user's module failed: a problem to report
        raise _import_failure(name, exc) from None


def _import_failure(what: str, exc: BaseException) -> _Unresolved:
    where = _raised_at(exc)
    return _Unresolved(
        f"importing {what} raised {exception_text(exc)}",
        hint=f"raised at {where}; fix the module so that it imports" if where else None,
    )


def _raised_at(exc: BaseException) -> str | None:
    """``file:line`` where ``exc`` was raised: the innermost frame outside the import system."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<frozen ")
    ]
    if not frames:
        return None
    return f"{frames[-1].filename}:{frames[-1].lineno}"


def _attribute(module: ModuleType, reference: Reference) -> object:
    value: object = module
    walked = reference.target
    for part in reference.attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            names = [name for name in dir(value) if not name.startswith("_")]
            suggestion = closest(part, names)
            raise _Unresolved(
                f"{walked} has no attribute {part!r}",
                hint=f"did you mean {suggestion!r}?" if suggestion else None,
                missing="attribute",
            ) from None
        except Exception as exc:  # a property or module __getattr__ that raised
            raise _Unresolved(
                f"reading {part!r} of {walked} raised {exception_text(exc)}"
            ) from None
        walked = f"{walked}:{part}" if walked == reference.target else f"{walked}.{part}"
    return value


def trace_file_path(trace: str, base_dir: Path | None) -> Path:
    """The file an entry's ``trace`` names: a relative path starts from the dataset's folder.

    Args:
        trace: The entry's ``trace``, as written.
        base_dir: The dataset file's folder; ``None`` for a dataset built in code, whose
            relative paths start from the current folder.

    Example:
        >>> trace_file_path("runs/a.jsonl", Path("/project/evals")).as_posix()
        '/project/evals/runs/a.jsonl'
    """
    path = Path(trace)
    return path if path.is_absolute() or base_dir is None else base_dir / path


def trace_reference_problem(
    trace: str, *, file: str, location: str, base_dir: Path | None
) -> DatasetProblem | None:
    """What is wrong with an entry's ``trace``, or ``None`` when it names a trace file to read.

    A relative path must lead to a file inside the dataset's folder (the current folder for
    a dataset built in code), once ``..`` and symbolic links are followed: a dataset handed
    over cannot make a run read files elsewhere. An absolute path, written by the dataset's
    author, may name any file. The file must exist and be a regular file (it is opened to
    check, never read: a named pipe is not opened).

    Args:
        trace: The entry's ``trace``, as written.
        file: How problems name the dataset file.
        location: The entry's field (``"entries[3].trace"``).
        base_dir: The dataset file's folder, or ``None``.
    """
    path = trace_file_path(trace, base_dir)
    folder = base_dir if base_dir is not None else Path.cwd()

    def problem(
        message: str, hint: str | None = None, missing: Missing | None = None
    ) -> DatasetProblem:
        return DatasetProblem(
            file=file, location=location, message=message, hint=hint, missing=missing
        )

    if not Path(trace).is_absolute():
        target = path.resolve()
        if not target.is_relative_to(folder.resolve()):
            return problem(
                f"the trace file {trace!r} leads out of the dataset's folder (to {target})",
                hint="move the trace file into the dataset's folder, or give its absolute path",
            )
    try:
        open_trace_file(path).close()
    except FileNotFoundError:
        return problem(
            f"no such file: {path}",
            hint="check the path; a relative one starts from the dataset file's folder",
            missing="file",
        )
    except NotATraceFileError as exc:
        return problem(str(exc))
    except OSError as exc:
        return problem(f"cannot be read: {path}: {exc.strerror or exception_message(exc)}")
    return None


def describe_object(value: object) -> str:
    """A short description of an object a reference led to, for messages.

    Example:
        >>> describe_object(3)
        'int 3'
    """
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    if isinstance(value, ModuleType):
        return f"module {value.__name__}"
    text = safe_repr(value)
    return f"{type_name(value)} {text if len(text) <= 40 else text[:37] + '...'}"
