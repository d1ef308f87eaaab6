"""``spendguard report``: spend by model, scope, tag or day; ``--html`` for a page to share."""

from __future__ import annotations

import sys
from datetime import datetime

import click

from spendguard._core.errors import ConfigError
from spendguard._reporting.report import render_text, report_spend, write_html
from spendguard._reporting.report.folding import DEFAULT_TOP
from spendguard._reporting.report.summary import check_by
from spendguard.cli.conventions import colour_enabled, emit_json, output_width
from spendguard.cli.export import filter_options, option_error
from spendguard.cli.progress import Progress

__all__ = ["report"]


def _by(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_by(value)
    except ConfigError as exc:
        raise option_error(exc) from None


@click.command()
@click.option("--by", default="model", show_default=True, callback=_by,
              metavar="model|scope|tag|day|provider|tag:KEY",
              help="Group the table; tag:KEY groups by the values of one tag.")
@filter_options
@click.option("--html", "html_path", type=click.Path(dir_okay=False, writable=True),
              metavar="FILE", help="Also write a self-contained HTML page with charts.")
@click.option("--top", type=click.IntRange(min=1), default=DEFAULT_TOP, show_default=True,
              help="Child scopes of one parent (per-user budgets) shown before the rest are "
                   "folded into one row.")
@click.option("--all-scopes", is_flag=True, help="Show every scope; fold nothing.")
@click.option("--internal-tags", is_flag=True,
              help="With --by tag: also group by spendguard's own tags (spendguard.*).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (exact money) for machines.")
def report(by: str, ledger_url: str | None, since: datetime | None, until: datetime | None,
           scope: str | None, tag: str | None, model: str | None, html_path: str | None,
           top: int, all_scopes: bool, internal_tags: bool, as_json: bool) -> None:
    """Show what was spent: a table by model (or scope, tag, day), budgets against their
    limits, cache hit rate, batch share, and how estimates compared with actual usage.

    Totals are exact sums of the ledger. Times are UTC. Child scopes of one parent past the
    --top that spent most (per-user budgets) fold into one row; --all-scopes shows them all.
    """
    try:
        with Progress("reading the ledger", "records", quiet=as_json) as progress:
            result = report_spend(ledger_url, by=by, since=since, until=until, scope=scope,
                                  tag=tag, model=model, top=None if all_scopes else top,
                                  internal_tags=internal_tags, progress=progress)
        if html_path:
            write_html(result, html_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json(result.as_dict())
    else:
        click.echo(render_text(result, width=output_width(),
                               colour=colour_enabled(sys.stdout)), nl=False)
    if html_path:
        click.echo(f"wrote the report page to {html_path}", err=True)
