"""``count_request_tokens``: the input tokens of a whole request body, as the SDKs send it.

This is what the estimator calls for every guarded request (and the planner for every planned
one), so it never raises on a body's shape: an endpoint or part it does not recognise is
counted as JSON text with headroom, and a model with no known tokenizer gets a loose bound.
Repeated strings (a shared system prompt or document) are encoded once (``bpe.count_text``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.tokens.anthropic import count_messages
from spendguard._costing.tokens.content import json_text, unknown
from spendguard._costing.tokens.count import Tally, TokenCount
from spendguard._costing.tokens.models import Profile, foreign_profile, profile_for
from spendguard._costing.tokens.openai import count_chat, count_embeddings, count_responses

__all__ = ["count_request_tokens"]

Handler = Callable[[Profile, Mapping[str, Any], Tally], None]


def _completions(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    count_embeddings(profile, body, tally, field="prompt")


def _message_batch(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    """``POST /v1/messages/batches``: the sum over its requests, each with its own model."""
    for request in body.get("requests") or []:
        params = request.get("params") if isinstance(request, Mapping) else None
        if not isinstance(params, Mapping):
            unknown(profile, tally, request)
            continue
        model = params.get("model")
        own = profile_for(model) if isinstance(model, str) else None
        count_messages(own or foreign_profile("", "anthropic"), params, tally)


_BY_ENDPOINT: dict[Endpoint, Handler] = {
    Endpoint.CHAT: count_chat, Endpoint.RESPONSES: count_responses,
    Endpoint.EMBEDDINGS: count_embeddings, Endpoint.MESSAGES: count_messages,
}
# Paths that are no priced endpoint but whose input is counted all the same.
_OTHER_PATHS: dict[str, tuple[tuple[str, Handler], ...]] = {
    "openai": (
        ("/responses/input_tokens", count_responses),
        ("/completions", _completions),
    ),
    "anthropic": (
        ("/messages/count_tokens", count_messages),
        ("/messages/batches", _message_batch),
    ),
}

# What a walker can raise on a body of an unexpected shape; TokenizerError (corrupt data)
# is deliberately not here: that must surface.
_SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError,
                 OverflowError)


def _handler(provider: str, endpoint: Endpoint | str) -> Handler | None:
    if not isinstance(endpoint, Endpoint):
        path = endpoint.split("?", 1)[0].rstrip("/")
        named = Endpoint.from_path(provider, path)
        if named is None or named not in _BY_ENDPOINT:
            return next((handler for suffix, handler in _OTHER_PATHS[provider]
                         if path.endswith(suffix)), None)
        endpoint = named
    return _BY_ENDPOINT.get(endpoint)


def count_request_tokens(provider: str, endpoint: Endpoint | str,
                         body: Mapping[str, Any]) -> TokenCount:
    """Input tokens of a request ``body`` sent to ``endpoint`` (an :class:`Endpoint`, or the
    URL path it was sent to: ``"/v1/chat/completions"``…).

    ``provider`` is ``"openai"``, ``"anthropic"`` or ``"gemini"`` (whose input is a stated
    upper bound: :mod:`spendguard._costing.providers.gemini.requests`). Never raises on the
    body's shape.
    """
    lowered = provider.lower() if isinstance(provider, str) else provider
    if lowered == "gemini":  # no offline tokenizer: the adapter's stated bound
        from spendguard._costing.providers.gemini.requests import count_input  # noqa: PLC0415

        return count_input(endpoint, body)
    if lowered not in _OTHER_PATHS:
        raise ConfigError(f"provider must be 'openai' or 'anthropic', got {provider!r}")
    key: Literal["openai", "anthropic"] = "openai" if lowered == "openai" else "anthropic"
    # A plain dict (the usual body) is told by its class: an ABC check costs more.
    mapping = body.__class__ is dict or isinstance(body, Mapping)
    model = body.get("model") if mapping else None
    profile = profile_for(model) if isinstance(model, str) else None
    if profile is None:
        profile = foreign_profile(model if isinstance(model, str) else "", key)
    handler = _handler(key, endpoint) if isinstance(endpoint, str) else None
    tally = profile.tally()
    if handler is not None and mapping:
        try:
            handler(profile, body, tally)
            return tally.result()
        except _SHAPE_ERRORS:
            tally = profile.tally()  # a shape no walker foresaw: fall back to the JSON text
    unknown(profile, tally, json_text(body))
    return tally.result()
