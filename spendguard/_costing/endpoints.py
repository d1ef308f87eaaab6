"""The vocabulary every layer speaks of a request in: its :class:`Provider` and its
:class:`Endpoint`, each declared by the provider's own package.

A provider is a package under ``spendguard/_providers/`` (its folder's name), found on disk
without importing it. An endpoint is declared by its provider's ``endpoints.py`` (pure data:
provider, API path, SDK method, batchability, and what each is: output, embeddings, an explicit
cache, its body's fields), read as plain attributes so that no other layer branches on one.
Only :attr:`Endpoint.FREE`, everything that cannot spend, is declared here.

A URL path becomes an endpoint once (:meth:`Endpoint.from_path`, which asks the provider's
adapter: it knows its platform forms, Azure deployments and proxies before the API path,
Bedrock and Vertex with Claude's model in the path), and the endpoint, not a path rebuilt from
it, travels on. Both are strings (their values, as the ledger stores them), made once per value
so that ``is`` compares them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from functools import reduce
from pathlib import Path
from typing import Any, ClassVar, NoReturn

__all__ = ["Endpoint", "Provider"]

_PROVIDER_PACKAGES = Path(__file__).resolve().parents[1] / "_providers"
"""Each folder with an ``__init__.py`` under it is one provider's package, named for it."""


class Provider(str):
    """The API a request speaks: the name of its provider's package (``"openai"``).

    ``Provider(name)`` gives the one instance of a provider's name and raises ValueError for a
    name no package has; it equals, hashes and formats as the plain name.
    """

    value: str
    """The plain name."""

    def __new__(cls, name: object) -> Provider:
        try:
            return _known_providers()[name]  # type: ignore[index]
        except (KeyError, TypeError):
            raise ValueError(f"{name!r} is not a valid Provider") from None

    @staticmethod
    def names() -> frozenset[str]:
        """Every provider's name, unordered (read from the folders, importing none)."""
        return _provider_names()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return Provider, (self.value,)


@functools.cache
def _known_providers() -> dict[str, Provider]:
    known = {}
    for folder in sorted(_PROVIDER_PACKAGES.iterdir()):
        if (folder / "__init__.py").is_file():
            provider = str.__new__(Provider, folder.name)
            vars(provider)["value"] = folder.name
            known[folder.name] = provider
    return known


@functools.cache
def _provider_names() -> frozenset[str]:
    return frozenset(_known_providers())


class _EndpointType(type):
    """Iterating over :class:`Endpoint` gives every endpoint (each provider's, in the order of
    :func:`~spendguard._providers.adapter.providers`, then FREE); ``Endpoint.CHAT`` is the
    endpoint a provider's ``endpoints.py`` declares as ``CHAT``."""

    def __iter__(cls) -> Iterator[Endpoint]:
        return iter(_registry().members)

    def __len__(cls) -> int:
        return len(_registry().members)

    def __getattr__(cls, name: str) -> Endpoint:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _registry().by_name[name]
        except KeyError:
            raise AttributeError(f"no endpoint is declared as {name}") from None


class Endpoint(str, metaclass=_EndpointType):
    """A priced endpoint (declared by its provider's package), or FREE for everything that
    cannot spend. ``Endpoint(value)`` gives the endpoint of a value the ledger stored."""

    FREE: ClassVar[Endpoint]

    value: str
    """The plain value (``"chat.completions"``), as the ledger stores it."""
    provider: Provider | None
    """The provider whose API has this endpoint (None for FREE)."""
    path: str | None
    """The API path the official SDKs send it to (``"/v1/chat/completions"``); None where
    the path names the model (Gemini's)."""
    sdk_method: tuple[str, ...]
    """The attribute path of the SDK client's method: ``("chat", "completions", "create")``."""
    batchable: bool
    """Whether the provider's batch API runs it (OpenAI Batch, Anthropic Message Batches,
    Gemini Batch Mode)."""
    batch_url: str | None
    """The ``url`` of an OpenAI batch input line (and the path a batch job records); for
    Gemini, whose path names the model, the method's path with ``{model}`` in it."""
    generates: bool
    """Whether its replies bill output tokens (chat, Responses, messages, generate_content);
    False for embeddings and explicit caches, whose worst case holds no output."""
    embeds: bool
    """Whether it embeds its input (a vector, no output tokens, no prompt cache)."""
    bills_tokens: bool
    """Whether its tokens are billed; False for an explicit cache's TTL update, which adds
    storage only (and for FREE)."""
    cache_storage: bool
    """Whether its worst case holds an explicit cache's storage for the TTL it is given
    (a cache's create or TTL update), which a learned input bound must not drop."""
    otel_operation: str
    """The OpenTelemetry GenAI ``gen_ai.operation.name`` of its calls (``"chat"``,
    ``"embeddings"``); its value where the conventions name no operation for it."""
    turns_field: str | None
    """The body field holding the conversation's turns (``"messages"``, Responses'
    ``"input"``, Gemini's ``"contents"``); None where a body has no turns."""
    system_field: str | None
    """The top-level body field holding the system prompt (``"system"``, Responses'
    ``"instructions"``, Gemini's ``"systemInstruction"``); None where the system prompt is
    a turn (Chat Completions) or there is none."""
    cap_fields: tuple[str, ...]
    """The top-level body fields that cap its output, the preferred one first (empty where
    the cap is nested or there is none)."""
    cache_ttl_choice: bool
    """Whether a request chooses among its provider's cache TTLs (Responses' retention,
    Messages' ``cache_control``); else only the provider's default TTL is written."""
    short_names: tuple[str, ...]
    """Other names :meth:`named` reads it from (``"chat"``)."""
    loose_words: tuple[str, ...]
    """The words a loosely written name holds when it stands for it (:meth:`loosely_named`)."""

    def __new__(cls, value: object) -> Endpoint:
        found = _declared.get(value) if isinstance(value, str) else None
        if found is None:
            found = _registry().by_value.get(value) if isinstance(value, str) else None
        if found is None:
            raise ValueError(f"{value!r} is not a valid Endpoint")
        return found

    @classmethod
    def declare(cls, value: str, provider: Provider | None, path: str | None,
                sdk_method: tuple[str, ...], batchable: bool, *, batch_path: str | None = None,
                generates: bool = True, embeds: bool = False, bills_tokens: bool = True,
                cache_storage: bool = False, otel_operation: str | None = "chat",
                turns_field: str | None = None, system_field: str | None = None,
                cap_fields: tuple[str, ...] = (), cache_ttl_choice: bool = False,
                short_names: tuple[str, ...] = (), loose_words: tuple[str, ...] = (),
                ) -> Endpoint:
        """A new endpoint (its provider's ``endpoints.py`` declares each once): ``batch_path``
        is what a batch job records where ``path`` is None; ``otel_operation`` None for an
        operation the conventions do not name."""
        if value in _declared:
            raise ValueError(f"endpoint {value!r} is declared twice")
        endpoint = str.__new__(cls, value)
        vars(endpoint).update(
            value=value, provider=provider, path=path, sdk_method=sdk_method,
            batchable=batchable, batch_url=(batch_path or path) if batchable else None,
            generates=generates, embeds=embeds, bills_tokens=bills_tokens,
            cache_storage=cache_storage, otel_operation=otel_operation or value,
            turns_field=turns_field, system_field=system_field, cap_fields=cap_fields,
            cache_ttl_choice=cache_ttl_choice, short_names=short_names, loose_words=loose_words)
        _declared[value] = endpoint
        return endpoint

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return Endpoint, (self.value,)

    @property
    def name(self) -> str:
        """The name its provider's ``endpoints.py`` gives it (``"CHAT"``)."""
        return _registry().names[self.value]

    def method_of(self, client: Any) -> Any:
        """The SDK client's bound method that sends this endpoint's requests."""
        if not self.sdk_method:
            raise ValueError(f"{self.value}: no SDK method sends it")
        return reduce(getattr, self.sdk_method, client)

    @classmethod
    def of(cls, provider: Provider | str) -> tuple[Endpoint, ...]:
        """The priced endpoints of a provider, its default (chat / messages) first."""
        return tuple(member for member in _registry().members if member.provider == provider)

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
        return next((member for word, member in _registry().loose_words if word in lowered),
                    None)

    @classmethod
    def from_batch_url(cls, url: object) -> Endpoint | None:
        """The endpoint of a batch line's ``url`` (``/v1/chat/completions``...); None if none."""
        if not isinstance(url, str):
            return None
        wanted = url.split("?", 1)[0].rstrip("/")
        return next((member for member in _registry().members if member.batch_url == wanted),
                    None)

    @classmethod
    def named(cls, name: str) -> Endpoint | None:
        """The priced endpoint a caller names: ``"chat"``, ``"chat.completions"``,
        ``"responses"``, ``"/v1/embeddings"``...; None for any other name."""
        key = name.strip().removeprefix("/v1/").strip("/").replace("/", ".")
        registry = _registry()
        found = registry.short_names.get(key) or registry.by_value.get(key)
        return None if found is cls.FREE else found


_declared: dict[str, Endpoint] = {}
"""Every endpoint declared so far, by value (``Endpoint(value)`` looks here first)."""

Endpoint.FREE = Endpoint.declare("free", None, None, (), False, generates=False,
                                 bills_tokens=False, otel_operation=None)


class _Registry:
    """Every provider's endpoints, loaded once by name (``_providers/<name>/endpoints.py``)."""

    def __init__(self) -> None:
        from spendguard._providers.adapter import providers  # noqa: PLC0415 - its order

        self.names = {Endpoint.FREE.value: "FREE"}
        members: list[Endpoint] = []
        for provider in providers():
            module = importlib.import_module(f"spendguard._providers.{provider}.endpoints")
            for name, member in vars(module).items():
                if isinstance(member, Endpoint) and member.value not in self.names:
                    self.names[member.value] = name
                    members.append(member)
        self.members = (*members, Endpoint.FREE)
        self.by_value = {member.value: member for member in self.members}
        self.by_name = {name: self.by_value[value] for value, name in self.names.items()}
        self.short_names = {short: member for member in members for short in member.short_names}
        # A word of an endpoint whose path names the model (Gemini's) is tried first: a
        # model's name may hold another endpoint's word.
        told_first = sorted(members, key=lambda member: member.path is not None)
        self.loose_words = tuple((word, member) for member in told_first
                                 for word in member.loose_words)


@functools.cache
def _registry() -> _Registry:
    return _Registry()
