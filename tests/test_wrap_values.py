"""wrap(value, purpose=..., name=...): recording, returning, callables, injection."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from evaltrace import capture_traces, wrap
from evaltrace.capture import conventions as conv
from evaltrace.capture import eval_inputs
from evaltrace.errors import MissingEvalInputError


@dataclass
class Order:
    order_id: str
    total: float


class Database:
    def __init__(self) -> None:
        self.calls = 0

    def fetch_order(self, order_id: str) -> Order:
        self.calls += 1
        return Order(order_id=order_id, total=10.0)

    async def fetch_order_async(self, order_id: str) -> Order:
        self.calls += 1
        return Order(order_id=order_id, total=20.0)


@wrap
def checkout(db: Database, order_id: str) -> str:
    fetch = wrap(db.fetch_order, purpose="input", name="order")
    order = fetch(order_id)
    total = order["total"] if isinstance(order, dict) else order.total
    wrap("charged", purpose="state", name="payment_status")
    return wrap(f"total {total}", purpose="output", name="receipt")


def test_value_hook_returns_the_same_object() -> None:
    payload = {"a": [1, 2]}
    with capture_traces():
        assert wrap(payload, purpose="output", name="p") is payload
    assert wrap(payload, purpose="output", name="p") is payload


def test_values_recorded_in_registry_and_as_span_events() -> None:
    db = Database()
    with capture_traces() as handler:
        assert checkout(db, "A1") == "total 10.0"
    records = handler.named_values
    assert [(r.name, r.purpose) for r in records] == [
        ("order", "input"),
        ("payment_status", "state"),
        ("receipt", "output"),
    ]
    assert records[0].value == {"order_id": "A1", "total": 10.0}
    span = handler.raw_spans[0]
    events = [e for e in span.events if e.name == conv.WRAP_EVENT]
    assert [e.attributes[conv.WRAP_NAME] for e in events] == ["order", "payment_status", "receipt"]
    assert json.loads(events[2].attributes[conv.WRAP_VALUE]) == "total 10.0"
    assert all(r.span_id == span.context.span_id for r in records)


def test_wrapped_callable_calls_the_original_outside_evaluation() -> None:
    db = Database()
    with capture_traces():
        checkout(db, "A1")
    assert db.calls == 1


def test_injected_input_replaces_value_and_provider_is_never_called() -> None:
    db = Database()
    with capture_traces() as handler, eval_inputs({"order": {"order_id": "Z", "total": 99.5}}):
        assert checkout(db, "A1") == "total 99.5"
    assert db.calls == 0
    assert handler.named_values[0].value == {"order_id": "Z", "total": 99.5}


@pytest.mark.anyio
async def test_async_callable_stays_async_and_is_injected() -> None:
    db = Database()
    fetch = wrap(db.fetch_order_async, purpose="input", name="order")
    with capture_traces() as handler:
        real = await fetch("B")
    assert real.total == 20.0 and db.calls == 1
    with capture_traces() as handler, eval_inputs({"order": "stub"}):
        assert await fetch("B") == "stub"
    assert db.calls == 1
    assert [r.value for r in handler.named_values] == ["stub"]


def test_plain_value_input_is_injected() -> None:
    with eval_inputs({"question": "injected?"}):
        assert wrap("live", purpose="input", name="question") == "injected?"
        assert wrap("kept", purpose="output", name="answer") == "kept"


def test_missing_injected_name_names_the_name_and_the_available_ones() -> None:
    with eval_inputs({"question": 1, "user": 2}, entry="entry #3"):
        with pytest.raises(MissingEvalInputError) as info:
            wrap("x", purpose="input", name="order")
    message = str(info.value)
    assert "name='order'" in message
    assert "'question', 'user'" in message
    assert "entry #3" in message


def test_bad_purpose_and_missing_name_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="purpose must be 'input', 'output', 'state' or 'entry'"):
        wrap(1, purpose="result", name="x")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="non-empty name="):
        wrap(1, purpose="output", name="")


def test_value_outside_any_span_is_still_recorded_in_the_capture() -> None:
    with capture_traces() as handler:
        wrap(3, purpose="output", name="n")
    (record,) = handler.named_values
    assert (record.name, record.value, record.span_id) == ("n", 3, None)


def test_many_flag_is_recorded_on_the_event() -> None:
    @wrap
    def collect() -> None:
        for i in range(2):
            wrap(i, purpose="state", name="step", many=True)

    with capture_traces() as handler:
        collect()
    assert [r.many for r in handler.named_values] == [True, True]
    events = [e for e in handler.raw_spans[0].events if e.name == conv.WRAP_EVENT]
    assert all(e.attributes[conv.WRAP_MANY] is True for e in events)
