"""OpenTelemetry beside other instrumentation: the GenAI conventions' names and values, never
another instrumentation's attribute changed, no instrument emitted twice for one call,
buckets as the conventions advise, estimated usage kept apart, and a real OTLP/HTTP export.
Checked with the OTel SDK's in-memory exporters and a receiver on loopback."""

from __future__ import annotations

import http.server
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import anthropic
import httpx2
import openai
import pytest
from google.genai import types

pytest.importorskip("opentelemetry.sdk", reason="the OTel SDK comes with the dev extra "
                                                "(pip install -e '.[dev]')")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import spendguard
import spendguard.telemetry
from spendguard.testing import Emulator

MESSAGES: Any = [{"role": "user", "content": "hi"}]
US_SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
# The conventions' advice for gen_ai.client.token.usage and gen_ai.client.operation.duration.
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92]


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def finished(self) -> tuple[ReadableSpan, ...]:
        return self.spans.get_finished_spans()

    def points(self, name: str, scope: str | None = None) -> list[Any]:
        data = self.metrics.get_metrics_data()
        if data is None:
            return []
        return [point for resource in data.resource_metrics for scopes in resource.scope_metrics
                if scope is None or scopes.scope.name == scope
                for metric in scopes.metrics if metric.name == name
                for point in metric.data.data_points]


def _providers() -> Otel:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Otel(spans, reader, tracer_provider, MeterProvider(metric_readers=[reader]))


@pytest.fixture(name="otel")
def fixture_otel() -> Iterator[Otel]:
    otel = _providers()
    spendguard.telemetry.enable(tracer_provider=otel.tracer_provider,
                                meter_provider=otel.meter_provider)
    yield otel
    spendguard.telemetry.disable()


def _budget() -> spendguard.Budget:
    return spendguard.Budget("5", ledger=f"memory://otelc-{uuid.uuid4().hex[:8]}", warn_at=None)


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_provider_names_and_request_models_follow_the_conventions(otel: Otel) -> None:
    emulator = Emulator(reply_tokens=20)
    http = httpx2.Client(transport=emulator.transport())
    spendguard.OpenAI(api_key="k", base_url="http://openai.spendguard.invalid/v1",
                      budget=_budget(), http_client=http).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, max_tokens=10)
    spendguard.Anthropic(api_key="k", base_url="http://anthropic.spendguard.invalid",
                         budget=_budget(), http_client=http).messages.create(
        model="claude-haiku-4-5", messages=MESSAGES, max_tokens=10)
    spendguard.AzureOpenAI(
        api_key="k", azure_endpoint="http://azure.spendguard.invalid", api_version="2024-10-21",
        deployments={"chat-prod": "gpt-4o"}, budget=_budget(),
        http_client=http).chat.completions.create(model="chat-prod", messages=MESSAGES,
                                                  max_tokens=10)
    spendguard.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url="http://bedrock.spendguard.invalid",
        budget=_budget(), http_client=http).messages.create(
        model=US_SONNET, messages=MESSAGES, max_tokens=10)
    spendguard.AnthropicVertex(
        region="global", project_id="p", access_token="t",
        base_url="http://vertex.spendguard.invalid/v1", budget=_budget(),
        http_client=http).messages.create(model="claude-sonnet-4-5@20250929",
                                          messages=MESSAGES, max_tokens=10)
    spendguard.OpenAI(api_key="k", base_url="https://api.moonshot.ai/v1", budget=_budget(),
                      http_client=http).chat.completions.create(
        model="kimi-k3", messages=MESSAGES, max_tokens=10)
    seen = [(_attributes(s)["gen_ai.provider.name"], _attributes(s)["gen_ai.request.model"],
             s.name) for s in otel.finished()]
    assert seen == [
        ("openai", "gpt-4o", "chat gpt-4o"),
        ("anthropic", "claude-haiku-4-5", "chat claude-haiku-4-5"),
        ("azure.ai.openai", "chat-prod", "chat chat-prod"),
        ("aws.bedrock", US_SONNET, f"chat {US_SONNET}"),
        ("gcp.vertex_ai", "claude-sonnet-4-5@20250929", "chat claude-sonnet-4-5@20250929"),
        ("moonshot_ai", "kimi-k3", "chat kimi-k3"),
    ]
    # spendguard's own pricing name stays available, under its own namespace
    pricing = [_attributes(s)["spendguard.pricing.model"] for s in otel.finished()]
    assert pricing[2] == "azure:chat-prod" and pricing[3] == f"bedrock/{US_SONNET}"


def test_recommended_attributes_are_on_every_call_span(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
    reply = client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30,
                                           temperature=0.2)
    [span] = otel.finished()
    attributes = _attributes(span)
    assert attributes["server.address"] == client.base_url.host
    assert isinstance(attributes["server.port"], int)
    assert attributes["gen_ai.request.max_tokens"] == 30
    assert attributes["gen_ai.request.temperature"] == pytest.approx(0.2)
    assert attributes["gen_ai.response.id"] == reply.id
    assert list(attributes["gen_ai.response.finish_reasons"]) == [reply.choices[0].finish_reason]


def test_a_429_attempt_carries_its_error_type(otel: Otel) -> None:
    emulator = Emulator()
    emulator.fail_next(1, status=429)
    client = spendguard.wrap(emulator.openai_client(max_retries=1), budget=_budget())
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    failed, answered = otel.finished()
    assert _attributes(failed)["error.type"] == "429"
    assert failed.status.status_code is StatusCode.ERROR
    assert "error.type" not in _attributes(answered)
    durations = otel.points("gen_ai.client.operation.duration")
    assert {p.attributes.get("error.type") for p in durations} == {"429", None}


def test_the_anthropic_sdks_own_span_keeps_every_attribute_it_set(otel: Otel) -> None:
    emulator = Emulator(reply_tokens=20)
    client = spendguard.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url="http://bedrock.spendguard.invalid",
        budget=_budget(), http_client=httpx2.Client(transport=emulator.transport()),
        open_telemetry={"tracer_provider": otel.tracer_provider, "traces": True})
    client.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=10)
    alone = _providers()  # the same call, spendguard's telemetry off: the SDK's span as is
    spendguard.telemetry.disable()
    plain = anthropic.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url="http://bedrock.spendguard.invalid",
        http_client=httpx2.Client(transport=Emulator(reply_tokens=20).transport()),
        open_telemetry={"tracer_provider": alone.tracer_provider, "traces": True})
    plain.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=10)
    [theirs] = alone.finished()
    [enriched] = otel.finished()  # enriched, not doubled
    ours = _attributes(enriched)
    for name, value in _attributes(theirs).items():
        if name.startswith("gen_ai."):
            assert ours[name] == value, name
    assert ours["gen_ai.provider.name"] == "aws.bedrock"
    assert ours["gen_ai.request.model"] == US_SONNET
    assert ours["spendguard.status"] == "ok" and ours["spendguard.actual_usd"] > 0


def test_no_instrument_is_emitted_twice_beside_the_openai_instrumentation(otel: Otel) -> None:
    instrumentation = pytest.importorskip(
        "opentelemetry.instrumentation.openai_v2",
        reason="opentelemetry-instrumentation-openai-v2 comes with the dev extra")
    instrumentor = instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=otel.tracer_provider,
                            meter_provider=otel.meter_provider)
    try:
        client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    finally:
        instrumentor.uninstrument()
    [span] = otel.finished()  # theirs, enriched
    assert _attributes(span)["spendguard.status"] == "ok"
    for name in ("gen_ai.client.token.usage", "gen_ai.client.operation.duration"):
        assert otel.points(name, scope="spendguard") == [], name
        assert otel.points(name), name  # theirs
    [cost] = otel.points("spendguard.cost")  # what nobody else emits stays on
    assert cost.value > 0


def test_histograms_use_the_buckets_the_conventions_advise(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    [tokens, _] = otel.points("gen_ai.client.token.usage")
    [duration] = otel.points("gen_ai.client.operation.duration")
    [usd] = otel.points("spendguard.call.cost")
    assert list(tokens.explicit_bounds) == TOKEN_BUCKETS
    assert list(duration.explicit_bounds) == DURATION_BUCKETS
    # a typical call's cost lands inside the range, not all in the first bucket
    assert usd.bucket_counts[0] == 0 and sum(usd.bucket_counts) == 1


def _cut_stream_span(otel: Otel) -> dict[str, Any]:
    emulator = Emulator()
    emulator.break_next_stream(after_events=3, path="/v1/chat/completions")
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget=_budget())
    with pytest.raises(openai.APIConnectionError):
        for _ in client.chat.completions.create(model="gpt-5.5", messages=MESSAGES,
                                                max_tokens=30, stream=True):
            pass
    [span] = otel.finished()
    return _attributes(span)


def test_estimated_usage_stays_apart_unless_asked_for(otel: Otel) -> None:
    attributes = _cut_stream_span(otel)
    assert attributes["spendguard.usage_estimated"] is True
    assert "gen_ai.usage.output_tokens" not in attributes
    assert attributes["spendguard.usage.estimated_output_tokens"] > 0
    assert otel.points("gen_ai.client.token.usage") == []


def test_estimated_usage_is_reported_as_usage_when_opted_in() -> None:
    otel = _providers()
    spendguard.telemetry.enable(tracer_provider=otel.tracer_provider,
                                meter_provider=otel.meter_provider, estimated_usage=True)
    try:
        attributes = _cut_stream_span(otel)
    finally:
        spendguard.telemetry.disable()
    assert attributes["spendguard.usage_estimated"] is True
    assert attributes["gen_ai.usage.output_tokens"] > 0


def test_draft_cost_attributes_come_only_when_asked_for(otel: Otel) -> None:
    client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    assert not any(name.startswith("gen_ai.usage.cost")
                   for name in _attributes(otel.finished()[0]))
    spendguard.telemetry.enable(tracer_provider=otel.tracer_provider,
                                meter_provider=otel.meter_provider, cost_attributes=True)
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    attributes = _attributes(otel.finished()[1])
    assert attributes["gen_ai.usage.cost.amount"] == attributes["spendguard.actual_usd"] > 0
    assert attributes["gen_ai.usage.cost.currency"] == "USD"
    assert attributes["gen_ai.usage.cost.source"] == "local"


def test_a_bad_metrics_option_is_refused_by_name() -> None:
    with pytest.raises(spendguard.ConfigError, match="genai_metrics"):
        spendguard.telemetry.enable(genai_metrics="sometimes")  # type: ignore[arg-type]


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.bodies.append((self.path, self.rfile.read(length)))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_spans_reach_a_real_otlp_http_receiver() -> None:
    exporter_module = pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        reason="opentelemetry-exporter-otlp-proto-http comes with the dev extra")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    _Receiver.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    tracer_provider = TracerProvider()
    exporter = exporter_module.OTLPSpanExporter(
        endpoint=f"http://127.0.0.1:{server.server_port}/v1/traces", timeout=5)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    spendguard.telemetry.enable(tracer_provider=tracer_provider)
    try:
        client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=_budget())
        client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    finally:
        spendguard.telemetry.disable()
        tracer_provider.shutdown()
        server.shutdown()
        server.server_close()
    [(path, body)] = _Receiver.bodies
    assert path == "/v1/traces"
    request = ExportTraceServiceRequest.FromString(body)
    [span] = [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
    attributes = {a.key: a.value for a in span.attributes}
    assert span.name == "chat gpt-5.5"
    assert attributes["gen_ai.provider.name"].string_value == "openai"
    assert attributes["spendguard.actual_usd"].double_value > 0


def test_gemini_calls_are_named_by_their_service(otel: Otel) -> None:
    emulator = Emulator(reply_tokens=20)
    config = types.GenerateContentConfig(
        max_output_tokens=10, thinking_config=types.ThinkingConfig(thinking_budget=0))
    spendguard.Gemini(api_key="k", budget=_budget(),
                      http_options=emulator.gemini_http_options()).models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=config)
    spendguard.Gemini(vertexai=True, api_key="k", budget=_budget(),
                      http_options=emulator.gemini_http_options()).models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=config)
    spendguard.OpenAI(api_key="k", base_url="http://gemini.invalid/v1beta/openai/",
                      budget=_budget(), http_client=httpx2.Client(
                          transport=emulator.transport())).chat.completions.create(
        model="gemini-2.5-flash", messages=MESSAGES, max_tokens=10)
    seen = [(_attributes(s)["gen_ai.provider.name"], s.name) for s in otel.finished()]
    assert seen == [("gcp.gemini", "generate_content gemini-2.5-flash"),
                    ("gcp.vertex_ai", "generate_content gemini-2.5-flash"),
                    ("gcp.gemini", "chat gemini-2.5-flash")]
