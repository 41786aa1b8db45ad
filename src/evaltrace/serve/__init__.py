"""``evaltrace serve``: an OTLP gateway that forwards every span and scores a sample of traces.

Apps in any language export to it over OTLP/HTTP (or OTLP/gRPC, with the ``[grpc]`` extra:
:mod:`~evaltrace.serve.grpc_intake`) as to any collector; it forwards every request's spans
unchanged to the collector behind it (:mod:`~evaltrace.serve.forward`), assembles them into
traces (:mod:`~evaltrace.serve.assembly`), chooses some
(:mod:`~evaltrace.serve.sampling`), and scores those through the one engine in a thread of
its own (:mod:`~evaltrace.serve.scoring`): the scores go to the collector as
``gen_ai.evaluation.result`` spans in the traces they score, and to a results stream that
``evaltrace report`` reads. Everything it holds is bounded, and it says what it counts at
``/metrics`` (:mod:`~evaltrace.serve.metrics`).

aiohttp (``pip install 'evaltrace[serve]'``) is needed; without it, importing this package
raises :class:`~evaltrace.errors.MissingExtraError`, which says how to install it.
"""

from evaltrace.errors import MissingExtraError

try:
    import aiohttp  # noqa: F401  (every module below needs it)
except ImportError as missing:
    raise MissingExtraError("evaltrace serve", "aiohttp", "serve") from missing

from evaltrace.serve.config import (
    Budget,
    GatewayConfig,
    Online,
    OnlineEvaluators,
    SamplingRule,
    SamplingSettings,
    forward_target,
    load_online,
    parse_listen,
)
from evaltrace.serve.gateway import Gateway, run_gateway
from evaltrace.serve.logs import setup_logging
from evaltrace.serve.scoring import Limiter

__all__ = [
    "Budget",
    "Gateway",
    "GatewayConfig",
    "Limiter",
    "Online",
    "OnlineEvaluators",
    "SamplingRule",
    "SamplingSettings",
    "forward_target",
    "load_online",
    "parse_listen",
    "run_gateway",
    "setup_logging",
]
