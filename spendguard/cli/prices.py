"""``spendguard prices``: the price table, and how it compares with other published tables."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from spendguard._core.errors import ConfigError
from spendguard._costing.prices import ModelPrice, default_table

__all__ = ["prices"]

_PROVIDERS = click.Choice(["openai", "anthropic", "gemini"])
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
    """Compare the price table with genai-prices and/or a LiteLLM file; exit 1 on disagreement.

    Every rate is compared where the other table lists it: input, cached input, cache writes
    (5m, 30m, 1h, 12h), output, long-context tiers, batch and service tiers. Models the other
    table lacks are listed, not counted. Without genai-prices installed, a LiteLLM file alone
    is compared. Exit 0: all listed rates agree; 1: some differ; 2: nothing to compare with.
    """
    from spendguard._costing.prices.check import check_prices  # noqa: PLC0415

    table = default_table()
    when = on_date.replace(tzinfo=UTC) if on_date else datetime.now(UTC)
    try:
        result = check_prices(table, when=when, litellm=litellm_file, provider=provider)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    found = result.disagreements
    if as_json:
        click.echo(json.dumps({
            "table_version": table.version, "ok": result.ok,
            "disagreements": [{"model": d.model, "kind": d.kind, "ours": _num(d.ours),
                               "theirs": _num(d.theirs), "other": d.other} for d in found],
            "missing": result.missing, "skipped": result.skipped}, indent=2))
    else:
        click.echo(f"price table {table.version}: {len(found)} disagreement(s)\n")
        if found:
            _print_table(((d.model, d.kind, _num(d.ours), _num(d.theirs), d.other)
                          for d in found), ("MODEL", "KIND", "SPENDGUARD", "OTHER", "SOURCE"))
        for other, models in result.missing.items():
            if models:
                click.echo(f"\nnot in {other}: {', '.join(models)}")
        for other, why in result.skipped.items():
            click.echo(f"\nnot compared with {other}: {why}")
    if found:
        raise SystemExit(1)
