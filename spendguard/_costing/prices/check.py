"""Our price table against other published ones: pydantic's genai-prices and LiteLLM's file.

Every rate spendguard would charge is compared where the other table lists it: input, cached
input, cache writes per TTL (5-minute, 30-minute, 1-hour and 12-hour where listed), output,
long-context tiers, the batch discount and service tiers (flex, priority, fast). A rate one
table leaves out is not a disagreement; neither is "no rate" against 0 (LiteLLM lists
``output_cost_per_token: 0`` for embedding models, which bill no output). Models the other
table lacks are listed apart.

genai-prices is optional (``pip install 'spendguard-llm[prices]'``); a check with only a
LiteLLM file runs without it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.prices import ModelPrice, PriceTable

__all__ = ["GENAI_PRICES_EXTRA", "Disagreement", "PriceCheck", "check_prices",
           "compare_genai_prices", "compare_litellm", "our_rate"]

GENAI_PRICES_EXTRA = "pip install 'spendguard-llm[prices]'"
_MILLION = Decimal(1_000_000)

# LiteLLM per-token field -> our token kind (cache writes by TTL are added per provider).
_LITELLM_KINDS = {"input_cost_per_token": "input", "cache_read_input_token_cost": "cache_read",
                  "output_cost_per_token": "output"}
_LITELLM_WRITE = "cache_creation_input_token_cost"
# LiteLLM suffix -> our modifier name.
_LITELLM_MODIFIERS = {"batches": "batch", "flex": "flex", "priority": "priority", "fast": "fast"}
_LONG = re.compile(r"^(?P<field>[a-z_]+?)_above_(?P<k>\d+)k_tokens$")
_WRITE_TTL = re.compile(rf"^{_LITELLM_WRITE}_above_(?P<hours>\d+)hr$")


@dataclass(frozen=True)
class Disagreement:
    """One rate that differs between spendguard's table and another one (USD per million)."""

    model: str
    kind: str
    ours: Decimal | None
    theirs: Decimal | None
    other: str


@dataclass(frozen=True)
class PriceCheck:
    """What a check compared, what differs, what the other tables lack, and what was skipped."""

    table_version: str
    disagreements: list[Disagreement]
    missing: dict[str, list[str]]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No rate differs (what ``spendguard prices check`` exits 0 for)."""
        return not self.disagreements


def our_rate(entry: ModelPrice, kind: str, *, above_tokens: int | None = None,
             modifier: str | None = None) -> Decimal | None:
    """The rate spendguard charges for ``kind`` (USD per million), None where it has none.

    ``above_tokens``: a request's input past that many tokens (a long-context tier);
    ``modifier``: a batch or service-tier modifier, as ``cost_of`` applies them.
    """
    try:
        named = entry.modifier(modifier) if modifier is not None else None
        published = named.usd_per_million.get(kind) if named is not None else None
        rate = published if published is not None else entry.base_rate(kind)
    except SpendguardError:
        return None
    if above_tokens is not None:
        tier = entry.tier_for(above_tokens + 1)
        if tier is not None:
            rate *= tier.multiplier_for(kind)
    if named is not None and named.applies_to(kind):
        rate *= named.multiplier
    return rate


def _differ(model: str, kind: str, ours: Decimal | None, theirs: Any,
            other: str) -> list[Disagreement]:
    if theirs is None:
        return []
    theirs = Decimal(str(theirs))
    if ours == theirs or (ours is None and theirs == 0):
        return []
    return [Disagreement(model, kind, ours, theirs, other)]


def _short_write(entry: ModelPrice) -> str:
    # The provider's shortest cache write: Anthropic 5 minutes, OpenAI 30 minutes.
    return "cache_write_5m" if entry.provider == "anthropic" else "cache_write_30m"


_GENAI_PRICES_PROVIDER = {"gemini": "google"}
"""genai-prices' provider id where it differs from ours."""


def compare_genai_prices(table: PriceTable, when: datetime,
                         provider: str | None = None) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from pydantic's genai-prices at ``when``; and models it lacks."""
    try:
        from genai_prices import data_snapshot  # noqa: PLC0415 - optional, this check only
        from genai_prices.types import TieredPrices  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigError(f"genai-prices is not installed: {GENAI_PRICES_EXTRA}, or compare "
                          "with a LiteLLM price file only (--litellm FILE)") from exc
    snapshot = data_snapshot.get_snapshot()
    found: list[Disagreement] = []
    missing: list[str] = []
    for model in table.models(provider):
        entry = table.get(model)
        try:
            _, info = snapshot.find_provider_model(
                model, None, _GENAI_PRICES_PROVIDER.get(entry.provider, entry.provider), None)
        except LookupError:
            missing.append(model)
            continue
        other = "genai-prices" + (f" ({info.id})" if info.id != model else "")
        price = info.get_prices(when)
        theirs: dict[str, Any] = {
            "input": price.input_mtok, "cache_read": price.cache_read_mtok,
            _short_write(entry): price.cache_write_mtok,
            "cache_write_1h": price.cache_write_1h_mtok, "output": price.output_mtok,
        }
        for kind, value in theirs.items():
            base = value
            if isinstance(value, TieredPrices):
                for tier in value.tiers:  # the long-context rate too
                    found += _differ(model, f"{kind} >{tier.start}",
                                     our_rate(entry, kind, above_tokens=tier.start), tier.price,
                                     other)
                base = value.base
            found += _differ(model, kind, our_rate(entry, kind), base, other)
    return found, missing


def _litellm_fields(entry: ModelPrice) -> dict[str, str]:
    return {**_LITELLM_KINDS, _LITELLM_WRITE: _short_write(entry)}


def _compare_litellm_record(model: str, entry: ModelPrice, record: Mapping[str, Any],
                            other: str) -> list[Disagreement]:
    found: list[Disagreement] = []
    fields = _litellm_fields(entry)
    for name, per_token in record.items():
        if not isinstance(per_token, int | float) or isinstance(per_token, bool):
            continue
        theirs = Decimal(str(per_token)) * _MILLION
        if name in fields:
            kind = fields[name]
            found += _differ(model, kind, our_rate(entry, kind), theirs, other)
        elif ttl := _WRITE_TTL.match(name):
            kind = f"cache_write_{ttl['hours']}h"
            found += _differ(model, kind, our_rate(entry, kind), theirs, other)
        elif long := _LONG.match(name):
            if long["field"] in fields:
                kind, above = fields[long["field"]], int(long["k"]) * 1000
                found += _differ(model, f"{kind} >{above}",
                                 our_rate(entry, kind, above_tokens=above), theirs, other)
        else:
            base, _, suffix = name.rpartition("_")
            modifier = _LITELLM_MODIFIERS.get(suffix)
            if modifier is not None and base in fields:
                kind = fields[base]
                found += _differ(model, f"{kind} ({modifier})",
                                 our_rate(entry, kind, modifier=modifier), theirs, other)
    return found


def compare_litellm(table: PriceTable, source: Path | Mapping[str, Any],
                    provider: str | None = None) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from a LiteLLM ``model_prices_and_context_window.json``."""
    if isinstance(source, Path):
        try:
            data: Any = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"litellm: {source}: cannot read a LiteLLM price file ({exc})"
                              ) from exc
    else:
        data = source
    if not isinstance(data, Mapping):
        raise ConfigError(f"litellm: {source}: expected a JSON object of models")
    found: list[Disagreement] = []
    missing: list[str] = []
    for model in table.models(provider):
        entry = table.get(model)
        key = next((name for name in (model, *entry.aliases) if isinstance(data.get(name), dict)),
                   None)
        if key is None:
            missing.append(model)
            continue
        found += _compare_litellm_record(model, entry, data[key], f"litellm ({key})")
    return found, missing


def check_prices(table: PriceTable, *, when: datetime, litellm: Path | None = None,
                 provider: str | None = None) -> PriceCheck:
    """Compare ``table`` with genai-prices (when installed) and a LiteLLM file (when given).

    With neither available this raises ``ConfigError`` naming the extra to install.
    """
    found: list[Disagreement] = []
    missing: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    try:
        found, missing["genai-prices"] = compare_genai_prices(table, when, provider)
    except ConfigError as exc:
        if litellm is None:
            raise
        skipped["genai-prices"] = str(exc)
    if litellm is not None:
        more, missing["litellm"] = compare_litellm(table, litellm, provider)
        found += more
    return PriceCheck(table_version=table.version, disagreements=found, missing=missing,
                      skipped=skipped)
