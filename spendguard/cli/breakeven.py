"""``spendguard breakeven``: renting GPUs against a hosted API's price for the same tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import click

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard.cli.conventions import emit_json
from spendguard.cli.size import Count, raise_as_click

__all__ = ["breakeven"]

# A million dollars an hour per GPU (or per million tokens) is no real price: a typo.
_MAX_RATE_USD = Decimal(1_000_000)


@click.command()
@click.option("--gpu", help="The GPU rented (e.g. h100).")
@click.option("--count", type=Count(binary=False, example="8"),
              help="How many GPUs are rented.")
@click.option("--usd-per-gpu-hour", help="Rental rate, USD per GPU-hour.")
@click.option("--hours-per-day", default="24", show_default=True,
              help="Hours a day the GPUs are rented (idle hours still bill).")
@click.option("--api-output-usd-per-million",
              help="Hosted API price per million output tokens (not needed with --from-ledger).")
@click.option("--capacity-tok-s", type=click.FloatRange(0, min_open=True),
              help="Output tokens/s the GPUs sustain at full load (measured).")
@click.option("--prefill-tok-s", type=click.FloatRange(0, min_open=True),
              help="Prompt tokens/s the GPUs prefill (measured); counts input toward busy time.")
@click.option("--candidate", help="Open model to self-host: estimates the capacity instead.")
@click.option("--precision", default="native", show_default=True,
              help="The candidate's weight precision.")
@click.option("--context", type=Count(binary=True, example="4k"), default="4096",
              show_default=True, help="Tokens per sequence for the candidate's capacity.")
@click.option("--from-ledger", is_flag=True,
              help="Compare with the last 30 days of --model in the ledger.")
@click.option("--model", help="With --from-ledger: the API model whose spend to read.")
@click.option("--ledger", "ledger_url", help="Ledger URL (default: spendguard's own).")
@click.option("--self-hosted", "self_hosted",
              help="With --from-ledger: a [self_hosted] deployment whose recorded traffic to "
                   "compare with --api-model (its GPUs and rate come from the price file).")
@click.option("--api-model", help="With --self-hosted: the API model to price its tokens at.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def breakeven(*, gpu: str | None, count: int | None, usd_per_gpu_hour: str | None,
              hours_per_day: str, self_hosted: str | None, api_model: str | None,
              api_output_usd_per_million: str | None, capacity_tok_s: float | None,
              prefill_tok_s: float | None, candidate: str | None, precision: str,
              context: int, from_ledger: bool, model: str | None, ledger_url: str | None,
              as_json: bool) -> None:
    """Monthly rent vs the API: the output volume above which self-hosting pays.

    Rent counts every rented hour, busy or idle (30-day month).
    """
    from spendguard._sizing import breakeven as compute  # noqa: PLC0415 - fast --help
    from spendguard._sizing.capacity import serving_capacity  # noqa: PLC0415
    from spendguard._sizing.report import render_breakeven  # noqa: PLC0415

    if self_hosted is not None:
        _self_hosted(self_hosted, api_model, from_ledger=from_ledger, ledger_url=ledger_url,
                     hours_per_day=hours_per_day, as_json=as_json)
        return
    for option, value in (("--gpu", gpu), ("--count", count),
                          ("--usd-per-gpu-hour", usd_per_gpu_hour)):
        if value is None:
            raise click.UsageError(f"Missing option '{option}' (or compare a deployment with "
                                   "--from-ledger --self-hosted NAME --api-model MODEL).")
    assert gpu is not None and count is not None and usd_per_gpu_hour is not None
    if from_ledger and not model:
        raise click.BadParameter("--from-ledger needs the API model to read, e.g. "
                                 "--model gpt-4.1", param_hint="'--model'")
    if not from_ledger and api_output_usd_per_million is None:
        raise click.BadParameter("give the API's price per million output tokens, e.g. 15.00,"
                                 " or use --from-ledger --model NAME",
                                 param_hint="'--api-output-usd-per-million'")
    if capacity_tok_s is not None and candidate is not None:
        raise click.BadParameter("give --capacity-tok-s or --candidate, not both",
                                 param_hint="'--candidate'")
    _check_rate(usd_per_gpu_hour, "--usd-per-gpu-hour")
    _check_rate(api_output_usd_per_million, "--api-output-usd-per-million")
    data: dict[str, Any] = {}
    try:
        if candidate is not None:
            capacity = serving_capacity(candidate, gpu=gpu, count=count, precision=precision,
                                        context=context)
            capacity_tok_s = capacity.tok_s
            prefill_tok_s = capacity.prefill_tok_s
            data["candidate"] = {"model": capacity.model, "batch": capacity.batch,
                                 "tok_s": round(capacity.tok_s, 2),
                                 "prefill_tok_s": round(capacity.prefill_tok_s, 2),
                                 "estimate": True}
        if from_ledger:
            text = _from_ledger(data, ledger_url, model or "", gpu=gpu, count=count,
                                usd_per_gpu_hour=usd_per_gpu_hour, hours_per_day=hours_per_day,
                                capacity_tok_s=capacity_tok_s, prefill_tok_s=prefill_tok_s,
                                candidate=candidate)
        else:
            result = compute(count=count, usd_per_gpu_hour=usd_per_gpu_hour,
                             api_output_usd_per_million=api_output_usd_per_million or "",
                             hours_per_day=hours_per_day, gpu=gpu, capacity_tok_s=capacity_tok_s,
                             prefill_tok_s=prefill_tok_s)
            data.update(result.to_dict())
            text = render_breakeven(result)
    except (ConfigError, UnknownModelError) as exc:
        raise_as_click(exc)
    if as_json:
        emit_json(data)
    else:
        click.echo(text)


def _check_rate(value: str | None, option: str) -> None:
    """A rate must be an amount of USD no larger than :data:`_MAX_RATE_USD`."""
    from spendguard._core.money import parse_usd  # noqa: PLC0415

    if value is None:
        return
    try:
        parse_usd(value, field=option, maximum=_MAX_RATE_USD)
    except ConfigError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2] or str(exc),
                                 param_hint=f"'{option}'") from None


def _from_ledger(data: dict[str, Any], ledger_url: str | None, model: str, **rent: Any) -> str:
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415
    from spendguard._sizing.ledger_compare import (  # noqa: PLC0415
        compare_with_ledger,
        spend_from_ledger,
    )
    from spendguard._sizing.report import render_breakeven  # noqa: PLC0415

    spend = spend_from_ledger(open_ledger(ledger_url, read_only=True), model=model,
                              now=datetime.now(UTC))
    comparison = compare_with_ledger(spend, **rent)
    data.update(comparison.to_dict())
    return f"{comparison.sentence()}\n{render_breakeven(comparison.breakeven)}"


def _self_hosted(name: str, api_model: str | None, *, from_ledger: bool, ledger_url: str | None,
                 hours_per_day: str, as_json: bool) -> None:
    """The deployment's recorded traffic vs the API (spendguard._reporting.selfhosted)."""
    from spendguard._budget.ledger import open_ledger  # noqa: PLC0415
    from spendguard._costing.prices import default_table  # noqa: PLC0415
    from spendguard._reporting.selfhosted import self_hosted_from_ledger  # noqa: PLC0415

    if not from_ledger:
        raise click.UsageError("--self-hosted compares recorded traffic: add --from-ledger")
    if not api_model:
        raise click.BadParameter("name the API model to price the same tokens at, e.g. "
                                 "--api-model moonshot/kimi-k3", param_hint="'--api-model'")
    try:
        comparison = self_hosted_from_ledger(
            open_ledger(ledger_url, read_only=True), deployment=name, table=default_table(),
            api_model=api_model, now=datetime.now(UTC), hours_per_day=hours_per_day)
        data = comparison.to_dict()
        text = comparison.render()
    except UnknownModelError as exc:
        raise click.BadParameter(str(exc), param_hint="'--api-model'") from exc
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    if as_json:
        emit_json(data)
    else:
        click.echo(text)
