"""Gemini's endpoints and their facts, as ai.google.dev/api names them (the model is in each
path, so none has a fixed ``path``).

Pure data: the shared vocabulary (:class:`~spendguard._costing.endpoints.Endpoint`) loads it
by name; the rest of this package speaks of its endpoints through these constants.
"""

from __future__ import annotations

from spendguard._costing.endpoints import Endpoint, Provider

PROVIDER = Provider("gemini")

# Batch Mode runs generateContent requests (ai.google.dev/gemini-api/docs/batch-mode).
GENERATE = Endpoint.declare("generate_content", PROVIDER, None, ("models", "generate_content"),
                            True, batch_path="/v1beta/models/{model}:generateContent",
                            otel_operation=None, turns_field="contents",
                            system_field="systemInstruction", loose_words=("generate",))
"""``generateContent`` / ``streamGenerateContent``."""
EMBED = Endpoint.declare("embed_content", PROVIDER, None, ("models", "embed_content"), False,
                         generates=False, embeds=True, otel_operation="embeddings",
                         loose_words=("embed_content",))
"""``embedContent`` / ``batchEmbedContents``."""
CACHE = Endpoint.declare("cached_contents", PROVIDER, None, ("caches", "create"), False,
                         generates=False, cache_storage=True, otel_operation=None)
"""``cachedContents.create``: an explicit context cache (its tokens and storage)."""
CACHE_UPDATE = Endpoint.declare("cached_contents.update", PROVIDER, None, ("caches", "update"),
                                False, generates=False, bills_tokens=False, cache_storage=True,
                                otel_operation=None)
"""``cachedContents.patch``: a cache's new TTL (the storage it adds)."""
