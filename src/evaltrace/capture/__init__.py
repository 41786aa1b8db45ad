"""Capture: ``wrap``, run scopes, the span processor, configuration, export delivery.

This floor makes spans and records; reading them (views, trees, in-memory captures and
handlers) is :mod:`evaltrace.trace`'s work.
"""

from evaltrace.capture.config import Settings, flush, init, shutdown
from evaltrace.capture.context import (
    ContextThreadPoolExecutor,
    eval_inputs,
    outside_captures,
    propagate,
)
from evaltrace.capture.delivery import ExportStats, HandlerStats, export_stats
from evaltrace.capture.values import WrapRecord
from evaltrace.capture.wrap import wrap

__all__ = [
    "ContextThreadPoolExecutor",
    "ExportStats",
    "HandlerStats",
    "Settings",
    "WrapRecord",
    "eval_inputs",
    "export_stats",
    "flush",
    "init",
    "outside_captures",
    "propagate",
    "shutdown",
    "wrap",
]
