"""GPU memory, spec mode: the formulas F1-F6 exactly as written, plus the attention-kind rules.

GB here is 1e9 bytes, as the formulas define it; GiB (2**30) appears only where named.

F1  weights_GB = params × bytes_per_param ÷ 1e9 (total parameters: every expert is resident)
F2  kv_GB = layers × 2 × kv_heads × head_dim × context × batch × kv_bytes ÷ 1e9
F3  serving = weights + kv_cache + 0.10 × weights
F4  LoRA / QLoRA = (frozen_weights + 0.005 × params × 16 B + activations) × 1.10
F5  full training = (params × (w + g + 12) B + activations) × 1.10
F6  activations = s·b·h·(2·L + 34) + s·b·vocab·4 bytes
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from spendguard._sizing.arch import ModelArch
from spendguard._sizing.precision import Precision, format_bytes, training_bytes

__all__ = ["GB", "GIB", "KvShape", "MemoryEstimate", "Task", "activation_bytes",
           "active_weight_bytes", "kv_shape", "spec_memory", "weight_bytes"]

GB = 1e9
GIB = 2**30

Task = Literal["serve", "lora", "qlora", "full"]

RUNTIME_OVERHEAD = 0.10  # F3: CUDA context, kernel workspaces, allocator fragmentation
ADAPTER_SHARE = 0.005  # F4: ~rank 16 on every linear layer
ADAPTER_BYTES = 16  # F4: FP32 weight, gradient and two Adam moments
OPTIMIZER_BYTES = 12  # F5: FP32 master weights and two moments


def weight_bytes(arch: ModelArch, precision: Precision,
                 bytes_of: Callable[[str], float] = format_bytes) -> float:
    """F1 with mixed precision: routed experts, embeddings and the rest each in their format.

    ``bytes_of`` gives a format's bytes per value: block scales included by default,
    ``precision.value_bytes`` for the values alone (as model pages quote 4-bit weights).
    """
    experts = arch.expert_params
    embeddings = arch.embedding_params if precision.embeddings else 0
    rest = arch.params - experts - embeddings
    return (experts * bytes_of(precision.expert_format)
            + embeddings * bytes_of(precision.embedding_format)
            + rest * bytes_of(precision.base))


def active_weight_bytes(arch: ModelArch, precision: Precision) -> float:
    """Bytes one token reads: its routed experts, plus the other active weights.

    The other active weights are charged at the average bytes of all non-expert weights, which
    is exact when they share one format and close when embeddings are kept wider.
    """
    active_experts = arch.active_expert_params
    non_expert_params = arch.params - arch.expert_params
    non_expert_bytes = weight_bytes(arch, precision) - (
        arch.expert_params * format_bytes(precision.expert_format))
    per_param = (non_expert_bytes / non_expert_params if non_expert_params > 0
                 else format_bytes(precision.base))
    return (active_experts * format_bytes(precision.expert_format)
            + (arch.active_params - active_experts) * per_param)


@dataclass(frozen=True)
class KvShape:
    """What one sequence caches, by layer kind, at one KV format (per tensor-parallel rank)."""

    growing_bytes_per_token: float
    sliding_bytes_per_token: float
    sliding_window: int
    state_bytes_per_sequence: float

    @property
    def bytes_per_token(self) -> float:
        """Cache added per token while the context is shorter than any window (F2's figure)."""
        return self.growing_bytes_per_token + self.sliding_bytes_per_token

    def sequence_bytes(self, context: int) -> float:
        """One sequence's cache at ``context`` tokens: full/MLA grow, windows cap, states fixed."""
        window_tokens = min(context, self.sliding_window)
        return (self.growing_bytes_per_token * context
                + self.sliding_bytes_per_token * window_tokens
                + self.state_bytes_per_sequence)


def kv_shape(arch: ModelArch, kv_format: str, *, tensor_parallel: int = 1) -> KvShape:
    """F2 per layer kind. Under tensor parallelism KV heads and linear states split across ranks;
    an MLA latent has no heads to split, so every rank keeps all of it."""
    value = format_bytes(kv_format)
    layout = arch.attention
    heads = math.ceil(arch.kv_heads / tensor_parallel)
    per_layer = 2 * heads * arch.head_dim * value
    mla = layout.mla_layers * (layout.kv_lora_rank + layout.rope_head_dim) * value
    state = layout.linear_layers * layout.linear_state_values * value / tensor_parallel
    return KvShape(
        growing_bytes_per_token=layout.full_layers * per_layer + mla,
        sliding_bytes_per_token=layout.sliding_layers * per_layer,
        sliding_window=layout.sliding_window,
        state_bytes_per_sequence=state,
    )


def activation_bytes(arch: ModelArch, sequence: int, batch: int) -> float:
    """F6: gradient checkpointing + fused attention; 16-bit layer inputs, FP32 logits."""
    s, b, h, layers = sequence, batch, arch.hidden_size, arch.layers
    return s * b * h * (2 * layers + 34) + s * b * arch.vocab_size * 4


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory for one workload, in GB (1e9 B). ``training_state_gb``: adapters or optimizer."""

    weights_gb: float
    kv_gb: float
    kv_bytes_per_token: float
    kv_state_bytes_per_sequence: float
    activations_gb: float
    training_state_gb: float
    overhead_gb: float
    total_gb: float


def spec_memory(arch: ModelArch, precision: Precision, kv_format: str, *, task: Task,
                context: int, concurrency: int, weights: float | None = None) -> MemoryEstimate:
    """F3 (serving), F4 (LoRA/QLoRA) or F5 (full) with F6; ``weights`` overrides F1's bytes."""
    weights_b = weight_bytes(arch, precision) if weights is None else weights
    shape = kv_shape(arch, kv_format)
    if task == "serve":
        kv_b = shape.sequence_bytes(context) * concurrency
        overhead = RUNTIME_OVERHEAD * weights_b
        return MemoryEstimate(
            weights_gb=weights_b / GB, kv_gb=kv_b / GB, kv_bytes_per_token=shape.bytes_per_token,
            kv_state_bytes_per_sequence=shape.state_bytes_per_sequence, activations_gb=0.0,
            training_state_gb=0.0, overhead_gb=overhead / GB,
            total_gb=(weights_b + kv_b + overhead) / GB,
        )
    activations = activation_bytes(arch, context, concurrency)
    if task == "full":
        w = g = training_bytes(precision)
        weights_b = arch.params * w
        state = arch.params * (g + OPTIMIZER_BYTES)
    else:
        state = ADAPTER_SHARE * arch.params * ADAPTER_BYTES
    subtotal = weights_b + state + activations
    overhead = RUNTIME_OVERHEAD * subtotal
    return MemoryEstimate(
        weights_gb=weights_b / GB, kv_gb=0.0, kv_bytes_per_token=0.0,
        kv_state_bytes_per_sequence=0.0, activations_gb=activations / GB,
        training_state_gb=state / GB, overhead_gb=overhead / GB,
        total_gb=(subtotal + overhead) / GB,
    )
