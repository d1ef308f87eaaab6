"""Anthropic's input count: an upper bound (Claude's tokenizer is not public:
``_costing/tokens/anthropic.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.endpoints import Endpoint
from spendguard._costing.tokens.anthropic import count_messages
from spendguard._costing.tokens.content import unknown
from spendguard._costing.tokens.count import Tally, TokenCount
from spendguard._costing.tokens.models import Profile, foreign_profile, profile_for
from spendguard._costing.tokens.requests import Walkers, count_with
from spendguard._providers.anthropic import endpoints, paths

__all__ = ["count_input"]


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


# Its endpoint's walker; paths that are no priced endpoint but whose input is counted too.
_WALKERS = Walkers({endpoints.MESSAGES: count_messages},
                   (("/messages/count_tokens", count_messages),
                    ("/messages/batches", _message_batch)), paths.endpoint_of)


def count_input(endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
    """The input tokens of a body (never raises on its shape)."""
    return count_with("anthropic", _WALKERS, endpoint, body)
