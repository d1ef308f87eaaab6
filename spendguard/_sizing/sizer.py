"""``size_model``: one workload through memory, GPU fit, speed and cost, as one typed result.

The steps, each a function below: resolve the request (``request.py``), work out the weight
bytes the memory and the speed use, fit the GPUs (F7, or vLLM's budget in calibrated mode),
then the options' speeds, the roofline and the cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

from spendguard._sizing.arch import ModelArch, ModelCatalogue
from spendguard._sizing.calibrated import DEFAULT_MEMORY_FRACTION, EngineFit, smallest_engine_fit
from spendguard._sizing.fit import GpuCount, gpus_needed, rank, weights_floor
from spendguard._sizing.hardware import Gpu, GpuCatalogue, default_gpus
from spendguard._sizing.measured import (
    FINE_TUNE_ERROR_PCT,
    decode_class,
    embedding_row_bytes,
    measured_fine_tune_memory,
)
from spendguard._sizing.memory import (
    GB,
    GIB,
    MemoryEstimate,
    Task,
    active_weight_bytes,
    kv_shape,
    spec_memory,
    weight_bytes,
)
from spendguard._sizing.precision import (
    BLOCK_SCALED_VALUE_BYTES,
    compute_format,
    format_bytes,
    parse_precision,
    value_bytes,
)
from spendguard._sizing.rent import DEFAULT_UTILISATION, cost_per_million_output_usd
from spendguard._sizing.request import (
    Mode,
    ResolvedRequest,
    SizingRequest,
    resolve_model,
    resolve_request,
)
from spendguard._sizing.result import CostEstimate, GpuOption, Inputs, SizingResult, ValuesOnly
from spendguard._sizing.speed import (
    decode_ceiling_tok_s,
    roofline,
    single_stream_tok_s,
    training_time,
)

__all__ = ["Mode", "SizingRequest", "resolve_model", "size", "size_model"]


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
    ``ModelArch``, or None with ``params`` for an estimated shape. The keywords are the fields
    of ``SizingRequest``; ``size(SizingRequest(...))`` does the same.
    """
    request = SizingRequest(
        model=model, precision=precision, kv_precision=kv_precision, context=context,
        concurrency=concurrency, task=task, gpu=gpu, mode=mode, params=params,
        active_params=active_params, memory_fraction=memory_fraction,
        usd_per_gpu_hour=usd_per_gpu_hour, utilisation=utilisation, train_tokens=train_tokens,
    )
    return size(request, gpus=gpus, models=models)


@dataclass(frozen=True)
class _Weights:
    """The bytes sizing works from: resident weights, what one token reads, routed experts."""

    total: float
    active: float
    experts: float
    from_checkpoint: bool
    embedding_row: float = 0.0


def _weights(resolved: ResolvedRequest) -> _Weights:
    arch, chosen, request = resolved.arch, resolved.precision, resolved.request
    formula = weight_bytes(arch, chosen)
    # The compute.md guide prefers the checkpoint's real size on disk to the formula.
    checkpoint = arch.checkpoint_bytes if request.native and request.task == "serve" else None
    total = float(checkpoint) if checkpoint is not None else formula
    scale = total / formula
    return _Weights(
        total=total, active=active_weight_bytes(arch, chosen) * scale,
        experts=arch.expert_params * format_bytes(chosen.expert_format) * scale,
        from_checkpoint=checkpoint is not None,
        embedding_row=embedding_row_bytes(arch, chosen) if request.mode == "measured" else 0.0,
    )


@dataclass(frozen=True)
class _Fit:
    """The ranked GPU counts, and in calibrated mode each GPU's engine fit."""

    ranked: list[GpuCount]
    engines: Mapping[str, EngineFit]
    memory: MemoryEstimate
    basis: str = ""
    error_pct: float | None = None


def _fit(resolved: ResolvedRequest, weights: _Weights, candidates: Sequence[Gpu]) -> _Fit:
    r, arch = resolved.request, resolved.arch
    spec = spec_memory(arch, resolved.precision, resolved.kv_format, task=r.task,
                       context=r.context, concurrency=r.concurrency, weights=weights.total)
    basis, error = _FORMULA_BASIS[r.task], None
    if r.mode == "measured" and r.task in ("lora", "qlora"):
        spec = measured_fine_tune_memory(arch, r.task, weights.total, sequence=r.context,
                                         batch=r.concurrency)
        basis, error = "measured: fitted to published LoRA/QLoRA peaks", FINE_TUNE_ERROR_PCT
    if r.mode != "calibrated":
        counts = [GpuCount(c, n) for c in candidates
                  if (n := gpus_needed(spec.total_gb, c)) is not None]
        return _Fit(ranked=rank(counts), engines={}, memory=spec, basis=basis, error_pct=error)
    engines: dict[str, EngineFit] = {}
    for candidate in candidates:
        engine = smallest_engine_fit(arch, weights_bytes=weights.total,
                                     kv_format=resolved.kv_format, gpu=candidate,
                                     context=r.context, concurrency=r.concurrency,
                                     memory_fraction=r.memory_fraction)
        if engine is not None:
            engines[candidate.id] = engine
    ranked = rank(GpuCount(e.gpu, e.count) for e in engines.values())
    memory = spec
    if ranked:
        shape = kv_shape(arch, resolved.kv_format)
        memory = _calibrated_memory(engines[ranked[0].gpu.id], weights.total,
                                    shape.bytes_per_token, shape.state_bytes_per_sequence)
    return _Fit(ranked=ranked, engines=engines, memory=memory,
                basis="calibrated: what vLLM allocates")


# What formula mode (and measured mode where nothing was measured) sizes each task by.
_FORMULA_BASIS = {"serve": "formula: F1-F3", "lora": "formula: F4 + F6",
                  "qlora": "formula: F4 + F6", "full": "formula: F5 + F6"}


@dataclass(frozen=True)
class _Speed:
    ceiling: float
    single: float
    low: float | None = None
    high: float | None = None
    card: str | None = None


def _speeds(weights: _Weights, sequence_kv: float, option: GpuCount, measured: bool) -> _Speed:
    """Formula mode: the seed's 0.7 (F8's ceiling on the weights alone). Measured mode: the
    card class's fitted share, with its range, and the embedding row a token gathers."""
    if not measured:
        return _Speed(decode_ceiling_tok_s(weights.active, option),
                      single_stream_tok_s(weights.active, sequence_kv, option))
    card = decode_class(option.gpu)
    read = weights.active + weights.embedding_row + sequence_kv
    bandwidth = option.count * option.gpu.bandwidth_bytes_s
    return _Speed(decode_ceiling_tok_s(weights.active + weights.embedding_row, option),
                  bandwidth * card.efficiency / read, bandwidth * card.low / read,
                  bandwidth * card.high / read, card.name)


def _option(fit: _Fit, option: GpuCount, speed: _Speed) -> GpuOption:
    engine = fit.engines.get(option.gpu.id)
    return GpuOption(
        gpu=option.gpu.id, gpu_name=option.gpu.name, kind=option.gpu.kind,
        count=option.count, total_vram_gb=option.total_vram_gb,
        bandwidth_tb_s=option.bandwidth_tb_s, decode_tok_s_ceiling=speed.ceiling,
        single_stream_tok_s=speed.single,
        kv_capacity_tokens=engine.kv_capacity_tokens if engine else None,
        max_concurrency=engine.max_concurrency if engine else None,
        figure_note=option.gpu.figure_note,
        count_at_other_memory=_count_at_other_memory(option.gpu, fit.memory.total_gb),
        single_stream_low_tok_s=speed.low, single_stream_high_tok_s=speed.high,
        decode_class=speed.card,
    )


def _options(fit: _Fit, weights: _Weights, sequence_kv: float,
             measured: bool = False) -> tuple[GpuOption, ...]:
    return tuple(_option(fit, o, _speeds(weights, sequence_kv, o, measured))
                 for o in fit.ranked)


def _count_at_other_memory(gpu: Gpu, total_gb: float) -> int | None:
    """F7's count had the GPU the other published memory (B200: 192 GB, not 180 GB)."""
    if gpu.other_memory_gb is None:
        return None
    return gpus_needed(total_gb, replace(gpu, memory_gb=gpu.other_memory_gb))


def _values_only(resolved: ResolvedRequest, candidates: Sequence[Gpu]) -> ValuesOnly | None:
    """The weights and floor counted as model pages do for 4-bit formats: no block scales."""
    chosen = resolved.precision
    formats = {chosen.base, chosen.expert_format, chosen.embedding_format}
    if not formats & BLOCK_SCALED_VALUE_BYTES.keys():
        return None
    gb = weight_bytes(resolved.arch, chosen, value_bytes) / GB
    return ValuesOnly(weights_gb=gb, floor={c.id: weights_floor(gb, c) for c in candidates})


def _native_weights_gb(resolved: ResolvedRequest) -> float | None:
    arch = resolved.arch
    if resolved.request.native:
        return None
    native = parse_precision(arch.native_precision, field="native_precision")
    if native == resolved.precision:
        return None
    if arch.checkpoint_bytes is not None:
        return arch.checkpoint_bytes / GB
    return weight_bytes(arch, native) / GB


def size(request: SizingRequest, *, gpus: GpuCatalogue | None = None,
         models: ModelCatalogue | None = None) -> SizingResult:
    """Size one ``SizingRequest`` (what ``size_model`` calls)."""
    gpus = gpus or default_gpus()
    resolved = resolve_request(request, models)
    arch, r = resolved.arch, request
    weights = _weights(resolved)
    shape = kv_shape(arch, resolved.kv_format)
    sequence_kv = shape.sequence_bytes(r.context)
    candidates: Sequence[Gpu] = [gpus.get(r.gpu)] if r.gpu else list(gpus)
    fit = _fit(resolved, weights, candidates)
    best = fit.ranked[0] if fit.ranked else None
    compute = compute_format(resolved.precision)
    line = None if best is None or r.task != "serve" else roofline(
        arch, weights_bytes=weights.total, expert_bytes=weights.experts, kv=shape, gpus=best,
        compute=compute, context=r.context, batch=r.concurrency)
    costs: tuple[CostEstimate, ...] = ()
    if line is not None and best is not None:
        costs = _costs(best, line.decode_tok_s, resolved.rate, r.utilisation)
    trained = None
    if r.train_tokens is not None and best is not None and r.task != "serve":
        trained = training_time(arch, r.task, r.train_tokens, best, compute)
    return SizingResult(
        inputs=Inputs(model=arch.id, model_name=arch.name, params=arch.params,
                      active_params=arch.active_params, expert_params=arch.expert_params,
                      precision=str(resolved.precision), kv_precision=resolved.kv_format,
                      task=r.task, mode=r.mode, context=r.context, concurrency=r.concurrency,
                      memory_fraction=r.memory_fraction, utilisation=r.utilisation,
                      estimated_shape=arch.estimated_shape, layout=arch.attention.kinds,
                      moe=arch.moe is not None or arch.sparse_without_routing,
                      weights_from_checkpoint=weights.from_checkpoint,
                      native_precision=arch.native_precision, defaults=arch.defaults),
        memory=fit.memory, active_weights_gb=weights.active / GB,
        sequence_kv_gb=sequence_kv / GB,
        options=_options(fit, weights, sequence_kv, measured=r.mode == "measured"),
        floor={c.id: weights_floor(fit.memory.weights_gb, c) for c in candidates},
        roofline=line, costs=costs, training=trained,
        engine=fit.engines[best.gpu.id] if best is not None and fit.engines else None,
        values_only=_values_only(resolved, candidates),
        native_weights_gb=_native_weights_gb(resolved),
        memory_basis=fit.basis, memory_error_pct=fit.error_pct,
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
