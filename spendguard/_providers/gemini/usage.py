"""Gemini usage: ``usageMetadata`` of a reply, a streamed chunk or an SDK object.

``promptTokenCount`` INCLUDES ``cachedContentTokenCount`` (implicit and explicit cache hits,
billed at the cache rate); ``toolUsePromptTokenCount`` (results of server tools fed back to
the model) is billed as input on top; ``thoughtsTokenCount`` is billed as output and is NOT
part of ``candidatesTokenCount``. Grounding with Google Search is billed per grounded prompt
(Gemini 2.x) or per search query (Gemini 3 on): a reply whose candidate carries
``groundingMetadata`` counts one ``google_search`` and one ``google_search_query`` per query
in ``webSearchQueries``; each model's price entry bills one of the two. An explicit cache's
create reply is read as its tokens (input) and their storage for its TTL
(``cache_storage_token_seconds``), a TTL update's as the storage it adds
(:mod:`~spendguard._providers.gemini.caches`). Field names are the
REST reference's (ai.google.dev/api/generate-content#UsageMetadata); the SDK's snake_case
spellings are read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spendguard._core.errors import ProviderResponseError
from spendguard._costing.prices import CACHE_STORAGE
from spendguard._costing.usage import Usage
from spendguard._providers import read_count, to_plain
from spendguard._providers.gemini import endpoints
from spendguard._providers.gemini.caches import added_storage, created_storage
from spendguard._providers.gemini.requests import field

__all__ = ["GeminiStreamReader", "grounding_requests", "usage_from_gemini"]

PROVIDER = "gemini"


def _count(meta: Mapping[str, Any], camel: str, *, required: bool = False) -> int:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    key = camel if camel in meta or snake not in meta else snake
    return read_count(meta, key, provider=PROVIDER, path="usageMetadata", required=required)


def grounding_requests(data: Mapping[str, Any]) -> dict[str, int]:
    """Billable grounding requests of one reply (or chunk): see the module's rule."""
    queries: set[str] = set()
    grounded = False
    candidates = field(data, "candidates")
    for candidate in candidates if isinstance(candidates, list) else []:
        metadata = field(candidate, "groundingMetadata")
        if not isinstance(metadata, Mapping) or not metadata:
            continue
        grounded = True
        found = field(metadata, "webSearchQueries")
        if isinstance(found, list):
            queries.update(query for query in found if isinstance(query, str))
    if not grounded:
        return {}
    return {"google_search": 1, "google_search_query": len(queries)}


def usage_from_gemini(payload: object, *, endpoint: str | None = None) -> Usage:
    """Usage from a ``GenerateContentResponse`` (dict or SDK object), one streamed chunk, or a
    bare ``usageMetadata``."""
    data = to_plain(payload, provider=PROVIDER)
    if "cachedContents/" in str(field(data, "name") or ""):  # an explicit cache's reply
        if endpoint == endpoints.CACHE_UPDATE:  # no tokens written: the storage it adds
            tokens, seconds = added_storage(data)
            return Usage(tool_requests={CACHE_STORAGE: tokens * seconds})
        tokens, seconds = created_storage(data)
        return Usage(input_tokens=tokens, tool_requests={CACHE_STORAGE: tokens * seconds})
    meta = field(data, "usageMetadata")
    if meta is None and field(data, "promptTokenCount") is not None:
        meta = data
    if not isinstance(meta, Mapping):
        raise ProviderResponseError("gemini: the response has no usageMetadata",
                                    provider=PROVIDER, field="usageMetadata")
    return _usage(meta, grounding_requests(data))


def _usage(meta: Mapping[str, Any], tools: Mapping[str, int]) -> Usage:
    prompt = _count(meta, "promptTokenCount", required=True)
    cached = _count(meta, "cachedContentTokenCount")
    if cached > prompt:
        raise ProviderResponseError(
            f"gemini: usageMetadata.cachedContentTokenCount ({cached}) exceeds "
            f"promptTokenCount ({prompt})", provider=PROVIDER,
            field="usageMetadata.cachedContentTokenCount")
    tool_prompt = _count(meta, "toolUsePromptTokenCount")
    thoughts = _count(meta, "thoughtsTokenCount")
    output = _count(meta, "candidatesTokenCount") + thoughts
    return Usage(input_tokens=prompt - cached + tool_prompt, cache_read_tokens=cached,
                 output_tokens=output, reasoning_tokens=thoughts, tool_requests=dict(tools))


class GeminiStreamReader:
    """Reads ``streamGenerateContent?alt=sse``: every chunk is a ``GenerateContentResponse``;
    usage rides on the chunks, the last one's is final; a candidate's ``finishReason`` ends
    the stream."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.complete = False
        self.output_chars = 0
        self.output_events = 0
        self._meta: Mapping[str, Any] | None = None
        self._tools: dict[str, int] = {}
        self._text: list[str] = []

    def feed(self, event_name: str | None, data: Mapping[str, Any]) -> None:
        model = field(data, "modelVersion")
        if isinstance(model, str) and model:
            self.model = model
        meta = field(data, "usageMetadata")
        if isinstance(meta, Mapping):
            self._meta = meta
        for name, count in grounding_requests(data).items():
            self._tools[name] = max(self._tools.get(name, 0), count)
        candidates = field(data, "candidates")
        for candidate in candidates if isinstance(candidates, list) else []:
            if not isinstance(candidate, Mapping):
                continue
            if field(candidate, "finishReason"):
                self.complete = True
            parts = field(field(candidate, "content"), "parts")
            for part in parts if isinstance(parts, list) else []:
                text = field(part, "text")
                if not isinstance(text, str):
                    call = field(part, "functionCall")
                    text = None if call is None else str(call)
                if text:
                    self._text.append(text)
                    self.output_chars += len(text)
                    self.output_events += 1

    def usage(self) -> Usage | None:
        return None if self._meta is None else _usage(self._meta, self._tools)

    def output_text(self) -> str:
        return "".join(self._text)
