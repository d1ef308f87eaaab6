"""Offline token counting: exact for OpenAI models, bounded for Claude, opt-in provider counts.

- ``count_tokens(model, messages=..., tools=..., text=..., system=...)``: offline, no network.
- ``count_request_tokens(provider, endpoint, body)``: a whole request body (the estimator's
  entry point); never raises on a body's shape.
- ``count_tokens_exact(client, model, messages=...)`` / ``acount_tokens_exact``: the
  provider's own count, one HTTP call through the user's client.

Every result is a ``TokenCount``: an ``int`` with ``.exact``, ``.margin`` and ``.method``.
tiktoken loads on the first count (from the bundled, hash-checked files in ``data/``), never
on import.
"""

from spendguard._costing.tokens.api import count_tokens
from spendguard._costing.tokens.count import TokenCount
from spendguard._costing.tokens.exact import acount_tokens_exact, count_tokens_exact
from spendguard._costing.tokens.requests import count_request_tokens

__all__ = [
    "TokenCount",
    "acount_tokens_exact",
    "count_request_tokens",
    "count_tokens",
    "count_tokens_exact",
]
