"""The parts of ``evaltrace serve`` that need no server: its evaluators file, the forward
target, sampling, the budget, and its results stream read back by ``evaltrace report``."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from evaltrace.cli.main import evaltrace
from evaltrace.datasets import DatasetError
from evaltrace.errors import ServeError
from evaltrace.evals import Evaluation
from evaltrace.results import EntryResult, ResultsStream, RunResult, read_windows
from evaltrace.serve import Limiter, SamplingRule, forward_target, load_online, parse_listen
from evaltrace.serve.assembly import Assembler
from evaltrace.serve.metrics import Metrics
from evaltrace.serve.sampling import Sampler

CHECKS = (
    "from evaltrace.evals import Evaluation\n\ndef grounded(e):\n    return Evaluation(score=1.0)\n"
)


# -- the evaluators file -------------------------------------------------------------------


def test_the_smallest_evaluators_file_names_an_evaluator_and_a_rate(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "online.json").write_text('{"evaluators": ["checks.py:grounded"], "sample": 0.05}')
    online = load_online(tmp_path / "online.json")
    assert [item.name for item in online.evaluators] == ["grounded"]
    assert online.settings.sample == 0.05
    assert online.settings.sampling.errors is True


def test_evaluators_file_problems_name_the_file_the_line_and_the_field(tmp_path: Path) -> None:
    (tmp_path / "online.yaml").write_text(
        "evaluators:\n  - ExactMatch\nsample: 0.1\nbudget:\n  cost_per_houre: 5\n"
        "sampling:\n  rules:\n    - root_name: checkout\n      sample: 2\n"
    )
    with pytest.raises(DatasetError) as raised:
        load_online(tmp_path / "online.yaml")
    text = str(raised.value)
    assert "online.yaml:5:19: budget.cost_per_houre: unknown key 'cost_per_houre'" in text
    assert "did you mean 'cost_per_hour'" in text
    assert "online.yaml:9:15: sampling.rules[0].sample" in text


def test_evaluators_file_problems_are_said_of_an_evaluators_file_not_a_dataset(
    tmp_path: Path,
) -> None:
    (tmp_path / "online.yaml").write_text("evaluators: [ExactMatch]\nsample: 2\n")
    with pytest.raises(DatasetError) as raised:
        load_online(tmp_path / "online.yaml")
    assert str(raised.value).startswith("1 problem in evaluators file ")
    assert "dataset" not in str(raised.value)


def test_an_evaluator_that_does_not_resolve_is_named_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "online.yaml").write_text("evaluators:\n  - ExactMatch\n  - ExactMatsh\n")
    with pytest.raises(DatasetError) as raised:
        load_online(tmp_path / "online.yaml")
    assert "evaluators[1]" in str(raised.value) and "ExactMatch" in str(raised.value)


def test_serve_with_a_bad_evaluators_file_exits_2_naming_the_problem(tmp_path: Path) -> None:
    (tmp_path / "online.yaml").write_text("evaluators: []\n")
    outcome = CliRunner().invoke(
        evaltrace, ["serve", "--evaluators", str(tmp_path / "online.yaml")]
    )
    assert outcome.exit_code == 2
    assert "online.yaml" in outcome.output and "evaluators" in outcome.output


# -- where it listens and forwards -------------------------------------------------------


def test_listen_takes_host_and_port_and_refuses_anything_else() -> None:
    assert parse_listen("[::1]:4318") == ("::1", 4318)
    with pytest.raises(ServeError, match="HOST:PORT"):
        parse_listen("4318")


def test_a_bad_grpc_listen_is_named_with_grpcs_port_as_the_example() -> None:
    with pytest.raises(
        ServeError, match=r"--grpc-listen '4317' is not HOST:PORT, e.g. 127.0.0.1:4317"
    ):
        parse_listen("4317", "--grpc-listen")


def test_forward_target_reads_the_otlp_variables_as_the_sdk_does() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-team=shop,authorization=Bearer%20abc",
    }
    target = forward_target(None, env=env)
    assert target is not None
    assert target.endpoint == "http://collector:4318/v1/traces"
    assert target.headers == {"x-team": "shop", "authorization": "Bearer abc"}
    traces = forward_target(None, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:1/in"})
    assert traces is not None and traces.endpoint == "http://c:1/in"
    assert forward_target(None, env={}) is None


def test_forward_url_overrides_the_variables_and_keeps_their_headers() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318", "OTEL_EXPORTER_OTLP_HEADERS": "k=v"}
    target = forward_target("http://127.0.0.1:9999", env=env)
    assert target is not None
    assert (target.endpoint, target.headers) == ("http://127.0.0.1:9999/v1/traces", {"k": "v"})
    with pytest.raises(ServeError, match="not an http:// or https:// URL"):
        forward_target("collector:4318", env={})


# -- sampling, assembly, budget ----------------------------------------------------------


def _trace(
    number: int, *, name: str = "answer", error: bool = False, route: str = "/"
) -> Assembler:
    assembler = Assembler(
        quiet_period=0, trace_timeout=60, max_traces=10, max_bytes=10**6, metrics=Metrics()
    )
    trace_id = number.to_bytes(16, "big")
    root = Span(
        trace_id=trace_id,
        span_id=b"\x01" * 8,
        name=name,
        attributes=[KeyValue(key="http.route", value=AnyValue(string_value=route))],
    )
    child = Span(
        trace_id=trace_id,
        span_id=b"\x02" * 8,
        parent_span_id=b"\x01" * 8,
        name="llm",
        status=Status(code=Status.STATUS_CODE_ERROR if error else Status.STATUS_CODE_OK),
    )
    assembler.add(b"", root, 0.0)
    assembler.add(b"", child, 0.0)
    return assembler


def test_a_trace_with_an_error_is_always_chosen() -> None:
    sampler = Sampler(rate=0.0, rules=[], errors=True)
    (trace,) = _trace(5, error=True).ready(1.0)
    assert sampler.choose(trace) == "error"
    (clean,) = _trace(5).ready(1.0)
    assert sampler.choose(clean) is None


def test_rules_by_root_name_or_attribute_give_their_own_rate() -> None:
    rules = [
        SamplingRule(root_name="checkout*", sample=1.0),
        SamplingRule(attributes={"http.route": "/health"}, sample=0.0),
    ]
    sampler = Sampler(rate=0.0, rules=rules, errors=False)
    (checkout,) = _trace(7, name="checkout cart").ready(1.0)
    (health,) = _trace(7, name="GET", route="/health").ready(1.0)
    (other,) = _trace(7, name="GET").ready(1.0)
    assert sampler.choose(checkout) == "rule"
    assert sampler.choose(health) is None
    assert sampler.choose(other) is None


def test_the_rate_chooses_that_share_of_trace_ids() -> None:
    sampler = Sampler(rate=0.1, rules=[], errors=False)
    step = 2**64 // 1000
    chosen = 0
    for number in range(1, 1001):
        (trace,) = _trace(number * step).ready(1.0)
        chosen += sampler.choose(trace) is not None
    assert chosen == 100


def test_a_trace_is_ready_once_its_root_arrived_and_it_was_quiet() -> None:
    metrics = Metrics()
    assembler = Assembler(
        quiet_period=2, trace_timeout=60, max_traces=10, max_bytes=10**6, metrics=metrics
    )
    child = Span(trace_id=b"\x09" * 16, span_id=b"\x02" * 8, parent_span_id=b"\x01" * 8)
    assembler.add(b"", child, 0.0)
    assert assembler.ready(10.0) == []  # no root yet, not timed out
    assembler.add(b"", Span(trace_id=b"\x09" * 16, span_id=b"\x01" * 8), 10.0)
    assert assembler.ready(11.0) == []  # still within the quiet period
    assert [len(trace.spans) for trace in assembler.ready(12.5)] == [2]
    assert metrics.traces_assembled.total() == 1


def test_judge_calls_per_minute_stop_scoring_once_the_minutes_calls_are_made() -> None:
    now = [1000.0]
    limiter = Limiter(judge_calls_per_minute=4, clock=lambda: now[0])
    assert limiter.take() is None
    limiter.spend(calls=3)  # one trace's judges made 3 calls: 1 left
    assert limiter.take() is None
    limiter.spend(calls=3)  # the calls were made: the bucket owes 2
    assert limiter.take() == "judge_calls_per_minute"
    assert limiter.paused == "judge_calls_per_minute"
    now[0] += 30  # half a minute gives 2 calls back: nothing left
    assert limiter.take() == "judge_calls_per_minute"
    now[0] += 15  # one call's worth
    assert limiter.take() is None and limiter.paused is None


def test_traces_without_judge_calls_are_not_limited_by_judge_calls() -> None:
    limiter = Limiter(judge_calls_per_minute=1, clock=lambda: 0.0)
    for _ in range(100):
        assert limiter.take() is None
        limiter.spend(calls=0)


def test_traces_per_minute_is_a_token_bucket() -> None:
    now = [1000.0]
    limiter = Limiter(traces_per_minute=2, clock=lambda: now[0])
    assert [limiter.take() for _ in range(3)] == [None, None, "traces_per_minute"]
    now[0] += 30  # one trace's worth refilled
    assert [limiter.take(), limiter.take()] == [None, "traces_per_minute"]


def test_the_cost_budget_pauses_scoring_until_the_next_hour() -> None:
    now = [3600.0 * 10]
    limiter = Limiter(cost_per_hour=1.0, clock=lambda: now[0])
    assert limiter.take() is None
    limiter.spend(cost=1.5)
    assert limiter.take() == "cost_per_hour" and limiter.paused == "cost_per_hour"
    now[0] += 3600
    assert limiter.take() is None and limiter.paused is None


# -- the results stream ------------------------------------------------------------------


def _entry(name: str, when: datetime, score: float) -> EntryResult:
    return EntryResult(
        index=0,
        name=name,
        evaluations=[Evaluation(score=score, evaluator="grounded")],
        started_at=when,
    )


def test_a_results_stream_reads_back_as_one_run_per_window(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    stream = ResultsStream(path, RunResult(name="serve", evaluators=["grounded"]))
    ten = datetime(2026, 11, 28, 10, 5, tzinfo=UTC)
    stream.add(_entry("a", ten, 1.0))
    stream.add(_entry("b", ten + timedelta(minutes=20), 0.0))
    stream.add(_entry("c", ten + timedelta(hours=1), 1.0))
    stream.close()
    runs = read_windows(path)
    assert [(run.name, [entry.name for entry in run.entries]) for run in runs] == [
        ("serve 2026-11-28T10:00Z", ["a", "b"]),
        ("serve 2026-11-28T11:00Z", ["c"]),
    ]
    assert [len(run.entries) for run in read_windows(path, window=timedelta(minutes=15))] == [
        1,
        1,
        1,
    ]


def test_report_prints_a_results_stream_by_window(tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    stream = ResultsStream(path, RunResult(name="serve", evaluators=["grounded"]))
    when = datetime(2026, 11, 28, 10, 5, tzinfo=UTC)
    stream.add(_entry("a", when, 1.0))
    stream.add(_entry("b", when + timedelta(hours=2), 0.0))
    stream.close()
    outcome = CliRunner().invoke(evaltrace, ["report", str(path), "--format", "json"])
    assert outcome.exit_code == 0, outcome.output
    assert [run["name"] for run in json.loads(outcome.output)] == [
        "serve 2026-11-28T10:00Z",
        "serve 2026-11-28T12:00Z",
    ]
    text = CliRunner().invoke(evaltrace, ["report", str(path), "--window", "1440"])
    assert text.exit_code == 0 and "serve 2026-11-28T00:00Z" in text.output


def test_without_aiohttp_serve_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['aiohttp'] = None\n"
        "from evaltrace.cli.main import main\n"
        "sys.exit(main(['serve']))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2, ran.stderr
    assert "pip install 'evaltrace[serve]'" in ran.stderr
