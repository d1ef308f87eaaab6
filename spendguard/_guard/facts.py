"""What a request and its response say of themselves, in the names observers expect.

Telemetry reports a call in the OpenTelemetry GenAI conventions' terms: the service it went
to (``gen_ai.provider.name``: ``aws.bedrock`` for Claude on Bedrock, ``azure.ai.openai`` for an
Azure deployment, ``deepseek`` for DeepSeek's OpenAI-compatible API), the model as the caller
wrote it (not the price-table id spendguard resolved it to), the server, the request's output
cap and temperature, the response's id and finish reasons. These are read here, only while a
subscriber listens to call events, so the call path pays nothing for them otherwise.

Provider names follow the conventions' registry (``gen_ai.provider.name`` well-known values,
open-telemetry/semantic-conventions, ``model/gen-ai/registry.yaml``); a host the registry does
not list keeps its price-file name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from spendguard._budget.ledger.base import CallFacts
from spendguard._costing.calls import Call
from spendguard._costing.routing import AZURE, AZURE_PRICE_AFTER, Route
from spendguard._providers import otel_provider_name

__all__ = ["call_facts", "response_facts"]

# Price-table id prefixes of platform routes -> the conventions' provider name.
_PLATFORM_PREFIXES = (("bedrock/", "aws.bedrock"), ("vertex-regional/", "gcp.vertex_ai"),
                      ("vertex/", "gcp.vertex_ai"))
# OpenAI-compatible hosts of the bundled price files whose registry name differs.
_HOST_NAMES = {"moonshot": "moonshot_ai", "mistral": "mistral_ai", "xai": "x_ai"}


def provider_name(provider: str, platform: str | None, route: Route | None) -> str:
    """The conventions' ``gen_ai.provider.name`` of a request's destination."""
    if platform in (AZURE, AZURE_PRICE_AFTER):
        return "azure.ai.openai"
    if route is not None and route.service:
        return route.service
    if route is not None:
        for prefix, name in _PLATFORM_PREFIXES:
            if route.model.startswith(prefix):
                return name
        host, slash, _ = route.model.partition("/")
        if slash:
            return _HOST_NAMES.get(host) or otel_provider_name(host)
    return otel_provider_name(provider)


def _requested_model(wire_body: Mapping[str, Any], route: Route | None, priced: str) -> str:
    model = wire_body.get("model")
    if isinstance(model, str) and model:
        return model
    if route is not None:  # the path named it: a Bedrock model id, a Vertex model, a deployment
        for separator in ("/", ":"):
            head, found, tail = route.model.partition(separator)
            if found and head:
                return tail
    return priced


def call_facts(provider: str, platform: str | None, url: httpx2.URL,
               wire_body: Mapping[str, Any], call: Call, route: Route | None) -> CallFacts:
    """A request's facts as telemetry names them (``wire_body``: what is sent)."""
    cap = call.body.get(call.cap_field) if call.cap_field is not None else None
    temperature = wire_body.get("temperature")
    port = url.port or {"https": 443, "http": 80}.get(url.scheme)
    return CallFacts(
        provider_name=provider_name(provider, platform, route),
        request_model=_requested_model(wire_body, route, call.model),
        server_address=url.host or None,
        server_port=port,
        max_tokens=cap if isinstance(cap, int) and not isinstance(cap, bool) else None,
        temperature=(float(temperature) if isinstance(temperature, int | float)
                     and not isinstance(temperature, bool) else None),
    )


def response_facts(body: Mapping[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """A response body's id and finish reasons (chat choices, Responses, Messages, Gemini
    candidates)."""
    response_id = body.get("id")
    reasons: list[str] = []
    choices = body.get("choices")
    if isinstance(choices, list):
        reasons = [str(c["finish_reason"]) for c in choices
                   if isinstance(c, dict) and c.get("finish_reason")]
    elif isinstance(body.get("stop_reason"), str):  # Anthropic Messages
        reasons = [body["stop_reason"]]
    elif isinstance(body.get("candidates"), list):  # Gemini generateContent
        response_id = body.get("responseId")
        reasons = [str(c["finishReason"]) for c in body["candidates"]
                   if isinstance(c, dict) and c.get("finishReason")]
    elif isinstance(body.get("status"), str) and body.get("object") == "response":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        reasons = [str(reason or body["status"])]
    return (response_id if isinstance(response_id, str) else None), tuple(reasons)
