"""One outgoing request, read for pricing: which provider, endpoint and model, and its output cap.

The transport hands every request to :func:`classify`. A request is either *priced* (it can
spend money: chat completions, Responses, embeddings, messages), *free* (reads, uploads, token
counts, cancels), or *unsupported* (it might spend, but the guard cannot price it; refused by
default so unpriced spend never slips through).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from spendguard._core.errors import ConfigError, UnsupportedEndpointError
from spendguard._costing.endpoints import Endpoint, Provider

__all__ = ["Call", "Endpoint", "Provider", "classify", "parse_body"]


@dataclass(frozen=True, slots=True)
class Call:
    """A priced request: what the estimator needs, read from the JSON body."""

    provider: Provider
    endpoint: Endpoint
    model: str
    body: dict[str, Any] = field(repr=False)
    output_cap: int | None
    """Tokens the request may generate per choice (None: the model's maximum)."""
    choices: int = 1
    stream: bool = False
    service_tier: str | None = None
    speed: str | None = None
    inference_geo: str | None = None
    cache_ttls: tuple[str, ...] = ()
    """TTLs the request may write to the cache (Anthropic cache_control, OpenAI options)."""

    @property
    def cap_field(self) -> str | None:
        """The body field that caps output, for ``cap_output=True`` rewriting."""
        if self.endpoint is Endpoint.CHAT:
            return "max_tokens" if "max_tokens" in self.body and \
                "max_completion_tokens" not in self.body else "max_completion_tokens"
        if self.endpoint is Endpoint.RESPONSES:
            return "max_output_tokens"
        if self.endpoint is Endpoint.MESSAGES:
            return "max_tokens"
        return None


def classify(provider: Provider, method: str, path: str, *,
             allow_unpriced: bool = False) -> Endpoint | None:
    """The endpoint a request goes to, FREE for ones that cannot spend.

    Returns None for an unpriced endpoint when ``allow_unpriced`` is set; raises
    ``UnsupportedEndpointError`` for it otherwise. The answer depends on its arguments alone,
    and a client sends the same few paths again and again: each is decided once (an LRU).
    """
    return _classified(provider, method, path, allow_unpriced)


@functools.lru_cache(maxsize=1024)
def _classified(provider: Provider, method: str, path: str,
                allow_unpriced: bool) -> Endpoint | None:
    if method.upper() in {"GET", "DELETE", "HEAD", "OPTIONS"}:
        return Endpoint.FREE
    endpoint = Endpoint.from_path(provider, path)
    if endpoint is not None:
        return endpoint
    if allow_unpriced:
        return None
    hint = ""
    if path.rstrip("/").endswith("/batches"):
        hint = (" Batch jobs are priced by spendguard.batch(), which reserves the batch's worst "
                "case before submitting.")
    raise UnsupportedEndpointError(
        f"spendguard cannot price {method} {path}, so it refused to send it.{hint} "
        "To send requests the guard cannot price (their cost is then NOT counted), build the "
        "client with allow_unpriced=True.",
        method=method,
        path=path,
    )


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body; a clear error for anything else."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ConfigError(f"request body is not JSON ({exc}); spendguard cannot price it") \
            from exc
    if not isinstance(body, dict):
        raise ConfigError("request body must be a JSON object to be priced")
    return body


def _int_field(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name}: expected a non-negative integer, got {value!r}")
    return value


def _anthropic_cache_ttls(body: dict[str, Any]) -> tuple[str, ...]:
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


def _openai_cache_ttls(body: dict[str, Any]) -> tuple[str, ...]:
    options = body.get("prompt_cache_options")
    if isinstance(options, dict):
        return (str(options.get("ttl") or "30m"),)
    return ("30m",)  # automatic caching may write the default TTL


def build_call(provider: Provider, endpoint: Endpoint, body: dict[str, Any]) -> Call:
    """Read a priced request body into a :class:`Call`."""
    if provider is Provider.GEMINI:  # the adapter reads its own bodies
        from spendguard._costing.providers.gemini.requests import (  # noqa: PLC0415
            build_call as gemini_call,
        )

        return gemini_call(endpoint, body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{endpoint.value} request has no 'model'; spendguard cannot price it")
    stream = bool(body.get("stream"))
    if endpoint is Endpoint.CHAT:
        cap = _int_field(body, "max_completion_tokens")
        if cap is None:
            cap = _int_field(body, "max_tokens")
        choices = _int_field(body, "n") or 1
        return Call(provider, endpoint, model, body, cap, choices, stream,
                    service_tier=body.get("service_tier"),
                    cache_ttls=_openai_cache_ttls(body))
    if endpoint is Endpoint.RESPONSES:
        return Call(provider, endpoint, model, body, _int_field(body, "max_output_tokens"), 1,
                    stream, service_tier=body.get("service_tier"),
                    cache_ttls=_openai_cache_ttls(body))
    if endpoint is Endpoint.EMBEDDINGS:
        return Call(provider, endpoint, model, body, 0, 1, False)
    cap = _int_field(body, "max_tokens")
    return Call(provider, endpoint, model, body, cap, 1, stream,
                service_tier=None, speed=body.get("speed"),
                inference_geo=body.get("inference_geo"),
                cache_ttls=_anthropic_cache_ttls(body))
