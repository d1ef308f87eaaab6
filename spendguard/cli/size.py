"""``spendguard size``: GPU memory, the GPUs that fit, speed and cost for one workload."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from spendguard._core.errors import ConfigError, UnknownModelError
from spendguard.cli.conventions import emit_json

if TYPE_CHECKING:  # pragma: no cover
    from spendguard._sizing.memory import Task
    from spendguard._sizing.sizer import Mode

__all__ = ["Count", "raise_as_click", "size"]

# field named at the start of a library error message -> the option that sets it
OPTION_OF_FIELD = {
    "model": "--model", "precision": "--precision", "kv_precision": "--kv-precision",
    "native_precision": "--precision", "context": "--context", "concurrency": "--concurrency",
    "task": "--task", "mode": "--mode", "memory_fraction": "--memory-fraction",
    "usd_per_gpu_hour": "--usd-per-gpu-hour", "utilisation": "--utilisation",
    "train_tokens": "--train-tokens", "count": "--count", "hours_per_day": "--hours-per-day",
    "api_output_usd_per_million": "--api-output-usd-per-million",
    "capacity_tok_s": "--capacity-tok-s", "prefill_tok_s": "--prefill-tok-s", "ledger": "--ledger",
}
# The largest open models have about 2e12 parameters; 1e15 leaves room and stops a typo.
_MAX_PARAMS = 10**15
_SUFFIX = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)


class Count(click.ParamType[int, Any]):
    """A whole number with an optional suffix: ``binary`` counts k/M as 1024 / 1024² (tokens of
    context, as in "8k" = 8,192), otherwise k/M/B/T are 1e3 / 1e6 / 1e9 / 1e12 (parameters)."""

    name = "count"

    def __init__(self, *, binary: bool, example: str, maximum: int | None = None) -> None:
        self.binary = binary
        self.example = example
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            match = _SUFFIX.match(str(value))
            if match is None:
                self.fail(f"{value!r} is not a number; write it like {self.example}", param, ctx)
            base = 1024 if self.binary else 1000
            power = "kmbt".index(match[2].lower()) + 1 if match[2] else 0
            if self.binary and match[2].lower() in ("b", "t"):
                self.fail(f"{value!r}: use k or M for tokens, e.g. {self.example}", param, ctx)
            try:
                number = int(Decimal(match[1]) * base**power)
            except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
                self.fail(f"{value!r} is not a number", param, ctx)
        if number < 1:
            self.fail(f"{value!r} must be at least 1; write it like {self.example}", param, ctx)
        if self.maximum is not None and number > self.maximum:
            self.fail(f"{value!r} is above {self.maximum:.0e}, more than any real model or "
                      f"workload; write it like {self.example}", param, ctx)
        return number


def raise_as_click(exc: ConfigError | UnknownModelError) -> NoReturn:
    """Re-raise a library error as a click error that names the option to fix."""
    if isinstance(exc, UnknownModelError):
        option = "--gpu" if exc.kind == "gpu" else "--model"
        raise click.BadParameter(str(exc), param_hint=f"'{option}'") from exc
    field, _, message = str(exc).partition(":")
    hint = OPTION_OF_FIELD.get(field.strip())
    if hint is None:
        raise click.UsageError(str(exc)) from exc
    raise click.BadParameter(message.strip(), param_hint=f"'{hint}'") from exc


def _list_catalogues(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from spendguard._sizing import default_gpus, default_models  # noqa: PLC0415

    if ctx.meta.get("spendguard.json"):
        emit_json({"gpus": [{"id": gpu.id, "memory_gb": gpu.memory_gb,
                             "bandwidth_tb_s": gpu.bandwidth_tb_s,
                             "bf16_tflops": gpu.bf16_tflops, "kind": gpu.kind,
                             "usd_per_hour_low": gpu.usd_per_hour_low,
                             "usd_per_hour_high": gpu.usd_per_hour_high,
                             "price_as_of": gpu.price_as_of} for gpu in default_gpus()],
                   "models": [{"id": arch.id, "params": arch.params,
                               "active_params": arch.active_params,
                               "attention": str(arch.attention.kinds)}
                              for arch in default_models()]})
        ctx.exit()
    click.echo("GPUs (datasheet GB = 1e9 B; dense BF16 TFLOP/s; on-demand USD per GPU-hour):")
    for gpu in default_gpus():
        price = (f"${gpu.usd_per_hour_low}-{gpu.usd_per_hour_high} ({gpu.price_as_of})"
                 if gpu.usd_per_hour_low is not None else "no price found")
        click.echo(f"  {gpu.id:<16}{gpu.memory_gb:>6g} GB {gpu.bandwidth_tb_s:>6g} TB/s"
                   f" {gpu.bf16_tflops:>7g} TFLOP/s  {gpu.kind:<12}{price}")
    click.echo("Models (total / active parameters, layers by attention kind):")
    for arch in default_models():
        click.echo(f"  {arch.id:<20}{arch.params / 1e9:>9,.2f} B /{arch.active_params / 1e9:>7,.2f}"
                   f" B  {arch.attention.kinds}")
    ctx.exit()


@click.command()
@click.option("--list", "list_catalogues", is_flag=True, is_eager=True, expose_value=False,
              callback=_list_catalogues, help="List the known GPUs and models, then exit.")
@click.option("--model", help="Catalogue name, Hugging Face id, or path to config.json / folder.")
@click.option("--params", type=Count(binary=False, example="70B or 7e9", maximum=_MAX_PARAMS),
              help="Total parameters (70B, 7e9); alone, gives an estimated shape.")
@click.option("--active-params", type=Count(binary=False, example="37B", maximum=_MAX_PARAMS),
              help="Parameters one token reads (MoE); defaults to the model's share.")
@click.option("--precision", required=True,
              help="Weights: bf16, fp8, int8, int4, mxfp4, nvfp4, int2, fp32, native, or "
                   "mixed such as bf16,experts=mxfp4.")
@click.option("--kv-precision", help="KV cache format (default: F2's rule in spec mode, "
                                     "the activation dtype in calibrated mode).")
@click.option("--context", required=True, type=Count(binary=True, example="8192 or 8k"),
              help="Tokens per sequence (k = 1,024); sequence length s for training.")
@click.option("--concurrency", required=True, type=Count(binary=False, example="8"),
              help="Sequences at once; micro-batch b for training.")
@click.option("--task", type=click.Choice(["serve", "lora", "qlora", "full"]), default="serve",
              show_default=True)
@click.option("--gpu", help="Size for this GPU only (e.g. h100, rtx-4090).")
@click.option("--mode", type=click.Choice(["spec", "calibrated", "measured"]), default="spec",
              show_default=True, help="spec: formulas F1-F8; calibrated: what vLLM allocates; "
                                      "measured: fine-tuning memory and one-stream speed fitted "
                                      "to published measurements.")
@click.option("--memory-fraction", type=click.FloatRange(0, 1, min_open=True), default=0.9,
              show_default=True, help="Calibrated mode: vLLM's gpu_memory_utilization.")
@click.option("--usd-per-gpu-hour", help="Rental rate for the cost line (default: the GPU's "
                                         "catalogued range).")
@click.option("--utilisation", type=click.FloatRange(0, 1, min_open=True), default=0.4,
              show_default=True, help="Share of roofline throughput delivered, for the cost.")
@click.option("--train-tokens", type=Count(binary=False, example="2B"),
              help="Training tasks: tokens to train on, for the time estimate.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def size(*, model: str | None, params: int | None, active_params: int | None, precision: str,
         kv_precision: str | None, context: int, concurrency: int, task: str, gpu: str | None,
         mode: str, memory_fraction: float, usd_per_gpu_hour: str | None, utilisation: float,
         train_tokens: int | None, as_json: bool) -> None:
    """Size GPU memory for a model, rank the GPUs that fit, estimate speed and cost.

    GB is 1e9 bytes and GiB 2^30 bytes; every estimate is labelled as one.
    """
    from spendguard._sizing import size_model  # noqa: PLC0415 - keep `spendguard --help` fast
    from spendguard._sizing.report import render_size  # noqa: PLC0415

    if model is None and params is None:
        raise click.UsageError("give --model NAME|PATH, or --params N for an estimated shape")
    try:
        result = size_model(
            model, precision=precision, kv_precision=kv_precision, context=context,
            concurrency=concurrency, task=cast("Task", task), gpu=gpu, mode=cast("Mode", mode),
            params=params, active_params=active_params, memory_fraction=memory_fraction,
            usd_per_gpu_hour=usd_per_gpu_hour, utilisation=utilisation,
            train_tokens=train_tokens,
        )
    except (ConfigError, UnknownModelError) as exc:
        raise_as_click(exc)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(render_size(result))
