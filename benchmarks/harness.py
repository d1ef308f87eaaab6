"""The measuring harness shared by the benchmark scripts: round-robin timing, stats, tables.

The machines these run on are shared and noisy (2 cores), so a comparison is only fair when its
variants are measured in the same run, interleaved: :func:`round_robin` runs one call of every
variant per round, rotating which goes first, after a warm-up that is thrown away. Figures are
medians and 99th percentiles (nearest rank); an overhead is the median of the per-round
differences, which cancels most of the drift a noisy neighbour causes.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "REPO",
    "Summary",
    "add_quick",
    "fmt_ms",
    "fmt_ratio",
    "fmt_us",
    "machine",
    "markdown_table",
    "paired_overhead_s",
    "percentile",
    "round_robin",
    "round_robin_async",
    "summarize",
    "today",
]

REPO = Path(__file__).resolve().parent.parent

Timed = Callable[[], float]
"""One call of a variant; returns the seconds it measured (it may time only a part)."""
AsyncTimed = Callable[[], Awaitable[float]]


@dataclass(frozen=True, slots=True)
class Summary:
    """The median and 99th percentile (seconds) of ``n`` samples."""

    median_s: float
    p99_s: float
    n: int


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (``fraction`` 0.99 for p99)."""
    if not values:
        raise ValueError("percentile of no samples")
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)), 1)
    return ordered[rank - 1]


def summarize(samples: Sequence[float]) -> Summary:
    return Summary(statistics.median(samples), percentile(samples, 0.99), len(samples))


def paired_overhead_s(samples: Sequence[float], baseline: Sequence[float]) -> float:
    """The median of per-round differences against the baseline (seconds)."""
    return statistics.median(a - b for a, b in zip(samples, baseline, strict=True))


def _order(names: list[str], round_index: int) -> list[str]:
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def round_robin(variants: Mapping[str, Timed], *, rounds: int,
                warmup: int) -> dict[str, list[float]]:
    """Interleave the variants, one call each per round; returns the timed rounds' samples."""
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup + rounds):
        for name in _order(names, index):
            elapsed = variants[name]()
            if index >= warmup:
                samples[name].append(elapsed)
    return samples


async def round_robin_async(variants: Mapping[str, AsyncTimed], *, rounds: int,
                            warmup: int) -> dict[str, list[float]]:
    """The asyncio twin of :func:`round_robin` (calls run one at a time, never overlapped)."""
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup + rounds):
        for name in _order(names, index):
            elapsed = await variants[name]()
            if index >= warmup:
                samples[name].append(elapsed)
        await asyncio.sleep(0)
    return samples


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}×"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-markdown table, padded so it also reads well in a terminal."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows,
                                                                       strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths,
                                                                 strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def machine() -> str:
    """One line naming the CPU, cores, memory and Python this ran on."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                cpu = text.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for text in Path("/proc/meminfo").read_text().splitlines():
            if text.startswith("MemTotal:"):
                memory = f", {int(text.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{cpu}, {cores} cores{memory}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def add_quick(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a few rounds only: checks the script runs (figures meaningless)")
