"""Renting GPUs: monthly rent, cost per million output tokens, and break-even against an API.

Rent counts every rented hour, busy or idle: GPUs × hours a day × 30 days × USD per GPU-hour.
Utilisation is the share of the roofline's output capacity over those hours that real traffic
uses; the 40 % default is the reference script's realised-efficiency placeholder (docs/sizing.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._core.money import MILLION, parse_usd
from spendguard._sizing.hardware import default_gpus

__all__ = ["DAYS_PER_MONTH", "DEFAULT_UTILISATION", "BreakEven", "MonthlyRent", "breakeven",
           "cost_per_million_output_usd", "monthly_rent"]

DAYS_PER_MONTH = 30
DEFAULT_UTILISATION = 0.4
_CENT = Decimal("0.01")


def _hours_per_day(value: object) -> Decimal:
    try:
        hours = Decimal(str(value).strip())
    except InvalidOperation:
        hours = Decimal("NaN")
    if isinstance(value, bool) or not hours.is_finite() or not 0 < hours <= 24:
        raise ConfigError(f"hours_per_day: {value!r} is not a number of hours in (0, 24]; pass "
                          "the hours a day the GPUs are rented, 24 for always on")
    return hours


def _positive_int(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{field}: expected a whole number >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class MonthlyRent:
    """What renting ``gpus`` for ``hours_per_day`` over a 30-day month costs; idle hours count."""

    gpus: int
    usd_per_gpu_hour: Decimal
    hours_per_day: Decimal
    days: int = DAYS_PER_MONTH

    @property
    def gpu_hours(self) -> Decimal:
        """GPU-hours billed in the month."""
        return self.gpus * self.hours_per_day * self.days

    @property
    def monthly_cost_usd(self) -> Decimal:
        """GPUs × hours × rate, in USD."""
        return self.gpu_hours * self.usd_per_gpu_hour


def monthly_rent(gpus: int, usd_per_gpu_hour: Decimal | str | int, *,
                 hours_per_day: Decimal | str | int = 24) -> MonthlyRent:
    """Monthly rent of ``gpus`` at ``usd_per_gpu_hour`` (always on unless ``hours_per_day``)."""
    return MonthlyRent(gpus=_positive_int(gpus, "count"),
                       usd_per_gpu_hour=parse_usd(usd_per_gpu_hour, field="usd_per_gpu_hour",
                                                  allow_zero=False),
                       hours_per_day=_hours_per_day(hours_per_day))


def cost_per_million_output_usd(usd_per_hour: Decimal, tok_s: float,
                                utilisation: float = DEFAULT_UTILISATION) -> Decimal:
    """USD per million output tokens when the hardware delivers ``utilisation`` × ``tok_s``."""
    if not 0 < utilisation <= 1:
        raise ConfigError(f"utilisation: {utilisation!r} must be in (0, 1], e.g. 0.4 for 40 %")
    delivered_per_hour = Decimal(repr(tok_s)) * Decimal(repr(utilisation)) * 3600
    return (usd_per_hour / delivered_per_hour * MILLION).quantize(Decimal("0.0001"))


@dataclass(frozen=True)
class BreakEven:
    """Self-hosting rent against a hosted API's output price for the same tokens."""

    rent: MonthlyRent
    api_output_usd_per_million: Decimal
    gpu: str | None = None
    capacity_tok_s: float | None = None
    prefill_tok_s: float | None = None

    @property
    def monthly_cost_usd(self) -> Decimal:
        """The month's rent (USD)."""
        return self.rent.monthly_cost_usd

    @property
    def breakeven_output_tokens_per_month(self) -> int:
        """Output tokens a month above which renting costs less than the API."""
        return math.ceil(self.monthly_cost_usd / self.api_output_usd_per_million * MILLION)

    @property
    def breakeven_output_tokens_per_day(self) -> int:
        """The same volume spread over the 30 days."""
        return math.ceil(self.breakeven_output_tokens_per_month / self.rent.days)

    @property
    def capacity_output_tokens_per_month(self) -> int | None:
        """What the hardware could produce in the rented hours at ``capacity_tok_s``."""
        if self.capacity_tok_s is None:
            return None
        hours = float(self.rent.hours_per_day) * self.rent.days
        return math.floor(self.capacity_tok_s * 3600 * hours)

    @property
    def utilisation_needed(self) -> float | None:
        """Share of capacity the break-even volume needs (> 1: self-hosting can never pay)."""
        capacity = self.capacity_output_tokens_per_month
        if not capacity:
            return None
        return self.breakeven_output_tokens_per_month / capacity

    def api_cost_usd(self, output_tokens: int) -> Decimal:
        """What the API charges for ``output_tokens`` at its output price."""
        return (self.api_output_usd_per_million * output_tokens / MILLION).quantize(_CENT)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (USD as strings)."""
        needed = self.utilisation_needed
        return {
            "gpu": self.gpu,
            "count": self.rent.gpus,
            "usd_per_gpu_hour": str(self.rent.usd_per_gpu_hour),
            "hours_per_day": str(self.rent.hours_per_day),
            "days": self.rent.days,
            "gpu_hours": str(self.rent.gpu_hours),
            "monthly_cost_usd": str(self.monthly_cost_usd),
            "api_output_usd_per_million": str(self.api_output_usd_per_million),
            "breakeven_output_tokens_per_month": self.breakeven_output_tokens_per_month,
            "breakeven_output_tokens_per_day": self.breakeven_output_tokens_per_day,
            "capacity_tok_s": self.capacity_tok_s,
            "capacity_output_tokens_per_month": self.capacity_output_tokens_per_month,
            "prefill_tok_s": self.prefill_tok_s,
            "utilisation_needed": None if needed is None else round(needed, 6),
        }


def breakeven(*, count: int, usd_per_gpu_hour: Decimal | str | int,
              api_output_usd_per_million: Decimal | str | int,
              hours_per_day: Decimal | str | int = 24, gpu: str | None = None,
              capacity_tok_s: float | None = None,
              prefill_tok_s: float | None = None) -> BreakEven:
    """Monthly rent of ``count`` GPUs vs the API, and the output volume where they cost the same.

    ``capacity_tok_s`` (the output tokens/s the hardware sustains at full load, measured or from
    ``size_model``) adds the utilisation that volume needs; ``prefill_tok_s`` (prompt tokens/s
    in prefill) lets a ledger comparison count the time spent reading prompts.
    """
    if capacity_tok_s is not None and not capacity_tok_s > 0:
        raise ConfigError(f"capacity_tok_s: {capacity_tok_s!r} must be > 0 tokens per second")
    if prefill_tok_s is not None and not prefill_tok_s > 0:
        raise ConfigError(f"prefill_tok_s: {prefill_tok_s!r} must be > 0 tokens per second")
    if gpu is not None:
        gpu = default_gpus().get(gpu).id
    return BreakEven(
        rent=monthly_rent(count, usd_per_gpu_hour, hours_per_day=hours_per_day),
        api_output_usd_per_million=parse_usd(api_output_usd_per_million,
                                             field="api_output_usd_per_million",
                                             allow_zero=False),
        gpu=gpu, capacity_tok_s=capacity_tok_s, prefill_tok_s=prefill_tok_s,
    )
