"""Serving capacity: the output tokens/s a model can sustain on given GPUs when they are full.

The batch is the most sequences F3's memory leaves room for on those GPUs (90 % of memory,
weights + 10 %, then KV cache per sequence at ``context``), capped at vLLM's default of 256
running sequences; the throughput is the roofline's at that batch. It is an upper bound: real
engines deliver a share of it, which is what utilisation means in the break-even.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from spendguard.errors import ConfigError
from spendguard.sizing.arch import ModelArch
from spendguard.sizing.fit import HEADROOM, GpuCount
from spendguard.sizing.hardware import default_gpus
from spendguard.sizing.memory import GB, kv_shape, weight_bytes
from spendguard.sizing.precision import (
    compute_format,
    format_bytes,
    parse_precision,
    spec_kv_format,
)
from spendguard.sizing.sizer import resolve_model
from spendguard.sizing.speed import Roofline, roofline

__all__ = ["MAX_RUNNING_SEQUENCES", "Capacity", "serving_capacity"]

MAX_RUNNING_SEQUENCES = 256  # vLLM's default max_num_seqs


@dataclass(frozen=True)
class Capacity:
    """The batch that fits and the roofline's output tokens/s at that batch (an estimate)."""

    model: str
    gpu: str
    count: int
    batch: int
    tok_s: float
    roofline: Roofline


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
