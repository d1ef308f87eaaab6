"""OpenAI's price ids: its dated snapshots, and how LiteLLM's price file names its models and
its compatible hosts' (see :mod:`spendguard._costing.prices.ids` for the rules' order)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date

from spendguard._providers.adapter import PricedIds

__all__ = ["ID_RULES", "litellm_id", "resolve_id", "undated"]

ID_RULES: Mapping[str, str] = {
    "dated:openai": "https://developers.openai.com/api/docs/models",
}
"""OpenAI documents a snapshot (``gpt-5.5-2026-04-23``) as its base model at the same price."""

_DATED = re.compile(r"^(?P<base>[a-z0-9][a-z0-9.-]*?)-(?P<date>\d{4}-\d{2}-\d{2})$")
_LITELLM_HOSTS = ("deepseek", "moonshot")
"""LiteLLM providers of compatible hosts whose keys are already spendguard's host ids."""


def _dated(model: str) -> tuple[str, date] | None:
    match = _DATED.match(model)
    if match is None:
        return None
    try:
        return match["base"], date.fromisoformat(match["date"])
    except ValueError:  # not a day
        return None


def undated(model: str) -> str | None:
    """The base id of a dated snapshot id, None when it has no real date."""
    found = _dated(model)
    return None if found is None else found[0]


def resolve_id(model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
    """A dated snapshot's base entry, when it is one of OpenAI's, dated no later than ``day``
    and not opted out (``dated_snapshots = false``)."""
    found = _dated(model)
    if found is None:
        return None
    base, snapshot = found
    if (snapshot <= day and entries.has(base) and entries.provider(base) == "openai"
            and entries.snapshots(base)):
        return base, "dated:openai"
    return None


def litellm_id(key: str, litellm_provider: str) -> str | None:
    """OpenAI's own ids (not fine-tunes, nor routed ``<provider>/`` keys) as they are, and a
    compatible host's ``<host>/<model>`` keys, which are spendguard's host ids."""
    if litellm_provider == "openai":
        return None if "/" in key or key.startswith("ft:") else key
    if litellm_provider in _LITELLM_HOSTS and key.startswith(f"{litellm_provider}/"):
        return key
    return None
