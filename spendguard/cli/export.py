"""``spendguard export``: the ledger as CSV, JSON Lines or FOCUS; ``export validate`` checks FOCUS.

The options that choose records (``--ledger --since --until --scope --tag --model``) are
shared with ``spendguard report`` and defined here once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from spendguard._budget.ledger import resolve_ledger_url
from spendguard._budget.ledger.filters import parse_tag
from spendguard._core.errors import ConfigError
from spendguard._core.money import format_usd
from spendguard._reporting.export import FORMATS, export_spend, parse_moment, validate_focus
from spendguard._reporting.export.records import decimal_text
from spendguard.cli.conventions import SuggestingGroup, emit_json
from spendguard.cli.progress import Progress

__all__ = ["export", "filter_options", "moment_callback", "option_error"]

_F = TypeVar("_F", bound=Callable[..., Any])
_SHOWN_PROBLEMS = 200


def option_error(exc: ConfigError) -> click.BadParameter:
    """A library error as click's, without the library's ``field:`` prefix (click names it)."""
    _, sep, rest = str(exc).partition(": ")
    return click.BadParameter(rest if sep else str(exc))


def moment_callback(end: bool) -> Callable[[click.Context, click.Parameter, str | None],
                                   datetime | None]:
    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
        if value is None:
            return None
        try:
            return parse_moment(value, field=param.name or "date", end=end)
        except ConfigError as exc:
            raise option_error(exc) from None
    return parse


def _ledger_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return resolve_ledger_url(value)
    except ConfigError as exc:
        raise option_error(exc) from None


def _tag(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_tag(value)
        except ConfigError as exc:
            raise option_error(exc) from None
    return value


def filter_options(command: _F) -> _F:
    """Add the record-choosing options to a command."""
    options = [
        click.option("--ledger", "ledger_url", metavar="URL", callback=_ledger_url,
                     help="Ledger URL (sqlite:///path, redis://..., postgresql://...). Default: "
                          "$SPENDGUARD_LEDGER, else the SQLite file in spendguard's data dir."),
        click.option("--since", callback=moment_callback(False), metavar="WHEN",
                     help="From this UTC month, day or time: 2026-05, 2026-05-21, "
                          "2026-05-21T10:00:00Z."),
        click.option("--until", callback=moment_callback(True), metavar="WHEN",
                     help="Up to this UTC time (exclusive); a month or day is included whole."),
        click.option("--scope", help="Only calls charged to this budget scope."),
        click.option("--tag", callback=_tag, help="Only calls with this tag: key or key=value."),
        click.option("--model", help="Only calls to this model (exact id)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _accounts(ctx: click.Context, param: click.Parameter,
              value: tuple[str, ...]) -> dict[str, str]:
    accounts = {}
    for item in value:
        provider, sep, account = item.partition("=")
        if not sep or not provider or not account:
            raise click.BadParameter(f"{item!r} is not PROVIDER=ACCOUNT_ID; write e.g. "
                                     f"--account openai=org-abc123")
        accounts[provider] = account
    return accounts


@click.group(cls=SuggestingGroup, invoke_without_command=True)
@click.option("--format", "format_", type=click.Choice(FORMATS), default="csv",
              show_default=True, help="csv / jsonl: one row per call; focus: FinOps FOCUS 1.2 "
                                      "CSV, one row per call and token kind.")
@filter_options
@click.option("--aggregate", type=click.Choice(["call", "day"]), default="call",
              show_default=True, help="FOCUS only: one row per call, or summed per UTC day.")
@click.option("--account", "accounts", multiple=True, callback=_accounts,
              metavar="PROVIDER=ID", help="FOCUS BillingAccountId of a provider "
                                          "(repeatable), e.g. openai=org-abc123.")
@click.option("--internal-tags", is_flag=True,
              help="FOCUS only: keep spendguard's own bookkeeping tags (spendguard.call_id, "
                   "...) in Tags, and so in the per-day groups.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write to this file instead of standard output.")
@click.option("--json", "as_json", is_flag=True,
              help="The summary (rows, total, file) as JSON: on standard output with -o, "
                   "else on standard error after the data.")
@click.pass_context
def export(ctx: click.Context, format_: str, ledger_url: str | None, since: datetime | None,
           until: datetime | None, scope: str | None, tag: str | None, model: str | None,
           aggregate: str, accounts: dict[str, str], internal_tags: bool,
           output: str | None, as_json: bool) -> None:
    """Write the spend ledger for finance: CSV, JSON Lines, or FOCUS (FinOps).

    Money is exact decimal USD. CSV cells a spreadsheet would run as a formula are written
    as text. Prompts and API keys are never exported. Check a FOCUS file with
    `spendguard export validate FILE`.
    """
    if ctx.invoked_subcommand is not None:
        return
    if aggregate == "day" and format_ != "focus":
        raise click.BadParameter("rows are summed per day only in FOCUS exports; add "
                                 "--format focus, or drop --aggregate day",
                                 param_hint="'--aggregate'")
    try:
        with Progress("exporting", "records", quiet=as_json,
                      data_on_stdout=output is None) as progress:
            result = export_spend(output or sys.stdout,
                                  format=format_,  # type: ignore[arg-type]
                                  ledger=ledger_url, since=since, until=until, scope=scope,
                                  tag=tag, model=model,
                                  aggregate=aggregate,  # type: ignore[arg-type]
                                  accounts=accounts, internal_tags=internal_tags,
                                  progress=progress)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json({"format": format_, "rows": result.rows,
                   "total_usd": decimal_text(result.total_usd),
                   "path": str(result.path) if result.path else None}, err=output is None)
        return
    where = f" to {result.path}" if result.path else ""
    click.echo(f"wrote {result.rows} {format_} rows, {format_usd(result.total_usd)} "
               f"in all{where}", err=True)


@export.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def validate(file: str, as_json: bool) -> None:
    """Check a FOCUS CSV: names the row and column of every problem; exit 1 if any."""
    try:
        problems = validate_focus(file)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json([{"row": p.row, "column": p.column, "message": p.message}
                   for p in problems])
    elif not problems:
        click.echo(f"{file}: conforms to FOCUS 1.2 (the rules spendguard checks)")
    else:
        for problem in problems[:_SHOWN_PROBLEMS]:
            click.echo(f"{file}: {problem}")
        if len(problems) > _SHOWN_PROBLEMS:
            click.echo(f"... and {len(problems) - _SHOWN_PROBLEMS} more (use --json for all)")
    if problems:
        raise SystemExit(1)
