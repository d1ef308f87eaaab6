"""``spendguard estimate FILE.jsonl``: what a batch input file will cost, before it is sent."""

from __future__ import annotations

import click

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard.cli.conventions import emit_json, paint

__all__ = ["OVER_BUDGET_EXIT", "estimate"]

OVER_BUDGET_EXIT = 3
"""Exit status when the plan's worst case exceeds ``--budget`` (1 and 2 are click's errors)."""


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--budget", "budget_usd",
              help=f"USD available; exit status {OVER_BUDGET_EXIT} when the worst case "
                   "exceeds it.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--cache-order", is_flag=True,
              help="Estimate the requests as ordered for the prompt cache.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Requests in flight, for the time estimate.")
@click.option("--task", help="Expect output from the ledger's calls tagged task=NAME.")
@click.option("--ledger", "ledger_url", help="Ledger URL for --task (default: spendguard's).")
@click.option("--per-request", is_flag=True, help="With --json: one entry per request too.")
def estimate(*, file: str, budget_usd: str | None, as_json: bool, cache_order: bool,
             concurrency: int, task: str | None, ledger_url: str | None,
             per_request: bool) -> None:
    """Cost, cache and batch savings, and time of a JSONL file of requests, sending nothing.

    FILE is in OpenAI's batch input format (custom_id, method, url, body per line), in
    Anthropic's message-batch format (custom_id, params per line), or one request body per
    line. Exit status is 0 when the plan fits --budget (or none is given) and 3 when its worst
    case exceeds it.
    """
    from spendguard._core.money import (  # noqa: PLC0415 - fast --help
        MAX_LIMIT_USD,
        format_usd,
        parse_usd,
    )
    from spendguard._strategies.plan import plan  # noqa: PLC0415

    try:
        limit = None if budget_usd is None else parse_usd(budget_usd, field="budget",
                                                             maximum=MAX_LIMIT_USD)
        result = plan(file, cache_order=cache_order, concurrency=concurrency, task=task,
                      ledger=ledger_url)
    except UnknownModelError as exc:
        raise click.ClickException(str(exc)) from exc
    except ConfigError as exc:
        hint = "'--budget'" if str(exc).startswith("budget") else None
        raise click.BadParameter(str(exc), param_hint=hint or "'FILE'") from exc
    over = limit is not None and result.worst_usd > limit
    if as_json:
        data = result.as_dict(per_request=per_request)
        if limit is not None:
            data["budget_usd"] = str(limit)
            data["over_budget"] = over
        emit_json(data)
    else:
        click.echo(result.summary())
    if over:
        assert limit is not None
        which = "expected cost and worst case" if result.expected_usd > limit else "worst case"
        over_text = paint("OVER BUDGET", fg="red", bold=True, err=True)
        click.echo(f"{over_text}: the {which} ({format_usd(result.expected_usd)} "
                   f"expected, {format_usd(result.worst_usd)} worst) exceed --budget "
                   f"{format_usd(limit)}", err=True)
        raise SystemExit(OVER_BUDGET_EXIT)
