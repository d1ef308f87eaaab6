"""The typed result of ``size_model``, and its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from spendguard._sizing.calibrated import EngineFit
from spendguard._sizing.memory import MemoryEstimate
from spendguard._sizing.speed import Roofline, TrainingTime

__all__ = ["CostEstimate", "GpuOption", "Inputs", "SizingResult", "ValuesOnly"]


@dataclass(frozen=True)
class Inputs:
    """What was sized, after defaults and look-ups (precision and KV format spelled out)."""

    model: str
    model_name: str
    params: int
    active_params: int
    expert_params: int
    precision: str
    kv_precision: str
    task: str
    mode: str
    context: int
    concurrency: int
    memory_fraction: float
    utilisation: float
    estimated_shape: bool
    layout: str
    moe: bool
    weights_from_checkpoint: bool
    native_precision: str = ""
    defaults: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuOption:
    """One way to run it: ``count`` × ``gpu``, F8's ceiling and the single-stream estimate."""

    gpu: str
    gpu_name: str
    kind: str
    count: int
    total_vram_gb: float
    bandwidth_tb_s: float
    decode_tok_s_ceiling: float
    single_stream_tok_s: float
    kv_capacity_tokens: int | None = None
    max_concurrency: float | None = None
    figure_note: str | None = None
    count_at_other_memory: int | None = None
    # Measured mode: the range the card class's measurements give, and that class.
    single_stream_low_tok_s: float | None = None
    single_stream_high_tok_s: float | None = None
    decode_class: str | None = None


@dataclass(frozen=True)
class CostEstimate:
    """USD per million output tokens on the best option at a stated utilisation (an estimate)."""

    usd_per_gpu_hour: Decimal
    gpus: int
    tok_s: float
    utilisation: float
    usd_per_million_output: Decimal
    rate_source: str


@dataclass(frozen=True)
class ValuesOnly:
    """Weights and floor with 4-bit values alone (block scales left out), as model pages count."""

    weights_gb: float
    floor: Mapping[str, int]


@dataclass(frozen=True)
class SizingResult:
    """Everything ``spendguard size`` shows. GB = 1e9 B; options are best first (F7's order)."""

    inputs: Inputs
    memory: MemoryEstimate
    active_weights_gb: float
    sequence_kv_gb: float
    options: tuple[GpuOption, ...]
    floor: Mapping[str, int]
    roofline: Roofline | None
    costs: tuple[CostEstimate, ...]
    training: TrainingTime | None
    engine: EngineFit | None
    values_only: ValuesOnly | None = None
    native_weights_gb: float | None = None
    memory_basis: str = ""
    memory_error_pct: float | None = None

    @property
    def best(self) -> GpuOption | None:
        """The first-ranked option, or None when nothing fits."""
        return self.options[0] if self.options else None

    @property
    def weights_gb(self) -> float:
        """Weights, GB."""
        return self.memory.weights_gb

    @property
    def kv_gb(self) -> float:
        """KV cache for every sequence, GB."""
        return self.memory.kv_gb

    @property
    def total_gb(self) -> float:
        """Total memory, GB."""
        return self.memory.total_gb

    def download_min(self, gb_s: float = 1.0) -> float:
        """Minutes to fetch the weights at ``gb_s`` GB/s: billed time before the first token."""
        return self.memory.weights_gb / gb_s / 60

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the summary keys at the top level, details below them."""
        m = self.memory
        data: dict[str, Any] = {
            "model": self.inputs.model,
            "inputs": {k: list(v) if isinstance(v, tuple) else v
                       for k, v in vars(self.inputs).items() if k != "model"},
            "units": {"gb": "1e9 bytes", "gib": "2**30 bytes"},
            "weights_gb": _r(m.weights_gb),
            "kv_gb": _r(m.kv_gb),
            "kv_bytes_per_token": _r(m.kv_bytes_per_token),
            "kv_state_bytes_per_sequence": _r(m.kv_state_bytes_per_sequence),
            "activations_gb": _r(m.activations_gb),
            "training_state_gb": _r(m.training_state_gb),
            "overhead_gb": _r(m.overhead_gb),
            "total_gb": _r(m.total_gb),
            "memory_basis": self.memory_basis,
            "memory_expected_error_pct": self.memory_error_pct,
            "active_weights_gb": _r(self.active_weights_gb),
            "download_min_at_1_gb_s": _r(self.download_min()),
            "options": [
                {k: (_r(v) if isinstance(v, float) else v) for k, v in vars(o).items()}
                for o in self.options
            ],
            "floor": dict(self.floor),
            "values_only": None if self.values_only is None else {
                "weights_gb": _r(self.values_only.weights_gb),
                "floor": dict(self.values_only.floor),
                "note": "4-bit values alone, block scales left out (how model pages quote them)"},
            "native_weights_gb": (None if self.native_weights_gb is None
                                  else _r(self.native_weights_gb)),
            "roofline": None,
            "cost_per_million_output": [
                {"usd_per_gpu_hour": str(c.usd_per_gpu_hour), "gpus": c.gpus,
                 "tok_s": _r(c.tok_s), "utilisation": c.utilisation,
                 "usd": str(c.usd_per_million_output), "rate_source": c.rate_source,
                 "estimate": True}
                for c in self.costs
            ],
            "training": None,
            "engine": None,
        }
        if self.roofline is not None:
            r = self.roofline
            data["roofline"] = {
                "batch": r.batch, "context": r.context, "decode_bytes": _r(r.decode_bytes),
                "decode_flops": _r(r.decode_flops), "decode_memory_ms": _r(r.decode_memory_s * 1e3),
                "decode_compute_ms": _r(r.decode_compute_s * 1e3), "decode_bound": r.decode_bound,
                "decode_tok_s": _r(r.decode_tok_s), "prefill_flops": _r(r.prefill_flops),
                "prefill_compute_ms": _r(r.prefill_compute_s * 1e3),
                "prefill_memory_ms": _r(r.prefill_memory_s * 1e3),
                "prefill_bound": r.prefill_bound,
            }
        if self.training is not None:
            data["training"] = {k: _r(v) if isinstance(v, float) else v
                                for k, v in vars(self.training).items()}
        if self.engine is not None:
            e = self.engine
            data["engine"] = {
                "gpu": e.gpu.id, "count": e.count, "tensor_parallel": e.tensor_parallel,
                "memory_fraction": e.memory_fraction, "budget_gib": _r(e.budget_gib),
                "weights_gib": _r(e.weights_gib), "activation_gib": e.activation_gib,
                "non_torch_gib": e.non_torch_gib, "kv_available_gib": _r(e.kv_available_gib),
                "kv_needed_gib": _r(e.kv_needed_gib), "kv_capacity_tokens": e.kv_capacity_tokens,
                "max_concurrency": _r(e.max_concurrency), "per": "GPU",
            }
        return data


def _r(value: float) -> float:
    return round(value, 4)
