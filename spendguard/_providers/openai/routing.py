"""OpenAI routes: Azure deployments, Gemini's OpenAI-compatible endpoint, and the
OpenAI-compatible hosts a price table declares (see :mod:`spendguard._costing.routing`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from spendguard._core.errors import UnknownModelError
from spendguard._costing.prices import PriceTable
from spendguard._costing.prices.sections import AZURE_PREFIX
from spendguard._providers.adapter import Route
from spendguard._providers.openai.platforms import (
    AZURE,
    AZURE_PRICE_AFTER,
    GEMINI_OPENAI_PATH,
)

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

__all__ = ["route"]

_AZURE_DEPLOYMENT = re.compile(r"/deployments/(?P<name>[^/]+)/")


def route(platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
          table: PriceTable) -> Route | None:
    """The route of an OpenAI-wire request, or None when its body's ``model`` is the price id."""
    url_path = url.path  # a property that decodes the path: read once
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
