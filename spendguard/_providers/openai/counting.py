"""OpenAI's input count: exact, with OpenAI's own tokenizers (``_costing/tokens``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._costing.endpoints import Endpoint
from spendguard._costing.tokens.count import Tally, TokenCount
from spendguard._costing.tokens.models import Profile
from spendguard._costing.tokens.openai import (
    count_chat,
    count_embeddings,
    count_responses,
    plain_chat_tokens,
)
from spendguard._costing.tokens.requests import Walkers, count_with
from spendguard._providers.openai import endpoints, paths

__all__ = ["count_input"]


def _completions(profile: Profile, body: Mapping[str, Any], tally: Tally) -> None:
    count_embeddings(profile, body, tally, field="prompt")


# Its endpoints' walkers; paths that are no priced endpoint but whose input is counted too.
_WALKERS = Walkers({endpoints.CHAT: count_chat, endpoints.RESPONSES: count_responses,
                    endpoints.EMBEDDINGS: count_embeddings},
                   (("/responses/input_tokens", count_responses),
                    ("/completions", _completions)), paths.endpoint_of,
                   {endpoints.CHAT: plain_chat_tokens})


def count_input(endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
    """The input tokens of a body (never raises on its shape)."""
    return count_with("openai", _WALKERS, endpoint, body)
