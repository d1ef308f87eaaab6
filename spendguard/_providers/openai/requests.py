"""OpenAI requests: a body read into a call, and the input it will bill (counted exactly with
OpenAI's own tokenizers, :mod:`spendguard._costing.tokens.openai`); a batch input line read
into its endpoint and body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Call, body_model, int_field
from spendguard._costing.endpoints import Endpoint
from spendguard._providers.openai import endpoints
from spendguard._providers.openai.usage import unpriced_audio

__all__ = ["batch_request", "billed_later", "build_call", "cache_ttls", "end_user",
           "refuse_unpriced"]


def cache_ttls(body: dict[str, Any]) -> tuple[str, ...]:
    """The cache TTL a request may write: the one it asks for, else the 30-minute default
    (automatic caching may write it)."""
    if "prompt_cache_options" not in body:  # most requests: no call to find that out
        return ("30m",)
    options = body["prompt_cache_options"]
    if isinstance(options, dict):
        return (str(options.get("ttl") or "30m"),)
    return ("30m",)


def billed_later(endpoint: Endpoint, body: object) -> str | None:
    """``"background"`` for a Responses reply still queued or in progress with no usage
    (``background=True``: billed later, out of our sight); None for any other reply."""
    if (endpoint is endpoints.RESPONSES and isinstance(body, dict)
            and body.get("status") in ("queued", "in_progress") and body.get("usage") is None):
        return "background"
    return None


def build_call(endpoint: Endpoint, body: dict[str, Any]) -> Call:
    """Chat Completions, Responses and Embeddings bodies read into a call."""
    model = body_model(endpoint, body)
    # Membership and indexing rather than .get: every guarded call reads these.
    stream = "stream" in body and bool(body["stream"])
    tier = None
    if "service_tier" in body:
        tier = body["service_tier"]
    if endpoint is endpoints.CHAT:
        # The fields a request leaves out (most leave out two of these) cost no call.
        cap = int_field(body, "max_completion_tokens") if "max_completion_tokens" in body \
            else None
        if cap is None and "max_tokens" in body:
            cap = int_field(body, "max_tokens")
        choices = (int_field(body, "n") if "n" in body else None) or 1
        return Call(endpoints.PROVIDER, endpoint, model, body, cap, choices, stream,
                    service_tier=tier, cache_ttls=cache_ttls(body))
    if endpoint is endpoints.RESPONSES:
        return Call(endpoints.PROVIDER, endpoint, model, body,
                    int_field(body, "max_output_tokens"), 1, stream,
                    service_tier=tier, cache_ttls=cache_ttls(body))
    return Call(endpoints.PROVIDER, endpoint, model, body, 0, 1, False)


def batch_request(item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
    """The endpoint and body of a batch input line (``custom_id``, ``method``, ``url``,
    ``body``); None for anything else."""
    if "body" not in item or "url" not in item:
        return None
    endpoint = Endpoint.from_batch_url(item["url"])
    if endpoint is None or not isinstance(item["body"], Mapping):
        raise ConfigError(f"url {item['url']!r} is not an endpoint spendguard plans "
                          "(/v1/chat/completions, /v1/responses, /v1/embeddings)")
    return endpoint, dict(item["body"])


def end_user(body: Any) -> str | None:
    """The end user a request names: ``safety_identifier``, or the older ``user``."""
    value = body.get("safety_identifier") or body.get("user")
    return value if isinstance(value, str) and value else None


def refuse_unpriced(call: Call, raw: bytes | None = None) -> None:
    """No table prices audio tokens: a request for them is refused, never priced as text.

    ``raw``: the JSON the call's body was parsed from, when it was. UTF-8 bytes (no NUL: JSON
    in UTF-16 or UTF-32 has one in every ASCII character) that hold neither ``audio`` nor a
    ``\\u00`` escape (the only other way JSON spells an ASCII letter) cannot ask for audio,
    and C substring scans tell so without walking the messages.
    """
    if call.endpoint is endpoints.EMBEDDINGS:
        return
    if raw is not None and b"audio" not in raw and b"\\u00" not in raw \
            and b"\x00" not in raw:
        return
    asked = _asks_for_audio(call.body)
    if asked is not None:
        raise unpriced_audio(f"{call.model}: the request asks for {asked}")


def _asks_for_audio(body: Mapping[str, Any]) -> str | None:
    """Where a request asks for audio tokens (output, or an input part), if it does."""
    modalities = body.get("modalities")
    if body.get("audio") is not None or (isinstance(modalities, list) and "audio" in modalities):
        return "audio output (modalities / audio)"
    # Every request pays this scan, once per message: a plain loop, and the exact-dict test
    # before the Mapping one (a parsed JSON body's objects are dicts; the ABC check is dearer).
    for key in ("messages", "input"):
        items = body.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            if type(item) is not dict and not isinstance(item, Mapping):
                continue
            content = item.get("content")
            if item.get("type") == "input_audio" or (isinstance(content, list) and any(
                    (type(part) is dict or isinstance(part, Mapping))
                    and part.get("type") == "input_audio" for part in content)):
                return f"audio input (an input_audio part in {key})"
    return None
