"""Accelerators: memory, bandwidth, dense FLOP/s, class, node size and rent, with sources."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from spendguard._sizing._data import data_file, normalise, read_entries, reject_float, unknown
from spendguard._sizing.precision import ComputeFormat

__all__ = ["Gpu", "GpuCatalogue", "default_gpus", "load_gpus"]

UNMEASURED_VISIBLE_SHARE = 0.97

GpuClass = Literal["datacenter", "workstation", "consumer"]
Usd = Annotated[Decimal, BeforeValidator(reject_float)]


@dataclass(frozen=True)
class Gpu:
    """One accelerator. GB are datasheet (1e9 B); ``visible_gib`` is what engines see."""

    id: str
    name: str
    kind: GpuClass
    memory_gb: float
    bandwidth_tb_s: float
    bf16_tflops: float
    fp8_tflops: float | None
    int8_tflops: float | None
    fp4_tflops: float | None
    node_size: int
    visible_gib: float | None
    usd_per_hour_low: Decimal | None
    usd_per_hour_high: Decimal | None
    source: str
    as_of: str
    price_source: str | None
    price_as_of: str | None
    # Why these figures where published ones disagree (shown next to any result that uses them),
    # and the other published memory, so a result can say what it would change.
    figure_note: str | None = None
    other_memory_gb: float | None = None

    @property
    def engine_memory_gib(self) -> float:
        """Memory an engine sees, GiB: the measured figure, else 97 % of the datasheet number.

        Datasheet "GB" on NVIDIA and AMD cards is really GiB of HBM, less what the driver keeps:
        the measured cards show 93-100 % of it, so 97 % errs a little low.
        """
        if self.visible_gib is not None:
            return self.visible_gib
        return self.memory_gb * UNMEASURED_VISIBLE_SHARE

    @property
    def bandwidth_bytes_s(self) -> float:
        """Memory bandwidth in bytes per second."""
        return self.bandwidth_tb_s * 1e12

    def peak_flops(self, compute: ComputeFormat) -> float:
        """Dense peak FLOP/s at a compute format, falling back to a format the GPU has."""
        tflops = {
            # Without FP4 tensor cores, 4-bit weights are unpacked and multiplied in 16-bit.
            "fp4": self.fp4_tflops or self.bf16_tflops,
            "fp8": self.fp8_tflops or self.bf16_tflops,
            "int8": self.int8_tflops or self.fp8_tflops or self.bf16_tflops,
            "bf16": self.bf16_tflops,
        }[compute]
        return tflops * 1e12

    @property
    def single_node_only(self) -> bool:
        """F7: consumer and workstation cards are limited to one node."""
        return self.kind != "datacenter"


class _GpuEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    aliases: list[str] = Field(default_factory=list)
    kind: GpuClass
    memory_gb: float = Field(gt=0)
    bandwidth_tb_s: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0)
    fp8_tflops: float | None = Field(default=None, gt=0)
    int8_tflops: float | None = Field(default=None, gt=0)
    fp4_tflops: float | None = Field(default=None, gt=0)
    node_size: int = Field(default=8, ge=1)
    visible_gib: float | None = Field(default=None, gt=0)
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=7)
    # Declared before usd_per_hour so that its validator can see them.
    price_source: str | None = None
    price_as_of: str | None = None
    usd_per_hour: tuple[Usd, Usd] | None = None
    figure_note: str | None = Field(default=None, min_length=1)
    other_memory_gb: float | None = Field(default=None, gt=0)

    @field_validator("usd_per_hour")
    @classmethod
    def _price_has_provenance(cls, value: tuple[Decimal, Decimal] | None,
                              info: ValidationInfo) -> tuple[Decimal, Decimal] | None:
        if value is not None:
            low, high = value
            if not 0 < low <= high:
                raise ValueError("must be [low, high] with 0 < low <= high")
            if not info.data.get("price_source") or not info.data.get("price_as_of"):
                raise ValueError("a price range needs price_source and price_as_of")
        return value


class GpuCatalogue:
    """Accelerators by id or alias; a miss raises ``UnknownModelError(kind="gpu")``."""

    def __init__(self, gpus: dict[str, Gpu], aliases: dict[str, str]) -> None:
        self._gpus = gpus
        self._index = {**{key: key for key in gpus}, **aliases}

    def __iter__(self) -> Iterator[Gpu]:
        return iter(self._gpus.values())

    def __len__(self) -> int:
        return len(self._gpus)

    def get(self, name: str) -> Gpu:
        """The accelerator called ``name`` (id or alias, any case)."""
        key = self._index.get(normalise(name))
        if key is None:
            raise unknown("gpu", name, self._index,
                          "`spendguard size --list` shows them all; a GPU of your own "
                          "can be loaded with spendguard.sizing.load_gpus(path).")
        return self._gpus[key]


def load_gpus(path: str | Path) -> GpuCatalogue:
    """Read a ``[gpu.ID]`` TOML file (the format of ``pricing/gpus.toml``)."""
    entries = read_entries(Path(path), "gpu", _GpuEntry)
    gpus: dict[str, Gpu] = {}
    aliases: dict[str, str] = {}
    for key, entry in entries.items():
        low, high = entry.usd_per_hour if entry.usd_per_hour else (None, None)
        gpus[key] = Gpu(
            id=key, name=entry.name, kind=entry.kind, memory_gb=entry.memory_gb,
            bandwidth_tb_s=entry.bandwidth_tb_s, bf16_tflops=entry.bf16_tflops,
            fp8_tflops=entry.fp8_tflops, int8_tflops=entry.int8_tflops,
            fp4_tflops=entry.fp4_tflops, node_size=entry.node_size,
            visible_gib=entry.visible_gib, usd_per_hour_low=low, usd_per_hour_high=high,
            source=entry.source, as_of=entry.as_of, price_source=entry.price_source,
            price_as_of=entry.price_as_of, figure_note=entry.figure_note,
            other_memory_gb=entry.other_memory_gb,
        )
        aliases.update({normalise(alias): key for alias in entry.aliases})
    return GpuCatalogue(gpus, aliases)


@cache
def default_gpus() -> GpuCatalogue:
    """The accelerators shipped in ``pricing/gpus.toml`` (read once)."""
    return load_gpus(data_file("gpus.toml"))
