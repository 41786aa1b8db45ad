"""Capture: ``wrap``, in-memory captures, handlers, configuration."""

from evaltrace.capture.config import Settings, flush, init, shutdown
from evaltrace.capture.context import ContextThreadPoolExecutor, eval_inputs, propagate
from evaltrace.capture.handlers import (
    InstrumentationHandler,
    MemoryTraceHandler,
    add_handler,
    capture_traces,
    remove_handler,
)
from evaltrace.capture.values import WrapRecord
from evaltrace.capture.wrap import wrap

__all__ = [
    "ContextThreadPoolExecutor",
    "InstrumentationHandler",
    "MemoryTraceHandler",
    "Settings",
    "WrapRecord",
    "add_handler",
    "capture_traces",
    "eval_inputs",
    "flush",
    "init",
    "propagate",
    "remove_handler",
    "shutdown",
    "wrap",
]
