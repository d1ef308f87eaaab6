"""What to size: one workload as a typed request, checked and resolved before any arithmetic."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Literal

from spendguard._core.errors import ConfigError
from spendguard._core.money import parse_usd
from spendguard._sizing.arch import ModelArch, ModelCatalogue, default_models, estimated_arch
from spendguard._sizing.calibrated import DEFAULT_MEMORY_FRACTION
from spendguard._sizing.hf_config import read_hf_config
from spendguard._sizing.memory import Task
from spendguard._sizing.precision import (
    Precision,
    engine_kv_format,
    parse_format,
    parse_precision,
    spec_kv_format,
)
from spendguard._sizing.rent import DEFAULT_UTILISATION

__all__ = ["Mode", "ResolvedRequest", "SizingRequest", "resolve_model", "resolve_request"]

Mode = Literal["spec", "calibrated", "measured"]
_QUANTISED_BASES = frozenset({"int8", "int4", "int2", "mxfp4", "nvfp4"})
_NATIVE = ("native", "checkpoint")


@dataclass(frozen=True)
class SizingRequest:
    """One workload: which model, stored how, serving (or training) how much, on which GPUs.

    For training tasks ``context`` is the sequence length and ``concurrency`` the micro-batch.
    ``gpu`` limits the options to one accelerator; ``usd_per_gpu_hour`` overrides the GPU's
    catalogued price range for the cost line.
    """

    model: str | Path | ModelArch | None
    precision: str = "native"
    kv_precision: str | None = None
    context: int = 4096
    concurrency: int = 1
    task: Task = "serve"
    gpu: str | None = None
    mode: Mode = "spec"
    params: int | None = None
    active_params: int | None = None
    memory_fraction: float = DEFAULT_MEMORY_FRACTION
    usd_per_gpu_hour: Decimal | str | int | None = None
    utilisation: float = DEFAULT_UTILISATION
    train_tokens: int | None = None

    @property
    def native(self) -> bool:
        """Whether the weights are sized as the checkpoint ships them."""
        return self.precision.strip().lower() in _NATIVE


@dataclass(frozen=True)
class ResolvedRequest:
    """A checked request: the architecture found, the precision and KV format spelled out."""

    request: SizingRequest
    arch: ModelArch
    precision: Precision
    kv_format: str
    rate: Decimal | None


def resolve_model(model: str | Path | ModelArch | None, params: int | None = None,
                  active_params: int | None = None,
                  models: ModelCatalogue | None = None) -> ModelArch:
    """A catalogue name or alias, a config.json path or folder, or None with ``params``."""
    models = models or default_models()
    if isinstance(model, ModelArch):
        return model.with_params(params, active_params)
    if model is None or str(model).strip().lower() == "custom":
        if params is None:
            raise ConfigError("model: name a model, give the path of its config.json, or pass "
                              "params (e.g. --params 70B) for an estimated shape")
        return estimated_arch(params, active_params, models)
    path = Path(model)
    if path.exists():
        return read_hf_config(path).with_params(params, active_params)
    return models.get(str(model)).with_params(params, active_params)


def _positive(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{field}: expected a whole number >= 1, got {value!r}")
    return value


def _check_task(task: str, mode: str, precision: Precision) -> None:
    if task not in ("serve", "lora", "qlora", "full"):
        raise ConfigError(f"task: {task!r} is not one of serve, lora, qlora, full")
    if mode not in ("spec", "calibrated", "measured"):
        raise ConfigError(f"mode: {mode!r} is not one of spec, calibrated, measured")
    if mode == "calibrated" and task != "serve":
        raise ConfigError("mode: calibrated models a serving engine's allocation; use mode spec "
                          f"for the {task} task")
    if task == "qlora" and precision.base not in _QUANTISED_BASES:
        raise ConfigError(f"precision: QLoRA keeps the frozen base quantised, not {precision.base}"
                          "; pass int4 (or int8), or use task lora")


def resolve_request(request: SizingRequest,
                    models: ModelCatalogue | None = None) -> ResolvedRequest:
    """Check every field (errors name it and the fix) and look the model up."""
    r = request
    arch = resolve_model(r.model, r.params, r.active_params, models)
    chosen = parse_precision(arch.native_precision if r.native else r.precision)
    _check_task(r.task, r.mode, chosen)
    _positive(r.context, "context")
    _positive(r.concurrency, "concurrency")
    if r.train_tokens is not None:
        _positive(r.train_tokens, "train_tokens")
    if not 0 < r.memory_fraction <= 1:
        raise ConfigError(f"memory_fraction: {r.memory_fraction!r} must be in (0, 1], e.g. 0.9")
    rate = None if r.usd_per_gpu_hour is None else parse_usd(
        r.usd_per_gpu_hour, field="usd_per_gpu_hour", allow_zero=False)
    kv_format = (parse_format(r.kv_precision, field="kv_precision") if r.kv_precision
                 else engine_kv_format(chosen) if r.mode == "calibrated"
                 else spec_kv_format(chosen))
    return ResolvedRequest(request=r, arch=arch, precision=chosen, kv_format=kv_format,
                           rate=rate)
