"""``spendguard reconcile``: the ledger against a provider's usage / cost report, by day, model."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal, InvalidOperation

import click

from spendguard._budget.ledger import resolve_ledger_url
from spendguard._core.errors import ConfigError
from spendguard._core.money import format_usd
from spendguard._core.periods import PERIODS
from spendguard._core.terminal import printable
from spendguard._reporting.reconcile import PROVIDERS, Difference, Reconciliation, reconcile_spend
from spendguard.cli.conventions import emit_json
from spendguard.cli.export import option_error

__all__ = ["reconcile"]



def _tolerance(ctx: click.Context, param: click.Parameter, value: str) -> Decimal:
    try:
        amount = Decimal(value.strip().removeprefix("$"))
    except InvalidOperation:
        amount = Decimal(-1)
    if not amount.is_finite() or amount < 0:
        raise click.BadParameter(f"{value!r} is not an amount of USD >= 0; write e.g. 0.01")
    return amount


def _ledger(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else resolve_ledger_url(value)
    except ConfigError as exc:
        raise option_error(exc) from None


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--provider", required=True, type=click.Choice(PROVIDERS),
              help="Whose report the files are.")
@click.option("--ledger", "ledger_url", metavar="URL", callback=_ledger,
              help="Ledger URL; default: $SPENDGUARD_LEDGER, else the SQLite file.")
@click.option("--tolerance", default="0.01", show_default=True, callback=_tolerance,
              metavar="USD", help="Dollar differences per day and model up to this are rounding.")
@click.option("--accept", is_flag=True, help="Record each dollar difference beyond the "
                                             "tolerance as an adjustment in the ledger.")
@click.option("--scope", help="With --accept: also charge the adjustments to this budget.")
@click.option("--period", type=click.Choice(PERIODS), help="The --scope budget's period.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (exact money) for machines.")
def reconcile(files: tuple[str, ...], provider: str, ledger_url: str | None,
              tolerance: Decimal, accept: bool, scope: str | None, period: str | None,
              as_json: bool) -> None:
    """Compare the ledger with the provider's own reports, per UTC day and model.

    FILES are the JSON the provider's admin endpoints return (OpenAI
    /v1/organization/usage/completions and /costs; Anthropic usage_report/messages and
    cost_report; Anthropic also as CSV; Gemini: a Google Cloud Billing export, standard usage
    cost data, saved as CSV). Tokens should match exactly, dollars within the
    tolerance. --accept books each dollar difference as an explicit adjustment record;
    nothing already in the ledger changes.

    Exits 1 while differences remain unresolved (dollars beyond the tolerance not yet
    accepted; token differences when no cost report was given), 0 once there are none or
    they have been accepted: usable from cron and CI.
    """
    if scope is None and period is not None:
        raise click.BadParameter("applies to --scope; add --scope NAME or drop --period",
                                 param_hint="'--period'")
    if scope is not None and not accept:
        raise click.BadParameter("only applies with --accept", param_hint="'--scope'")
    try:
        result = reconcile_spend(list(files), provider=provider, ledger=ledger_url,
                                 tolerance_usd=tolerance, accept=accept, scope=scope,
                                 period=period)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json(result.as_dict())
    else:
        click.echo(_render(result))
    if result.unresolved:
        raise SystemExit(1)


def _render(result: Reconciliation) -> str:
    last = (result.end - timedelta(microseconds=1)).date()  # the end is exclusive
    lines = [f"{result.provider} report for {result.start.date().isoformat()} to "
             f"{last.isoformat()} (UTC days) against ledger {result.ledger_url}", ""]
    rows: list[tuple[str, ...]] = [
        ("DAY", "MODEL", "LEDGER", "PROVIDER", "DIFFERENCE", "TOKENS (provider - ledger)")]
    rows += [_row(d, result) for d in result.differences]
    rows.append(("TOTAL", "", _usd(result.ledger_usd), _usd(result.provider_usd),
                 _usd(None if result.provider_usd is None
                      else result.provider_usd - result.ledger_usd, signed=True), ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        lines.append("  ".join(cell.rjust(widths[i]) if 2 <= i <= 4 else cell.ljust(widths[i])
                               for i, cell in enumerate(row)).rstrip())
    lines.append("")
    lines.append(_verdict(result))
    return "\n".join(lines)


def _row(d: Difference, result: Reconciliation) -> tuple[str, ...]:
    tokens = "; ".join(f"{kind} {diff:+,}" for kind, diff in d.token_differences.items())
    if not tokens:
        tokens = ("-" if not d.attributable else "match" if d.provider_tokens is not None
                  else "(no usage report)")
    # Model names come from the ledger and the provider's files: shown, never obeyed.
    model = printable(d.model) if d.attributable else f"{printable(d.model)} (not a model)"
    flag = " !" if d.beyond(result.tolerance_usd) else ""
    return (d.day.isoformat(), model, _usd(d.ledger_usd), _usd(d.provider_usd),
            _usd(d.usd_difference, signed=True) + flag, tokens)


def _usd(amount: Decimal | None, *, signed: bool = False) -> str:
    if amount is None:
        return "-"
    text = format_usd(amount)
    return "+" + text if signed and amount > 0 else text


def _verdict(result: Reconciliation) -> str:
    tolerance = format_usd(result.tolerance_usd)
    if result.accepted:
        moved = sum((d.usd_difference or Decimal(0) for d in result.to_accept), Decimal(0))
        return (f"Recorded {len(result.accepted)} adjustment(s), {_usd(moved, signed=True)} in "
                f"all, as explicit 'adjustment' records; the rows above are before them.")
    if not result.mismatched:
        return f"The ledger matches the provider's report (dollars within {tolerance})."
    waiting = len(result.to_accept)
    advice = (f" Run again with --accept to record the {waiting} dollar difference(s) beyond "
              f"{tolerance} as adjustments." if waiting else "")
    return (f"{len(result.mismatched)} row(s) differ (!: dollars beyond {tolerance}; token "
            f"differences mean calls that bypassed the guard or usage that was lost).{advice}")
