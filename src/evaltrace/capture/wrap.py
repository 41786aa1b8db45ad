"""``wrap``: the decorator that makes spans, and the hook that records named values."""

from __future__ import annotations

import functools
import inspect
import logging
import time
import traceback
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any, Final, Literal, NoReturn, TypeGuard, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode

from evaltrace._safe_text import exception_message, exception_text, safe_repr, type_name
from evaltrace.capture import config as _config
from evaltrace.capture import context as _context
from evaltrace.capture import conventions as conv
from evaltrace.capture.codec import Codec
from evaltrace.capture.context import IDLE_NAMES, RunScope, current_scope, remember_idle
from evaltrace.capture.listeners import LISTENERS
from evaltrace.capture.passthrough import passthrough
from evaltrace.capture.values import Purpose, WrapRecord

__all__ = ["SPAN_KINDS", "wrap"]

logger = logging.getLogger("evaltrace")

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

SPAN_KINDS: Final = frozenset(
    {
        "chain",
        "llm",
        "tool",
        "agent",
        "retriever",
        "embedding",
        "reranker",
        "guardrail",
        "evaluator",
        "prompt",
        "unknown",
    }
)
"""The OpenInference span kinds ``@wrap(kind=...)`` accepts (case-insensitive)."""

_PURPOSES: Final = frozenset({"input", "output", "state", "entry"})
_OPTIONS: Final = frozenset({"description", "kind", "many"})


class _NoValue:
    """The default of ``wrap``'s ``data``: nothing was given.

    Callable, so that the idle value hook's ``callable(data)`` test also sends a call
    without a value on to the checks that explain what is missing.
    """

    def __call__(self) -> NoReturn:
        raise TypeError("wrap was given no value")

    def __repr__(self) -> str:
        return "<no value>"


_MISSING: Final[Any] = _NoValue()
_warned: set[str] = set()


def _warn_once(key: str, message: str, exc: BaseException) -> None:
    if key in _warned:
        logger.debug("evaltrace: %s (again): %s", message, exception_text(exc))
        return
    _warned.add(key)
    logger.warning("evaltrace: %s: %s; the app is unaffected", message, exception_text(exc))


# The value hook --------------------------------------------------------------------------


@overload
def wrap(data: F, /) -> F: ...
@overload
def wrap(
    *, name: str | None = None, kind: str = "chain", description: str | None = None
) -> Callable[[F], F]: ...
@overload
def wrap(
    data: T,
    /,
    *,
    purpose: Literal["input", "output", "state", "entry"],
    name: str,
    description: str | None = None,
    many: bool = False,
) -> T: ...


def wrap(
    data: Any = _MISSING,
    /,
    *,
    purpose: Literal["input", "output", "state", "entry"] | None = None,
    name: str | None = None,
    **options: Any,
) -> Any:
    """Trace a function, or record a named value of the current run.

    As a decorator (``@wrap`` or ``@wrap(name=..., kind=...)``) on a sync or async function,
    generator or async generator (or method): each call becomes a span named after the
    function, with the bound arguments as ``input.value`` (``self``/``cls`` left out), the
    return value or the yielded items as ``output.value``, and ``openinference.span.kind``
    set from ``kind`` (``"chain"`` by default). Exceptions are recorded on the span (status
    ERROR, message redacted) and re-raised unchanged. When nothing would record the span (no
    capture current, no exporter, handler or app-owned provider), no span is made and nothing
    is encoded: the call costs about a plain call, whatever its arguments.

    As a value hook (``wrap(data, purpose=..., name=...)``): records ``data`` on the current
    span (a span event ``evaltrace.wrap``) and in the current capture, and returns ``data``
    unchanged. With ``purpose="input"`` inside an evaluation run (see
    :func:`evaltrace.capture.eval_inputs`), it returns the run's input called ``name`` instead. When
    ``data`` is callable (e.g. ``wrap(db.fetch_order, purpose="input", name="order")``), it
    returns a callable of the same kind (sync or async) that records each result; in an
    evaluation run with inputs, that callable returns the injected value and never calls
    ``data``.

    Args:
        data: The function to decorate, or the value to record.
        purpose: ``"input"`` (something the app fetched or received), ``"output"`` (something
            it produced) or ``"state"`` (something it reached); outputs and states are what
            evaluators score. ``"entry"`` (pixie-qa's word for what reached the app through
            its entry point: the user's message, the request body) is recorded as an input
            but never replaced by a served one, since the run passes it in as an argument.
        name: The value's name (value hook), or the span's name (decorator).
        **options: ``description`` (a human-readable note kept with the value or on the
            span), ``kind`` (the OpenInference span kind of a decorated function, decorator
            only) and ``many`` (value hook only: collect every value recorded under
            ``name`` in a run into a list, instead of treating a second value as an error).

    Returns:
        The decorated function, a decorator, or ``data`` (or its stand-in) unchanged.

    Example:
        >>> @wrap(kind="llm")
        ... def complete(prompt: str) -> str:
        ...     return wrap("Paris", purpose="output", name="answer")
    """
    # The idle value hook, a handful of operations: a name already checked with this
    # purpose while nothing could see wrap values (see IDLE_NAMES), nothing else given.
    try:
        if name in IDLE_NAMES[purpose] and not options and not callable(data):  # type: ignore[index]
            return data
    except (KeyError, TypeError):  # no purpose (a decorator), or arguments checked below
        pass
    return _wrap(data, purpose, name, options)


def _wrap(data: Any, purpose: object, name: object, options: dict[str, Any]) -> Any:
    """:func:`wrap` past its idle value hook: the decorator, checks, and recording."""
    description, kind, many = _options(options)
    if purpose is None:
        if name is not None and not isinstance(name, str):
            raise TypeError(
                f"wrap(name=...) takes the span's name as a string, got {safe_repr(name)}"
            )
        if kind is not None:
            _check_kind(kind)
        if many:
            raise TypeError("many= applies to wrap(value, purpose=..., name=...), not to @wrap")
        if data is _MISSING:
            return functools.partial(_decorate, name=name, kind=kind, description=description)
        if callable(data):
            return _decorate(data, name=name, kind=kind, description=description)
        raise TypeError(
            f"wrap({type_name(data)}) needs purpose= and name= to record a value, e.g. "
            "wrap(answer, purpose='output', name='answer'); to trace a function use @wrap"
        )
    if not _is_purpose(purpose) or not isinstance(name, str) or not name or kind is not None:
        _reject_value_call(purpose, name, kind)
    if data is _MISSING:
        raise TypeError("wrap(purpose=..., name=...) needs the value to record as its argument")
    injectable = purpose == "input"
    recorded: Purpose = "input" if purpose == "entry" else purpose
    if callable(data) and not isinstance(data, type):
        return _wrap_callable(data, recorded, name, description, many, injectable)
    if not _context.armed:
        remember_idle(name, purpose)  # the purpose as given: what the idle hook looks up
        return data
    scope = current_scope()
    if scope is not None and injectable and scope.injected_inputs() is not None:
        data = scope.input_value(name)
    rt = _config.RUNTIME
    if (scope is None or not scope.chain) and (rt is None or not rt.spans_leave_process):
        return data  # nobody records it: no capture, and spans stay in the process
    _record_value(data, recorded, name, description, many, scope)
    return data


def _options(options: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """``description``, ``kind`` and ``many`` from the keyword options of :func:`wrap`.

    They are taken as ``**options`` rather than as keyword parameters with defaults: Python
    fills each missing default on every call, which the idle value hook cannot afford.
    """
    if not options:
        return None, None, False
    unknown = options.keys() - _OPTIONS
    if unknown:
        raise TypeError(
            f"wrap() got an unexpected keyword argument {min(unknown)!r}; it takes purpose=, "
            "name=, description=, kind= (decorator) and many= (value hook)"
        )
    many = options.get("many", False)
    if not isinstance(many, bool):
        raise TypeError(f"wrap(many=...) must be True or False, got {safe_repr(many)[:60]}")
    return options.get("description"), options.get("kind"), many


def _is_purpose(purpose: object) -> TypeGuard[Purpose | Literal["entry"]]:
    return isinstance(purpose, str) and purpose in _PURPOSES


def _reject_value_call(purpose: object, name: object, kind: object) -> NoReturn:
    """Raise the error that explains what is wrong with a ``wrap(value, ...)`` call."""
    if not _is_purpose(purpose):
        raise ValueError(
            f"purpose must be 'input', 'output', 'state' or 'entry', got {safe_repr(purpose)}"
        )
    if not isinstance(name, str) or not name:
        raise ValueError(
            "wrap(value, purpose=...) needs a non-empty name=, e.g. name='answer'; got "
            f"{safe_repr(name)}"
        )
    raise TypeError("kind= applies to @wrap on functions, not to wrap(value, purpose=...)")


def _record_value(
    data: Any,
    purpose: Purpose,
    name: str,
    description: str | None,
    many: bool,
    scope: RunScope | None,
) -> None:
    rt = _config.RUNTIME or _config.runtime()
    if rt.settings.disabled:
        return
    try:
        span = otel_trace.get_current_span()
        chain = scope.chain if scope is not None else ()  # empty once every capture closed
        listeners = LISTENERS.current
        kept = bool(chain or listeners)
        # The span event only for a span someone will see: not for one whose capture has
        # closed (a task that outlived its capture_traces() block), when spans stay here.
        recording = span.is_recording() and (
            rt.spans_leave_process or rt.processor.delivers(span.get_span_context())
        )
        if not kept and not recording:
            return
        value: Any = None
        if kept:  # captures and handlers keep the whole converted value
            value = rt.codec.to_jsonable(data)
            span_context = span.get_span_context()
            record = WrapRecord(
                name=name,
                purpose=purpose,
                value=value,
                description=description,
                many=many,
                span_id=span_context.span_id if span_context.is_valid else None,
                trace_id=span_context.trace_id if span_context.is_valid else None,
                timestamp_ns=time.time_ns(),
            )
            for sink in chain:
                sink.collect_value(record)
            for listener in listeners:
                listener.on_value(record)
        if recording:
            attributes: dict[str, Any] = {conv.WRAP_NAME: name, conv.WRAP_PURPOSE: purpose}
            if rt.settings.capture_content:
                attributes[conv.WRAP_VALUE] = (
                    rt.codec.encode_converted(value) if kept else rt.codec.encode_text(data)
                )
            if description is not None:
                attributes[conv.WRAP_DESCRIPTION] = description
            if many:
                attributes[conv.WRAP_MANY] = True
            span.add_event(conv.WRAP_EVENT, attributes)
    except Exception as exc:  # recording never breaks the app
        _warn_once(f"value:{name}", f"could not record wrap value {name!r}", exc)


def _wrap_callable(
    fn: Callable[..., Any],
    purpose: Purpose,
    name: str,
    description: str | None,
    many: bool,
    injectable: bool,
) -> Callable[..., Any]:
    def injected(scope: RunScope | None) -> tuple[bool, Any]:
        if injectable and scope is not None and scope.injected_inputs() is not None:
            return True, scope.input_value(name)
        return False, None

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def record_async(*args: Any, **kwargs: Any) -> Any:
            scope = current_scope()
            hit, result = injected(scope)
            if not hit:
                result = await fn(*args, **kwargs)
            _record_value(result, purpose, name, description, many, scope)
            return result

        return record_async

    @functools.wraps(fn)
    def record_sync(*args: Any, **kwargs: Any) -> Any:
        scope = current_scope()
        hit, result = injected(scope)
        if not hit:
            result = fn(*args, **kwargs)
        _record_value(result, purpose, name, description, many, scope)
        return result

    return record_sync


# The decorator ---------------------------------------------------------------------------


def _function_name(fn: Callable[..., Any]) -> str:
    """``fn.__name__``, or its type's name for callables without a usable one."""
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name else type_name(fn)


def _check_kind(kind: str) -> str:
    if not isinstance(kind, str) or kind.lower() not in SPAN_KINDS:
        known = ", ".join(sorted(SPAN_KINDS))
        raise ValueError(f"unknown span kind {safe_repr(kind)}; use one of: {known}")
    return kind.upper()


class _Binder:
    """Turns call arguments into the recorded input: ``{parameter: value}``."""

    __slots__ = (
        "_defaults",
        "_drops",
        "_fast",
        "_keys",
        "_keyword_defaults",
        "_keyword_values",
        "_names",
        "_plain_under",
        "_positional_defaults",
        "_required",
        "_signature",
    )

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            self._signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None
        params = list(self._signature.parameters.values()) if self._signature else []
        drop_first = bool(params) and params[0].name in ("self", "cls")
        kinds = {p.kind for p in params}
        self._fast = self._signature is not None and not (
            kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY}
        )
        positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        self._names = tuple(p.name for p in positional)
        # Aligned with _names: a positional parameter's default (None when it has none, past
        # _required, where every parameter has one).
        self._positional_defaults = tuple(
            None if p.default is inspect.Parameter.empty else p.default for p in positional
        )
        self._required = sum(1 for p in positional if p.default is inspect.Parameter.empty)
        self._keyword_defaults = {
            p.name: p.default
            for p in params
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
        }
        self._defaults = tuple(
            (p.name, p.default)
            for p in params
            if p.default is not inspect.Parameter.empty and p.kind is not p.VAR_KEYWORD
        )
        # The keys of what a call without keyword arguments binds to (see encode).
        self._keys = frozenset(p.name for p in params if p.kind is not p.VAR_KEYWORD)
        # The last codec asked, and whether it found those keys plain (one tuple, replaced
        # whole, so that threads with different codecs never mix the two).
        self._plain_under: tuple[Codec, bool, tuple[str, ...] | None] | None = None
        self._keyword_values = tuple(self._keyword_defaults.values())
        self._drops = drop_first and bool(self._names)
        """Whether bind() leaves out the first positional parameter (``self`` or ``cls``)."""

    def encode(self, codec: Codec, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
        """The JSON text of :meth:`bind`'s input, by ``codec``.

        A call with no keyword arguments binds to the parameters' names only; once ``codec``
        has found those plain (see :meth:`Codec.plain_keys`), they are not looked at again.
        """
        count = len(args)
        if kwargs or not self._fast or count > len(self._names):
            return codec.encode_text(self.bind(args, kwargs))
        checked = self._plain_under
        if checked is None or checked[0] is not codec:
            checked = self._plain_under = (codec, *self._prefixes(codec))
        _, plain, prefixes = checked
        if prefixes is not None and count >= self._required:
            # The values bind() would bind, in its order, without the dict.
            values = args + self._positional_defaults[count:] + self._keyword_values
            text = codec.encode_fields(prefixes, values[1:] if self._drops else values)
            if text is not None:
                return text
        bound = self.bind(args, kwargs)
        return codec.encode_plain_keyed(bound) if plain else codec.encode_text(bound)

    def _prefixes(self, codec: Codec) -> tuple[bool, tuple[str, ...] | None]:
        """Whether ``codec`` finds the keys plain, and its field prefixes of the bound keys."""
        if not codec.plain_keys(self._keys):
            return False, None
        names = self._names + tuple(self._keyword_defaults)
        return True, codec.field_prefixes(names[1:] if self._drops else names)

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        count = len(args)
        if self._fast and count <= len(self._names):
            if not kwargs and count >= self._required:
                # The common call: positional arguments, defaults for the rest.
                bound = dict(
                    zip(self._names, args + self._positional_defaults[count:], strict=True)
                )
                if self._keyword_defaults:
                    bound.update(self._keyword_defaults)
            else:
                bound = dict(zip(self._names, args, strict=False))
                bound.update(kwargs)
                for param, default in self._defaults:
                    if param not in bound:
                        bound[param] = default
        elif self._signature is not None:
            try:
                ba = self._signature.bind(*args, **kwargs)
            except TypeError:
                return {"args": list(args), "kwargs": dict(kwargs)}
            ba.apply_defaults()
            bound = dict(ba.arguments)
        else:
            return {"args": list(args), "kwargs": dict(kwargs)}
        if self._drops:
            bound.pop(self._names[0], None)
        return bound


def _keep_private(rt: _config.Runtime, span: Span, key: str, value: Any) -> None:
    """With content capture off: give ``value`` to the open captures only, never to the span.

    Evaluation in the same process still sees the inputs and outputs of decorated calls, while
    nothing leaves the process on the span.
    """
    scope = current_scope()
    if scope is None or not scope.chain:
        return
    try:
        converted = rt.codec.to_jsonable(value)
    except Exception as exc:  # recording never breaks the app
        _warn_once(f"private:{key}", f"could not record a decorated call's {key}", exc)
        return
    span_id = span.get_span_context().span_id
    for sink in scope.chain:
        sink.collect_content(span_id, key, converted)


# Who sees a span started here and now (see _audience).
_NOBODY: Final = 0
_COUNTED: Final = 1
_RECORDED: Final = 2


def _audience(rt: _config.Runtime) -> int:
    """Who sees a span started here and now: ``_NOBODY``, ``_COUNTED`` or ``_RECORDED``.

    ``_RECORDED``: its content reaches someone, because spans leave the process (exporters,
    handlers, the app's own provider), or a capture is current, or no run scope is current
    but the current span's trace was started inside a capture (a thread that carried only
    the OpenTelemetry context), which the scope processor files under that capture.

    ``_COUNTED``: a capture is open elsewhere, so the scope processor counts the span as
    unattributed (a thread started without the context), but nobody receives it: the span
    is started without its input and output being encoded.

    ``_NOBODY``: the span would reach no processor that does anything with it, so none is
    started at all and a decorated call costs about what a call under a no-op tracer does,
    whatever its arguments.
    """
    if rt.spans_leave_process:
        return _RECORDED
    scope = current_scope()
    if scope is not None:
        if scope.handler is not None or scope.open_capture() is not None:
            return _RECORDED
        return _NOBODY
    processor = rt.processor
    if not processor.capturing:
        return _NOBODY
    if processor.captures_trace(otel_trace.get_current_span().get_span_context().trace_id):
        return _RECORDED
    return _COUNTED


def _record_failure(span: Span, codec: Codec, exc: BaseException) -> None:
    """Set ``span``'s status to ERROR and add the ``exception`` event; never raises.

    Written here rather than with ``span.record_exception``, which calls ``str(exc)`` (an
    app's exception may raise there) and records the message unredacted. The event keeps the
    standard attributes: ``exception.type``, ``exception.message``, ``exception.stacktrace``.
    """
    try:
        if not span.is_recording():
            return
        message = codec.redact_text(exception_message(exc))
        span.set_status(Status(StatusCode.ERROR, f"{type_name(exc)}: {message}"))
        span.add_event(
            conv.EXCEPTION_EVENT,
            {
                conv.EXCEPTION_TYPE: _exception_type(exc),
                conv.EXCEPTION_MESSAGE: message,
                conv.EXCEPTION_STACKTRACE: codec.redact_text(_stacktrace(exc)),
            },
        )
    except Exception as error:  # recording never breaks the app
        _warn_once("failure", "could not record an exception on a span", error)


def _exception_type(exc: BaseException) -> str:
    """``module.QualName`` of the exception's class (builtins without a module), as OTel does."""
    kind = type(exc)
    qualname = getattr(kind, "__qualname__", None)
    if not isinstance(qualname, str):
        return type_name(exc)
    module = getattr(kind, "__module__", None)
    return f"{module}.{qualname}" if isinstance(module, str) and module != "builtins" else qualname


def _stacktrace(exc: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(exc))
    except Exception:  # a hostile exception can break the formatting itself
        return exception_text(exc)


def _finish(span: Span, attributes: Mapping[str, Any], strings: bool = False) -> None:
    """Put ``attributes`` on ``span`` and end it; a failing span processor never reaches the app.

    The attributes go on in one call as the span ends, not when it is created:
    OpenTelemetry checks attributes given at creation twice (for the sampler, then for the
    span), about a tenth of a decorated call.

    Args:
        span: The span to finish.
        attributes: Its attributes.
        strings: Whether every value of ``attributes`` is stored as it is given (a ``str``,
            ``bool``, ``int`` or ``float``; see :func:`_put_strings`).
    """
    try:
        if not (strings and _put_strings(span, attributes)):
            span.set_attributes(attributes)
    except Exception as exc:  # recording never breaks the app
        _warn_once("attributes", "could not put a decorated call's attributes on its span", exc)
    try:
        span.end()
    except Exception as exc:  # recording never breaks the app
        _warn_once("end", "a span processor failed while a span ended", exc)


def _attribute_store_known() -> bool:
    """Whether the SDK's span attributes are kept as :func:`_put_strings` expects."""
    probe = BoundedAttributes(maxlen=1, immutable=False)
    layout = ("_dict", "_lock", "maxlen", "max_value_len")
    return all(hasattr(probe, name) for name in layout) and type(probe._dict) is dict


_ATTRIBUTE_STORE_KNOWN: Final = _attribute_store_known()

_STORED_AS_GIVEN: Final = frozenset({str, bool, int, float})
"""Attribute value types the SDK stores unchanged (a ``str`` when no length limit is set)."""


def _put_strings(span: Span, attributes: Mapping[str, Any]) -> bool:
    """Put plain ``attributes`` straight into an SDK span's attribute store; whether it could.

    ``Span.set_attributes`` checks the mapping and each value (abstract-class ``isinstance``
    calls, a lock per value): a fifth of a captured decorated call (the captured ``@wrap``
    figure of bench/README.md), and of the runner's root span (bench_runner.py's c=50
    figure, bench/README.md). A ``bool``, ``int`` or ``float`` needs none of it, nor does a
    ``str`` when no length limit is set, so on a recording span of the OpenTelemetry SDK with
    no attributes yet, no value length limit and room for them all, they are stored as
    ``set_attributes`` would store them.
    Anything else (another span class or SDK layout, limits, attributes the app put on the
    span, an ended span) is left to ``set_attributes``.
    """
    store = getattr(span, "_attributes", None)
    if (
        not _ATTRIBUTE_STORE_KNOWN
        or type(store) is not BoundedAttributes
        or store.max_value_len is not None
        or (store.maxlen is not None and store.maxlen < len(attributes))
        or not span.is_recording()
    ):
        return False
    with store._lock:
        if store._dict:
            return False
        store._dict.update(attributes)
    return True


class _FixedInput:
    """A binder that records one given value as the input (for spans the runner opens)."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        return self._value

    def encode(self, codec: Codec, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
        return codec.encode_text(self._value)


def start_span_call(
    span_name: str, kind: str, input_value: Any, attributes: Mapping[str, Any] | None = None
) -> _SpanCall:
    """Start a span recording ``input_value`` as its input; the caller ends it."""
    return _SpanCall(
        span_name, _check_kind(kind), _FixedInput(input_value), (), {}, attributes, run=True
    )


class _SpanCall:
    """One call of a decorated function: its span, input and output recording.

    The attributes are gathered here and go on the span in one call when it ends (see
    :func:`_finish`).
    """

    __slots__ = (
        "_attributes",
        "_codec",
        "_content",
        "_private",
        "_rt",
        "_strings",
        "keeps_output",
        "live",
        "span",
        "token",
    )

    def __init__(
        self,
        span_name: str,
        kind: str,
        binder: _Binder | _FixedInput,
        args: Any,
        kwargs: Any,
        extra: Mapping[str, Any] | None = None,
        *,
        run: bool = False,
    ) -> None:
        rt = _config.RUNTIME or _config.runtime()
        self._rt = rt
        self._codec = rt.codec
        audience = _audience(rt)
        recorded = audience == _RECORDED
        self._private = recorded and not rt.settings.capture_content
        self.token: object | None = None
        self.live = audience != _NOBODY
        """Whether a span was started (none is when nobody would see it)."""
        self.keeps_output = recorded
        """Whether the output is recorded (generators then keep their items)."""
        if not self.live:
            self.span: Span = INVALID_SPAN
            self._content = False
            return
        self._attributes: dict[str, Any] = {conv.SPAN_KIND: kind}
        # Values of any type are checked by the SDK (see _finish); the runner's root span
        # carries a bool beside the strings (bench_runner.py's c=50 figure, bench/README.md).
        self._strings = not extra or _STORED_AS_GIVEN.issuperset(map(type, extra.values()))
        if extra:
            self._attributes.update(extra)
        self.span = rt.run_spans.start(span_name) if run else rt.tracer.start_span(span_name)
        self._content = recorded and rt.settings.capture_content and self.span.is_recording()
        if self._content:
            try:
                self._attributes[conv.INPUT_VALUE] = binder.encode(self._codec, args, kwargs)
                self._attributes[conv.INPUT_MIME_TYPE] = conv.MIME_JSON
            except Exception as exc:  # recording never breaks the app
                _warn_once(f"input:{span_name}", f"could not record the input of {span_name}", exc)
        elif self._private:
            _keep_private(rt, self.span, "input", binder.bind(args, kwargs))

    def attach(self) -> None:
        if self.live:
            self.token = otel_context.attach(otel_trace.set_span_in_context(self.span))

    def detach(self) -> None:
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
            self.token = None

    def output(self, value: Any) -> None:
        if self._private:
            _keep_private(self._rt, self.span, "output", value)
        elif self._content:
            try:
                self._attributes[conv.OUTPUT_VALUE] = self._codec.encode_text(value)
                self._attributes[conv.OUTPUT_MIME_TYPE] = conv.MIME_JSON
            except Exception as exc:  # recording never breaks the app
                _warn_once("output", "could not record an output", exc)

    def fail(self, exc: BaseException) -> None:
        _record_failure(self.span, self._codec, exc)

    def end(self) -> None:
        if self.live:
            _finish(self.span, self._attributes, self._strings)


class _Stream:
    """A decorated generator (sync or async) being relayed: what it yielded, how it ended.

    The generator wrappers differ only where one awaits and the other does not; everything
    else is here: what the consumer sends or throws in next, which items are kept, the
    output, and, as the ``with`` block around the relay ends, the failure (closing the
    generator early is none) and the end of the span.
    """

    __slots__ = ("call", "dropped", "items", "limit", "sent", "thrown")

    def __init__(self, call: _SpanCall, limit: int) -> None:
        self.call = call
        self.items: list[Any] = []
        """The items yielded so far, up to ``limit``."""
        self.dropped = 0
        """How many yielded items were not kept."""
        self.limit = limit if call.keeps_output else 0
        self.sent: Any = None
        """What the consumer sent in with the last ``send``/``asend``."""
        self.thrown: BaseException | None = None
        """What the consumer threw in with ``throw``/``athrow``, to pass on next."""

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if exc is not None and not isinstance(exc, GeneratorExit):
            self.call.fail(exc)
        self.call.end()

    def keep(self, item: Any) -> None:
        """Note an item the generator yielded."""
        self.thrown = None
        if len(self.items) < self.limit:
            self.items.append(item)
        else:
            self.dropped += 1

    def finish(self, returned: Any = None) -> None:
        """Record the output: the items, the count of dropped ones, a returned value."""
        output: Any = self.items
        if self.dropped:
            output = {"items": self.items, "items_dropped": self.dropped}
        if returned is not None:
            output = {"items": output, "return": returned}
        self.call.output(output)


def _decorate(fn: F, *, name: str | None, kind: str | None, description: str | None = None) -> F:
    if isinstance(fn, classmethod | staticmethod):
        inner = _decorate(fn.__func__, name=name, kind=kind, description=description)
        return cast(F, type(fn)(inner))
    if not callable(fn):
        raise TypeError(f"@wrap decorates functions, got {type_name(fn)}")
    if _config.settings().disabled:
        return fn
    span_kind = _check_kind(kind or "chain")
    span_name = name or _function_name(fn)
    binder = _Binder(fn)
    item_limit = _config.settings().max_generator_items

    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def async_gen_wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
            call = _SpanCall(span_name, span_kind, binder, args, kwargs)
            with _Stream(call, item_limit) as stream:
                inner = fn(*args, **kwargs)
                while True:
                    call.attach()
                    try:
                        if stream.thrown is not None:
                            item = await inner.athrow(stream.thrown)
                        else:
                            item = await inner.asend(stream.sent)
                    except StopAsyncIteration:
                        stream.finish()
                        return
                    finally:
                        call.detach()
                    stream.keep(item)
                    try:
                        stream.sent = yield item
                    except GeneratorExit:
                        stream.finish()
                        await inner.aclose()
                        raise
                    except BaseException as exc:
                        stream.thrown = exc

        return cast(F, async_gen_wrapper)

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            if _context.spans_unseen:
                return (yield from fn(*args, **kwargs))
            call = _SpanCall(span_name, span_kind, binder, args, kwargs)
            if not call.live:
                return (yield from fn(*args, **kwargs))
            with _Stream(call, item_limit) as stream:
                inner = fn(*args, **kwargs)
                while True:
                    call.attach()
                    try:
                        if stream.thrown is not None:
                            item = inner.throw(stream.thrown)
                        else:
                            item = inner.send(stream.sent)
                    except StopIteration as stop:
                        stream.finish(stop.value)
                        return stop.value
                    finally:
                        call.detach()
                    stream.keep(item)
                    try:
                        stream.sent = yield item
                    except GeneratorExit:
                        stream.finish()
                        inner.close()
                        raise
                    except BaseException as exc:
                        stream.thrown = exc

        return cast(F, gen_wrapper)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if _context.spans_unseen:
                return await fn(*args, **kwargs)
            call = _SpanCall(span_name, span_kind, binder, args, kwargs)
            if not call.live:
                return await fn(*args, **kwargs)
            call.attach()
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                call.fail(exc)
                call.detach()
                call.end()
                raise
            call.detach()
            call.output(result)
            call.end()
            return result

        return cast(F, passthrough(fn, async_wrapper))

    @functools.wraps(fn)
    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        # The most common case, written out in full: it runs on every call of the app.
        if _context.spans_unseen:  # see passthrough, which calls this only when it is not
            return fn(*args, **kwargs)
        rt = _config.RUNTIME or _config.runtime()
        audience = _audience(rt)
        if audience == _NOBODY:
            return fn(*args, **kwargs)
        span = rt.tracer.start_span(span_name)
        attributes: dict[str, Any] = {conv.SPAN_KIND: span_kind}
        # Nothing is encoded for a span whose content reaches nobody.
        recorded = audience == _RECORDED
        content = recorded and rt.settings.capture_content and span.is_recording()
        if content:
            try:
                attributes[conv.INPUT_VALUE] = binder.encode(rt.codec, args, kwargs)
                attributes[conv.INPUT_MIME_TYPE] = conv.MIME_JSON
            except Exception as exc:  # recording never breaks the app
                _warn_once(f"input:{span_name}", f"could not record the input of {span_name}", exc)
        elif recorded and not rt.settings.capture_content:
            _keep_private(rt, span, "input", binder.bind(args, kwargs))
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)
            _record_failure(span, rt.codec, exc)
            _finish(span, attributes, strings=True)
            raise
        otel_context.detach(token)
        if content:
            try:
                attributes[conv.OUTPUT_VALUE] = rt.codec.encode_text(result)
                attributes[conv.OUTPUT_MIME_TYPE] = conv.MIME_JSON
            except Exception as exc:  # recording never breaks the app
                _warn_once(
                    f"output:{span_name}", f"could not record the output of {span_name}", exc
                )
        elif recorded and not rt.settings.capture_content:
            _keep_private(rt, span, "output", result)
        _finish(span, attributes, strings=True)
        return result

    return cast(F, passthrough(fn, sync_wrapper))
