"""F7: how many GPUs a workload needs, how the options rank, and the weights-only floor.

F7  count = round_up(vram ÷ (gpu_vram × 0.90)) → 1, 2, 4, 8, then whole 8-GPU nodes.
    The smallest count wins, then the least total VRAM, then the higher bandwidth.
    Consumer and workstation cards are limited to one node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from spendguard._sizing.hardware import Gpu

__all__ = ["HEADROOM", "GpuCount", "gpus_needed", "rank", "round_to_rentable", "weights_floor"]

HEADROOM = 0.90  # F7: usable share of a GPU's memory, keeping >= 10 % free


def _ceil(value: float) -> int:
    # 720 / (80 * 0.9) must be 10, not 11: float noise below 1e-9 is not a real excess.
    return max(1, math.ceil(round(value, 9)))


def round_to_rentable(raw: int, node_size: int) -> int:
    """1, 2, 4, ... up to one node, then whole nodes."""
    if raw >= node_size:
        return node_size * math.ceil(raw / node_size)
    count = 1
    while count < raw:
        count *= 2
    return min(count, node_size)


def gpus_needed(total_gb: float, gpu: Gpu, *, headroom: float = HEADROOM) -> int | None:
    """F7's count for ``total_gb`` (GB) on ``gpu``; None when a one-node card can't hold it."""
    raw = _ceil(total_gb / (gpu.memory_gb * headroom))
    count = round_to_rentable(raw, gpu.node_size)
    if gpu.single_node_only and count > gpu.node_size:
        return None
    return count


def weights_floor(weights_gb: float, gpu: Gpu) -> int:
    """GPUs that hold the weights alone with a perfect split: no KV, no headroom, no rounding."""
    return _ceil(weights_gb / gpu.memory_gb)


@dataclass(frozen=True)
class GpuCount:
    """A GPU and how many of it; ``total_vram_gb`` is count × datasheet memory (GB)."""

    gpu: Gpu
    count: int

    @property
    def total_vram_gb(self) -> float:
        """Memory of all the GPUs together, GB (1e9 B)."""
        return self.gpu.memory_gb * self.count

    @property
    def bandwidth_tb_s(self) -> float:
        """Aggregate memory bandwidth, TB/s."""
        return self.gpu.bandwidth_tb_s * self.count


def rank(options: Iterable[GpuCount]) -> list[GpuCount]:
    """F7's order: fewest GPUs, then least total VRAM, then higher bandwidth (then name)."""
    return sorted(options, key=lambda o: (o.count, o.total_vram_gb, -o.gpu.bandwidth_tb_s,
                                          o.gpu.id))
