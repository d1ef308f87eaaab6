"""Calibrated mode: what a serving engine (vLLM) really allocates, per GPU, in GiB.

vLLM's accounting (``vllm/v1/worker/gpu_worker.py``) is::

    budget        = gpu_memory_utilization × total GPU memory
    available_kv  = budget - weights/GPU - activation peak - non-torch memory
    concurrency   = available_kv ÷ KV bytes one request needs at max_model_len

The activation peak is a per-architecture constant that does not move with max_model_len, and
non-torch memory (CUDA context, NCCL) is small and constant: both measured by the llm-d
capacity planner on H100 (shared/research/sizing.md §1.1.10, §2.1). Tensor parallelism splits
weights, KV heads and linear states across ranks; an MLA latent is replicated on every rank.
Beyond one node the extra nodes are pipeline stages, which split layers (and so the cache).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from spendguard._sizing.arch import ModelArch
from spendguard._sizing.fit import round_to_rentable
from spendguard._sizing.hardware import Gpu
from spendguard._sizing.memory import GIB, KvShape, kv_shape

__all__ = ["DEFAULT_MEMORY_FRACTION", "EngineFit", "activation_peak_gib", "engine_fit",
           "smallest_engine_fit"]

DEFAULT_MEMORY_FRACTION = 0.90  # vLLM gpu_memory_utilization; main now says 0.92, recipes 0.9
NON_TORCH_GIB_SINGLE = 0.15  # llm-d: one GPU
NON_TORCH_GIB_PARALLEL = 0.60  # llm-d: tensor parallel >= 2 (NCCL buffers)
MAX_NUM_BATCHED_TOKENS = 2048  # vLLM prefill chunk: a sliding layer holds window + one chunk
MAX_GPUS = 1024

# Activation peak of vLLM's profiling run, GiB per GPU, by config.json model_type (llm-d).
_ACTIVATION_GIB = {"llama": 4.8, "qwen2": 5.6, "qwen3": 5.6, "gemma3": 2.5}
_DENSE_ACTIVATION_GIB = 5.5
_MOE_ACTIVATION_GIB = 8.0


def activation_peak_gib(arch: ModelArch) -> float:
    """The profiled activation peak (GiB per GPU): by family, else MoE 8.0, else dense 5.5."""
    if arch.family in _ACTIVATION_GIB:
        return _ACTIVATION_GIB[arch.family]
    return _MOE_ACTIVATION_GIB if arch.moe is not None else _DENSE_ACTIVATION_GIB


@dataclass(frozen=True)
class EngineFit:
    """vLLM's memory accounting for ``count`` GPUs of one kind; every ``_gib`` is per GPU."""

    gpu: Gpu
    count: int
    tensor_parallel: int
    memory_fraction: float
    budget_gib: float
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    kv_available_gib: float
    kv_needed_gib: float
    request_kv_bytes: float
    context: int

    @property
    def fits(self) -> bool:
        """Whether the requested concurrency fits in the KV space the engine would allocate."""
        return self.kv_available_gib > 0 and self.kv_available_gib >= self.kv_needed_gib

    @property
    def max_concurrency(self) -> float:
        """vLLM's "Maximum concurrency for N tokens per request" (0 when nothing is left)."""
        return max(self.kv_available_gib, 0.0) * GIB / self.request_kv_bytes

    @property
    def kv_capacity_tokens(self) -> int:
        """vLLM's "GPU KV cache size: N tokens" = max concurrency × max_model_len."""
        return math.floor(self.max_concurrency * self.context)


def _request_bytes(shape: KvShape, context: int) -> float:
    # A sliding layer keeps its window plus one prefill chunk of tokens, not just the window.
    window = min(context, shape.sliding_window + MAX_NUM_BATCHED_TOKENS)
    return (shape.growing_bytes_per_token * context + shape.sliding_bytes_per_token * window
            + shape.state_bytes_per_sequence)


def engine_fit(arch: ModelArch, *, weights_bytes: float, kv_format: str, gpu: Gpu, count: int,
               context: int, concurrency: int,
               memory_fraction: float = DEFAULT_MEMORY_FRACTION) -> EngineFit:
    """The engine's per-GPU budget on ``count`` × ``gpu`` (TP within a node, PP across nodes)."""
    tensor_parallel = min(count, gpu.node_size)
    stages = count // tensor_parallel
    request = _request_bytes(kv_shape(arch, kv_format, tensor_parallel=tensor_parallel),
                             context) / stages
    budget = memory_fraction * gpu.engine_memory_gib
    weights = weights_bytes / count / GIB
    activation = activation_peak_gib(arch)
    non_torch = NON_TORCH_GIB_SINGLE if count == 1 else NON_TORCH_GIB_PARALLEL
    return EngineFit(
        gpu=gpu, count=count, tensor_parallel=tensor_parallel, memory_fraction=memory_fraction,
        budget_gib=budget, weights_gib=weights, activation_gib=activation,
        non_torch_gib=non_torch, kv_available_gib=budget - weights - activation - non_torch,
        kv_needed_gib=request * concurrency / GIB, request_kv_bytes=request, context=context,
    )


def _counts(gpu: Gpu) -> Iterator[int]:
    raw = 1
    limit = gpu.node_size if gpu.single_node_only else MAX_GPUS
    while raw <= limit:
        yield raw
        raw = round_to_rentable(raw + 1, gpu.node_size)


def smallest_engine_fit(arch: ModelArch, *, weights_bytes: float, kv_format: str, gpu: Gpu,
                        context: int, concurrency: int,
                        memory_fraction: float = DEFAULT_MEMORY_FRACTION) -> EngineFit | None:
    """The fewest GPUs (1, 2, 4, 8, then whole nodes) whose engine budget holds the workload."""
    for count in _counts(gpu):
        fit = engine_fit(arch, weights_bytes=weights_bytes, kv_format=kv_format, gpu=gpu,
                         count=count, context=context, concurrency=concurrency,
                         memory_fraction=memory_fraction)
        if fit.fits:
            return fit
    return None
