"""Configuration by the OpenTelemetry variables: read as the SDK documents them, honoured by
the first traced call and by init(), only on a provider evaltrace creates unless asked.

Wire tests run the app in a fresh interpreter (the global tracer provider is set once per
process) configured only by environment variables, exporting to an in-process receiver.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import evaltrace
from evaltrace.capture.config import Settings, settings_from_env
from evaltrace.capture.environment import read_environment
from evaltrace.capture.exporters import OTLPSettings, otlp_exporter
from evaltrace.errors import ConfigurationError
from evaltrace.testing import OTLPReceiver

APP = """
import json
import evaltrace

@evaltrace.wrap(kind="retriever")
def retrieve(question):
    return ["Paris is the capital of France."]

@evaltrace.wrap(kind="agent")
def answer(question):
    retrieve(question)
    return evaltrace.wrap("Paris", purpose="output", name="answer")

print(json.dumps([answer("capital of France?") for _ in range(RUNS)]))
"""


def run_app(code: str = APP, runs: int = 1, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter whose only configuration is ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALTRACE_", "OTEL_"))}
    # The timeout only stops a hung test; every app here exits well within it.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code).replace("RUNS", str(runs))],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=60,
    )


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as server:
        yield server


def otlp_settings_from_env(env: dict[str, str]) -> OTLPSettings | None:
    """The OTLP export ``env`` asks for."""
    return read_environment(env).settings.otlp


# Reading the variables ---------------------------------------------------------------------


def test_the_generic_endpoint_gets_the_traces_path_appended() -> None:
    settings = otlp_settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert settings == OTLPSettings(endpoint="http://collector:4318/v1/traces")


def test_the_traces_endpoint_is_used_as_given_and_wins_over_the_generic_one() -> None:
    settings = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://traces.example/ingest",
        }
    )
    assert settings is not None and settings.endpoint == "https://traces.example/ingest"


def test_over_grpc_the_generic_endpoint_is_used_as_given() -> None:
    settings = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        }
    )
    assert settings == OTLPSettings(endpoint="http://collector:4317", protocol="grpc")


def test_the_traces_protocol_wins_over_the_generic_one() -> None:
    settings = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
        }
    )
    assert settings is not None and settings.protocol == "grpc"


def test_no_endpoint_means_no_otlp_export() -> None:
    assert otlp_settings_from_env({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) is None
    assert settings_from_env({}).otlp is None


def test_headers_are_read_as_the_sdk_reads_them() -> None:
    settings = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc , x-team=search",
        }
    )
    assert settings is not None
    assert settings.headers == {"authorization": "Bearer abc", "x-team": "search"}


def test_the_traces_headers_replace_the_generic_ones() -> None:
    settings = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "a=1",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
        }
    )
    assert settings is not None and settings.headers == {"b": "2"}


def test_the_timeout_is_read_in_seconds() -> None:
    settings = otlp_settings_from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "2.5"}
    )
    assert settings is not None and settings.timeout_seconds == 2.5


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            r"OTEL_EXPORTER_OTLP_ENDPOINT='collector:4318' is not an http:// or https:// URL"
            r".*; using no OTLP export",
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:port/v1/traces"},
            r"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT='http://c:port/v1/traces' is not a URL"
            r".*; using no OTLP export",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            r"OTEL_EXPORTER_OTLP_PROTOCOL='http/json' .*no http/json trace exporter.*; using "
            r"http/protobuf \(the default\)",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp",
            },
            r"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='udp' is not a protocol .*grpc",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,oops"},
            r"OTEL_EXPORTER_OTLP_HEADERS='a=\*\*\*,oop\*\*\*' has the entry 'oop\*\*\*', which "
            r"is not key=value.*; using the other headers \(a\)",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
            r"OTEL_EXPORTER_OTLP_TIMEOUT='10s' is not a number of seconds above 0.*; using 10 s",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"},
            r"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT='0' is not a number of seconds above 0",
        ),
        (
            {"OTEL_RESOURCE_ATTRIBUTES": "team=search,prod"},
            r"OTEL_RESOURCE_ATTRIBUTES='team=search,prod' has the entry 'prod', which is not "
            r"key=value.*; using the other attributes \(team\)",
        ),
        (
            {"OTEL_SDK_DISABLED": "1"},
            r"OTEL_SDK_DISABLED='1' is neither true nor false; using false \(OpenTelemetry reads "
            r"only 'true' as true\)",
        ),
    ],
)
def test_a_bad_value_is_a_problem_naming_the_variable_never_an_error(
    env: dict[str, str], message: str
) -> None:
    (problem,) = read_environment(env).problems
    assert re.fullmatch(message + ".*", str(problem)), str(problem)


def test_a_bad_value_gets_its_fallback() -> None:
    environment = read_environment(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "10s",
            "OTEL_EXPORTER_OTLP_HEADERS": "a=1,oops",
            "OTEL_SDK_DISABLED": "1",
        }
    )
    assert environment.settings.otlp == OTLPSettings(
        endpoint="http://c:4318/v1/traces", headers={"a": "1"}, timeout_seconds=10.0
    )
    assert not environment.settings.disabled


def test_a_header_value_with_an_encoded_line_break_is_refused() -> None:
    otlp = otlp_settings_from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=search,x-token=abc%0D%0Ax-evil:1",
        }
    )
    assert otlp is not None
    assert otlp.headers == {"x-team": "search"}
    assert otlp.refused_headers == frozenset({"x-token"})


def test_over_grpc_headers_that_are_all_refused_mean_no_otlp_export() -> None:
    # Given no header, the SDK's gRPC exporter would read the variable itself and send them.
    environment = read_environment(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-token=abc%0a",
        }
    )
    assert environment.settings.otlp is None
    (problem,) = environment.problems
    assert problem.used.startswith("no OTLP export")


def test_resource_attributes_and_project_name_are_read() -> None:
    settings = settings_from_env(
        {
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=a%2Cb",
            "EVALTRACE_PROJECT_NAME": "checkout-evals",
        }
    )
    assert settings.resource_attributes == {"deployment.environment": "prod", "team": "a,b"}
    assert settings.project_name == "checkout-evals"


def test_the_service_name_comes_from_otel_service_name_then_the_resource_attributes() -> None:
    from_resource = settings_from_env({"OTEL_RESOURCE_ATTRIBUTES": "service.name=shop"})
    assert from_resource.service_name == "shop"
    both = {"OTEL_RESOURCE_ATTRIBUTES": "service.name=shop", "OTEL_SERVICE_NAME": "cart"}
    assert settings_from_env(both).service_name == "cart"


def test_otel_sdk_disabled_turns_evaltrace_off_and_false_leaves_it_on() -> None:
    assert settings_from_env({"OTEL_SDK_DISABLED": "TRUE"}).disabled
    assert settings_from_env({"OTEL_SDK_DISABLED": "false"}) == Settings()


def test_grpc_without_the_grpc_extra_is_an_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    with pytest.raises(ConfigurationError, match=r"pip install 'evaltrace\[grpc\]'"):
        otlp_exporter(OTLPSettings(endpoint="http://127.0.0.1:4317", protocol="grpc"))


def test_grpc_builds_the_sdks_grpc_exporter() -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    exporter = otlp_exporter(OTLPSettings(endpoint="http://127.0.0.1:4317", protocol="grpc"))
    try:
        assert isinstance(exporter, OTLPSpanExporter)
    finally:
        exporter.shutdown()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"project_name": ""}, r"project_name expects a non-empty string; got the str ''"),
        ({"export_on_app_provider": "yes"}, r"export_on_app_provider expects True or False"),
        ({"instrument": "openai"}, r"instrument expects a list of library names"),
        ({"instrument": ["requests"]}, r"no instrumentor for: 'requests'; known: 'openai'"),
    ],
)
def test_init_refuses_a_bad_export_option_naming_it(
    options: dict[str, object], message: str
) -> None:
    before = evaltrace.capture.config.settings()
    with pytest.raises(ConfigurationError, match=message):
        evaltrace.init(**options)  # type: ignore[arg-type]
    assert evaltrace.capture.config.settings() == before


# On the wire ---------------------------------------------------------------------------


def test_an_app_configured_only_by_otel_variables_exports_at_its_first_traced_call(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(
        runs=3,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20s3cret,x-team=search",
        OTEL_EXPORTER_OTLP_COMPRESSION="gzip",
        OTEL_SERVICE_NAME="checkout",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test",
        EVALTRACE_PROJECT_NAME="checkout-evals",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="2",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["Paris", "Paris", "Paris"]
    exports = receiver.exports
    assert len(exports) == 3  # six spans in batches of two
    for export in exports:
        assert export.path == "/v1/traces"
        assert export.content_encoding == "gzip"
        assert export.headers["authorization"] == "Bearer s3cret"
        assert export.headers["x-team"] == "search"
    spans = receiver.spans
    assert sorted(span.name for span in spans) == ["answer"] * 3 + ["retrieve"] * 3
    resource = spans[0].resource
    assert resource["service.name"] == "checkout"
    assert resource["deployment.environment"] == "test"
    assert resource["openinference.project.name"] == "checkout-evals"
    by_id = {span.span_id: span for span in spans}
    for span in spans:
        if span.name == "retrieve":
            assert span.parent_span_id is not None
            assert by_id[span.parent_span_id].name == "answer"
        else:
            assert span.parent_span_id is None
            assert span.attributes["output.value"] == '"Paris"'
            assert span.attributes["openinference.span.kind"] == "AGENT"


def test_init_options_set_the_resource_of_the_provider_evaltrace_creates(
    receiver: OTLPReceiver,
) -> None:
    code = 'import evaltrace\nevaltrace.init(service_name="cart", project_name="cart-evals")\n'
    code += APP
    result = run_app(code, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    assert result.returncode == 0, result.stderr
    (span, *_) = receiver.spans
    assert span.resource["service.name"] == "cart"
    assert span.resource["openinference.project.name"] == "cart-evals"


def test_the_traces_endpoint_is_not_given_the_traces_path_again(receiver: OTLPReceiver) -> None:
    closed = OTLPReceiver().start()
    closed.stop()  # a port nothing listens on
    result = run_app(
        OTEL_EXPORTER_OTLP_ENDPOINT=closed.endpoint,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.traces_url,
    )
    assert result.returncode == 0, result.stderr
    assert [export.path for export in receiver.exports] == ["/v1/traces"]


APP_WITH_ITS_OWN_PROVIDER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
""" + textwrap.dedent(APP)


def test_on_the_apps_own_provider_evaltrace_exports_nothing_unless_asked(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(APP_WITH_ITS_OWN_PROVIDER, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["Paris"]
    assert receiver.attempts == 0  # the process has exited: anything queued was sent


def test_export_on_app_provider_exports_from_the_apps_own_provider(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(
        APP_WITH_ITS_OWN_PROVIDER,
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        EVALTRACE_EXPORT_ON_APP_PROVIDER="true",
    )
    assert result.returncode == 0, result.stderr
    assert sorted(span.name for span in receiver.spans) == ["answer", "retrieve"]


def test_otel_sdk_disabled_exports_nothing_and_leaves_the_app_unchanged(
    receiver: OTLPReceiver,
) -> None:
    result = run_app(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_SDK_DISABLED="true")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["Paris"]
    assert receiver.attempts == 0


# The trace file ---------------------------------------------------------------------------


def test_the_trace_file_gets_one_line_per_span_that_load_traces_reads(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    result = run_app(runs=2, EVALTRACE_TRACE_FILE=str(path))
    assert result.returncode == 0, result.stderr
    assert len(path.read_text().splitlines()) == 4
    trace = evaltrace.load_traces(path)
    assert [root.span.name for root in trace] == ["answer", "answer"]
    assert [child.span.name for root in trace for child in root.children] == ["retrieve"] * 2
    assert trace[0].span.output == "Paris"


def test_the_trace_file_is_appended_to_by_each_run(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    for _ in range(2):
        assert run_app(EVALTRACE_TRACE_FILE=str(path)).returncode == 0
    assert len(evaltrace.load_traces(path)) == 2
