"""Anthropic requests: a Messages body read into a call (the same body on Bedrock and
Vertex AI once routed), the end user it names, and a Message Batches request's body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.calls import Call, body_model, int_field
from spendguard._costing.endpoints import Endpoint
from spendguard._providers.anthropic import endpoints

__all__ = ["batch_request", "build_call", "cache_ttls", "end_user"]


def cache_ttls(body: dict[str, Any]) -> tuple[str, ...]:
    """The TTLs of every ``cache_control`` marker (5 minutes when a marker names none)."""
    ttls: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            control = node.get("cache_control")
            if isinstance(control, dict):
                ttls.add(str(control.get("ttl") or "5m"))
            for value in node.values():
                if isinstance(value, (dict, list)):
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(body)
    return tuple(sorted(ttls))


def build_call(endpoint: Endpoint, body: dict[str, Any]) -> Call:
    """A Messages body read into a call."""
    model = body_model(endpoint, body)
    return Call(endpoints.PROVIDER, endpoint, model, body, int_field(body, "max_tokens"),
                1, bool(body.get("stream")), service_tier=None, speed=body.get("speed"),
                inference_geo=body.get("inference_geo"), cache_ttls=cache_ttls(body))


def batch_request(item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
    """The endpoint and body of a Message Batches request (``custom_id``, ``params``); None
    for anything else."""
    params = item.get("params")
    return (endpoints.MESSAGES, dict(params)) if isinstance(params, Mapping) else None


def end_user(body: Mapping[str, Any]) -> str | None:
    """The end user a request names: ``metadata.user_id``."""
    metadata = body.get("metadata")
    value = metadata.get("user_id") if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) and value else None
