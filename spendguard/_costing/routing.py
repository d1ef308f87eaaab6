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

from collections.abc import Mapping
from typing import Any

import httpx2

from spendguard._costing.endpoints import Provider
from spendguard._costing.prices import PriceTable
from spendguard._providers.adapter import Route, adapter_for
from spendguard._providers.openai.platforms import AZURE, AZURE_PRICE_AFTER

__all__ = ["AZURE", "AZURE_PRICE_AFTER", "Route", "route_request"]


def route_request(provider: Provider, platform: str | None, url: httpx2.URL,
                  body: Mapping[str, Any], table: PriceTable) -> Route | None:
    """The route of a priced request, or None when its body's ``model`` is the price id (the
    provider's adapter decides)."""
    return adapter_for(provider).route(platform, url, body, table)

