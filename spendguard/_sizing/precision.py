"""Number formats: bytes per stored value, mixed precision, and which format the KV cache uses.

A precision is written ``FORMAT[,experts=FORMAT][,embeddings=FORMAT]``: ``bf16``, ``fp8``,
``bf16,experts=mxfp4`` (4-bit routed experts, 16-bit attention and embeddings, as gpt-oss and
Kimi K3 ship), ``fp8,embeddings=bf16`` (an FP8 checkpoint that keeps its embedding tables in
BF16). ``native`` means the checkpoint's own precision from the model's data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from spendguard._core.errors import ConfigError

__all__ = [
    "BLOCK_SCALED_VALUE_BYTES",
    "BYTES_PER_VALUE",
    "ComputeFormat",
    "Precision",
    "compute_format",
    "engine_kv_format",
    "format_bytes",
    "parse_format",
    "parse_precision",
    "spec_kv_format",
    "training_bytes",
    "value_bytes",
]

BYTES_PER_VALUE: dict[str, float] = {
    "fp32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # MXFP4: blocks of 32 four-bit values share one 8-bit (E8M0) scale -> 4.25 bits a value.
    "mxfp4": 4.25 / 8,
    # NVFP4: blocks of 16 four-bit values share one FP8 (E4M3) scale -> 4.5 bits; the single
    # FP32 scale per tensor is too small to count.
    "nvfp4": 4.5 / 8,
    # Plain 4- and 2-bit as the seed formulas count them: no scale overhead.
    "int4": 0.5,
    "int2": 0.25,
}

# Block-scaled formats and the bytes of their values without the scales.
BLOCK_SCALED_VALUE_BYTES: dict[str, float] = {"mxfp4": 0.5, "nvfp4": 0.5}

_ALIASES = {
    "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float8": "fp8", "e4m3": "fp8", "8bit": "int8", "8-bit": "int8",
    "4bit": "int4", "4-bit": "int4", "q4": "int4", "2bit": "int2", "2-bit": "int2",
}

# Weight-only quantised formats: matmuls still run in 16-bit, and training treats them as BF16.
_WEIGHT_ONLY = frozenset({"int8", "int4", "int2", "mxfp4", "nvfp4"})


def parse_format(text: str, *, field: str = "precision") -> str:
    """The canonical name of one number format (``"BF16"`` -> ``"bf16"``); raises on unknown."""
    name = text.strip().lower().replace("_", "")
    name = _ALIASES.get(name, name)
    if name not in BYTES_PER_VALUE:
        known = ", ".join(BYTES_PER_VALUE)
        raise ConfigError(f"{field}: unknown number format {text!r}; use one of {known}")
    return name


def format_bytes(name: str) -> float:
    """Bytes one value takes in format ``name`` (block scales included)."""
    return BYTES_PER_VALUE[name]


def value_bytes(name: str) -> float:
    """Bytes of the value alone, block scales left out: how model pages quote 4-bit formats.

    "MXFP4 ≈ 0.5 byte a weight" counts the four-bit values only; the shared scales add
    about 6 % (MXFP4) or 12 % (NVFP4) on disk and in memory.
    """
    return BLOCK_SCALED_VALUE_BYTES.get(name, BYTES_PER_VALUE[name])


@dataclass(frozen=True)
class Precision:
    """How weights are stored: a base format, optionally others for routed experts, embeddings."""

    base: str
    experts: str | None = None
    embeddings: str | None = None

    def __str__(self) -> str:
        parts = [self.base]
        if self.experts is not None:
            parts.append(f"experts={self.experts}")
        if self.embeddings is not None:
            parts.append(f"embeddings={self.embeddings}")
        return ",".join(parts)

    @property
    def expert_format(self) -> str:
        """The format routed-expert weights are stored in."""
        return self.experts or self.base

    @property
    def embedding_format(self) -> str:
        """The format the input embedding and output head are stored in."""
        return self.embeddings or self.base


def parse_precision(text: str, *, field: str = "precision") -> Precision:
    """``"bf16,experts=mxfp4"`` -> ``Precision("bf16", experts="mxfp4")``; errors name ``field``."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise ConfigError(f"{field}: empty; write a format such as bf16, fp8 or bf16,experts=mxfp4")
    base = parse_format(parts[0], field=field)
    groups: dict[str, str] = {}
    for part in parts[1:]:
        group, sep, value = part.partition("=")
        group = group.strip().lower()
        if not sep or group not in ("experts", "embeddings"):
            raise ConfigError(
                f"{field}: {part!r} is not understood; after the base format write "
                "experts=FORMAT or embeddings=FORMAT, e.g. bf16,experts=mxfp4"
            )
        groups[group] = parse_format(value, field=field)
    return Precision(base, experts=groups.get("experts"), embeddings=groups.get("embeddings"))


def spec_kv_format(precision: Precision) -> str:
    """F2's rule: the cache is 8-bit for FP8 weights, 32-bit for FP32, else 16-bit."""
    return {"fp8": "fp8", "fp32": "fp32", "fp16": "fp16"}.get(precision.base, "bf16")


def engine_kv_format(precision: Precision) -> str:
    """vLLM's ``kv_cache_dtype=auto``: the activation dtype, so 16-bit even for FP8 checkpoints."""
    return {"fp32": "fp32", "fp16": "fp16"}.get(precision.base, "bf16")


ComputeFormat = Literal["bf16", "fp8", "int8", "fp4"]


def compute_format(precision: Precision) -> ComputeFormat:
    """Which tensor-core rate a forward pass uses (weight-only formats compute in 16-bit)."""
    base = precision.base
    if base == "fp8":
        return "fp8"
    if base == "int8":
        return "int8"
    if base in ("mxfp4", "nvfp4"):
        return "fp4"
    return "bf16"


def training_bytes(precision: Precision) -> float:
    """F5's w and g: the weight format's bytes, except that quantised formats train as BF16."""
    if precision.base in _WEIGHT_ONLY:
        return 2.0
    return BYTES_PER_VALUE[precision.base]
