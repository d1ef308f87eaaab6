"""Our price table against other published ones: pydantic's genai-prices and LiteLLM's file.

Every rate spendguard would charge is compared where the other table lists it: input, cached
input, cache writes per TTL (5-minute, 30-minute, 1-hour and 12-hour where listed), output,
long-context tiers, the batch discount and service tiers (flex, priority, fast). A rate one
table leaves out is not a disagreement; neither is "no rate" against 0 (LiteLLM lists
``output_cost_per_token: 0`` for embedding models, which bill no output). Models the other
table lacks are listed apart.

genai-prices is optional (``pip install 'spendguard-llm[prices]'``); a check with only a
LiteLLM file runs without it. Either table can be read from a file instead of the installed
package: genai-prices' published ``data.json`` (a list of providers) or LiteLLM's
``model_prices_and_context_window.json``, bare or wrapped in a snapshot object
``{"source", "version", "taken", "providers" | "models"}`` that records where it came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard._core.errors import ConfigError, SpendguardError
from spendguard._costing.prices import ModelPrice, PriceTable
from spendguard._costing.prices.catalog import fallback_providers
from spendguard._providers.adapter import adapter_for, adapters

__all__ = ["GENAI_PRICES_EXTRA", "Disagreement", "PriceCheck", "check_prices",
           "compare_genai_prices", "compare_litellm", "genai_prices_lacking", "newest_first",
           "our_rate"]

GENAI_PRICES_EXTRA = "pip install 'spendguard-llm[prices]'"
_MILLION = Decimal(1_000_000)

# LiteLLM per-token field -> our token kind (cache writes by TTL are added per provider).
_LITELLM_KINDS = {"input_cost_per_token": "input", "cache_read_input_token_cost": "cache_read",
                  "output_cost_per_token": "output"}
_LITELLM_WRITE = "cache_creation_input_token_cost"
# LiteLLM suffix -> our modifier name.
_LITELLM_MODIFIERS = {"batches": "batch", "flex": "flex", "priority": "priority", "fast": "fast",
                      "ultrafast": "ultrafast"}


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
    lacking: dict[str, list[str]] = field(default_factory=dict)
    """Models each other table prices that spendguard does not, newest first."""

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


def _short_write(entry: ModelPrice) -> str | None:
    """The kind the other tables' one cache-write rate prices: the provider's shortest TTL
    (Anthropic 5 minutes, OpenAI 30 minutes); None when it bills no cache writes."""
    ttls = adapter_for(entry.provider).cache_ttls
    return f"cache_write_{ttls[0]}" if ttls else None


def _genai_prices_id(provider: str) -> str:
    """genai-prices' id of a provider: the one its models keep their ids under."""
    return next(genai_id for genai_id, prefix
                in adapter_for(provider).genai_prices_ids.items() if not prefix)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{what}: {path}: cannot read a {what} price file ({exc})") from exc


def _unwrap(data: Any, key: str) -> tuple[Any, str | None]:
    """A snapshot's payload and its "<version>, taken <date>" label; a bare file as it is."""
    if isinstance(data, Mapping) and key in data and "source" in data:
        return data[key], f"{data.get('version', '?')}, taken {data.get('taken', '?')}"
    return data, None


def compare_genai_prices(table: PriceTable, when: datetime, provider: str | None = None, *,
                         snapshot_file: Path | None = None,
                         ) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from pydantic's genai-prices at ``when``; and models it lacks.

    Compared: every price genai-prices gives (tiered ones tier by tier), on the day compared
    and on each day one of its date-conditional prices starts (and the day before the first),
    each against spendguard's rate in force that day; and each request variant in force
    (batch processing, a service tier, fast speed) against the matching modifier.
    ``snapshot_file``: genai-prices' data read from this file (its published ``data.json``, or a
    snapshot object) instead of the installed package's own.
    """
    snapshot, label = _genai_snapshot(snapshot_file)
    found: list[Disagreement] = []
    missing: list[str] = []
    for model in table.models(provider):
        entry = table.get(model, when)  # the rates in force on the day compared
        try:
            _, info = snapshot.find_provider_model(
                model, None, _genai_prices_id(entry.provider), None)
        except LookupError:
            missing.append(model)
            continue
        other = label + (f" ({info.id})" if info.id != model else "")
        for day in _genai_days(info, when):
            suffix = "" if day == when.date() else f" on {day}"
            dated = table.get(model, day)
            found += _compare_genai_price(model, dated, info.get_prices(
                datetime.combine(day, datetime.min.time(), UTC)), None, suffix, other)
        for variant in info.price_variants or ():
            if variant.constraint is not None and not variant.constraint.active(when):
                continue
            compares, modifier = _variant_modifier(variant.when)
            if compares:
                found += _compare_genai_price(model, entry, variant.prices, modifier, "",
                                              other)
    return found, missing


def _genai_snapshot(snapshot_file: Path | None) -> tuple[Any, str]:
    try:
        from genai_prices import data_snapshot  # noqa: PLC0415 - optional, this check only
    except ImportError as exc:
        raise ConfigError(f"genai-prices is not installed: {GENAI_PRICES_EXTRA}, or compare "
                          "with a LiteLLM price file only (--litellm FILE)") from exc
    if snapshot_file is None:
        return data_snapshot.get_snapshot(), "genai-prices"
    snapshot, version = genai_prices_snapshot(snapshot_file)
    return snapshot, f"genai-prices {version}" if version else "genai-prices"


def _genai_days(info: Any, when: datetime) -> list[date]:
    """The day compared, and the days genai-prices' date-conditional prices change on."""
    days = {when.date()}
    if isinstance(info.prices, list):
        starts = [getattr(c.constraint, "start_date", None) for c in info.prices]
        dated = sorted(start for start in starts if isinstance(start, date))
        if dated:
            days.update(dated)
            days.add(dated[0] - timedelta(days=1))
    return sorted(days)


def _variant_modifier(when: Mapping[str, str]) -> tuple[bool, str | None]:
    """Whether a genai-prices request variant compares with spendguard, and the modifier it
    prices (None: the Standard rate)."""
    if when == {"processing": "batch"}:
        return True, "batch"
    if set(when) == {"service_tier"}:
        tier = when["service_tier"]
        return True, None if tier in ("default", "standard", "auto") else tier
    if when == {"speed": "fast"}:
        return True, "speed_fast"
    return False, None


def _compare_genai_price(model: str, entry: ModelPrice, price: Any, modifier: str | None,
                         suffix: str, other: str) -> list[Disagreement]:
    from genai_prices.types import TieredPrices  # noqa: PLC0415 - optional

    found: list[Disagreement] = []
    named = f" ({modifier})" if modifier else ""
    short_write = _short_write(entry)
    theirs: dict[str, Any] = {
        "input": getattr(price, "input_mtok", None),
        "cache_read": getattr(price, "cache_read_mtok", None),
        **({short_write: getattr(price, "cache_write_mtok", None)} if short_write else {}),
        "cache_write_1h": getattr(price, "cache_write_1h_mtok", None),
        "output": getattr(price, "output_mtok", None),
    }
    for kind, value in theirs.items():
        base = value
        if isinstance(value, TieredPrices):
            for tier in value.tiers:  # the long-context rate too
                found += _differ(model, f"{kind} >{tier.start}{named}{suffix}",
                                 our_rate(entry, kind, above_tokens=tier.start,
                                          modifier=modifier), tier.price, other)
            base = value.base
        found += _differ(model, f"{kind}{named}{suffix}",
                         our_rate(entry, kind, modifier=modifier), base, other)
    return found


def genai_prices_snapshot(path: Path) -> tuple[Any, str | None]:
    """genai-prices' ``DataSnapshot`` read from a file, and the snapshot's version label."""
    from genai_prices import data_snapshot, types  # noqa: PLC0415 - optional

    providers, version = _unwrap(_read_json(path, "genai-prices"), "providers")
    if not isinstance(providers, list):
        raise ConfigError(f"genai-prices: {path}: expected a list of providers, as in "
                          "genai-prices' published data.json")
    try:
        # the loader genai-prices' own UpdatePrices runs on its published data.json
        parsed = types._providers_from_raw(providers)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigError(f"genai-prices: {path}: not genai-prices data ({exc})") from exc
    return data_snapshot.DataSnapshot(providers=parsed, from_auto_update=False), version


_LITELLM_FIELD = re.compile(
    r"^(?P<field>input_cost_per_token|output_cost_per_token|cache_read_input_token_cost"
    r"|cache_creation_input_token_cost)(?:_above_(?P<hours>\d+)hr)?"
    r"(?:_above_(?P<k>\d+)k_tokens)?(?:_(?P<modifier>[a-z]+))?$")


def _litellm_rate(name: str, entry: ModelPrice) -> tuple[str, int | None, str | None] | None:
    """The kind, long-context threshold and modifier a LiteLLM per-token field prices."""
    match = _LITELLM_FIELD.match(name)
    if match is None:
        return None
    modifier = match["modifier"]
    if modifier is not None and modifier not in _LITELLM_MODIFIERS:
        return None
    field = match["field"]
    if match["hours"] is not None:
        if field != _LITELLM_WRITE:
            return None
        kind = f"cache_write_{match['hours']}h"
    elif field == _LITELLM_WRITE:
        short_write = _short_write(entry)
        if short_write is None:
            return None  # a rate spendguard's table leaves out
        kind = short_write
    else:
        kind = _LITELLM_KINDS[field]
    above = int(match["k"]) * 1000 if match["k"] else None
    return kind, above, _LITELLM_MODIFIERS[modifier] if modifier else None


def _compare_litellm_record(model: str, entry: ModelPrice, record: Mapping[str, Any],
                            other: str) -> list[Disagreement]:
    found: list[Disagreement] = []
    for name, per_token in record.items():
        if not isinstance(per_token, int | float) or isinstance(per_token, bool):
            continue
        rate = _litellm_rate(name, entry)
        if rate is None:
            continue
        kind, above, modifier = rate
        label = kind + (f" >{above}" if above else "") + (f" ({modifier})" if modifier else "")
        theirs = Decimal(str(per_token)) * _MILLION
        if (kind.startswith("cache_write") and theirs == 0
                and not entry.cache_write_usd_per_million):
            continue  # "no charge for writing" where spendguard bills writes as input
        found += _differ(model, label, our_rate(entry, kind, above_tokens=above,
                                                modifier=modifier), theirs, other)
    return found


def _our_id(key: str, record: Mapping[str, Any]) -> str | None:
    """A LiteLLM key in spendguard's id scheme (None for providers it does not price): the
    first adapter's that claims it (``litellm_id``)."""
    provider = record.get("litellm_provider")
    if not isinstance(provider, str):
        return None
    return next((ours for adapter in adapters()
                 if (ours := adapter.litellm_id(key, provider)) is not None), None)


def _entry_for(table: PriceTable, model: str, when: datetime | None) -> ModelPrice | None:
    if model not in table:
        return None
    try:
        return table.get(model, when)
    except SpendguardError:
        return None


def compare_litellm(table: PriceTable, source: Path | Mapping[str, Any],
                    provider: str | None = None, *, when: datetime | None = None,
                    lacking: list[str] | None = None,
                    ) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from a LiteLLM ``model_prices_and_context_window.json``.

    Every record whose id spendguard prices (by entry, alias or id rule) is compared, field by
    field: input, cached input, cache writes by TTL (``..._above_<N>hr``), output, long-context
    tiers (``..._above_<N>k_tokens``), batch and service tiers (``_batches``, ``_flex``,
    ``_priority``, ``_fast``, ``_ultrafast``) and their combinations. ``lacking``, when given,
    receives the ids LiteLLM prices for OpenAI, Anthropic, Claude on Bedrock / Vertex,
    DeepSeek and Moonshot that spendguard does not.
    """
    data, version = _unwrap(_read_json(source, "LiteLLM") if isinstance(source, Path)
                            else source, "models")
    label = f"litellm {version}" if version else "litellm"
    if not isinstance(data, Mapping):
        raise ConfigError(f"litellm: {source}: expected a JSON object of models")
    found: list[Disagreement] = []
    matched: set[str] = set()
    for key, record in data.items():
        if not isinstance(record, Mapping):
            continue
        ours = _our_id(key, record) if "litellm_provider" in record else key
        if ours is None:
            continue
        entry = _entry_for(table, ours, when)
        if entry is None:
            if lacking is not None and "litellm_provider" in record and any(
                    "cost" in name for name in record):
                lacking.append(ours)
            continue
        if provider is not None and entry.provider != provider:
            continue
        matched.add(entry.model)
        found += _compare_litellm_record(entry.model, entry, record, f"{label} ({key})")
    missing = [model for model in table.models(provider) if model not in matched]
    unique = list(dict.fromkeys(found))
    return unique, missing


def genai_prices_lacking(table: PriceTable, snapshot_file: Path | None = None,
                         providers: tuple[str, ...] | None = None) -> list[str]:
    """Model ids genai-prices prices for these providers that spendguard does not; by
    default those the fallback catalog reads (its adapters' ``genai_prices_ids``)."""
    snapshot, _ = _genai_snapshot(snapshot_file)
    prefixes = {genai_id: prefix for genai_id, (_, prefix) in fallback_providers().items()}
    lacking = []
    for found in snapshot.providers:
        if found.id not in (prefixes if providers is None else providers):
            continue
        for info in found.models:
            ours = prefixes.get(found.id, "") + info.id
            if ours not in table:
                lacking.append(ours)
    return lacking


def newest_first(models: list[str]) -> list[str]:
    """Ids ordered newest first: by the version numbers in the id (sizes such as ``120b`` and
    snapshot dates left out), then by its snapshot date."""
    def key(model: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        dates = re.findall(r"(\d{4})-?(\d{2})-?(\d{2})(?!\d)", model)
        plain = re.sub(r"\d{4}-?\d{2}-?\d{2}(?!\d)|\d+[bkm]\b", "", model)
        return (tuple(int(n) for n in re.findall(r"\d+", plain)),
                tuple(int(n) for n in dates[-1]) if dates else ())
    return sorted(dict.fromkeys(models), key=lambda m: (key(m), m), reverse=True)


def check_prices(table: PriceTable, *, when: datetime, litellm: Path | None = None,
                 provider: str | None = None, genai_prices: Path | None = None) -> PriceCheck:
    """Compare ``table`` with genai-prices (when installed) and a LiteLLM file (when given).

    ``genai_prices``: read genai-prices' data from this file rather than the installed package.
    With neither available this raises ``ConfigError`` naming the extra to install.
    """
    found: list[Disagreement] = []
    missing: dict[str, list[str]] = {}
    lacking: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    try:
        found, missing["genai-prices"] = compare_genai_prices(table, when, provider,
                                                              snapshot_file=genai_prices)
        lacking["genai-prices"] = newest_first(genai_prices_lacking(table, genai_prices))
    except ConfigError as exc:
        if litellm is None:
            raise
        skipped["genai-prices"] = str(exc)
    if litellm is not None:
        theirs: list[str] = []
        more, missing["litellm"] = compare_litellm(table, litellm, provider, when=when,
                                                   lacking=theirs)
        found += more
        lacking["litellm"] = newest_first(theirs)
    return PriceCheck(table_version=table.version, disagreements=found, missing=missing,
                      skipped=skipped, lacking=lacking)
