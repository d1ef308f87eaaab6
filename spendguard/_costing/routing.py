"""Which price-table entry a request is priced with, when the body's ``model`` does not say.

Platforms name models their own way or not in the body at all:

- Bedrock puts the model id in the path (``/model/{id}/invoke``, ``…/invoke-with-response-
  stream``) and drops ``model`` and ``stream`` from the body: priced as ``"bedrock/<id>"``.
- Vertex puts it in the path too (``…/locations/{region}/publishers/anthropic/models/
  {model}:rawPredict`` / ``:streamRawPredict``): ``"vertex/<model>"`` for the global
  endpoint, ``"vertex-regional/<model>"`` for a region (10 % dearer from Sonnet 4.5 on).
- Azure OpenAI requests name a *deployment* (in the path ``/deployments/{name}/``, or the
  body's ``model`` on the v1 API): priced as ``"azure:<deployment>"``, which the user maps to a
  model (constructor argument or ``[azure_deployments]`` price-file section).
- An OpenAI-compatible host (or a self-hosted endpoint) matched by base URL: priced as
  ``"<host>/<model>"`` with that host's rates.

Each is an exact look-up; a miss is refused before sending, with the fix in the message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import httpx2

from spendguard._core.errors import UnknownModelError
from spendguard._costing.endpoints import BEDROCK_INVOKE, VERTEX_PREDICT, Provider
from spendguard._costing.prices import PriceTable
from spendguard._costing.prices.sections import AZURE_PREFIX

__all__ = ["AZURE", "AZURE_PRICE_AFTER", "Route", "route_request"]

AZURE = "azure"
"""The ``platform`` of a guard installed on an Azure OpenAI client."""
AZURE_PRICE_AFTER = "azure:price_after"
"""Azure, opted into sending unmapped deployments unguarded and pricing them afterwards."""

GEMINI_OPENAI_PATH = "/v1beta/openai/"
"""Gemini's OpenAI-compatible endpoint (generativelanguage.googleapis.com/v1beta/openai/):
OpenAI's wire, Gemini's models and prices, billed by Google."""

_AZURE_DEPLOYMENT = re.compile(r"/deployments/(?P<name>[^/]+)/")


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


def route_request(provider: Provider, platform: str | None, url: httpx2.URL,
                  body: Mapping[str, Any], table: PriceTable) -> Route | None:
    """The route of a priced request, or None when its body's ``model`` is the price id."""
    url_path = url.path  # a property that decodes the path: read once
    if provider is Provider.ANTHROPIC:
        return _anthropic_platform(unquote(url_path.rstrip("/")), table)
    if provider is Provider.GEMINI:
        return _gemini(url_path, body, table)
    if platform in (AZURE, AZURE_PRICE_AFTER):
        return _azure(unquote(url_path.rstrip("/")), body, table,
                      price_after=platform == AZURE_PRICE_AFTER)
    if GEMINI_OPENAI_PATH in url_path:
        return _gemini_openai(body, table)
    host = table.host_for(f"{url.scheme}://{url.netloc.decode('ascii')}{url_path}")
    if host is None:
        return None
    model = body.get("model")
    price_id = host.price_id(str(model))
    if price_id not in table:
        raise UnknownModelError(
            f"No price for model {model!r} at host {host.name!r} ({host.base_url}) in price "
            f"table {table.version}; spendguard never prices a host's model as a namesake "
            f'elsewhere. Add it to a price file: [hosts.{host.name}.models."{model}"] '
            "usd_per_million = { input = ..., output = ... }, context_window, "
            "max_output_tokens, and point SPENDGUARD_PRICES at it (docs/prices.md).",
            name=price_id, kind="host model")
    return Route(price_id)


def _anthropic_platform(path: str, table: PriceTable) -> Route | None:
    match = BEDROCK_INVOKE.search(path)
    if match is not None:
        price_id = f"bedrock/{match['id']}"
        stream = match["kind"] == "invoke-with-response-stream"
        platform = "Bedrock"
    else:
        match = VERTEX_PREDICT.search(path)
        if match is None or match["region"] is None:  # a project's path names the region
            return None
        scope = "vertex" if match["region"] == "global" else "vertex-regional"
        price_id = f"{scope}/{match['model']}"
        stream = match["kind"] == "streamRawPredict"
        platform = "Vertex AI"
    if price_id not in table:
        raise UnknownModelError(
            f"No price for {platform} model id {price_id!r} in price table {table.version}. "
            "Add it as an alias of the matching entry in a price file, e.g. "
            f'[models."{price_id.split("/")[0]}/claude-…"] derived_from = "claude-…", '
            f'rate_multiplier = 1, aliases = ["{price_id}"], source, as_of; see docs/prices.md.',
            name=price_id, kind="platform model")
    return Route(price_id, stream)


def _gemini(path: str, body: Mapping[str, Any], table: PriceTable) -> Route:
    from spendguard._costing.providers.gemini.caches import cache_name, term  # noqa: PLC0415
    from spendguard._costing.providers.gemini.paths import model_of  # noqa: PLC0415

    # A model method names the model in its path; a cache's create request in its body; a
    # cache's TTL update neither: its model is the cache's, as noted when it was created.
    name = cache_name(path)
    known = None if name is None else term(name)
    if known is not None:
        return Route(known.model, False, cache=name)
    found = model_of(path) or (str(body.get("model") or "").rpartition("models/")[2], False)
    model, stream = found
    service = "gcp.vertex_ai" if "/publishers/google/" in path else None
    if model not in table:
        raise UnknownModelError(
            f"No price for Gemini model {model!r} in price table {table.version}; spendguard "
            "never sends a call it cannot price. Add it to a price file: "
            f'[models."{model}"] provider = "gemini", usd_per_million = {{ input = ..., '
            "cache_read = ..., output = ... }, context_window, max_output_tokens, source, "
            "as_of; and point SPENDGUARD_PRICES at it (docs/prices.md).",
            name=model, kind="model")
    return Route(model, stream, service=service)


def _gemini_openai(body: Mapping[str, Any], table: PriceTable) -> Route:
    model = str(body.get("model") or "").removeprefix("models/")
    if model not in table or table.get(model).provider != "gemini":
        raise UnknownModelError(
            f"No Gemini price for model {model!r} (Gemini's OpenAI-compatible endpoint) in "
            f"price table {table.version}; add it to a price file: [models.\"{model}\"] "
            'provider = "gemini", usd_per_million = { input = ..., cache_read = ..., '
            "output = ... }, context_window, max_output_tokens, source, as_of "
            "(docs/prices.md).", name=model, kind="model")
    return Route(model, provider="gemini")


def _azure(path: str, body: Mapping[str, Any], table: PriceTable, *,
           price_after: bool) -> Route:
    match = _AZURE_DEPLOYMENT.search(path + "/")
    deployment = match["name"] if match is not None else body.get("model")
    price_id = f"{AZURE_PREFIX}{deployment}"
    if price_id not in table and price_after:
        return Route(price_id, unguarded=True)
    if price_id not in table:
        raise UnknownModelError(
            f"Azure deployment {deployment!r} is not mapped to a model, so spendguard cannot "
            "price it and refused to send it. Map it: spendguard.AzureOpenAI(..., "
            f'deployments={{"{deployment}": "gpt-4o"}}) (the model it runs), or in a price '
            f'file [azure_deployments."{deployment}"] model = "gpt-4o", deployment_type = '
            '"global" | "data_zone" | "regional". See docs/clients.md.',
            name=str(deployment), kind="deployment")
    return Route(price_id)
