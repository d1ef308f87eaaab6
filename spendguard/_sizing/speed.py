"""Speed: F8's decode ceiling, the single-stream estimate, the roofline, and training time.

F8  tok/s <= (count × bandwidth) ÷ active_weight_bytes: a memory-bound ceiling for one stream.
The compute.md sizing guide's estimate: one stream decodes at about bandwidth × 0.7 ÷ bytes
read per token (active weights plus that stream's KV cache). Training takes about
6 × active params × tokens FLOPs (LoRA about 4 ×), at 35 % of the GPUs' dense peak.

The roofline follows the sizing reference's method (docs/sizing.md): a decode step reads the weights
its sequences are routed to (all of a dense model; of a mixture of experts the active ones,
tending to all as the batch grows: speed follows active parameters) and every sequence's cache
once, and does 2 × active params FLOPs per sequence; a prefill does 2 × active params FLOPs
per prompt token and reads the weights once. Whichever takes longer
bounds the step. Attention FLOPs and tensor-parallel communication are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from spendguard._sizing.arch import ModelArch
from spendguard._sizing.fit import GpuCount
from spendguard._sizing.memory import KvShape, Task
from spendguard._sizing.precision import ComputeFormat

__all__ = ["MFU", "SINGLE_STREAM_EFFICIENCY", "Roofline", "TrainingTime", "decode_ceiling_tok_s",
           "roofline", "single_stream_tok_s", "training_time"]

SINGLE_STREAM_EFFICIENCY = 0.7  # the compute.md guide's share of bandwidth one stream gets
MFU = 0.35  # the compute.md guide's share of dense peak FLOP/s for wall-clock estimates

Bound = Literal["memory", "compute"]


def decode_ceiling_tok_s(active_bytes: float, gpus: GpuCount) -> float:
    """F8: aggregate bandwidth ÷ active weight bytes (tokens/s, one stream, an upper limit)."""
    return gpus.count * gpus.gpu.bandwidth_bytes_s / active_bytes


def single_stream_tok_s(active_bytes: float, sequence_kv_bytes: float, gpus: GpuCount) -> float:
    """The compute.md guide's one-stream estimate: bandwidth × 0.7 ÷ (active weights + its KV)."""
    bandwidth = gpus.count * gpus.gpu.bandwidth_bytes_s
    return bandwidth * SINGLE_STREAM_EFFICIENCY / (active_bytes + sequence_kv_bytes)


@dataclass(frozen=True)
class Roofline:
    """A decode step at ``batch`` sequences of ``context`` tokens, and a prefill of ``context``."""

    batch: int
    context: int
    decode_bytes: float
    decode_flops: float
    decode_memory_s: float
    decode_compute_s: float
    prefill_flops: float
    prefill_compute_s: float
    prefill_memory_s: float

    @property
    def decode_bound(self) -> Bound:
        """Which resource limits a decode step."""
        return "memory" if self.decode_memory_s > self.decode_compute_s else "compute"

    @property
    def decode_ratio(self) -> float:
        """Memory time ÷ compute time of a decode step (> 1: memory-bound)."""
        return self.decode_memory_s / self.decode_compute_s

    @property
    def decode_tok_s(self) -> float:
        """Tokens per second over all sequences at this batch, at the roofline (no losses)."""
        return self.batch / max(self.decode_memory_s, self.decode_compute_s)

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second a prefill of ``context`` tokens processes, at the roofline."""
        return self.context / max(self.prefill_compute_s, self.prefill_memory_s)

    @property
    def prefill_bound(self) -> Bound:
        """Which resource limits a prefill."""
        return "compute" if self.prefill_compute_s > self.prefill_memory_s else "memory"


def _weights_read_per_step(arch: ModelArch, weights: float, expert_bytes: float,
                           batch: int) -> float:
    # With uniform routing a step touches each expert with probability 1 - (1 - k/E)^batch:
    # one sequence reads only its experts, a large batch reads nearly all of them.
    if arch.moe is not None:
        untouched = (1 - arch.moe.experts_per_token / arch.moe.experts) ** batch
        return weights - expert_bytes * untouched
    if arch.sparse_without_routing:
        # No expert table: every weight is treated as routed, read by a token with probability
        # active ÷ total, so one sequence reads its active weights and a batch tends to all.
        untouched = (1 - arch.active_params / arch.params) ** batch
        return weights * (1 - untouched)
    return weights


def roofline(arch: ModelArch, *, weights_bytes: float, expert_bytes: float, kv: KvShape,
             gpus: GpuCount, compute: ComputeFormat, context: int, batch: int) -> Roofline:
    """The decode and prefill roofline on ``gpus`` (aggregate bandwidth and FLOP/s)."""
    bandwidth = gpus.count * gpus.gpu.bandwidth_bytes_s
    flops = gpus.count * gpus.gpu.peak_flops(compute)
    step_bytes = (_weights_read_per_step(arch, weights_bytes, expert_bytes, batch)
                  + kv.sequence_bytes(context) * batch)
    step_flops = 2 * arch.active_params * batch
    prefill_flops = 2 * arch.active_params * context
    return Roofline(
        batch=batch, context=context, decode_bytes=step_bytes, decode_flops=step_flops,
        decode_memory_s=step_bytes / bandwidth, decode_compute_s=step_flops / flops,
        prefill_flops=prefill_flops, prefill_compute_s=prefill_flops / flops,
        prefill_memory_s=weights_bytes / bandwidth,
    )


@dataclass(frozen=True)
class TrainingTime:
    """Wall-clock estimate of a training run: FLOPs ÷ (GPUs × dense peak × 0.35)."""

    tokens: int
    flops: float
    hours: float
    gpu_hours: float


def training_time(arch: ModelArch, task: Task, tokens: int, gpus: GpuCount,
                  compute: ComputeFormat) -> TrainingTime:
    """6 × active params × tokens FLOPs for full training, 4 × for LoRA / QLoRA."""
    factor = 6 if task == "full" else 4
    flops = factor * arch.active_params * tokens
    seconds = flops / (gpus.count * gpus.gpu.peak_flops(compute) * MFU)
    hours = seconds / 3600
    return TrainingTime(tokens=tokens, flops=flops, hours=hours, gpu_hours=hours * gpus.count)
