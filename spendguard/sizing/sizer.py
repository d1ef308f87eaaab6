"""``size_model``: one workload through memory, GPU fit, speed and cost, as one typed result."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Literal

from spendguard.errors import ConfigError
from spendguard.money import parse_usd
from spendguard.sizing.arch import ModelArch, ModelCatalogue, default_models, estimated_arch
from spendguard.sizing.calibrated import DEFAULT_MEMORY_FRACTION, EngineFit, smallest_engine_fit
from spendguard.sizing.fit import GpuCount, gpus_needed, rank, weights_floor
from spendguard.sizing.hardware import Gpu, GpuCatalogue, default_gpus
from spendguard.sizing.hf_config import read_hf_config
from spendguard.sizing.memory import (
    GB,
    GIB,
    MemoryEstimate,
    Task,
    active_weight_bytes,
    kv_shape,
    spec_memory,
    weight_bytes,
)
from spendguard.sizing.precision import (
    Precision,
    compute_format,
    engine_kv_format,
    format_bytes,
    parse_format,
    parse_precision,
    spec_kv_format,
)
from spendguard.sizing.rent import DEFAULT_UTILISATION, cost_per_million_output_usd
from spendguard.sizing.result import CostEstimate, GpuOption, Inputs, SizingResult
from spendguard.sizing.speed import (
    decode_ceiling_tok_s,
    roofline,
    single_stream_tok_s,
    training_time,
)

__all__ = ["Mode", "resolve_model", "size_model"]

Mode = Literal["spec", "calibrated"]
_QUANTISED_BASES = frozenset({"int8", "int4", "int2", "mxfp4", "nvfp4"})


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
    if mode not in ("spec", "calibrated"):
        raise ConfigError(f"mode: {mode!r} is not one of spec, calibrated")
    if mode == "calibrated" and task != "serve":
        raise ConfigError("mode: calibrated models a serving engine's allocation; use mode spec "
                          f"for the {task} task")
    if task == "qlora" and precision.base not in _QUANTISED_BASES:
        raise ConfigError(f"precision: QLoRA keeps the frozen base quantised, not {precision.base}"
                          "; pass int4 (or int8), or use task lora")


def size_model(
    model: str | Path | ModelArch | None,
    *,
    precision: str = "native",
    kv_precision: str | None = None,
    context: int = 4096,
    concurrency: int = 1,
    task: Task = "serve",
    gpu: str | None = None,
    mode: Mode = "spec",
    params: int | None = None,
    active_params: int | None = None,
    memory_fraction: float = DEFAULT_MEMORY_FRACTION,
    usd_per_gpu_hour: Decimal | str | int | None = None,
    utilisation: float = DEFAULT_UTILISATION,
    train_tokens: int | None = None,
    gpus: GpuCatalogue | None = None,
    models: ModelCatalogue | None = None,
) -> SizingResult:
    """Size a workload: memory (GB = 1e9 B), ranked GPU options, floor, speed and cost.

    ``model`` is a catalogue name or alias, a path to a config.json (or its folder), a
    ``ModelArch``, or None with ``params`` for an estimated shape. For training tasks
    ``context`` is the sequence length and ``concurrency`` the micro-batch.
    """
    gpus = gpus or default_gpus()
    arch = resolve_model(model, params, active_params, models)
    native = precision.strip().lower() in ("native", "checkpoint")
    chosen = parse_precision(arch.native_precision if native else precision)
    _check_task(task, mode, chosen)
    _positive(context, "context")
    _positive(concurrency, "concurrency")
    if train_tokens is not None:
        _positive(train_tokens, "train_tokens")
    if not 0 < memory_fraction <= 1:
        raise ConfigError(f"memory_fraction: {memory_fraction!r} must be in (0, 1], e.g. 0.9")
    rate = None if usd_per_gpu_hour is None else parse_usd(
        usd_per_gpu_hour, field="usd_per_gpu_hour", allow_zero=False)
    kv_format = (parse_format(kv_precision, field="kv_precision") if kv_precision
                 else spec_kv_format(chosen) if mode == "spec" else engine_kv_format(chosen))

    formula = weight_bytes(arch, chosen)
    # The compute.md guide prefers the real size on disk to the formula when it is known.
    checkpoint = arch.checkpoint_bytes if native and task == "serve" else None
    use_checkpoint = checkpoint is not None
    weights = float(checkpoint) if checkpoint is not None else formula
    scale = weights / formula
    active_bytes = active_weight_bytes(arch, chosen) * scale
    expert_bytes = arch.expert_params * format_bytes(chosen.expert_format) * scale
    shape = kv_shape(arch, kv_format)
    sequence_kv = shape.sequence_bytes(context)
    candidates: Sequence[Gpu] = [gpus.get(gpu)] if gpu else list(gpus)

    spec = spec_memory(arch, chosen, kv_format, task=task, context=context,
                       concurrency=concurrency, weights=weights)
    fits: dict[str, EngineFit] = {}
    if mode == "calibrated":
        for candidate in candidates:
            fit = smallest_engine_fit(arch, weights_bytes=weights, kv_format=kv_format,
                                      gpu=candidate, context=context, concurrency=concurrency,
                                      memory_fraction=memory_fraction)
            if fit is not None:
                fits[candidate.id] = fit
        counts = [GpuCount(fit.gpu, fit.count) for fit in fits.values()]
    else:
        counts = [GpuCount(c, n) for c in candidates
                  if (n := gpus_needed(spec.total_gb, c)) is not None]
    ranked = rank(counts)
    best = ranked[0] if ranked else None
    memory = spec
    if mode == "calibrated" and best is not None:
        memory = _calibrated_memory(fits[best.gpu.id], weights, shape.bytes_per_token,
                                    shape.state_bytes_per_sequence)

    options = tuple(
        GpuOption(
            gpu=option.gpu.id, gpu_name=option.gpu.name, kind=option.gpu.kind,
            count=option.count, total_vram_gb=option.total_vram_gb,
            bandwidth_tb_s=option.bandwidth_tb_s,
            decode_tok_s_ceiling=decode_ceiling_tok_s(active_bytes, option),
            single_stream_tok_s=single_stream_tok_s(active_bytes, sequence_kv, option),
            kv_capacity_tokens=fits[option.gpu.id].kv_capacity_tokens if fits else None,
            max_concurrency=fits[option.gpu.id].max_concurrency if fits else None,
        )
        for option in ranked
    )
    compute = compute_format(chosen)
    line = None if best is None or task != "serve" else roofline(
        arch, weights_bytes=weights, expert_bytes=expert_bytes, kv=shape, gpus=best,
        compute=compute, context=context, batch=concurrency)
    costs: tuple[CostEstimate, ...] = ()
    if line is not None and best is not None:
        costs = _costs(best, line.decode_tok_s, rate, utilisation)
    trained = None
    if train_tokens is not None and best is not None and task != "serve":
        trained = training_time(arch, task, train_tokens, best, compute)
    return SizingResult(
        inputs=Inputs(model=arch.id, model_name=arch.name, params=arch.params,
                      active_params=arch.active_params, expert_params=arch.expert_params,
                      precision=str(chosen),
                      kv_precision=kv_format, task=task, mode=mode, context=context,
                      concurrency=concurrency, memory_fraction=memory_fraction,
                      utilisation=utilisation, estimated_shape=arch.estimated_shape,
                      layout=arch.attention.kinds, moe=arch.moe is not None,
                      weights_from_checkpoint=use_checkpoint),
        memory=memory, active_weights_gb=active_bytes / GB, sequence_kv_gb=sequence_kv / GB,
        options=options,
        floor={c.id: weights_floor(memory.weights_gb, c) for c in candidates},
        roofline=line, costs=costs, training=trained,
        engine=fits[best.gpu.id] if best is not None and fits else None,
    )


def _calibrated_memory(fit: EngineFit, weights: float, kv_per_token: float,
                       state: float) -> MemoryEstimate:
    to_gb = GIB / GB
    kv = fit.kv_needed_gib * fit.count * to_gb
    activations = fit.activation_gib * fit.count * to_gb
    overhead = fit.non_torch_gib * fit.count * to_gb
    return MemoryEstimate(
        weights_gb=weights / GB, kv_gb=kv, kv_bytes_per_token=kv_per_token,
        kv_state_bytes_per_sequence=state, activations_gb=activations, training_state_gb=0.0,
        overhead_gb=overhead, total_gb=weights / GB + kv + activations + overhead,
    )


def _costs(best: GpuCount, tok_s: float, rate: Decimal | None,
           utilisation: float) -> tuple[CostEstimate, ...]:
    gpu = best.gpu
    if rate is not None:
        rates = [(rate, "given")]
    elif gpu.usd_per_hour_low is not None and gpu.usd_per_hour_high is not None:
        source = f"{gpu.price_source}, {gpu.price_as_of}"
        rates = [(gpu.usd_per_hour_low, source), (gpu.usd_per_hour_high, source)]
        if gpu.usd_per_hour_low == gpu.usd_per_hour_high:
            rates = rates[:1]
    else:
        return ()
    return tuple(
        CostEstimate(usd_per_gpu_hour=per_gpu, gpus=best.count, tok_s=tok_s,
                     utilisation=utilisation, rate_source=source,
                     usd_per_million_output=cost_per_million_output_usd(
                         per_gpu * best.count, tok_s, utilisation))
        for per_gpu, source in rates
    )

