"""Anthropic routes: Claude on Bedrock and Vertex AI, priced by the model their path names
(see :mod:`spendguard._costing.routing`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from spendguard._core.errors import UnknownModelError
from spendguard._costing.prices import PriceTable
from spendguard._providers.adapter import Route
from spendguard._providers.anthropic.paths import BEDROCK_INVOKE, VERTEX_PREDICT

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

__all__ = ["route"]


def route(platform: str | None, url: httpx2.URL, body: Mapping[str, Any],
          table: PriceTable) -> Route | None:
    """A Bedrock or Vertex AI path's route; None for the Claude API (the body names the
    model)."""
    return _platform(unquote(url.path.rstrip("/")), table)


def _platform(path: str, table: PriceTable) -> Route | None:
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


