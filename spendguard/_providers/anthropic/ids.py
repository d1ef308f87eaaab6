"""Anthropic's price ids: Claude's dated snapshots, its ids on Bedrock and Vertex AI, and how
LiteLLM's price file names them (see :mod:`spendguard._costing.prices.ids` for the rules).

- **Dated snapshots**: ``claude-opus-4-7-20260416`` is ``claude-opus-4-7``.
- **Bedrock ids**: ``bedrock/<profile>.anthropic.<model>[-<date>][-v<n>[:<m>]]``. The
  ``global.`` inference profile is priced as ``bedrock/<model>``; an in-Region id (no profile)
  or a geographic profile (``us.``, ``eu.``, ``apac.``, ``jp.``, ``au.``) as
  ``bedrock-regional/<model>``, which must exist: a model without a regional entry is refused
  rather than priced at the global rate.
- **Vertex ids**: ``vertex[-regional]/<model>@<version>`` is ``vertex[-regional]/<model>``;
  ``<version>`` is ``default`` or a snapshot date.

A date in a platform id must be one the base Claude entry declares (its dated alias) when it
declares any, so ``claude-sonnet-4-5-20240101`` is refused, not priced as Sonnet 4.5.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date

from spendguard._providers.adapter import PricedIds

__all__ = ["ID_RULES", "litellm_id", "resolve_id", "undated"]

ID_RULES: Mapping[str, str] = {
    "dated:anthropic": "https://platform.claude.com/docs/en/about-claude/models/overview",
    "bedrock": "https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html",
    "bedrock:regional": "https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock",
    "vertex": "https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai",
}
"""Where each rule's naming scheme (and same-price statement) is published."""

_DATED = re.compile(r"^(?P<base>claude-[a-z0-9.-]+?)-(?P<date>\d{8})$")
_BEDROCK = re.compile(r"^bedrock/(?:(?P<geo>global|us|eu|apac|jp|au)\.)?anthropic\."
                      r"(?P<name>claude-[a-z0-9.-]+?)(?:-(?P<date>\d{8}))?"
                      r"(?:-v(?P<ver>\d+)(?::\d+)?)?$")
_VERTEX = re.compile(r"^(?P<scope>vertex|vertex-regional)/(?P<name>claude-[a-z0-9.-]+?)"
                     r"@(?P<version>default|\d{8})$")


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)  # YYYYMMDD
    except ValueError:
        return None


def undated(model: str) -> str | None:
    """The base id of a dated Claude id, None when it has no real date."""
    match = _DATED.match(model)
    if match is None or _day(match["date"]) is None:
        return None
    return match["base"]


def resolve_id(model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
    """A Bedrock or Vertex id's entry, or a dated snapshot's base entry (one of Anthropic's,
    dated no later than ``day``, not opted out)."""
    if model.startswith("bedrock/"):
        return _bedrock(model, entries, day)
    if model.startswith(("vertex/", "vertex-regional/")):
        return _vertex(model, entries, day)
    match = _DATED.match(model)
    if match is None:
        return None
    base, snapshot = match["base"], _day(match["date"])
    if (snapshot is not None and snapshot <= day and entries.has(base)
            and entries.provider(base) == "anthropic" and entries.snapshots(base)):
        return base, "dated:anthropic"
    return None


def _claude_date_ok(name: str, snapshot: str | None, entries: PricedIds, day: date) -> bool:
    """A platform id's date must be one the Claude entry declares, when it declares any."""
    if snapshot is None:
        return True
    when = _day(snapshot)
    if when is None or when > day or not entries.has(name):
        return False
    dated = [alias for alias in entries.aliases(name) if _DATED.match(alias)]
    return not dated or f"{name}-{snapshot}" in dated


def _bedrock(model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
    match = _BEDROCK.match(model)
    if match is None:
        return None
    name, snapshot = match["name"], match["date"]
    scope = "bedrock" if match["geo"] == "global" else "bedrock-regional"
    for candidate in (f"{scope}/{name}", f"{scope}/{name}-{snapshot}" if snapshot else None):
        if candidate is not None and entries.has(candidate):
            plain = candidate.split("/", 1)[1]
            if plain != name or _claude_date_ok(name, snapshot, entries, day):
                return candidate, "bedrock" if scope == "bedrock" else "bedrock:regional"
    return None


def _vertex(model: str, entries: PricedIds, day: date) -> tuple[str, str] | None:
    match = _VERTEX.match(model)
    if match is None:
        return None
    candidate = f"{match['scope']}/{match['name']}"
    version = match["version"]
    if not entries.has(candidate) or not _claude_date_ok(
            match["name"], None if version == "default" else version, entries, day):
        return None
    return candidate, "vertex"


def litellm_id(key: str, litellm_provider: str) -> str | None:
    """Claude's own ids as they are (not routed ``<provider>/`` keys), Claude on Bedrock as
    ``bedrock/<LiteLLM's id>`` and on Vertex AI as ``vertex/<model>``."""
    if litellm_provider == "anthropic":
        return None if "/" in key or key.startswith("ft:") else key
    if litellm_provider in ("bedrock", "bedrock_converse") and "anthropic." in key and (
            "/" not in key):
        return f"bedrock/{key}"
    if litellm_provider == "vertex_ai-anthropic_models" and key.startswith("vertex_ai/"):
        return f"vertex/{key.removeprefix('vertex_ai/')}"
    return None
