"""Measured mode: fine-tuning memory and single-stream speed fitted to published measurements.

Formula mode (``mode="spec"``) keeps the seed's F4 and F8 exactly; this module is what
``mode="measured"`` uses instead. Each term names what it stands for and where its constant
comes from; docs/sizing.md lists the measurements and the error they leave.

Fine-tuning peak memory (GB = 1e9 B), LoRA and QLoRA::

    frozen weights       F1 at the stored precision (QLoRA: the 4-bit base)
    dequantisation       QLoRA only: 0.34 × the weights at 16 bits. bitsandbytes dequantises each
                         4-bit matrix to 16 bits for every matmul, keeps the embeddings in 16
                         bits, and loaders stage 16-bit shards on the GPU before quantising them;
                         the share is fitted to the three LitGPT QLoRA runs (0.32-0.40).
    adapters             F4's 0.005 × params × 16 B (rank ~16 on every linear layer: an FP32
                         copy, its gradient and two AdamW moments)
    activations          no checkpointing: every layer keeps its 16-bit tensors for the backward
                         pass, 34·s·b·h bytes a layer (Korthikanti et al. 2022, "Reducing
                         Activation Recomputation in Large Transformer Models", eq. 1 with fused
                         attention dropping the 5·a·s/h term); not fitted, the three LitGPT
                         LoRA runs imply 28-37·h
    logits               s·b·vocab·10 B: 16-bit logits, their FP32 copy and its gradient
    CUDA context         0.5 GB: driver context and cuBLAS/cuDNN workspaces, outside PyTorch's
                         allocator (nvidia-smi shows it; torch.cuda.max_memory_allocated not)

Single-stream decode: bandwidth × e ÷ bytes one token reads, with e per card class fitted to
published batch-1 measurements (``DECODE_CLASSES``). A token also gathers one row of the input
embedding (hidden × bytes); measured mode counts that row. It does not count the whole table:
a lookup reads one row, so charging the table (+7 % of an 8B model's bytes) would model a read
no engine does.
"""

from __future__ import annotations

from dataclasses import dataclass

from spendguard._sizing.arch import ModelArch
from spendguard._sizing.hardware import Gpu
from spendguard._sizing.memory import ADAPTER_BYTES, ADAPTER_SHARE, GB, MemoryEstimate, Task
from spendguard._sizing.precision import Precision, format_bytes

__all__ = ["DECODE_CLASSES", "FINE_TUNE_ERROR_PCT", "DecodeClass", "decode_class",
           "embedding_row_bytes", "measured_activation_bytes",
           "measured_fine_tune_memory"]

DEQUANT_SHARE = 0.34  # QLoRA: of the 16-bit weights, fitted (LitGPT QLoRA runs)
ACTIVATION_BYTES = 34  # per token per layer, × hidden (Korthikanti et al. 2022)
LOGIT_BYTES = 10  # per token per vocabulary entry: bf16 logits + FP32 copy + FP32 gradient
CUDA_CONTEXT_GB = 0.5
FINE_TUNE_ERROR_PCT = 15.0  # what the tests hold every fine-tuning measurement to


def measured_activation_bytes(arch: ModelArch, sequence: int, batch: int) -> float:
    """Activations without checkpointing, plus the logits (bytes)."""
    tokens = sequence * batch
    per_layer = ACTIVATION_BYTES * arch.hidden_size
    return tokens * (arch.layers * per_layer + arch.vocab_size * LOGIT_BYTES)


def measured_fine_tune_memory(arch: ModelArch, task: Task, weights_bytes: float, *,
                              sequence: int, batch: int) -> MemoryEstimate:
    """Peak memory of a LoRA or QLoRA run as measured runs hold it (see the module docstring)."""
    if task not in ("lora", "qlora"):
        raise ValueError(f"measured fine-tuning memory covers lora and qlora, not {task}")
    dequant = DEQUANT_SHARE * arch.params * 2 if task == "qlora" else 0.0
    adapters = ADAPTER_SHARE * arch.params * ADAPTER_BYTES
    activations = measured_activation_bytes(arch, sequence, batch)
    overhead = dequant + CUDA_CONTEXT_GB * GB
    total = weights_bytes + adapters + activations + overhead
    return MemoryEstimate(
        weights_gb=weights_bytes / GB, kv_gb=0.0, kv_bytes_per_token=0.0,
        kv_state_bytes_per_sequence=0.0, activations_gb=activations / GB,
        training_state_gb=adapters / GB, overhead_gb=overhead / GB, total_gb=total / GB,
    )


@dataclass(frozen=True)
class DecodeClass:
    """A card class's single-stream efficiency: the share of bandwidth one stream gets."""

    name: str
    efficiency: float
    low: float
    high: float
    basis: str

    def range_pct(self) -> tuple[float, float]:
        """The expected error band around the estimate, % (low, high)."""
        return ((self.low / self.efficiency - 1) * 100, (self.high / self.efficiency - 1) * 100)


DECODE_CLASSES: dict[str, DecodeClass] = {
    "hopper": DecodeClass(
        "Hopper (H100 / H200 / H800 / H20)", 0.59, 0.50, 0.68,
        "NVIDIA NIM 1.8.0 benchmark: Llama-3.3-70B FP8 on 2 × H100 TP2, ITL 18.58 ms"),
    "blackwell": DecodeClass(
        "Blackwell datacenter (B200 / B300 / GB200 / GB300)", 0.50, 0.42, 0.58,
        "Vultr inference cookbook (vLLM 0.16, HGX B200): Nemotron Super 49B FP8 TP1, "
        "TPOT 13.40 ms at concurrency 1"),
    "consumer": DecodeClass(
        "consumer cards (RTX 30 / 40 / 50)", 0.70, 0.62, 0.80,
        "llama.cpp PR #15802 (RTX 3090, 156 t/s); smeltcore.com gpt-oss-20b recipes "
        "(RTX 4080 SUPER / 5080 / 4090)"),
    "unmeasured": DecodeClass(
        "no batch-1 measurement for this class", 0.70, 0.45, 0.85,
        "the seed's 0.7; the band spans the classes that were measured"),
}

_HOPPER = frozenset({"h100", "h100-pcie", "h800", "h200", "h20"})
_BLACKWELL = frozenset({"b200", "b300", "gb200", "gb300"})


def decode_class(gpu: Gpu) -> DecodeClass:
    """The measured class a GPU belongs to (by catalogue id and kind)."""
    if gpu.id in _HOPPER:
        return DECODE_CLASSES["hopper"]
    if gpu.id in _BLACKWELL:
        return DECODE_CLASSES["blackwell"]
    if gpu.kind == "consumer":
        return DECODE_CLASSES["consumer"]
    return DECODE_CLASSES["unmeasured"]


def embedding_row_bytes(arch: ModelArch, precision: Precision) -> float:
    """The input-embedding row one token gathers (hidden × the embeddings' bytes)."""
    fmt = precision.embedding_format if precision.embeddings else precision.base
    return arch.hidden_size * format_bytes(fmt)
