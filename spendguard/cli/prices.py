"""``spendguard prices``: the price table, and how it compares with other published tables."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from spendguard._core.errors import ConfigError
from spendguard._core.tables import aligned
from spendguard._costing.prices import ModelPrice, PriceTable, default_table
from spendguard._providers.adapter import providers
from spendguard.cli.conventions import SuggestingGroup, emit_json, output_width

__all__ = ["prices"]

_PROVIDERS = click.Choice(providers())
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
        "effective_from": _day(entry.effective_from),
        "effective_until": _day(entry.effective_until),
    }


def _day(day: date | None) -> str | None:
    return None if day is None else day.isoformat()


def _changes(table: PriceTable, models: list[str]) -> list[tuple[str, ...]]:
    """One row per dated period of rates (past, current and scheduled), grouped by change."""
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for model in models:
        periods = table.periods(model)
        if len(periods) < 2:
            continue
        for period in periods:
            if period.change is None:
                continue
            key = (_day(period.effective_from) or "-", _day(period.effective_until) or "-",
                   period.change, period.source)
            grouped.setdefault(key, []).append(model)
    return [(start, end, ", ".join(names) if len(names) <= 3 else f"{len(names)} models",
             note, source) for (start, end, note, source), names in sorted(grouped.items())]


def _kinds(entry: ModelPrice) -> list[str]:
    kinds = ["input"]
    if entry.cache_read_usd_per_million is not None:
        kinds.append("cache_read")
    kinds += [f"cache_write_{ttl}" for ttl in entry.cache_write_usd_per_million]
    if entry.output_usd_per_million is not None:
        kinds.append("output")
    return kinds


def _print_table(rows: Iterable[tuple[str, ...]], header: tuple[str, ...]) -> None:
    """Left-aligned columns fitted to the terminal (long sources wrap onto more lines)."""
    for line in aligned(header, list(rows), left=len(header), width=output_width(),
                        wrap=(len(header) - 1, 0, *range(1, len(header) - 1))):
        click.echo(line)


@click.group(cls=SuggestingGroup, invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--provider", type=_PROVIDERS, help="Only this provider's models.")
@click.option("--on", "on_date", type=click.DateTime(["%Y-%m-%d"]),
              help="The rates in force on this UTC day (default: today).")
@click.pass_context
def prices(ctx: click.Context, as_json: bool, provider: str | None,
           on_date: datetime | None) -> None:
    """List model prices in USD per million tokens, with their source and date.

    Includes $SPENDGUARD_PRICES overrides. CACHED is the cache-read rate; WRITE the
    cache-write rate per TTL; LONG CONTEXT the multipliers a request pays, on all of its
    tokens, once its input is above the threshold. Rates with dated changes (past price
    cuts, scheduled increases) are listed after the table; --on shows another day's rates.
    """
    if ctx.invoked_subcommand is not None:
        return
    table = default_table()
    day = on_date.date() if on_date else datetime.now(UTC).date()
    models = table.models(provider)
    entries = [table.get(model, day) for model in models]
    if as_json:
        emit_json({
            "table_version": table.version, "on": day.isoformat(),
            "models": [{**_as_json(entry), "periods": [
                {"from": _day(p.effective_from), "until": _day(p.effective_until),
                 "table_version": p.table_version, "source": p.source, "change": p.change}
                for p in table.periods(entry.model)] if entry.effective_from
                or entry.effective_until else []} for entry in entries]})
        return
    click.echo(f"price table {table.version}, rates in force on {day} "
               "(USD per million tokens)\n")
    _print_table((_row(entry) for entry in entries), _COLUMNS)
    changes = _changes(table, models)
    if changes:
        click.echo("\ndated rates (each call is priced at the rates of its own UTC day):\n")
        _print_table(changes, ("FROM", "UNTIL", "MODELS", "CHANGE", "SOURCE"))


@prices.command("check")
@click.option("--litellm", "litellm_file", type=click.Path(exists=True, dir_okay=False,
                                                           path_type=Path),
              help="Also compare with a LiteLLM model_prices_and_context_window.json.")
@click.option("--genai-prices", "genai_file", type=click.Path(exists=True, dir_okay=False,
                                                              path_type=Path),
              help="Read genai-prices' data from this file (its published data.json, or a "
                   "stored snapshot) instead of the installed package's.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--provider", type=_PROVIDERS, help="Only this provider's models.")
@click.option("--date", "on_date", type=click.DateTime(["%Y-%m-%d"]),
              help="Compare with genai-prices' rates on this date (default: today).")
def check(litellm_file: Path | None, genai_file: Path | None, as_json: bool,
          provider: str | None, on_date: datetime | None) -> None:
    """Compare the price table with genai-prices and/or a LiteLLM file; exit 1 on disagreement.

    Every rate both tables carry is compared: input, cached input, cache writes by TTL (5m,
    30m, 1h, 12h), output, long-context tiers, batch, flex, priority, fast and ultrafast,
    their combinations, and genai-prices' date-conditional prices on each day they change.
    Models the other table lacks, and models it prices that spendguard lacks (newest first),
    are listed, not counted. Without genai-prices installed, a LiteLLM file alone is
    compared. Exit 0: all compared rates agree; 1: some differ; 2: nothing to compare with.
    """
    from spendguard._costing.prices.check import check_prices  # noqa: PLC0415

    table = default_table()
    when = on_date.replace(tzinfo=UTC) if on_date else datetime.now(UTC)
    try:
        result = check_prices(table, when=when, litellm=litellm_file, provider=provider,
                              genai_prices=genai_file)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    found = result.disagreements
    if as_json:
        emit_json({
            "table_version": table.version, "ok": result.ok,
            "disagreements": [{"model": d.model, "kind": d.kind, "ours": _num(d.ours),
                               "theirs": _num(d.theirs), "other": d.other} for d in found],
            "missing": result.missing, "lacking": result.lacking,
            "skipped": result.skipped})
    else:
        click.echo(f"price table {table.version}: {len(found)} disagreement(s)\n")
        if found:
            _print_table(((d.model, d.kind, _num(d.ours), _num(d.theirs), d.other)
                          for d in found), ("MODEL", "KIND", "SPENDGUARD", "OTHER", "SOURCE"))
        for other, models in result.missing.items():
            if models:
                click.echo(f"\nnot in {other}: {', '.join(models)}")
        for other, models in result.lacking.items():
            if models:
                click.echo(f"\npriced by {other}, not by spendguard (newest first; add the "
                           f"ones you use, see docs/prices.md): {', '.join(models)}")
        for other, why in result.skipped.items():
            click.echo(f"\nnot compared with {other}: {why}")
    if found:
        raise SystemExit(1)


@prices.command("status")
@click.option("--ledger", "ledger_url", metavar="URL",
              help="Ledger URL (sqlite:///..., redis://..., memory://name); default: "
                   "spendguard's own.")
@click.option("--days", type=click.IntRange(1, 3660), default=30, show_default=True,
              help="How far back the ledger is read.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def status(ledger_url: str | None, days: int, as_json: bool) -> None:
    """What the price table knows, and what the ledger says it lacked.

    The bundled table's date and version, the table in use (with $SPENDGUARD_PRICES), the
    newest models it prices per provider, the fallback catalog's version when it is on
    ($SPENDGUARD_PRICE_CATALOG), and from the ledger, over the last --days: the models
    priced by the fallback catalog and the models refused for want of a price, so a team
    sees what to add.
    """
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415 - keeps --help fast
    from spendguard._costing.prices.check import newest_first  # noqa: PLC0415
    from spendguard._guard.metering import REFUSED_TAG  # noqa: PLC0415

    table = default_table()
    bundled = PriceTable.bundled()
    newest = {provider: newest_first([m for m in table.models(provider) if "/" not in m])[:3]
              for provider in providers()}
    since = datetime.now(UTC) - timedelta(days=days)
    opened = open_ledger(ledger_url, read_only=True)
    fallback: dict[str, dict[str, Any]] = {}
    refused: dict[str, dict[str, Any]] = {}
    for record in opened.records(since=since):
        if record.table_version.startswith("genai-prices"):
            row = fallback.setdefault(record.model, {"calls": 0, "usd": Decimal(0),
                                                     "catalog": record.table_version})
            row["calls"] += 1
            row["usd"] += record.actual_usd
        elif record.tags.get(REFUSED_TAG):
            row = refused.setdefault(record.model, {"calls": 0, "last": record.time})
            row["calls"] += 1
            row["last"] = max(row["last"], record.time)
    catalog = table.catalog.version if table.catalog is not None else None
    if as_json:
        emit_json({
            "bundled_table": bundled.version, "bundled_as_of": bundled.version.split(".")[0],
            "table_in_use": table.version, "newest_models": newest, "fallback_catalog": catalog,
            "ledger": opened.url, "days": days,
            "priced_by_fallback": [{"model": model, "calls": row["calls"],
                                    "usd": str(row["usd"]), "catalog": row["catalog"]}
                                   for model, row in sorted(fallback.items())],
            "refused_unknown": [{"model": model, "calls": row["calls"],
                                 "last": row["last"].isoformat()}
                                for model, row in sorted(refused.items())],
        })
        return
    click.echo(f"bundled price table {bundled.version} (prices as of "
               f"{bundled.version.split('.')[0]})")
    if table.version != bundled.version:
        click.echo(f"table in use        {table.version} (with your price files)")
    for provider, models in newest.items():
        click.echo(f"newest {provider:<12} {', '.join(models)}")
    click.echo("fallback catalog    " + (catalog or "off (SPENDGUARD_PRICE_CATALOG="
                                                   "genai-prices turns it on)"))
    click.echo(f"\nledger {opened.url}, last {days} days:")
    if fallback:
        click.echo("\npriced by the fallback catalog (add them to a price file):\n")
        _print_table(((m, str(r["calls"]), _num(r["usd"]), r["catalog"])
                      for m, r in sorted(fallback.items())),
                     ("MODEL", "CALLS", "USD", "CATALOG"))
    if refused:
        click.echo("\nrefused for want of a price (add them, see docs/prices.md):\n")
        _print_table(((m, str(r["calls"]), r["last"].isoformat(timespec="seconds"))
                      for m, r in sorted(refused.items())), ("MODEL", "CALLS", "LAST"))
    if not fallback and not refused:
        click.echo("every call was priced by the table")
