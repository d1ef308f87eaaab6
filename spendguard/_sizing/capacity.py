"""Serving capacity: the output tokens/s a model can sustain on given GPUs when they are full,
and the prompt tokens/s its prefill processes.

The batch is the most sequences F3's memory leaves room for on those GPUs (90 % of memory,
weights + 10 %, then KV cache per sequence at ``context``), capped at vLLM's default of 256
running sequences; the throughput is the roofline's at that batch. It is an upper bound: real
engines deliver a share of it, which is what utilisation means in the break-even. Prefill is
the sizing reference's roofline too (docs/sizing.md): one ``context``-token prompt at a time,
compute-bound at 2 × active params FLOPs a token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from spendguard._core.errors import ConfigError
from spendguard._sizing.arch import ModelArch
from spendguard._sizing.fit import HEADROOM, GpuCount
from spendguard._sizing.hardware import default_gpus
from spendguard._sizing.memory import GB, kv_shape, weight_bytes
from spendguard._sizing.precision import (
    compute_format,
    format_bytes,
    parse_precision,
    spec_kv_format,
)
from spendguard._sizing.sizer import resolve_model
from spendguard._sizing.speed import Roofline, roofline

__all__ = ["MAX_RUNNING_SEQUENCES", "Capacity", "serving_capacity"]

MAX_RUNNING_SEQUENCES = 256  # vLLM's default max_num_seqs


@dataclass(frozen=True)
class Capacity:
    """The batch that fits, the roofline's output tokens/s at that batch and its prompt
    tokens/s in prefill (estimates)."""

    model: str
    gpu: str
    count: int
    batch: int
    tok_s: float
    roofline: Roofline

    @property
    def prefill_tok_s(self) -> float:
        """Prompt tokens per second while prefilling (compute-bound for real prompts)."""
        return self.roofline.prefill_tok_s


def serving_capacity(model: str | Path | ModelArch, *, gpu: str, count: int,
                     precision: str = "native", context: int = 4096) -> Capacity:
    """Output tokens/s of ``model`` on ``count`` × ``gpu`` at the largest batch that fits."""
    arch = resolve_model(model, None, None)
    chosen = parse_precision(arch.native_precision if precision == "native" else precision)
    hardware = default_gpus().get(gpu)
    weights = weight_bytes(arch, chosen)
    shape = kv_shape(arch, spec_kv_format(chosen))
    room = count * hardware.memory_gb * GB * HEADROOM - 1.1 * weights
    batch = min(math.floor(room / shape.sequence_bytes(context)), MAX_RUNNING_SEQUENCES)
    if batch < 1:
        raise ConfigError(f"count: {arch.id} at {chosen} does not fit on {count} × {hardware.id}"
                          f" with a {context:,}-token sequence; run `spendguard size` for the "
                          "GPUs it needs")
    line = roofline(arch, weights_bytes=weights,
                    expert_bytes=arch.expert_params * format_bytes(chosen.expert_format),
                    kv=shape, gpus=GpuCount(hardware, count), compute=compute_format(chosen),
                    context=context, batch=batch)
    return Capacity(model=arch.id, gpu=hardware.id, count=count, batch=batch,
                    tok_s=line.decode_tok_s, roofline=line)
