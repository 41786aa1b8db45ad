"""``evaltrace serve`` as apps meet it, and as it meets faults.

The client tests run ``evaltrace serve`` as a real subprocess on a free loopback port (one,
shared by the tests that do not disturb each other), fed by the OpenTelemetry SDK's own
OTLP/HTTP exporter or by raw HTTP, forwarding to the in-process OTLP receiver, stopped by the
test by its process id. The fault tests run the same gateway in a thread of this process
(:class:`GatewayThread`), which spares them a process start each.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from google.rpc.error_details_pb2 import RetryInfo

from evaltrace.errors import ServeError
from evaltrace.judges import configure_judge
from evaltrace.serve import Gateway, GatewayConfig, forward_target, load_online
from evaltrace.serve.grpc_intake import SERVICE
from evaltrace.testing import OTLPReceiver
from evaltrace.testing.fake_judge import FakeJudgeServer, serve_fake_judge
from serve_process import (
    CHECKS,
    SLOW_CHECKS,
    GatewayThread,
    ServeProcess,
    app_spans,
    export_request,
    free_port,
    post,
    provider,
)

QUIET = ("--quiet-period", "0.2")
JUDGED = """
from evaltrace.judges import create_llm_evaluator

graded = create_llm_evaluator(
    "graded", "Right?\\n{eval_output}", choice_scores={"A": 1.0, "B": 0.0}
)
"""
STUCK = """
import time
from pathlib import Path
from evaltrace.evals import Evaluation


async def holds_the_loop(evaluable):
    Path(__file__).with_name("held").touch()
    time.sleep(3.0)  # an async evaluator that blocks: the scoring thread's loop is held
    return Evaluation(score=1.0)
"""
TOKEN = "s3cret"


def _write_checks(folder: Path) -> Path:
    (folder / "checks.py").write_text(CHECKS)
    (folder / "slow.py").write_text(SLOW_CHECKS)
    (folder / "online.json").write_text('{"evaluators": ["checks.py:grounded"], "sample": 1}')
    return folder


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    started = OTLPReceiver().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudgeServer]:
    yield from serve_fake_judge()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _write_checks(tmp_path)


@pytest.fixture(scope="module")
def downstream() -> Iterator[OTLPReceiver]:
    started = OTLPReceiver().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def grpc_port() -> int:
    """Where the shared ``evaltrace serve`` takes OTLP/gRPC."""
    return free_port()


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, downstream: OTLPReceiver, grpc_port: int
) -> Iterator[ServeProcess]:
    """One ``evaltrace serve`` for the client tests: forwarding, scoring, a token, limits,
    OTLP/HTTP and OTLP/gRPC."""
    place = _write_checks(tmp_path_factory.mktemp("serve"))
    (place / "token").write_text(TOKEN + "\n")
    args = (
        *("--forward", downstream.endpoint, "--evaluators", "online.json"),
        *("--grpc-listen", f"127.0.0.1:{grpc_port}"),
        *("--results", "r.jsonl", "--auth-token-file", "token", "--request-timeout", "1"),
        *("--max-request-bytes", "100000", "--log-format", "json", *QUIET),
    )
    with ServeProcess(place, *args) as serve:
        yield serve


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _app(receiver: OTLPReceiver, *trace_ids: str) -> list[tuple[str, str]]:
    return [
        (span.trace_id, span.name)
        for span in receiver.spans
        if span.scope != "evaltrace" and (not trace_ids or span.trace_id in trace_ids)
    ]


def _gateway(
    folder: Path,
    forward: str | None,
    evaluators: str | None = None,
    *,
    forward_timeout: float = 10.0,
    **bounds: object,
) -> GatewayThread:
    target = forward_target(forward, env={}) if forward is not None else None
    config = GatewayConfig(
        forward=replace(target, timeout_seconds=forward_timeout) if target else None,
        online=load_online(folder / evaluators) if evaluators is not None else None,
        quiet_period=0.1,
    )
    return GatewayThread(replace(config, **bounds))  # type: ignore[arg-type]


# -- a real client, a real process ---------------------------------------------------------


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_sdk_spans_are_forwarded_unchanged_and_scores_land_on_their_traces(
    shared: ServeProcess, downstream: OTLPReceiver, grpc_port: int, protocol: str
) -> None:
    if protocol == "grpc":
        made = provider(f"127.0.0.1:{grpc_port}", token=TOKEN, grpc=True)
    else:
        made = provider(shared.traces_url, token=TOKEN)
    before = shared.metric("spans_received_total", protocol=protocol)
    paris, rome = app_spans(made, ["Paris", "Rome"])
    made.shutdown()
    assert shared.metric("spans_received_total", protocol=protocol) == before + 4
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        mine = [span for span in downstream.spans if span.trace_id in (paris, rome)]
        if len(mine) == 6:
            break
        time.sleep(0.05)
    app = [span for span in mine if span.scope == "app"]
    assert sorted((span.trace_id, span.name) for span in app) == sorted(
        [(paris, "answer"), (paris, "llm"), (rome, "answer"), (rome, "llm")]
    )
    assert {span.resource["service.name"] for span in app} == {"shop"}
    assert {span.attributes["output.value"] for span in app if span.name == "answer"} == {
        "Paris",
        "Rome",
    }
    roots = {span.trace_id: span.span_id for span in app if span.parent_span_id is None}
    scores = {}
    for span in mine:
        if span.scope == "evaltrace":
            assert span.parent_span_id == roots[span.trace_id]
            assert span.resource["service.name"] == "shop"
            ((event, attributes),) = span.events
            assert event == "gen_ai.evaluation.result"
            scores[span.trace_id] = attributes["gen_ai.evaluation.score.value"]
    assert scores == {paris: 1.0, rome: 0.0}
    lines = [json.loads(line) for line in (shared.folder / "r.jsonl").read_text().splitlines()]
    assert lines[0]["name"] == "serve"
    assert sorted(
        (line["name"], line["status"]) for line in lines[1:] if line["name"] in (paris, rome)
    ) == sorted([(paris, "SUCCESS"), (rome, "FAILED_SCORE_ZERO")])


def test_json_export_requests_are_forwarded_as_protobuf(
    shared: ServeProcess, downstream: OTLPReceiver
) -> None:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    span = {
        "traceId": trace_id,
        "spanId": "b7ad6b7169203331",
        "name": "GET /",
        "kind": 2,
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000100000000",
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "js"}}]}
    document = {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": "web"}, "spans": [span]}]}
        ]
    }
    body = json.dumps(document).encode()
    status, headers, _ = post(shared.traces_url, body, "application/json", **AUTH)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    deadline = time.monotonic() + 10
    while not _app(downstream, trace_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    (received,) = [item for item in downstream.spans if item.trace_id == trace_id][:1]
    assert (received.span_id, received.name, received.kind, received.scope) == (
        "b7ad6b7169203331",
        "GET /",
        2,
        "web",
    )
    assert received.resource == {"service.name": "js"}


def test_bad_requests_get_400_413_415_with_a_reason(shared: ServeProcess) -> None:
    url = shared.traces_url
    status, _, body = post(url, b"\xff\x00 not protobuf", **AUTH)
    assert status == 400 and b"not a protobuf ExportTraceServiceRequest" in body
    status, _, body = post(url, b"[1, 2", "application/json", **AUTH)
    assert status == 400 and b"not JSON" in body
    status, _, body = post(url, b"x" * 200_000, **AUTH)
    assert status == 413 and b"100000 bytes" in body
    bomb = gzip.compress(bytes(2_000_000))  # small on the wire, too large once inflated
    status, _, _ = post(url, bomb, **{"Content-Encoding": "gzip"}, **AUTH)
    assert status == 413
    status, _, body = post(url, b"<spans/>", "text/xml", **AUTH)
    assert status == 415 and b"application/x-protobuf" in body


def test_a_slow_client_sending_headers_byte_by_byte_is_cut_off(shared: ServeProcess) -> None:
    with socket.create_connection(("127.0.0.1", shared.port), timeout=10) as client:
        client.settimeout(0.2)
        began = time.monotonic()
        closed = False
        for byte in b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            try:
                client.sendall(bytes([byte]))
                closed = client.recv(1024) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
            if closed:
                break
        assert closed, "the server still waits for the headers after 20 s"
        assert time.monotonic() - began < 5
    assert shared.get("/healthz")[0] == 200


def test_intake_requires_the_bearer_token_when_given_one(shared: ServeProcess) -> None:
    status, headers, _ = post(shared.traces_url, export_request(1, seed=77))
    assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
    status, _, _ = post(shared.traces_url, export_request(1, seed=77), Authorization="Bearer no")
    assert status == 401
    status, _, _ = post(shared.traces_url, export_request(1, seed=77), **AUTH)
    assert status == 200


def test_health_readiness_and_metrics_are_served(shared: ServeProcess) -> None:
    assert shared.get("/healthz") == (200, "ok\n")
    assert shared.get("/readyz") == (200, "ready\n")
    status, text = shared.get("/metrics")
    assert status == 200
    for name in (
        "spans_received_total",
        "spans_forwarded_total",
        "spans_dropped_total",
        "traces_assembled_total",
        "traces_evicted_total",
        "traces_sampled_total",
        "traces_scored_total",
        "evaluation_seconds",
        "judge_calls_total",
        "judge_cache_hits_total",
        "forward_queue_bytes",
        "evaluation_queue",
        "pending_traces",
    ):
        assert f"# TYPE evaltrace_serve_{name} " in text
    events = {line.get("event") for line in shared.events()}
    assert {"listening", "forwarding", "scoring"} <= events


# -- faults, the same gateway in this process ----------------------------------------------


def test_without_forward_spans_are_only_scored_and_it_says_so(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, "evaltrace.serve"),
        _gateway(folder, None, "online.json") as serve,
    ):
        assert post(serve.traces_url, export_request(3))[0] == 200
        assert serve.wait_for("traces_scored", 3, "SUCCESS") == 3
        assert serve.metric("spans_received") == 6
    assert "spans are only scored, not forwarded" in caplog.text


def test_downstream_down_spans_are_retried_then_dropped_and_counted(folder: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with _gateway(folder, down, forward_retry_seconds=0.5) as serve:
        assert post(serve.traces_url, export_request(5))[0] == 200
        assert serve.wait_for("spans_dropped", 10, "forward_failed") == 10
        assert serve.metric("forward_retries") >= 1
        assert serve.gateway.forwarder is not None and not serve.gateway.forwarder.healthy


def test_downstream_answering_500_is_retried_until_it_takes_the_spans(
    folder: Path, receiver: OTLPReceiver
) -> None:
    receiver.fail_next(500, times=2)
    with _gateway(folder, receiver.endpoint) as serve:
        assert post(serve.traces_url, export_request(4))[0] == 200
        assert receiver.wait_for_spans(8)
        assert serve.wait_for("spans_forwarded", 8, "app") == 8
        assert serve.metric("forward_retries") == 2
    assert receiver.attempts == 3


def test_a_slow_downstream_never_slows_intake(folder: Path, receiver: OTLPReceiver) -> None:
    receiver.hang_next(times=1)
    with _gateway(folder, receiver.endpoint, forward_timeout=0.5) as serve:
        began = time.monotonic()
        for seed in range(20):
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
        assert time.monotonic() - began < 1.0
        assert receiver.wait_for_spans(40, timeout=15)
    assert len(_app(receiver)) == 40


def test_a_slow_judge_never_delays_forwarding(folder: Path, receiver: OTLPReceiver) -> None:
    (folder / "slow.json").write_text('{"evaluators": ["slow.py:slow_judge"], "sample": 1}')
    with _gateway(folder, receiver.endpoint, "slow.json", drain_timeout=0.5) as serve:
        began = time.monotonic()
        for seed in range(10):
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
        assert receiver.wait_for_spans(20, timeout=5)
        assert time.monotonic() - began < 1.5
        assert serve.metric("traces_scored", "SUCCESS") == 0


def test_a_full_evaluation_queue_drops_chosen_traces_and_counts_them(folder: Path) -> None:
    (folder / "slow.json").write_text(
        '{"evaluators": ["slow.py:slow_judge"], "sample": 1, "concurrency": 1}'
    )
    with _gateway(folder, None, "slow.json", evaluation_queue=2, drain_timeout=0.5) as serve:
        assert post(serve.traces_url, export_request(6))[0] == 200
        # one is being scored, two wait, the rest are dropped: three or four by the timing
        assert serve.wait_for("traces_not_scored", 3, "queue_full") >= 3
        assert serve.metric("traces_sampled", "rate") == 6


def test_assembly_past_its_bound_evicts_the_oldest_trace_and_counts_it(folder: Path) -> None:
    with _gateway(folder, None, "online.json", max_pending_traces=2, quiet_period=5.0) as serve:
        for seed in range(5):
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
        assert serve.wait_for("traces_evicted", 3) == 3  # assembly runs after the answer
        assert serve.gateway.assembler is not None and len(serve.gateway.assembler) == 2


def test_requests_waiting_for_assembly_past_its_bound_are_forwarded_not_assembled(
    folder: Path, receiver: OTLPReceiver
) -> None:
    (folder / "stuck.py").write_text(STUCK)
    (folder / "stuck.json").write_text('{"evaluators": ["stuck.py:holds_the_loop"], "sample": 1}')
    size = len(export_request(1))
    with _gateway(
        folder, receiver.endpoint, "stuck.json", max_pending_bytes=3 * size, drain_timeout=1
    ) as serve:
        assert post(serve.traces_url, export_request(1, seed=1))[0] == 200
        deadline = time.monotonic() + 20
        while not (folder / "held").exists():  # being scored: the loop is held for 3 s
            assert time.monotonic() < deadline
            time.sleep(0.02)
        for seed in range(2, 12):
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
        assert serve.metric("spans_not_assembled") == 2 * (10 - 3)
        assert receiver.wait_for_spans(22)
    assert len(_app(receiver)) == 22


def test_cost_budget_stops_scoring_and_forwarding_goes_on(
    folder: Path, receiver: OTLPReceiver
) -> None:
    (folder / "budget.yaml").write_text(
        "evaluators: ['checks.py:costly']\nbudget:\n  cost_per_hour: 2.0\n"
    )
    with _gateway(folder, receiver.endpoint, "budget.yaml") as serve:
        for seed in range(2):
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
        assert serve.wait_for("traces_scored", 2, "SUCCESS") == 2
        assert post(serve.traces_url, export_request(3, seed=9))[0] == 200
        assert serve.wait_for("traces_not_scored", 3, "cost_per_hour") == 3
        assert serve.gateway.scorer is not None
        assert serve.gateway.scorer.limiter.paused == "cost_per_hour"
        assert serve.metric("judge_calls") == 2
        assert receiver.wait_for_spans(10 + 2)
    assert len(_app(receiver)) == 10


def test_judge_calls_per_minute_stop_scoring_and_forwarding_goes_on(
    folder: Path, receiver: OTLPReceiver, judge_server: FakeJudgeServer
) -> None:
    (folder / "judged.py").write_text(JUDGED)
    (folder / "judged.yaml").write_text(
        "evaluators: ['judged.py:graded']\nbudget:\n  judge_calls_per_minute: 2\n"
    )
    with (
        configure_judge(
            base_url=judge_server.base_url, api_key="k", model="judge-model", max_retries=0
        ),
        _gateway(folder, receiver.endpoint, "judged.yaml") as serve,
    ):
        for seed in range(2):  # one at a time: each trace's calls are counted once scored
            assert post(serve.traces_url, export_request(1, seed=seed))[0] == 200
            assert serve.wait_for("traces_scored", seed + 1, "SUCCESS") == seed + 1
        assert serve.metric("judge_calls") == 2
        assert post(serve.traces_url, export_request(3, seed=9))[0] == 200
        assert serve.wait_for("traces_not_scored", 3, "judge_calls_per_minute") == 3
        assert serve.gateway.scorer is not None
        assert serve.gateway.scorer.limiter.paused == "judge_calls_per_minute"
        assert serve.metric("traces_scored", "SUCCESS") == 2
        assert receiver.wait_for_spans(10 + 2)
    assert len(_app(receiver)) == 10
    assert len(judge_server.requests) == 2


# -- OTLP/gRPC ---------------------------------------------------------------------------


def _grpc_export(
    address: str, body: bytes, **metadata: str
) -> tuple[grpc.StatusCode, str, dict[str, bytes]]:
    """Call ``TraceService/Export`` with ``body`` as it is: the code, details and trailers."""
    with grpc.insecure_channel(address) as channel:
        export = channel.unary_unary(f"/{SERVICE}/Export")
        try:
            export(body, timeout=10, metadata=tuple(metadata.items()))
        except grpc.RpcError as failed:
            trailers = {key: value for key, value in failed.trailing_metadata() or ()}
            return failed.code(), failed.details(), trailers
    return grpc.StatusCode.OK, "", {}


def _grpc_gateway(folder: Path, forward: str | None, **bounds: object) -> GatewayThread:
    return _gateway(folder, forward, grpc_listen=("127.0.0.1", 0), **bounds)


def _address(serve: GatewayThread) -> str:
    assert serve.gateway.grpc is not None
    return serve.gateway.grpc.address


def test_grpc_spans_are_forwarded_and_counted_by_protocol(
    folder: Path, receiver: OTLPReceiver
) -> None:
    with _grpc_gateway(folder, receiver.endpoint) as serve:
        code, _, _ = _grpc_export(_address(serve), export_request(3, seed=5))
        assert code is grpc.StatusCode.OK
        assert receiver.wait_for_spans(6)
        assert serve.metric("spans_received", "grpc") == 6
        assert serve.metric("spans_received", "http") == 0
        assert serve.metric("requests", "grpc", "OK") == 1


def test_a_grpc_body_that_is_not_an_export_request_gets_invalid_argument(
    folder: Path, receiver: OTLPReceiver
) -> None:
    with _grpc_gateway(folder, receiver.endpoint) as serve:
        code, details, _ = _grpc_export(_address(serve), b"\xff\x00 not protobuf")
        assert code is grpc.StatusCode.INVALID_ARGUMENT
        assert "not a protobuf ExportTraceServiceRequest" in details
        assert serve.metric("requests", "grpc", "INVALID_ARGUMENT") == 1
        assert serve.metric("spans_received") == 0
    assert receiver.attempts == 0


def test_a_grpc_message_over_the_size_limit_gets_resource_exhausted(folder: Path) -> None:
    with _grpc_gateway(folder, None, max_request_bytes=10_000) as serve:
        code, _, _ = _grpc_export(_address(serve), export_request(200))
        assert code is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _grpc_export(_address(serve), export_request(2))[0] is grpc.StatusCode.OK


def test_grpc_intake_requires_the_bearer_token_in_its_metadata(folder: Path) -> None:
    with _grpc_gateway(folder, None, auth_token=TOKEN) as serve:
        address = _address(serve)
        assert _grpc_export(address, export_request(1))[0] is grpc.StatusCode.UNAUTHENTICATED
        wrong = _grpc_export(address, export_request(1), authorization="Bearer no")
        assert wrong[0] is grpc.StatusCode.UNAUTHENTICATED
        right = _grpc_export(address, export_request(1), authorization=f"Bearer {TOKEN}")
        assert right[0] is grpc.StatusCode.OK
        assert serve.metric("spans_received", "grpc") == 2


def test_a_full_forward_queue_answers_grpc_unavailable_with_retry_info(folder: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with _grpc_gateway(folder, down, forward_queue_bytes=100) as serve:
        code, details, trailers = _grpc_export(_address(serve), export_request(5))
        assert code is grpc.StatusCode.UNAVAILABLE
        assert "the forward queue is full" in details
        retry = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
        assert retry.retry_delay.seconds == 1
        assert serve.metric("requests", "grpc", "UNAVAILABLE") == 1


def test_grpc_listen_on_a_taken_port_is_refused_naming_it(folder: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = GatewayConfig(grpc_listen=("127.0.0.1", port))
        with pytest.raises(ServeError, match=f"cannot listen for gRPC on 127.0.0.1:{port}"):
            asyncio.run(Gateway(replace(config, port=0)).start())


def test_without_grpcio_grpc_listen_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['grpc'] = None\n"
        "from evaltrace.cli.main import main\n"
        "sys.exit(main(['serve', '--grpc-listen', '127.0.0.1:4317']))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2, ran.stderr
    assert "pip install 'evaltrace[grpc]'" in ran.stderr and "--grpc-listen" in ran.stderr


# -- SIGTERM, a real process -----------------------------------------------------------------


def test_sigterm_under_load_forwards_or_counts_every_accepted_span(
    folder: Path, receiver: OTLPReceiver
) -> None:
    args = ("--forward", receiver.endpoint, "--evaluators", "online.json", "--log-format", "json")
    serve = ServeProcess(folder, *args, *QUIET, "--drain-timeout", "2").__enter__()
    accepted = [0]
    refused = [0]
    stop = threading.Event()

    def client(number: int) -> None:
        seed = number * 10_000
        while not stop.is_set():
            seed += 1
            try:
                status = post(serve.traces_url, export_request(5, seed=seed))[0]
            except OSError:
                return  # the gateway closed its port
            if status == 200:
                accepted[0] += 10
            else:
                refused[0] += 1

    clients = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in clients:
        thread.start()
    time.sleep(1.0)
    assert serve.stop() == 0
    stop.set()
    for thread in clients:
        thread.join()
    (summary,) = [line for line in serve.events() if line.get("event") == "stopped"]
    dropped = sum(summary["spans_dropped"].values())
    assert accepted[0] > 0
    assert summary["spans_received"] == accepted[0]
    assert summary["spans_forwarded"] + dropped == accepted[0]
    assert len(_app(receiver)) == summary["spans_forwarded"]
