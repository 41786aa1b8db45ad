"""Capture: ``wrap``, in-memory captures, handlers, configuration, delivery statistics."""

from evaltrace.capture.config import Settings, flush, init, shutdown
from evaltrace.capture.context import ContextThreadPoolExecutor, eval_inputs, propagate
from evaltrace.capture.delivery import ExportStats, HandlerStats, export_stats
from evaltrace.capture.handlers import (
    InstrumentationHandler,
    MemoryTraceHandler,
    add_handler,
    capture_traces,
    handler_stats,
    remove_handler,
)
from evaltrace.capture.values import WrapRecord
from evaltrace.capture.wrap import wrap

__all__ = [
    "ContextThreadPoolExecutor",
    "ExportStats",
    "HandlerStats",
    "InstrumentationHandler",
    "MemoryTraceHandler",
    "Settings",
    "WrapRecord",
    "add_handler",
    "capture_traces",
    "eval_inputs",
    "export_stats",
    "flush",
    "handler_stats",
    "init",
    "propagate",
    "remove_handler",
    "shutdown",
    "wrap",
]
