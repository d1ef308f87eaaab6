"""Real API spend from the ledger against renting GPUs for the same output tokens.

"The last 30 days on model X cost $Y for N tokens; self-hosting Z on G would cost $W, busy U % of
the time." The API's effective price is blended: what the calls really cost (input, cache and
output together) per million output tokens, so the break-even assumes the same prompt mix.

Busy time counts both phases of serving: output tokens at the decode rate and input tokens at
the prefill rate (compute-bound, the reference script's roofline). Cached input tokens are
counted as prefill too, an upper bound: an engine with prefix caching skips some of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from spendguard._core.errors import ConfigError
from spendguard._core.money import MILLION, ZERO, format_usd
from spendguard._sizing.rent import BreakEven, breakeven

__all__ = ["LedgerSpend", "SelfHostComparison", "SpendLike", "compare_with_ledger",
           "ledger_spend", "spend_from_ledger"]

_CENT = Decimal("0.01")


class SpendLike(Protocol):
    """What is read from a ledger record (``spendguard._budget.ledger.SpendRecord`` has these)."""

    @property
    def model(self) -> str: ...
    @property
    def time(self) -> datetime: ...
    @property
    def actual_usd(self) -> Decimal: ...
    @property
    def tokens(self) -> Mapping[str, int]: ...


class RecordSource(Protocol):
    """A ledger: ``records(since=, until=, model=)`` (``spendguard._budget.ledger.Ledger`` has
    it)."""

    def records(self, *, since: datetime | None = ..., until: datetime | None = ...,
                model: str | None = ...) -> Iterable[Any]: ...


@dataclass(frozen=True)
class LedgerSpend:
    """One model's recorded spend over a period: USD and tokens."""

    model: str
    since: datetime
    until: datetime
    calls: int
    actual_usd: Decimal
    input_tokens: int
    output_tokens: int

    @property
    def days(self) -> float:
        """Length of the period in days."""
        return (self.until - self.since) / timedelta(days=1)

    @property
    def usd_per_million_output(self) -> Decimal:
        """What a million output tokens really cost, input and cache included."""
        if not self.output_tokens:
            raise ConfigError(f"model: the ledger holds no output tokens for {self.model!r} "
                              "in that period, so there is nothing to compare")
        return self.actual_usd / self.output_tokens * MILLION


def ledger_spend(records: Iterable[SpendLike], *, model: str, since: datetime,
                 until: datetime) -> LedgerSpend:
    """Sum ``model``'s records with ``since <= time < until`` (pure: no clock, no I/O)."""
    calls, usd, inputs, outputs = 0, ZERO, 0, 0
    for record in records:
        if record.model != model or not since <= record.time < until:
            continue
        calls += 1
        usd += record.actual_usd
        outputs += record.tokens.get("output", 0)
        inputs += sum(n for kind, n in record.tokens.items()
                      if kind == "input" or kind.startswith("cache_"))
    return LedgerSpend(model=model, since=since, until=until, calls=calls, actual_usd=usd,
                       input_tokens=inputs, output_tokens=outputs)


def spend_from_ledger(ledger: RecordSource, *, model: str, now: datetime,
                      days: int = 30) -> LedgerSpend:
    """The last ``days`` days of ``model`` in ``ledger``, ending at ``now`` (the caller's clock)."""
    since = now - timedelta(days=days)
    return ledger_spend(ledger.records(since=since, until=now, model=model), model=model,
                        since=since, until=now)


@dataclass(frozen=True)
class SelfHostComparison:
    """Recorded API spend vs the month's rent of the candidate hardware."""

    spend: LedgerSpend
    breakeven: BreakEven
    candidate: str | None

    @property
    def self_host_usd(self) -> Decimal:
        """Rent for the same number of days as the ledger period."""
        month = self.breakeven.monthly_cost_usd
        share = Decimal(repr(self.spend.days)) / self.breakeven.rent.days
        return (month * share).quantize(_CENT)

    @property
    def saving_usd(self) -> Decimal:
        """API spend minus rent: positive when self-hosting would have been cheaper."""
        return (self.spend.actual_usd - self.self_host_usd).quantize(_CENT)

    def _rented_s(self) -> float:
        rent = self.breakeven.rent
        return float(rent.hours_per_day) * 3600 * self.spend.days

    @property
    def decode_busy(self) -> float | None:
        """Share of the rented hours decoding the recorded output tokens."""
        tok_s = self.breakeven.capacity_tok_s
        if tok_s is None:
            return None
        return self.spend.output_tokens / (tok_s * self._rented_s())

    @property
    def prefill_busy(self) -> float | None:
        """Share of the rented hours prefilling the recorded input tokens."""
        tok_s = self.breakeven.prefill_tok_s
        if tok_s is None:
            return None
        return self.spend.input_tokens / (tok_s * self._rented_s())

    @property
    def utilisation(self) -> float | None:
        """Share of the rented hours busy: decoding plus prefilling (> 1: it would not keep up)."""
        decode = self.decode_busy
        if decode is None:
            return None
        return decode + (self.prefill_busy or 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The break-even and the recorded spend it was weighed against, for JSON output
        (money as strings: exact)."""
        s = self.spend
        data = self.breakeven.to_dict()
        data["ledger"] = {
            "model": s.model, "since": s.since.isoformat(), "until": s.until.isoformat(),
            "calls": s.calls, "actual_usd": str(s.actual_usd), "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens, "self_host_usd": str(self.self_host_usd),
            "saving_usd": str(self.saving_usd), "utilisation": self.utilisation,
            "decode_busy": self.decode_busy, "prefill_busy": self.prefill_busy,
        }
        return data

    def sentence(self) -> str:
        """The comparison in one sentence for people."""
        s, rent = self.spend, self.breakeven.rent
        who = f"{self.candidate} on " if self.candidate else ""
        gpu = self.breakeven.gpu or "GPU"
        busy = ""
        if self.utilisation is not None:
            busy = f", busy {_percent(self.utilisation)} of the time"
            if self.prefill_busy is not None:
                busy += (f" (decode {_percent(self.decode_busy or 0.0)}, prefill"
                         f" {_percent(self.prefill_busy)})")
            else:
                busy += " (decode only: give a prefill rate to count the input tokens)"
        return (f"The last {s.days:g} days on {s.model} cost {format_usd(s.actual_usd)}"
                f" for {s.input_tokens:,} input and {s.output_tokens:,} output tokens;"
                f" self-hosting {who}{rent.gpus} × {gpu} would cost"
                f" {format_usd(self.self_host_usd)}{busy}.")


def _percent(share: float) -> str:
    # A small share keeps two significant figures: "0.0063 %", never a misleading "0.0 %".
    if share == 0 or share >= 0.001:
        return f"{share:.1%}"
    return f"{share * 100:.2g} %"


def compare_with_ledger(spend: LedgerSpend, *, count: int, usd_per_gpu_hour: Decimal | str | int,
                        hours_per_day: Decimal | str | int = 24, gpu: str | None = None,
                        capacity_tok_s: float | None = None,
                        prefill_tok_s: float | None = None,
                        candidate: str | None = None) -> SelfHostComparison:
    """Break-even at the ledger's effective output price, and the utilisation you would have."""
    result = breakeven(count=count, usd_per_gpu_hour=usd_per_gpu_hour,
                       api_output_usd_per_million=spend.usd_per_million_output,
                       hours_per_day=hours_per_day, gpu=gpu, capacity_tok_s=capacity_tok_s,
                       prefill_tok_s=prefill_tok_s)
    return SelfHostComparison(spend=spend, breakeven=result, candidate=candidate)
