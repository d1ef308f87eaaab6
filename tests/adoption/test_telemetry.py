"""OpenTelemetry: one GenAI span per call attempt, refusals as error spans with an event,
an enclosing GenAI span enriched instead of doubled, token and cost metrics by model and
scope; never prompt text. Checked with the OTel SDK's in-memory exporters."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OTel SDK comes with the dev extra")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import spendguard
from spendguard import BudgetExceeded, telemetry
from spendguard.testing import Emulator

PROMPT = "The secret launch code is swordfish-42."
MESSAGES: Any = [{"role": "user", "content": PROMPT}]


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider

    def finished(self) -> tuple[ReadableSpan, ...]:
        return self.spans.get_finished_spans()

    def points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [point for resource in data.resource_metrics for scope in resource.scope_metrics
                for metric in scope.metrics if metric.name == name
                for point in metric.data.data_points]


@pytest.fixture(name="otel")
def fixture_otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry.enable(tracer_provider=tracer_provider,
                     meter_provider=MeterProvider(metric_readers=[reader]))
    yield Otel(spans, reader, tracer_provider)
    telemetry.disable()


def _budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://otel-{uuid.uuid4().hex[:8]}",
                             scope=f"team:{uuid.uuid4().hex[:6]}", warn_at=None)


def test_every_call_is_a_genai_client_span_with_spendguard_attributes(otel: Otel) -> None:
    budget = _budget()
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
    reply = client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [span] = otel.finished()
    attributes = dict(span.attributes or {})
    assert span.name == "chat gpt-5.5" and span.kind is SpanKind.CLIENT
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == attributes["gen_ai.system"] == "openai"
    assert attributes["gen_ai.request.model"] == "gpt-5.5"
    assert attributes["gen_ai.response.model"] == reply.model
    assert reply.usage is not None
    assert attributes["gen_ai.usage.input_tokens"] == reply.usage.prompt_tokens
    assert attributes["gen_ai.usage.output_tokens"] == reply.usage.completion_tokens
    [record] = budget.ledger.records(scope=budget.scope)
    assert attributes["spendguard.actual_usd"] == float(record.actual_usd)
    assert attributes["spendguard.estimated_usd"] == float(record.estimated_usd)
    assert attributes["spendguard.scope"] == budget.scope
    assert attributes["spendguard.status"] == "ok"
    assert attributes["spendguard.price_table.version"] == record.table_version
    assert attributes["spendguard.budget.remaining_usd"] == float(budget.remaining)
    assert span.status.status_code is not StatusCode.ERROR


def test_each_attempt_of_a_retried_call_is_its_own_span(otel: Otel) -> None:
    emulator = Emulator(error_rate=1.0, error_statuses=(500,))
    client = spendguard.wrap(emulator.openai_client(max_retries=1), budget=_budget())
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    spans = otel.finished()
    assert [s.attributes["spendguard.attempt"] for s in spans  # type: ignore[index]
            ] == [1, 2]
    assert {s.attributes["spendguard.status"] for s in spans} == {  # type: ignore[index]
        "released"}


def test_a_refusal_is_an_error_span_with_a_refused_event(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget("0"))
    with pytest.raises(BudgetExceeded):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [span] = otel.finished()
    assert span.status.status_code is StatusCode.ERROR
    assert [e.name for e in span.events] == ["spendguard.refused"]
    assert (span.attributes or {})["error.type"] == "BudgetExceeded"
    [refusals] = otel.points("spendguard.refusals")
    assert refusals.value == 1


def test_observe_mode_marks_the_call_span_with_a_would_refuse_event(otel: Otel) -> None:
    budget = spendguard.Budget("0", ledger="memory://", enforce=False, warn_at=None)
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
    with pytest.warns(spendguard.BudgetWarning):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [span] = otel.finished()
    assert [e.name for e in span.events] == ["spendguard.would_refuse"]
    assert (span.attributes or {})["spendguard.status"] == "ok"
    assert "spendguard.budget.remaining_usd" not in (span.attributes or {})  # nothing enforces


def test_an_enclosing_genai_span_is_enriched_not_doubled(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
    tracer = otel.tracer_provider.get_tracer("another.instrumentation")
    with tracer.start_as_current_span("chat gpt-5.5",
                                      attributes={"gen_ai.operation.name": "chat"}):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [span] = otel.finished()
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "another.instrumentation"
    assert (span.attributes or {})["spendguard.status"] == "ok"


def test_metrics_count_tokens_and_cost_by_model_and_scope(otel: Otel) -> None:
    budget = _budget()
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
    for _ in range(2):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [cost] = otel.points("spendguard.cost")
    assert cost.attributes["gen_ai.request.model"] == "gpt-5.5"
    assert cost.attributes["spendguard.scope"] == budget.scope
    assert cost.value == pytest.approx(float(budget.spent))
    tokens = {p.attributes["gen_ai.token.type"]: p for p in otel.points(
        "gen_ai.client.token.usage")}
    assert tokens["input"].count == tokens["output"].count == 2
    records = list(budget.ledger.records(scope=budget.scope))
    assert tokens["output"].sum == sum(r.tokens["output"] for r in records)
    assert otel.points("gen_ai.client.operation.duration")[0].count == 2


def test_no_prompt_text_reaches_spans_or_events(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget(),
                             store_prompts=True)
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    text = repr([(s.attributes, [(e.name, e.attributes) for e in s.events])
                 for s in otel.finished()])
    assert "swordfish" not in text and "emulated" not in text  # neither prompt nor key


def test_telemetry_is_off_until_enabled() -> None:
    assert not telemetry.enabled()
    telemetry.enable()
    assert telemetry.enabled()
    telemetry.disable()
    telemetry.disable()
    assert not telemetry.enabled()


def test_a_runaway_refusal_is_an_error_span_naming_the_rule(otel: Otel) -> None:
    budget = spendguard.Budget("1", ledger=f"memory://otel-{uuid.uuid4().hex[:8]}",
                               scope=f"agent:{uuid.uuid4().hex[:6]}", warn_at=None,
                               runaway=spendguard.RunawayRules(max_repeats=1))
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    with pytest.raises(spendguard.RunawayRefused):
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    sent, refused = otel.finished()
    assert sent.status.status_code is not StatusCode.ERROR
    assert refused.status.status_code is StatusCode.ERROR
    [event] = refused.events
    assert event.name == "spendguard.refused"
    assert "max_repeats" in str((event.attributes or {})["message"])
