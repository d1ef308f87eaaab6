"""``spendguard prices``: the price table, and how it compares with other published tables."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from spendguard.prices import ModelPrice, PriceTable, default_table

__all__ = ["Disagreement", "compare_genai_prices", "compare_litellm", "prices"]

_PROVIDERS = click.Choice(["openai", "anthropic"])
_MILLION = Decimal(1_000_000)
_COLUMNS = ("MODEL", "PROVIDER", "INPUT", "CACHED", "WRITE", "OUTPUT", "LONG CONTEXT",
            "CONTEXT", "MAX OUT", "AS OF", "SOURCE")


def _num(value: Decimal | None) -> str:
    return "-" if value is None else format(value.normalize(), "f")


def _writes(entry: ModelPrice) -> str:
    rates = entry.cache_write_usd_per_million
    return " / ".join(f"{_num(rate)} ({ttl})" for ttl, rate in rates.items()) or "-"


def _tiers(entry: ModelPrice) -> str:
    return ", ".join(f">{tier.above_input_tokens}: x{_num(tier.input_multiplier)} in, "
                     f"x{_num(tier.output_multiplier)} out" for tier in entry.tiers) or "-"


def _row(entry: ModelPrice) -> tuple[str, ...]:
    return (entry.model, entry.provider, _num(entry.input_usd_per_million),
            _num(entry.cache_read_usd_per_million), _writes(entry),
            _num(entry.output_usd_per_million), _tiers(entry),
            str(entry.context_window or "-"), str(entry.max_output_tokens or "-"),
            entry.as_of.isoformat(), entry.source)


def _as_json(entry: ModelPrice) -> dict[str, Any]:
    return {
        "model": entry.model, "provider": entry.provider, "mode": entry.mode,
        "aliases": list(entry.aliases),
        "usd_per_million": {kind: str(entry.base_rate(kind)) for kind in _kinds(entry)},
        "usd_per_1k_requests": {k: str(v) for k, v in entry.tool_usd_per_1k_requests.items()},
        "tiers": [{"above_input_tokens": t.above_input_tokens,
                   "input_multiplier": str(t.input_multiplier),
                   "output_multiplier": str(t.output_multiplier)} for t in entry.tiers],
        "modifiers": {name: {"multiplier": str(m.multiplier),
                             "kinds": sorted(m.kinds) if m.kinds is not None else None,
                             "usd_per_million": {k: str(v) for k, v in m.usd_per_million.items()}}
                      for name, m in entry.modifiers.items()},
        "context_window": entry.context_window, "max_input_tokens": entry.max_input_tokens,
        "max_output_tokens": entry.max_output_tokens,
        "max_output_tokens_batch": entry.max_output_tokens_batch,
        "min_cacheable_tokens": entry.min_cacheable_tokens,
        "source": entry.source, "as_of": entry.as_of.isoformat(), "note": entry.note,
        "table_version": entry.table_version,
    }


def _kinds(entry: ModelPrice) -> list[str]:
    kinds = ["input"]
    if entry.cache_read_usd_per_million is not None:
        kinds.append("cache_read")
    kinds += [f"cache_write_{ttl}" for ttl in entry.cache_write_usd_per_million]
    if entry.output_usd_per_million is not None:
        kinds.append("output")
    return kinds


def _print_table(rows: Iterable[tuple[str, ...]], header: tuple[str, ...]) -> None:
    rows = [header, *rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                   .rstrip())


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--provider", type=_PROVIDERS, help="Only this provider's models.")
@click.pass_context
def prices(ctx: click.Context, as_json: bool, provider: str | None) -> None:
    """List model prices in USD per million tokens, with their source and date.

    Includes $SPENDGUARD_PRICES overrides. CACHED is the cache-read rate; WRITE the
    cache-write rate per TTL; LONG CONTEXT the multipliers a request pays, on all of its
    tokens, once its input is above the threshold.
    """
    if ctx.invoked_subcommand is not None:
        return
    table = default_table()
    entries = [table.get(model) for model in table.models(provider)]
    if as_json:
        click.echo(json.dumps({"table_version": table.version,
                               "models": [_as_json(entry) for entry in entries]}, indent=2))
        return
    click.echo(f"price table {table.version} (USD per million tokens)\n")
    _print_table((_row(entry) for entry in entries), _COLUMNS)


@dataclass(frozen=True)
class Disagreement:
    """One rate that differs between spendguard's table and another one (USD per million)."""

    model: str
    kind: str
    ours: Decimal | None
    theirs: Decimal | None
    other: str


def compare_genai_prices(table: PriceTable, when: datetime,
                         provider: str | None = None) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from pydantic's genai-prices at ``when``; and models it lacks."""
    try:
        from genai_prices import data_snapshot  # noqa: PLC0415 - optional, for this command only
        from genai_prices.types import TieredPrices  # noqa: PLC0415
    except ImportError as exc:
        raise click.ClickException("genai-prices is not installed: pip install genai-prices") \
            from exc
    snapshot = data_snapshot.get_snapshot()
    found: list[Disagreement] = []
    missing: list[str] = []
    for model in table.models(provider):
        entry = table.get(model)
        try:
            _, info = snapshot.find_provider_model(model, None, entry.provider, None)
        except LookupError:
            missing.append(model)
            continue
        other = "genai-prices" + (f" ({info.id})" if info.id != model else "")
        price = info.get_prices(when)
        write_short = "cache_write_5m" if entry.provider == "anthropic" else "cache_write_30m"
        theirs: dict[str, Any] = {
            "input": price.input_mtok, "cache_read": price.cache_read_mtok,
            write_short: price.cache_write_mtok, "cache_write_1h": price.cache_write_1h_mtok,
            "output": price.output_mtok,
        }
        for kind, value in theirs.items():
            base = value
            if isinstance(value, TieredPrices):
                for tier in value.tiers:  # compare the long-context rate too
                    ours_tier = entry.tier_for(tier.start + 1)
                    ours = _rate(entry, kind)
                    if ours is not None and ours_tier is not None:
                        ours *= ours_tier.multiplier_for(kind)
                    found += _differ(model, f"{kind} >{tier.start}", ours, tier.price, other)
                base = value.base
            found += _differ(model, kind, _rate(entry, kind), base, other)
    return found, missing


def compare_litellm(table: PriceTable, path: Path,
                    provider: str | None = None) -> tuple[list[Disagreement], list[str]]:
    """Rates that differ from a LiteLLM ``model_prices_and_context_window.json``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{path}: cannot read a LiteLLM price file ({exc})") from exc
    fields = {"input": "input_cost_per_token", "cache_read": "cache_read_input_token_cost",
              "cache_write_1h": "cache_creation_input_token_cost_above_1hr",
              "output": "output_cost_per_token"}
    found: list[Disagreement] = []
    missing: list[str] = []
    for model in table.models(provider):
        entry = table.get(model)
        key = next((name for name in (model, *entry.aliases) if isinstance(data.get(name), dict)),
                   None)
        if key is None:
            missing.append(model)
            continue
        write_short = "cache_write_5m" if entry.provider == "anthropic" else "cache_write_30m"
        kinds = {**fields, write_short: "cache_creation_input_token_cost"}
        record: Mapping[str, Any] = data[key]
        for kind, name in kinds.items():
            per_token = record.get(name)
            if isinstance(per_token, int | float) and not isinstance(per_token, bool):
                theirs = Decimal(str(per_token)) * _MILLION
                found += _differ(model, kind, _rate(entry, kind), theirs, f"litellm ({key})")
    return found, missing


def _rate(entry: ModelPrice, kind: str) -> Decimal | None:
    if kind == "cache_read":
        return entry.cache_read_usd_per_million
    if kind.startswith("cache_write_"):
        return entry.cache_write_usd_per_million.get(kind.removeprefix("cache_write_"))
    return entry.input_usd_per_million if kind == "input" else entry.output_usd_per_million


def _differ(model: str, kind: str, ours: Decimal | None, theirs: Any,
            other: str) -> list[Disagreement]:
    if theirs is None or (ours is not None and ours == Decimal(theirs)):
        return []
    return [Disagreement(model, kind, ours, Decimal(theirs), other)]


@prices.command("check")
@click.option("--litellm", "litellm_file", type=click.Path(exists=True, dir_okay=False,
                                                           path_type=Path),
              help="Also compare with a LiteLLM model_prices_and_context_window.json.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--provider", type=_PROVIDERS, help="Only this provider's models.")
@click.option("--date", "on_date", type=click.DateTime(["%Y-%m-%d"]),
              help="Compare with genai-prices' rates on this date (default: today).")
def check(litellm_file: Path | None, as_json: bool, provider: str | None,
          on_date: datetime | None) -> None:
    """Compare the price table with genai-prices (and a LiteLLM file); exit 1 on disagreement.

    Models the other table lacks are listed, not counted as disagreements.
    """
    table = default_table()
    when = on_date.replace(tzinfo=UTC) if on_date else datetime.now(UTC)
    found, missing = compare_genai_prices(table, when, provider)
    gaps = {"genai-prices": missing}
    if litellm_file is not None:
        more, gaps["litellm"] = compare_litellm(table, litellm_file, provider)
        found += more
    if as_json:
        click.echo(json.dumps({
            "table_version": table.version,
            "disagreements": [{"model": d.model, "kind": d.kind, "ours": _num(d.ours),
                               "theirs": _num(d.theirs), "other": d.other} for d in found],
            "missing": gaps}, indent=2))
    else:
        click.echo(f"price table {table.version}: {len(found)} disagreement(s)\n")
        if found:
            _print_table(((d.model, d.kind, _num(d.ours), _num(d.theirs), d.other)
                          for d in found), ("MODEL", "KIND", "SPENDGUARD", "OTHER", "SOURCE"))
        for other, models in gaps.items():
            if models:
                click.echo(f"\nnot in {other}: {', '.join(models)}")
    if found:
        raise SystemExit(1)
