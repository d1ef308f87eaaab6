"""OpenAI's endpoints and their facts, as platform.openai.com/docs/api-reference names them.

Pure data: the shared vocabulary (:class:`~spendguard._costing.endpoints.Endpoint`) loads it
by name; the rest of this package speaks of its endpoints through these constants.
"""

from __future__ import annotations

from spendguard._costing.endpoints import Endpoint, Provider

PROVIDER = Provider("openai")

# The default (chat) first: Endpoint.of lists a provider's endpoints in this order.
CHAT = Endpoint.declare("chat.completions", PROVIDER, "/v1/chat/completions",
                        ("chat", "completions", "create"), True, turns_field="messages",
                        cap_fields=("max_completion_tokens", "max_tokens"),
                        short_names=("chat",), loose_words=("chat",))
RESPONSES = Endpoint.declare("responses", PROVIDER, "/v1/responses", ("responses", "create"),
                             True, turns_field="input", system_field="instructions",
                             cap_fields=("max_output_tokens",), cache_ttl_choice=True,
                             loose_words=("respons",))
EMBEDDINGS = Endpoint.declare("embeddings", PROVIDER, "/v1/embeddings", ("embeddings", "create"),
                              True, generates=False, embeds=True, otel_operation="embeddings",
                              loose_words=("embedding",))
