"""The provider adapter seam: what the shared code asks of a provider, in one small interface.

A provider is one adapter package (``spendguard._providers.<name>``, found by
:func:`~spendguard._providers.adapter_for`) that owns what is particular to its API:
which endpoint a path reaches, the price id a request is priced with when its body does not
name it (its route), reading a body into a :class:`~spendguard._costing.calls.Call`, counting or
bounding its input, reading usage from bodies and streams, and the names it goes by. The
guard attaches to the SDK's client in the choke-point layer (``spendguard._guard``), and the
layers above find a provider's batch wire and report reader by its name
(``_strategies/batch/<name>_wire.py``, ``_reporting/reconcile/<name>.py``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Provider

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from spendguard._costing.calls import Call
    from spendguard._costing.endpoints import Endpoint
    from spendguard._costing.tokens.count import TokenCount
    from spendguard._costing.usage import Usage
    from spendguard._providers.sdk import SdkClient

__all__ = ["AdapterDefaults", "PricedIds", "ProviderAdapter", "Route", "StreamReader",
           "adapter_for", "adapter_kinds", "adapters", "default_wire_adapter",
           "otel_provider_name", "providers"]


@dataclass(frozen=True, slots=True)
class Route:
    """The price-table id a request is priced with; ``stream`` when only the path says it."""

    model: str
    stream: bool | None = None
    unguarded: bool = False
    """No price before sending (an opted-in unmapped deployment): priced from the response."""
    provider: str | None = None
    """The provider that bills the call, when not the one whose API it speaks (the ledger's
    ``provider``): ``"gemini"`` for Gemini's OpenAI-compatible endpoint."""
    service: str | None = None
    """The service's OpenTelemetry provider name when the path tells it apart from its
    provider's usual one: ``"gcp.vertex_ai"`` for Gemini on Vertex AI."""
    cache: str | None = None
    """The Gemini cache (``cachedContents/{id}``) a TTL update names: the priced body's
    ``name``, as in the REST resource."""

    def priced_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The body as the estimator reads it (never sent)."""
        priced = {**body, "model": self.model}
        if self.stream is not None:
            priced["stream"] = self.stream
        if self.cache is not None:
            priced["name"] = self.cache
        return priced


class StreamReader(Protocol):
    """Reads usage from a provider's server-sent events, one parsed event at a time.

    - ``feed(event_name, data)``: one event (``event:`` line or None, and its JSON ``data``)
    - ``usage()``: the usage the provider reported so far, or None; final once ``complete``
      (an Anthropic stream reports its input at the start, so a cut stream still has it)
    - ``complete``: the stream reached its end event (usage final, or none was asked for)
    - ``model``: the model name the response reported (a dated snapshot, say), or None
    - ``output_text()`` / ``output_chars`` / ``output_events``: generated text (content,
      reasoning, tool arguments) and how many deltas carried it, to estimate the output of a
      stream cut before its usage arrived
    """

    model: str | None
    complete: bool
    output_chars: int
    output_events: int

    def feed(self, event_name: str | None, data: Mapping[str, Any]) -> None: ...

    def usage(self) -> Usage | None: ...

    def output_text(self) -> str: ...


class PricedIds(Protocol):
    """What an id rule asks of a price table (:meth:`ProviderAdapter.resolve_id`), by id."""

    def has(self, model: str) -> bool:
        """Whether ``model`` is an entry (not an alias)."""
        ...

    def provider(self, model: str) -> str | None:
        """The provider of entry ``model``."""
        ...

    def aliases(self, model: str) -> tuple[str, ...]:
        """The aliases entry ``model`` declares."""
        ...

    def snapshots(self, model: str) -> bool:
        """Whether entry ``model``'s dated snapshots bill as it does (``dated_snapshots``)."""
        ...


class ProviderAdapter(Protocol):
    """One provider's API, as the choke point, the estimator and the emulator need it."""

    name: str
    """The provider's name in the ledger and price files (``"gemini"``); its bundled price
    file is ``pricing/<name>.toml``."""
    otel_name: str
    """The OpenTelemetry ``gen_ai.provider.name`` of its calls."""
    display_name: str
    """How messages and reports name it (``"OpenAI"``)."""
    billing_names: tuple[str, str]
    """Who bills its calls and the service's name, as FOCUS exports name them
    (``("Anthropic", "Claude API")``)."""
    sdk_package: str
    """The import name of the official SDK whose clients and replies speak its API."""
    # Its SDK's clients: recognised (wrap, install, batches) and built (the CLI).
    sdk_clients: tuple[SdkClient, ...]
    """Its SDK's client classes, by name (found in ``sys.modules``, never imported to look),
    platform ones included, each saying whether it is async, the guard's platform for it,
    whether it addresses the provider's own API and whether ``install()`` hooks it."""
    sdk_error: str
    """The dotted name of its SDK's base error class (``"openai.OpenAIError"``), which the
    guard's refusals also subclass so that the SDK neither wraps nor retries them; empty
    where they are raised as spendguard's own errors only."""
    sdk_user_agent: str
    """The prefix of the User-Agent its SDK sends (``"OpenAI/"``): which SDK built a request
    that no guarded client tagged; empty where nothing is read from it."""

    def sdk_client(self, base_url: str | None) -> Any:
        """A plain client of its SDK for its own API (the SDK imported on this call), sent to
        ``base_url`` when given; the API key is read by the SDK, from its environment."""
        ...

    base_url_env: str
    """The environment variable its SDK reads a base URL from (``spendguard run`` sends the
    traffic addressed there through its gateway)."""
    # -- addresses: the gateway's upstream and routes, --upstream kinds, install()'s hosts
    platforms: tuple[str, ...]
    """The platforms that serve its API under their own address and names, which a guard is
    told of because the path does not say (``("azure",)``: requests name deployments). With
    :attr:`name`, they are its *kinds*: what an ``--upstream`` URL (``azure+URL``), an upstream's
    name or an ``install(base_urls=)`` entry may name to mean its API (or the platform's)."""
    api_base_url: str
    """Its API's base URL as its SDK takes it (``https://api.openai.com/v1``): the gateway's
    default upstream of its name."""
    default_wire: bool
    """Whether its wire is the one spoken where no provider is named (an ``--upstream`` with no
    kind, a price-table host, a gateway ``/v1/...`` request no other adapter claims): OpenAI's,
    which the compatible hosts copy. Exactly one adapter has it, and lists show its provider
    first (:func:`providers`)."""
    gateway_headers: tuple[str, ...]
    """Request headers (lower case) only its official client sends (``anthropic-version``): a
    request the default wire's :meth:`gateway_path` would take goes to it, its path whole,
    when it carries one and no adapter claimed the path."""
    traffic_guard: bool
    """Whether ``install()`` guards requests no guarded client tagged that are addressed to it
    (:meth:`traffic_kind`, a declared base URL, :attr:`base_url_env`); false: only the
    clients of its SDK are guarded."""

    def key_env(self, platform: str | None) -> str:
        """The environment variable holding its API's key, or a platform's
        (``AZURE_OPENAI_API_KEY``): the gateway's provider key for an upstream of that name."""
        ...

    def key_header(self, platform: str | None) -> str:
        """The header (lower case) its official client sends its key in, on its API or a
        platform; ``authorization`` carries a bearer token."""
        ...

    def gateway_path(self, path: str) -> str | None:
        """The path forwarded after its default upstream's base URL when the gateway's default
        route takes ``path`` for it (Gemini's ``/v1beta/...``, Anthropic's ``/v1/messages``);
        None: not its path. The adapters that are not the default wire are asked first, then
        their :attr:`gateway_headers`, and the default wire last (it takes the rest of
        ``/v1/...``, its base URL holding the ``/v1``)."""
        ...

    def traffic_kind(self, host: str, path: str) -> str | None:
        """Which of its kinds (:attr:`platforms`) a request to ``host`` (lower case) at
        ``path`` addresses, by its host: ``install()``'s traffic guard. ``""``: its host, but
        for an API it does not price (Vertex's other publishers: the request passes untouched);
        None: not its host."""
        ...
    cache_ttls: tuple[str, ...]
    """The cache-write TTLs it bills (the ``cache_write_<ttl>`` rates of its price entries);
    empty when it bills no cache writes."""
    # Price ids and price data beyond its price file: other tables, platforms, file sections.
    genai_prices_ids: Mapping[str, str]
    """Its models in pydantic's genai-prices: each provider id there -> the prefix those
    models' ids take in spendguard's price ids (``""``: the same ids, under its own id there;
    ``"deepseek/"``: a compatible host's, under its host name)."""
    genai_prices_fallback: bool
    """Whether the genai-prices fallback catalog prices a model the table lacks as one of its
    models (those ids' models), and ``spendguard prices check`` lists those spendguard lacks."""
    cache_write_multipliers: Mapping[str, Decimal]
    """Each cache-write TTL's rate as a multiple of the input rate, where the provider prices
    every model's writes so (``{"5m": Decimal("1.25")}``): the fallback catalog fills in a
    write rate genai-prices leaves out with it, for a provider whose entries state them all
    (``prompt_cache == "breakpoints"``); empty when its write rates are the models' own."""
    price_sections: tuple[str, ...]
    """The price-file sections beyond ``[models]`` whose entries are its models, speaking its
    wire (``"hosts"``, ``"azure_deployments"``, ``"self_hosted"``); each has one owner."""
    id_rules: Mapping[str, str]
    """Its id rules, by the name :meth:`resolve_id` gives (``"dated:openai"``), each with where
    its naming scheme (and that it names the same model at the same price) is published."""

    def litellm_id(self, key: str, litellm_provider: str) -> str | None:
        """The price id of a model LiteLLM's price file lists under ``key`` and
        ``litellm_provider``, when it is one of its models (its platforms' and compatible
        hosts' too); None for any other record."""
        ...

    def undated(self, model: str) -> str | None:
        """The base id of one of its dated snapshot ids (``gpt-5.5-2026-04-23``: ``gpt-5.5``);
        None when the id carries no real date in its scheme, or it dates no snapshots."""
        ...

    def resolve_id(self, model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
        """The entry a dated snapshot or platform id (``bedrock/us.anthropic.claude-…``,
        ``vertex/claude-…@20240620``) names under one of its :attr:`id_rules` on ``day``, and
        the rule; None when none of its rules resolves ``model`` (then another's may)."""
        ...

    exact_input: bool
    """Whether its input is counted exactly before sending (else a stated upper bound)."""
    model_prefixes: tuple[str, ...]
    """Model-name prefixes that say a bare body with an unpriced model is for its API."""
    prompt_cache: str
    """How its prompt cache is written, as cache ordering shapes a body for it:
    ``"breakpoints"`` (at the markers a request places), ``"prefix"`` (the longest prefix
    seen before, automatically, steered by a cache key), ``"implicit"`` (a common prefix,
    with neither markers nor a key: only the order of the body's parts helps), or ``""``
    (cache ordering does not shape its bodies)."""
    # Requests as plans read them and SDK calls as the strategies make them; their texts
    batch_request_fields: tuple[str, ...]
    """The fields of one request of its batch API's input, as :meth:`batch_request` reads it
    (``("custom_id", "params")``); empty when plans do not read its batch requests."""

    def batch_request(self, item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
        """The endpoint and body of one request of its batch API's input (a batch file's
        line, a batch's request); None when ``item`` is not in that shape. Raises
        ``ConfigError`` for one in that shape whose endpoint is not planned."""
        ...

    def request_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A request body, in any spelling its SDK takes, as the REST body that is estimated,
        planned and cache-ordered (Gemini's ``generate_content`` arguments become its REST
        body); a copy of the body where there is one spelling."""
        ...

    def sdk_arguments(self, endpoint: Endpoint, body: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the SDK method that sends ``endpoint``, for a request
        body (Gemini's REST body becomes ``model``, ``contents``, ``config``)."""
        ...

    def prompt_text(self, endpoint: Endpoint, request: Mapping[str, Any]) -> str:
        """The last user turn of a request, as text (what a judge is shown as the question)."""
        ...

    def reply_text(self, endpoint: Endpoint, response: Any) -> str:
        """The text an SDK reply carries (text blocks joined; empty when it has none)."""
        ...

    def text_request(self, model: str, text: str, max_tokens: int) -> dict[str, Any]:
        """A one-turn request body (a judge's question): ``text`` as the user's turn, at most
        ``max_tokens`` of output, for the endpoint :meth:`body_endpoint` gives it."""
        ...


    def endpoint(self, path: str) -> Endpoint | None:
        """The endpoint a POST to ``path`` reaches: priced, ``Endpoint.FREE``, or None."""
        ...

    def price_id(self, path: str) -> str | None:
        """The model a request is priced as when the path names it (None: the body does)."""
        ...

    def route(self, platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
              table: Any) -> Route | None:
        """The price id a request is priced with when its URL (a platform's path, a
        deployment, a host) says more than its body; None when the body's ``model`` is it.
        ``table`` is the ``PriceTable`` in use (not named here: the price files' schema asks
        this module for each provider's cache TTLs, so this module imports no price code)."""
        ...

    def body_endpoint(self, body: Mapping[str, Any], *, embedding: bool) -> Endpoint:
        """The endpoint a request body with no path is for (``embedding``: its model embeds)."""
        ...

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        """A priced request body (with ``model`` set) read into a call."""
        ...

    def with_output_cap(self, endpoint: Endpoint, body: dict[str, Any],
                        tokens: int) -> dict[str, Any] | None:
        """A copy of ``body`` whose worst case is at most ``tokens`` output tokens per choice,
        as :meth:`build_call` reads it back (``cap_output=True``); None when the endpoint has
        no output cap, or the body cannot be capped that low."""
        ...

    def ended_cache(self, method: str, path: str) -> str | None:
        """The explicit cache a successful free request ends before its charged expiry (its
        resource name), whose unused storage is credited; None for any other request."""
        ...

    def cache_reply_end(self, reply: object) -> tuple[str, datetime] | None:
        """The explicit cache a TTL update's reply names and its new expiry; None for any
        other reply (or one it cannot read)."""
        ...

    def release_cache_storage(self, name: str, until: datetime, *,
                              forget: bool) -> tuple[str, int, int] | None:
        """For the explicit cache ``name`` this process saw: its model, its size in tokens and
        the whole seconds of storage charged past ``until``, no longer charged from now on
        (``forget``: the cache is gone); None for a cache it did not see."""
        ...

    def reply_endpoint(self, module: str) -> Endpoint | None:
        """The endpoint an SDK reply object comes from, by its class's module (None: not one
        of this provider's replies)."""
        ...

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        """Raise for a call that asks for what no price table prices (OpenAI's audio).
        ``raw``: the JSON bytes the call's body was parsed from, when it was (a cheap
        screen before walking the body)."""
        ...

    def error_body(self, status: int, message: str, *, code: str) -> dict[str, Any]:
        """An error body in the provider's shape, which its SDK parses into its own error
        (the gateway answers in it); ``code`` is spendguard's reason."""
        ...

    # Endpoints in settling: which one is priced, replies without usage, explicit caches
    def priced_endpoint(self, endpoint: Endpoint, path: str, *,
                        allow_unpriced: bool) -> Endpoint | None:
        """The endpoint a request classified as ``endpoint`` is priced as, once what this
        process saw is asked (Gemini prices a cache's TTL update only for a cache it saw
        created); None to send it unpriced (``allow_unpriced``), else raises
        ``UnsupportedEndpointError``. ``endpoint`` itself for every other request."""
        ...

    def billed_later(self, endpoint: Endpoint, body: object) -> str | None:
        """The ledger status of a reply whose usage is billed later, out of sight (OpenAI's
        Responses with ``background=True``: ``"background"``), which is charged its worst
        case; None for a reply whose usage is read."""
        ...

    def reports_no_usage(self, endpoint: Endpoint, body: object) -> bool:
        """Whether a reply carries no usage and is billed as the input counted before sending
        (Gemini's embeddings)."""
        ...

    def settled_reply(self, endpoint: Endpoint, body: object, usage: Usage) -> str | None:
        """Bookkeeping once a reply's usage is read (Gemini notes an explicit cache's create
        or TTL-update reply, which prices its later updates). Returns the note recorded with
        the call when the reply ends storage charged ahead sooner (a TTL not extended), whose
        excess is then credited; None otherwise. Never raises."""
        ...

    def cache_storage_seconds(self, body: Mapping[str, Any]) -> int:
        """The seconds of storage a request to an endpoint with ``cache_storage`` charges
        ahead (an explicit cache's TTL, as its create or update asks); 0 where it has none."""
        ...

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        """The end user a request body names, in the field the provider documents for it."""
        ...

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        """The input tokens of a body: exact, or a stated upper bound. Never raises on shape."""
        ...

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        """Usage from a reply body, a stream chunk or an SDK object."""
        ...

    def stream_reader(self, endpoint: str) -> StreamReader:
        """A fresh reader for one streamed reply."""
        ...


class AdapterDefaults:
    """What a provider has none of, answered once: an adapter class derives from it and
    overrides only what its API has (an explicit cache, a reply billed later, platform ids,
    a batch API...). Each default is the "none" answer :class:`ProviderAdapter` documents,
    but for two parts found in the provider's package by their names: its ``sdk`` module
    builds a plain client, its ``counting`` module counts input (imported on the first count:
    reports and price files read an adapter's names without loading the tokenizers)."""

    name: str

    def sdk_client(self, base_url: str | None) -> Any:
        return _part(self.name, "sdk").client(base_url)

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        count: TokenCount = _part(self.name, "counting").count_input(endpoint, body)
        return count

    def price_id(self, path: str) -> str | None:
        return None  # the body names the model

    def traffic_kind(self, host: str, path: str) -> str | None:
        return None  # install() guards no untagged request to it

    def litellm_id(self, key: str, litellm_provider: str) -> str | None:
        return None

    def undated(self, model: str) -> str | None:
        return None  # it dates no snapshots

    def resolve_id(self, model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
        return None  # no id rules beyond the price table's own ids

    def batch_request(self, item: Mapping[str, Any]) -> tuple[Endpoint, dict[str, Any]] | None:
        return None  # no batch request shape of its own

    def end_user(self, body: Mapping[str, Any]) -> str | None:
        return None  # no field names the end user

    def refuse_unpriced(self, call: Call, raw: bytes | None = None) -> None:
        return None  # nothing it bills is outside the price table

    def ended_cache(self, method: str, path: str) -> str | None:
        return None  # no explicit cache is billed for its storage

    def cache_reply_end(self, reply: object) -> tuple[str, datetime] | None:
        return None

    def release_cache_storage(self, name: str, until: datetime, *,
                              forget: bool) -> tuple[str, int, int] | None:
        return None

    def cache_storage_seconds(self, body: Mapping[str, Any]) -> int:
        return 0

    def billed_later(self, endpoint: Endpoint, body: object) -> str | None:
        return None  # every reply carries its usage

    def reports_no_usage(self, endpoint: Endpoint, body: object) -> bool:
        return False

    def settled_reply(self, endpoint: Endpoint, body: object, usage: Usage) -> str | None:
        return None  # no bookkeeping after a reply, no note

    def priced_endpoint(self, endpoint: Endpoint, path: str, *,
                        allow_unpriced: bool) -> Endpoint | None:
        return endpoint  # every endpoint is priced as its path says

    def request_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(body)  # its SDK's arguments are its REST body

    def sdk_arguments(self, endpoint: Endpoint, body: Mapping[str, Any]) -> dict[str, Any]:
        return dict(body)


@functools.cache  # read for every guarded call: the import machinery once per part
def _part(provider: str, part: str) -> Any:
    """The module ``part`` of ``provider``'s package."""
    return importlib.import_module(f"{__package__}.{provider}.{part}")


@functools.cache  # read for every guarded call: the import machinery once per provider
def adapter_for(provider: str) -> ProviderAdapter:
    """The adapter of a provider (its package's ``ADAPTER``), imported on first use."""
    if provider not in Provider.names():
        raise ConfigError(f"provider: {provider!r} is not supported; use one of {providers()}")
    # Named by the provider, not listed here: a new provider is a new package, not an edit.
    module = importlib.import_module(f"{__package__}.{Provider(provider).value}")
    adapter: ProviderAdapter = module.ADAPTER
    return adapter


@functools.cache
def providers() -> tuple[Provider, ...]:
    """Every provider's name, as lists show them: the one whose wire is the default first
    (its adapter's ``default_wire``), then alphabetical (imports every adapter)."""
    return tuple(sorted((Provider(name) for name in sorted(Provider.names())),
                        key=lambda name: not adapter_for(name).default_wire))


def adapters() -> tuple[ProviderAdapter, ...]:
    """Every provider's adapter, in the order of :func:`providers` (imports them all)."""
    return tuple(adapter_for(name) for name in providers())


def default_wire_adapter() -> ProviderAdapter:
    """The adapter whose wire is spoken where no provider is named (its ``default_wire``)."""
    return next(adapter for adapter in adapters() if adapter.default_wire)


def adapter_kinds() -> dict[str, tuple[ProviderAdapter, str | None]]:
    """Each kind an address may be marked with (a provider's name, or one of its
    ``platforms``): the adapter whose API it speaks, and the platform (None: its own API)."""
    kinds: dict[str, tuple[ProviderAdapter, str | None]] = {}
    for adapter in adapters():
        kinds[adapter.name] = (adapter, None)
        kinds.update((platform, (adapter, platform)) for platform in adapter.platforms)
    return kinds


@functools.lru_cache(maxsize=8)
def otel_provider_name(provider: str) -> str:
    """The OpenTelemetry ``gen_ai.provider.name`` of a provider's own API (its adapter's
    ``otel_name``: ``gcp.gemini``, ``openai``); an unknown name is given back as it is."""
    return adapter_for(provider).otel_name if provider in Provider.names() else provider
