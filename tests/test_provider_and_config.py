"""Respecting the app's tracer provider, lazy init, environment configuration.

Each scenario runs in a fresh interpreter: the global tracer provider can be set only once
per process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from evaltrace.capture.config import Settings, settings_from_env
from evaltrace.capture.environment import read_environment
from evaltrace.errors import ConfigurationError


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EVALTRACE_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
    )


def test_existing_provider_keeps_its_exporter_and_gets_no_override_warning() -> None:
    result = run_python(
        """
        import logging
        logging.basicConfig(level=logging.DEBUG)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        import evaltrace

        @evaltrace.wrap
        def answer(q):
            evaltrace.wrap("4", purpose="output", name="answer")
            return "4"

        with evaltrace.capture_traces() as handler:
            answer("2+2")
        assert trace.get_tracer_provider() is provider
        assert [s.name for s in exporter.get_finished_spans()] == ["answer"]
        assert [s.name for s in handler.spans] == ["answer"]
        assert [v.value for v in handler.named_values] == ["4"]
        answer("outside")  # no capture: the app's exporter still gets it, with the event
        spans = exporter.get_finished_spans()
        assert len(spans) == 2 and spans[1].events[0].name == "evaltrace.wrap"
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout
    assert "Overriding" not in result.stderr


def test_no_provider_at_all_lazily_creates_and_registers_one() -> None:
    result = run_python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        import evaltrace

        @evaltrace.wrap
        def f(x):
            return x

        assert f(1) == 1  # works before any init()
        with evaltrace.capture_traces() as handler:
            f(2)
        assert isinstance(trace.get_tracer_provider(), TracerProvider)
        assert [s.input for s in handler.spans] == [{"x": 2}]
        evaltrace.flush()
        evaltrace.shutdown()
        with evaltrace.capture_traces() as handler:
            f(3)
        assert [s.input for s in handler.spans] == [{"x": 3}]
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "Overriding" not in result.stderr


def test_disabled_returns_functions_and_values_unchanged() -> None:
    result = run_python(
        """
        import evaltrace

        def f(x):
            return x

        assert evaltrace.wrap(f) is f
        fetch = evaltrace.wrap(f, purpose="input", name="x")
        with evaltrace.capture_traces() as handler:
            assert f(1) == 1 and fetch(2) == 2
            assert evaltrace.wrap(5, purpose="output", name="n") == 5
        assert handler.spans == [] and handler.named_values == []
        from opentelemetry import trace
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        print("OK")
        """,
        EVALTRACE_DISABLED="1",
    )
    assert result.returncode == 0, result.stderr


def test_capture_content_off_keeps_values_off_spans_but_in_the_capture() -> None:
    result = run_python(
        """
        import evaltrace

        @evaltrace.wrap
        def f(secret_question):
            return evaltrace.wrap("answer", purpose="output", name="a")

        @evaltrace.wrap
        async def g(question):
            return question.upper()

        with evaltrace.capture_traces() as handler:
            f("private")
        (raw,) = handler.raw_spans
        assert "input.value" not in raw.attributes and "output.value" not in raw.attributes
        assert "evaltrace.wrap.value" not in raw.events[0].attributes
        assert [v.value for v in handler.named_values] == ["answer"]
        # kept for evaluation in this process, never put on the span
        (span,) = handler.spans
        assert (span.input, span.output) == ({"secret_question": "private"}, "answer")
        assert handler.trace[0].span.input == {"secret_question": "private"}

        import anyio
        def upper_ok(e):
            return e.output_value() == e.input_value().upper()
        result = anyio.run(evaltrace.run_and_evaluate, upper_ok, g, "q")
        assert result.score == 1.0, result
        print("OK")
        """,
        EVALTRACE_CAPTURE_CONTENT="false",
    )
    assert result.returncode == 0, result.stderr


def test_settings_from_env_reads_each_variable() -> None:
    settings = settings_from_env(
        {
            "EVALTRACE_DISABLED": "yes",
            "EVALTRACE_CAPTURE_CONTENT": "0",
            "EVALTRACE_MAX_VALUE_BYTES": "4096",
            "EVALTRACE_REDACT_KEYS": "ssn, Employee_ID",
            "OTEL_SERVICE_NAME": "shop",
        }
    )
    assert settings.disabled and not settings.capture_content
    assert settings.max_value_bytes == 4096
    assert {"ssn", "employee_id"} <= settings.redact_keys
    assert settings.service_name == "shop"
    assert settings_from_env({}) == Settings()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"EVALTRACE_DISABLED": "maybe"},
            "EVALTRACE_DISABLED='maybe' is not a boolean: use 1/0, true/false, yes/no or on/off; "
            "using false (the default)",
        ),
        (
            {"EVALTRACE_MAX_VALUE_BYTES": "10"},
            "EVALTRACE_MAX_VALUE_BYTES='10' is less than 256 bytes, the least it takes; using "
            "1000000 bytes (the default)",
        ),
    ],
)
def test_invalid_environment_values_are_problems_and_get_the_default(
    env: dict[str, str], message: str
) -> None:
    environment = read_environment(env)
    assert [str(problem) for problem in environment.problems] == [message]
    assert environment.settings == Settings()


def test_exporters_given_to_init_receive_the_spans_after_flush() -> None:
    result = run_python(
        """
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import evaltrace

        exporter = InMemorySpanExporter()
        evaltrace.init(service_name="shop", exporters=[exporter])

        @evaltrace.wrap
        def f(x):
            evaltrace.wrap(x * 2, purpose="output", name="double")
            return x

        f(1)  # no capture open: the span still goes to the exporter, with its wrap event
        assert evaltrace.flush()
        (span,) = exporter.get_finished_spans()
        assert span.resource.attributes["service.name"] == "shop"
        assert span.events[0].attributes["evaltrace.wrap.name"] == "double"
        evaltrace.shutdown()
        print("OK")
        """
    )
    assert result.returncode == 0, result.stderr
    assert "OK" in result.stdout


class NotAnExporter:
    def export(self) -> None: ...


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"capture_content": "false"},
            r"capture_content expects True or False; got the str 'false'",
        ),
        ({"disabled": "no"}, r"disabled expects True or False; got the str 'no'"),
        ({"service_name": 5}, r"service_name expects a non-empty string; got the int 5"),
        ({"service_name": ""}, r"service_name expects a non-empty string; got the str ''"),
        ({"max_value_bytes": "big"}, r"max_value_bytes expects a whole number of bytes.*str 'big'"),
        ({"max_value_bytes": 1.5e6}, r"max_value_bytes expects a whole number of bytes.*float"),
        ({"max_value_bytes": 10}, r"max_value_bytes=10 is too small"),
        ({"redact_keys": [5]}, r"redact_keys expects key names \(strings\); item 0 is the int 5"),
        ({"redact_keys": "password"}, r"redact_keys expects .* not one string"),
        ({"redact_keys": 5}, r"redact_keys expects an iterable of key names; got the int 5"),
        ({"exporters": ["x"]}, r"exporters expects span exporters.*item 0 is the str 'x'"),
        ({"exporters": [NotAnExporter()]}, r"exporters expects span exporters.*NotAnExporter"),
        ({"exporters": "otlp"}, r"exporters expects a list of span exporters; got the str"),
        ({"tracer_provider": object()}, r"tracer_provider expects an OpenTelemetry TracerProvider"),
        ({"shutdown_timeout_millis": -1}, r"shutdown_timeout_millis expects .*; got the int -1"),
        (
            {"shutdown_timeout_millis": "5s"},
            r"shutdown_timeout_millis expects .*; got the str '5s'",
        ),
    ],
)
def test_init_refuses_a_bad_option_naming_it(options: dict[str, object], message: str) -> None:
    import evaltrace

    before = evaltrace.capture.config.settings()
    with pytest.raises(ConfigurationError, match=message):
        evaltrace.init(**options)  # type: ignore[arg-type]
    assert evaltrace.capture.config.settings() == before  # nothing was half-applied


def test_shutdown_timeout_is_read_from_the_environment() -> None:
    settings = settings_from_env({"EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS": "250"})
    assert settings.shutdown_timeout_millis == 250
    environment = read_environment({"EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS": "soon"})
    assert environment.settings.shutdown_timeout_millis == 5000
    (problem,) = environment.problems
    assert str(problem).startswith("EVALTRACE_SHUTDOWN_TIMEOUT_MILLIS='soon' ")
