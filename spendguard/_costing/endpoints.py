"""The endpoints spendguard prices, named once: provider, API path, SDK method, batchability,
and what each is (output, embeddings, an explicit cache, its body's fields), read as properties
so that no other layer branches on a member.

Every layer speaks of an endpoint by its :class:`Endpoint` member. A URL path becomes a member
once (:meth:`Endpoint.from_path`, which asks the provider's adapter: it knows its platform
forms, Azure deployments and proxies before the API path, Bedrock and Vertex with Claude's
model in the path), and the member, not a path rebuilt from it, travels on. Paths and method
names are the providers' public API references (platform.openai.com/docs/api-reference,
docs.anthropic.com/en/api/messages, ai.google.dev/api).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import reduce
from typing import Any

__all__ = ["Endpoint", "Provider"]


class Provider(StrEnum):
    """The API a request speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"


class Endpoint(StrEnum):
    """The priced endpoints, and FREE for everything that cannot spend."""

    CHAT = "chat.completions"
    RESPONSES = "responses"
    EMBEDDINGS = "embeddings"
    MESSAGES = "messages"
    GENERATE = "generate_content"
    """Gemini ``generateContent`` / ``streamGenerateContent`` (the model is in the path)."""
    EMBED = "embed_content"
    """Gemini ``embedContent`` / ``batchEmbedContents``."""
    CACHE = "cached_contents"
    """Gemini ``cachedContents.create``: an explicit context cache (its tokens and storage)."""
    CACHE_UPDATE = "cached_contents.update"
    """Gemini ``cachedContents.patch``: a cache's new TTL (the storage it adds)."""
    FREE = "free"

    @property
    def provider(self) -> Provider | None:
        """The provider whose API has this endpoint (None for FREE)."""
        return _FACTS[self].provider

    @property
    def path(self) -> str | None:
        """The API path the official SDKs send it to (``"/v1/chat/completions"``)."""
        return _FACTS[self].path

    @property
    def sdk_method(self) -> tuple[str, ...]:
        """The attribute path of the SDK client's method: ``("chat", "completions",
        "create")``."""
        return _FACTS[self].sdk_method

    @property
    def batchable(self) -> bool:
        """Whether the provider's batch API runs it (OpenAI Batch, Anthropic Message Batches,
        Gemini Batch Mode)."""
        return _FACTS[self].batchable

    @property
    def batch_url(self) -> str | None:
        """The ``url`` of an OpenAI batch input line (and the path a batch job records); for
        Gemini, whose path names the model, the method's path with ``{model}`` in it."""
        facts = _FACTS[self]
        return (facts.batch_path or facts.path) if facts.batchable else None

    @property
    def generates(self) -> bool:
        """Whether its replies bill output tokens (chat, Responses, messages, generate_content);
        False for embeddings and explicit caches, whose worst case holds no output."""
        return _FACTS[self].generates

    @property
    def embeds(self) -> bool:
        """Whether it embeds its input (a vector, no output tokens, no prompt cache)."""
        return _FACTS[self].embeds

    @property
    def bills_tokens(self) -> bool:
        """Whether its tokens are billed; False for an explicit cache's TTL update, which adds
        storage only (and for FREE)."""
        return _FACTS[self].bills_tokens

    @property
    def cache_storage(self) -> bool:
        """Whether its worst case holds an explicit cache's storage for the TTL it is given
        (a cache's create or TTL update), which a learned input bound must not drop."""
        return _FACTS[self].cache_storage

    @property
    def otel_operation(self) -> str:
        """The OpenTelemetry GenAI ``gen_ai.operation.name`` of its calls (``"chat"``,
        ``"embeddings"``); its value where the conventions name no operation for it."""
        return _FACTS[self].otel_operation or self.value

    @property
    def turns_field(self) -> str | None:
        """The body field holding the conversation's turns (``"messages"``, Responses'
        ``"input"``, Gemini's ``"contents"``); None where a body has no turns."""
        return _FACTS[self].turns_field

    @property
    def system_field(self) -> str | None:
        """The top-level body field holding the system prompt (``"system"``, Responses'
        ``"instructions"``, Gemini's ``"systemInstruction"``); None where the system prompt is
        a turn (Chat Completions) or there is none."""
        return _FACTS[self].system_field

    @property
    def cap_fields(self) -> tuple[str, ...]:
        """The top-level body fields that cap its output, the preferred one first (empty where
        the cap is nested or there is none)."""
        return _FACTS[self].cap_fields

    @property
    def cache_ttl_choice(self) -> bool:
        """Whether a request chooses among its provider's cache TTLs (Responses' retention,
        Messages' ``cache_control``); else only the provider's default TTL is written."""
        return _FACTS[self].cache_ttl_choice

    def method_of(self, client: Any) -> Any:
        """The SDK client's bound method that sends this endpoint's requests."""
        if not self.sdk_method:
            raise ValueError(f"{self.value}: no SDK method sends it")
        return reduce(getattr, self.sdk_method, client)

    @classmethod
    def of(cls, provider: Provider | str) -> tuple[Endpoint, ...]:
        """The priced endpoints of a provider, its default (chat / messages) first."""
        return tuple(member for member in cls if member.provider == provider)

    @classmethod
    def from_path(cls, provider: Provider | str, path: str) -> Endpoint | None:
        """The endpoint a POST to ``path`` reaches: a priced one, FREE for one that cannot
        spend, None for one spendguard does not know (the provider's adapter reads its
        paths)."""
        from spendguard._providers.adapter import adapter_for  # noqa: PLC0415 - above this

        return adapter_for(provider).endpoint(path)

    @classmethod
    def loosely_named(cls, name: str) -> Endpoint | None:
        """The priced endpoint a name written loosely stands for (``"Chat"``, ``"Responses"``,
        a URL path, an SDK method): the first whose word it holds; None for none."""
        lowered = name.lower()
        return next((member for word, member in _LOOSE_WORDS if word in lowered), None)

    @classmethod
    def from_batch_url(cls, url: object) -> Endpoint | None:
        """The endpoint of a batch line's ``url`` (``/v1/chat/completions``...); None if none."""
        if not isinstance(url, str):
            return None
        wanted = url.split("?", 1)[0].rstrip("/")
        return next((member for member in cls if member.batch_url == wanted), None)

    @classmethod
    def named(cls, name: str) -> Endpoint | None:
        """The priced endpoint a caller names: ``"chat"``, ``"chat.completions"``,
        ``"responses"``, ``"/v1/embeddings"``...; None for any other name."""
        key = name.strip().removeprefix("/v1/").strip("/").replace("/", ".")
        key = _SHORT_NAMES.get(key, key)
        return next((m for m in cls if m.value == key and m is not cls.FREE), None)


@dataclass(frozen=True, slots=True)
class _Facts:
    provider: Provider | None
    path: str | None
    sdk_method: tuple[str, ...]
    batchable: bool
    batch_path: str | None = None
    """What a batch job records as its endpoint, where ``path`` is None."""
    generates: bool = True
    embeds: bool = False
    bills_tokens: bool = True
    cache_storage: bool = False
    otel_operation: str | None = "chat"
    turns_field: str | None = None
    system_field: str | None = None
    cap_fields: tuple[str, ...] = ()
    cache_ttl_choice: bool = False


_FACTS = {
    Endpoint.CHAT: _Facts(Provider.OPENAI, "/v1/chat/completions",
                          ("chat", "completions", "create"), True, turns_field="messages",
                          cap_fields=("max_completion_tokens", "max_tokens")),
    Endpoint.RESPONSES: _Facts(Provider.OPENAI, "/v1/responses", ("responses", "create"), True,
                               turns_field="input", system_field="instructions",
                               cap_fields=("max_output_tokens",), cache_ttl_choice=True),
    Endpoint.EMBEDDINGS: _Facts(Provider.OPENAI, "/v1/embeddings", ("embeddings", "create"),
                                True, generates=False, embeds=True,
                                otel_operation="embeddings"),
    Endpoint.MESSAGES: _Facts(Provider.ANTHROPIC, "/v1/messages", ("messages", "create"), True,
                              turns_field="messages", system_field="system",
                              cap_fields=("max_tokens",), cache_ttl_choice=True),
    # Gemini Batch Mode runs generateContent requests (ai.google.dev/gemini-api/docs/batch-mode).
    Endpoint.GENERATE: _Facts(Provider.GEMINI, None, ("models", "generate_content"), True,
                              batch_path="/v1beta/models/{model}:generateContent",
                              otel_operation=None, turns_field="contents",
                              system_field="systemInstruction"),
    Endpoint.EMBED: _Facts(Provider.GEMINI, None, ("models", "embed_content"), False,
                           generates=False, embeds=True, otel_operation="embeddings"),
    Endpoint.CACHE: _Facts(Provider.GEMINI, None, ("caches", "create"), False, generates=False,
                           cache_storage=True, otel_operation=None),
    Endpoint.CACHE_UPDATE: _Facts(Provider.GEMINI, None, ("caches", "update"), False,
                                  generates=False, bills_tokens=False, cache_storage=True,
                                  otel_operation=None),
    Endpoint.FREE: _Facts(None, None, (), False, generates=False, bills_tokens=False,
                          otel_operation=None),
}
_SHORT_NAMES = {"chat": Endpoint.CHAT.value}
# Tried in this order, the first word found wins (a Gemini method's path is told first).
_LOOSE_WORDS = (("generate", Endpoint.GENERATE), ("embed_content", Endpoint.EMBED),
                ("chat", Endpoint.CHAT), ("respons", Endpoint.RESPONSES),
                ("embedding", Endpoint.EMBEDDINGS), ("message", Endpoint.MESSAGES))
