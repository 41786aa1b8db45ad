"""A bad environment variable never takes the app down.

OpenTelemetry's rule for configuration from the environment: a value that cannot be used is
reported once, and the default is used instead. Each case runs a real app in a fresh
interpreter with one bad variable: the app exits 0 with its output, and standard error holds
exactly one warning line, naming the variable, the value, and what is used instead. Arguments
given in code (``init(...)``) are still refused (tests/test_provider_and_config.py).

``evaltrace config`` prints the effective configuration and its problems; it runs here as the
real command, in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evaltrace.testing import OTLPReceiver

EVALTRACE = str(Path(sys.executable).with_name("evaltrace"))

APP = """
import evaltrace

@evaltrace.wrap
def answer(question):
    return "Paris"

print(answer("capital of France?"))
"""


def clean_environment(**env: str) -> dict[str, str]:
    """This process's environment without any evaltrace or OpenTelemetry variable, plus ``env``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    return {**kept, **env}


def run_app(env: dict[str, str], code: str = APP) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter configured by ``env`` only."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=clean_environment(**env),
        timeout=60,  # stops a hung test only; every app here exits within seconds
    )


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as server:
        yield server


@dataclass(frozen=True)
class Bad:
    """One bad variable, and what the app must say about it."""

    id: str
    env: dict[str, str]
    """The bad variable (``{tmp}`` stands for a fresh temporary folder)."""
    shown: str
    """How the warning shows the variable and its value."""
    used: str
    """What the warning says is used instead."""
    collector: bool = False
    """Whether the app is pointed at a live OTLP receiver."""
    exported: bool = True
    """With a collector: whether the app's span must reach it."""
    extra: dict[str, str] = field(default_factory=dict)
    """Good variables the case needs besides the bad one."""


def _timeout(value: str, variable: str = "OTEL_EXPORTER_OTLP_TIMEOUT") -> Bad:
    return Bad(
        f"{variable.lower()}-{value}",
        {variable: value},
        f"{variable}={value!r}",
        "10 s (the default)",
        collector=True,
    )


def _flag(variable: str, value: str, default: str) -> Bad:
    return Bad(variable.lower(), {variable: value}, f"{variable}={value!r}", default)


TRACE_FILE = {"EVALTRACE_TRACE_FILE": "{tmp}/spans.jsonl"}

BAD = [
    Bad(
        "protocol-bogus",
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"},
        "OTEL_EXPORTER_OTLP_PROTOCOL='bogus'",
        "http/protobuf (the default)",
        collector=True,
    ),
    Bad(
        "traces-protocol-bogus",
        {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "bogus"},
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='bogus'",
        "http/protobuf (the default)",
        collector=True,
    ),
    Bad(
        "protocol-http-json",
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
        "OTEL_EXPORTER_OTLP_PROTOCOL='http/json'",
        "http/protobuf (the default)",
        collector=True,
    ),
    _timeout("abc"),
    _timeout("-5"),
    _timeout("nan"),
    _timeout("inf"),
    _timeout("0"),
    _timeout("abc", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
    Bad(
        "headers-not-key-value",
        {"OTEL_EXPORTER_OTLP_HEADERS": "x-team=search,oops"},
        "OTEL_EXPORTER_OTLP_HEADERS='x-team=***,oop***'",
        "the other headers (x-team)",
        collector=True,
    ),
    Bad(
        "headers-bad-percent-encoding",
        {"OTEL_EXPORTER_OTLP_HEADERS": "x-team=search,x-key=%zz"},
        "OTEL_EXPORTER_OTLP_HEADERS='x-team=***,x-key=***'",
        "the other headers (x-team)",
        collector=True,
    ),
    Bad(
        "headers-encoded-crlf",
        {"OTEL_EXPORTER_OTLP_HEADERS": "x-team=search,x-token=abc%0d%0ax-injected:%201"},
        "OTEL_EXPORTER_OTLP_HEADERS='x-team=***,x-token=***'",
        "the other headers (x-team)",
        collector=True,
    ),
    Bad(
        "traces-headers-encoded-lf",
        {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=search,x-token=abc%0Ax-injected:1"},
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS='x-team=***,x-token=***'",
        "the other headers (x-team)",
        collector=True,
    ),
    Bad(
        "endpoint-without-scheme",
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
        "OTEL_EXPORTER_OTLP_ENDPOINT='localhost:4318'",
        "no OTLP export",
    ),
    Bad(
        "traces-endpoint-bad-port",
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:port/v1/traces"},
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT='http://collector:port/v1/traces'",
        "no OTLP export",
    ),
    Bad(
        "compression-bogus",
        {"OTEL_EXPORTER_OTLP_COMPRESSION": "bogus"},
        "OTEL_EXPORTER_OTLP_COMPRESSION='bogus'",
        "none (the default)",
        collector=True,
    ),
    Bad(
        "traces-compression-bogus",
        {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zip"},
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION='zip'",
        "none (the default)",
        collector=True,
    ),
    Bad(
        "certificate-missing",
        {"OTEL_EXPORTER_OTLP_CERTIFICATE": "{tmp}/missing-ca.pem"},
        "OTEL_EXPORTER_OTLP_CERTIFICATE='{tmp}/missing-ca.pem'",
        "no OTLP export",
        collector=True,
        exported=False,
    ),
    Bad(
        "traces-certificate-missing",
        {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "{tmp}/missing-ca.pem"},
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE='{tmp}/missing-ca.pem'",
        "no OTLP export",
        collector=True,
        exported=False,
    ),
    Bad(
        "client-key-missing",
        {"OTEL_EXPORTER_OTLP_CLIENT_KEY": "{tmp}/missing.key"},
        "OTEL_EXPORTER_OTLP_CLIENT_KEY='{tmp}/missing.key'",
        "no OTLP export",
        collector=True,
        exported=False,
    ),
    Bad(
        "client-certificate-missing",
        {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "{tmp}"},
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE='{tmp}'",
        "no OTLP export",
        collector=True,
        exported=False,
    ),
    Bad(
        "bsp-queue-size-not-a-number",
        {"OTEL_BSP_MAX_QUEUE_SIZE": "abc"},
        "OTEL_BSP_MAX_QUEUE_SIZE='abc'",
        "2048 (the default)",
        extra=TRACE_FILE,
    ),
    Bad(
        "bsp-queue-size-zero",
        {"OTEL_BSP_MAX_QUEUE_SIZE": "0"},
        "OTEL_BSP_MAX_QUEUE_SIZE='0'",
        "2048 (the default)",
        collector=True,
    ),
    Bad(
        "bsp-batch-size-negative",
        {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "-1"},
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE='-1'",
        "512 (the default)",
        extra=TRACE_FILE,
    ),
    Bad(
        "bsp-batch-larger-than-the-queue",
        {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"},
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE='100'",
        "10 (OTEL_BSP_MAX_QUEUE_SIZE)",
        extra={**TRACE_FILE, "OTEL_BSP_MAX_QUEUE_SIZE": "10"},
    ),
    Bad(
        "bsp-schedule-delay",
        {"OTEL_BSP_SCHEDULE_DELAY": "soon"},
        "OTEL_BSP_SCHEDULE_DELAY='soon'",
        "5000 ms (the default)",
        extra=TRACE_FILE,
    ),
    Bad(
        "otel-sdk-disabled-1",
        {"OTEL_SDK_DISABLED": "1"},
        "OTEL_SDK_DISABLED='1'",
        "false (OpenTelemetry reads only 'true' as true)",
        collector=True,
    ),
    _flag("EVALTRACE_DISABLED", "maybe", "false (the default)"),
    _flag("EVALTRACE_CAPTURE_CONTENT", "perhaps", "true (the default)"),
    _flag("EVALTRACE_EXPORT_ON_APP_PROVIDER", "sure", "false (the default)"),
    _flag("EVALTRACE_EXPORT_EVALUATIONS", "2", "false (the default)"),
    Bad(
        "max-value-bytes-not-a-number",
        {"EVALTRACE_MAX_VALUE_BYTES": "lots"},
        "EVALTRACE_MAX_VALUE_BYTES='lots'",
        "1000000 bytes (the default)",
    ),
    Bad(
        "max-value-bytes-too-small",
        {"EVALTRACE_MAX_VALUE_BYTES": "10"},
        "EVALTRACE_MAX_VALUE_BYTES='10'",
        "1000000 bytes (the default)",
    ),
    Bad(
        "shutdown-timeout-not-a-number",
        {"EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS": "soon"},
        "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS='soon'",
        "5000 ms (the default)",
    ),
    Bad(
        "shutdown-timeout-negative",
        {"EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS": "-1"},
        "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS='-1'",
        "5000 ms (the default)",
    ),
    Bad(
        "resource-attributes-not-key-value",
        {"OTEL_RESOURCE_ATTRIBUTES": "team=search,prod"},
        "OTEL_RESOURCE_ATTRIBUTES='team=search,prod'",
        "the other attributes (team)",
        collector=True,
    ),
    Bad(
        "trace-file-in-a-missing-folder",
        {"EVALTRACE_TRACE_FILE": "{tmp}/missing/spans.jsonl"},
        "EVALTRACE_TRACE_FILE='{tmp}/missing/spans.jsonl'",
        "no trace file",
    ),
    Bad(
        "trace-file-is-a-folder",
        {"EVALTRACE_TRACE_FILE": "{tmp}"},
        "EVALTRACE_TRACE_FILE='{tmp}'",
        "no trace file",
    ),
]


def fill(text: str, tmp_path: Path) -> str:
    return text.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("bad", BAD, ids=[bad.id for bad in BAD])
def test_a_bad_variable_warns_once_and_the_app_runs(
    bad: Bad, tmp_path: Path, receiver: OTLPReceiver
) -> None:
    env = {name: fill(value, tmp_path) for name, value in {**bad.extra, **bad.env}.items()}
    if bad.collector:
        env.setdefault("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    result = run_app(env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Paris\n"
    (line,) = result.stderr.splitlines()  # one line, nothing else: no traceback, no SDK noise
    assert line.startswith(f"evaltrace: {fill(bad.shown, tmp_path)} "), line
    assert line.endswith(f"; using {bad.used}"), line
    if bad.collector:
        assert [span.name for span in receiver.spans] == (["answer"] if bad.exported else [])


def test_a_header_with_an_encoded_line_break_is_never_sent(receiver: OTLPReceiver) -> None:
    result = run_app(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=search,x-token=abc%0d%0ax-injected:%201",
        }
    )
    assert result.returncode == 0, result.stderr
    assert "holds a line break" in result.stderr
    (export,) = receiver.exports
    assert export.headers["x-team"] == "search"
    assert "x-token" not in export.headers and "x-injected" not in export.headers


def test_a_malformed_header_entry_is_skipped_and_the_good_ones_are_sent(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cret,x-key=%zz,oops",
        }
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stderr.splitlines()) == 2  # one line for each entry skipped
    assert "s3cret" not in result.stderr  # header values are secrets: never logged
    (export,) = receiver.exports
    assert export.headers["authorization"] == "Bearer s3cret"
    assert "x-key" not in export.headers


def test_a_bogus_compression_sends_uncompressed_spans(receiver: OTLPReceiver) -> None:
    result = run_app(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_COMPRESSION": "7z"}
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()  # evaltrace's warning, not the SDK's too
    assert line.endswith("; using none (the default)")
    (export,) = receiver.exports
    assert export.content_encoding is None


def test_the_traces_protocol_falls_back_to_the_generic_one_when_it_is_bad(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().endswith("; using http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL)"), (
        result.stderr
    )
    assert [span.name for span in receiver.spans] == ["answer"]


def test_a_bad_resource_attribute_is_skipped_and_the_others_are_kept(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_RESOURCE_ATTRIBUTES": "team=search,prod,tier=a%20b",
        }
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    (span,) = receiver.spans
    assert (span.resource["team"], span.resource["tier"]) == ("search", "a b")


def test_a_bad_span_limit_of_the_sdk_warns_and_the_default_limits_are_used() -> None:
    # The SDK's TracerProvider reads these itself, and raised at the first traced call.
    result = run_app({"OTEL_ATTRIBUTE_COUNT_LIMIT": "abc"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Paris\n"
    (line,) = result.stderr.splitlines()
    assert "OTEL_ATTRIBUTE_COUNT_LIMIT" in line and "abc" in line
    assert line.endswith("; using OpenTelemetry's default span limits"), line


def test_a_problem_is_logged_once_however_often_the_runtime_is_built() -> None:
    app = """
    import evaltrace

    @evaltrace.wrap
    def answer(question):
        return "Paris"

    print(answer("one"), answer("two"))
    evaltrace.init()  # init again: the settings are replaced, nothing is read again
    evaltrace.shutdown()
    print(answer("three"))  # a new runtime is built after shutdown
    """
    result = run_app({"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"}, app)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Paris Paris\nParis\n"
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_init_with_a_bad_variable_warns_and_returns() -> None:
    app = """
    import evaltrace
    runtime = evaltrace.init(service_name="shop")
    print(runtime.settings.max_value_bytes, runtime.settings.service_name)
    """
    result = run_app({"EVALTRACE_MAX_VALUE_BYTES": "lots"}, app)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1000000 shop\n"
    assert "EVALTRACE_MAX_VALUE_BYTES='lots'" in result.stderr


def test_the_warning_goes_to_the_evaltrace_logger_where_the_app_can_handle_it() -> None:
    app = """
    import logging
    records = []
    class Keep(logging.Handler):
        def emit(self, record):
            records.append((record.name, record.levelname, record.getMessage()))
    logging.getLogger("evaltrace").addHandler(Keep())
    import evaltrace

    @evaltrace.wrap
    def answer(question):
        return "Paris"

    answer("capital?")
    print(records)
    """
    result = run_app({"OTEL_SDK_DISABLED": "yes"}, app)
    assert result.returncode == 0, result.stderr
    assert "[('evaltrace', 'WARNING', \"evaltrace: OTEL_SDK_DISABLED='yes'" in result.stdout


# Over gRPC -----------------------------------------------------------------------------------
# The SDK's gRPC exporter reads some variables itself when it is made, and raised on values it
# could not use. No gRPC collector runs here: these apps export to a port nothing listens on,
# so only the lines about the bad variable are counted.


def grpc_app(**env: str) -> subprocess.CompletedProcess[str]:
    closed = OTLPReceiver().start()
    closed.stop()
    return run_app(
        {
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": closed.endpoint,
            "EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS": "200",
            **env,
        }
    )


@pytest.mark.parametrize(
    ("variable", "value", "used"),
    [
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "bogus", "none (the default)"),
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "br", "none (the default)"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc", "10 s (the default)"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "abc",
            "no OTLP export (the gRPC exporter reads this variable itself and fails on it)",
        ),
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/no/such/ca.pem", "no OTLP export"),
    ],
)
def test_over_grpc_a_bad_variable_warns_once_and_the_app_runs(
    variable: str, value: str, used: str
) -> None:
    result = grpc_app(**{variable: value})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Paris\n"
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if variable in line]
    assert line.startswith(f"evaltrace: {variable}={value!r} "), line
    assert line.endswith(f"; using {used}"), line


def test_over_grpc_deflate_compression_is_accepted() -> None:
    result = grpc_app(OTEL_EXPORTER_OTLP_COMPRESSION="deflate")
    assert result.returncode == 0, result.stderr
    assert "COMPRESSION" not in result.stderr


def test_grpc_without_the_grpc_extra_warns_and_exports_nothing() -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    app = (
        'import sys\nsys.modules["opentelemetry.exporter.otlp.proto.grpc.trace_exporter"] = None\n'
    )
    app += textwrap.dedent(APP)
    result = run_app(
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
        app,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Paris\n"
    (line,) = result.stderr.splitlines()
    assert line.startswith("evaltrace: OTEL_EXPORTER_OTLP_PROTOCOL='grpc' ")
    assert "pip install 'evaltrace[grpc]'" in line
    assert line.endswith("; using no OTLP export")


# evaltrace config ------------------------------------------------------------------------------


def table(stdout: str) -> dict[str, list[str]]:
    """The rows of the printed configuration: variable -> [value, source]."""
    rows = stdout.split("\n\n", 1)[0].splitlines()[1:]  # the table ends at a blank line
    return {cells[0]: cells[1:] for cells in (re.split(r"\s{2,}", row.strip()) for row in rows)}


def run_config(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALTRACE, "config", *args],
        capture_output=True,
        text=True,
        env=clean_environment(**env),
        timeout=60,
    )


def test_config_prints_every_variable_and_exits_0_when_there_is_no_problem() -> None:
    result = run_config(
        OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318",
        OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20s3cret",
    )
    assert result.returncode == 0, result.stderr
    rows = table(result.stdout)
    assert rows["OTEL_EXPORTER_OTLP_ENDPOINT"] == [
        "http://collector:4318/v1/traces",
        "environment",
    ]
    assert rows["OTEL_EXPORTER_OTLP_PROTOCOL"] == ["http/protobuf", "default"]
    assert rows["EVALTRACE_MAX_VALUE_BYTES"] == ["1000000", "default"]
    assert rows["OTEL_EXPORTER_OTLP_HEADERS"] == ["authorization=***", "environment"]
    assert "s3cret" not in result.stdout
    assert result.stdout.rstrip().endswith("no problems")


def test_config_lists_the_problems_and_exits_1() -> None:
    result = run_config(
        OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318",
        OTEL_EXPORTER_OTLP_TIMEOUT="abc",
        OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20s3cret%0a,x-team=search",
    )
    assert result.returncode == 1, result.stderr
    problems = result.stdout.split("3 problems:\n", 1)[1].splitlines()
    assert [line.split("=", 1)[0].strip() for line in problems] == [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    assert "s3cret" not in result.stdout
    assert table(result.stdout)["OTEL_EXPORTER_OTLP_TIMEOUT"] == ["10", "fallback"]


def test_config_json_gives_the_variables_and_the_problems() -> None:
    result = run_config("--format", "json", OTEL_BSP_SCHEDULE_DELAY="soon", OTEL_SDK_DISABLED="1")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    variables = {row["name"]: row for row in report["variables"]}
    assert variables["OTEL_BSP_SCHEDULE_DELAY"] == {
        "name": "OTEL_BSP_SCHEDULE_DELAY",
        "value": "soon",
        "effective": "5000",
        "source": "fallback",
    }
    assert variables["EVALTRACE_DISABLED"]["source"] == "default"
    assert [problem["variable"] for problem in report["problems"]] == [
        "OTEL_SDK_DISABLED",
        "OTEL_BSP_SCHEDULE_DELAY",
    ]
    assert report["problems"][0]["used"] == "false (OpenTelemetry reads only 'true' as true)"


def test_config_json_of_a_good_environment_has_no_problems() -> None:
    result = run_config("--format", "json", EVALTRACE_PROJECT_NAME="shop")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (project,) = [row for row in report["variables"] if row["name"] == "EVALTRACE_PROJECT_NAME"]
    assert (project["effective"], project["source"]) == ("shop", "environment")
    assert report["problems"] == []
