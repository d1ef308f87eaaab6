"""Self-hosted traffic from the ledger against the API price of the same tokens.

A self-hosted deployment's calls are recorded at their *allocated* cost: the GPU time each
took at the deployment's full-load throughput (see :mod:`spendguard._costing.prices.selfhosted`).
Over a
period the deployment bills its whole rent, busy or idle, so::

    rent_usd              = usd_per_hour × hours_per_day × days
    utilisation           = allocated_usd / rent_usd        (share of paid GPU time used)
    api_usd               = Σ cost(api_model, each call's tokens)   (tiers apply per call)
    crossover_utilisation = allocated_usd / api_usd

At utilisation u the rent is fixed while the API bill of the same traffic mix grows with u,
so the two cross where u × rent = api_usd × u / utilisation, i.e. at ``allocated / api``.
Above it self-hosting is cheaper; a crossover above 100 % means it never pays at this mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._core.money import MILLION, ZERO, format_usd
from spendguard._costing.cost import cost
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage
from spendguard._sizing.ledger_compare import RecordSource, SpendLike

__all__ = ["SelfHostedComparison", "compare_self_hosted", "self_hosted_from_ledger"]

_CENT = Decimal("0.01")
_SHARE = Decimal("0.0001")


@dataclass(frozen=True)
class SelfHostedComparison:
    """One deployment's recorded traffic: what it cost self-hosted and on the API."""

    deployment: str
    price_id: str
    api_model: str
    since: datetime
    until: datetime
    calls: int
    input_tokens: int
    output_tokens: int
    usd_per_hour: Decimal
    hours: Decimal
    allocated_usd: Decimal
    api_usd: Decimal

    @property
    def rent_usd(self) -> Decimal:
        """What the deployment billed over the period (every hour, busy or idle)."""
        return self.usd_per_hour * self.hours

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def utilisation(self) -> Decimal:
        """Share of the paid GPU time the recorded calls used."""
        return self.allocated_usd / self.rent_usd

    @property
    def crossover_utilisation(self) -> Decimal | None:
        """Utilisation above which self-hosting costs less than the API (None: no API cost)."""
        return self.allocated_usd / self.api_usd if self.api_usd else None

    def usd_per_million_tokens(self, usd: Decimal) -> Decimal:
        if not self.tokens:
            raise ConfigError(f"--self-hosted: the ledger holds no calls to {self.price_id!r} "
                              "in that period, so there is nothing to compare")
        return usd / self.tokens * MILLION

    def to_dict(self) -> dict[str, Any]:
        crossover = self.crossover_utilisation
        return {
            "deployment": self.deployment, "model": self.price_id, "api_model": self.api_model,
            "since": self.since.isoformat(), "until": self.until.isoformat(),
            "calls": self.calls, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "usd_per_hour": str(self.usd_per_hour),
            "hours": str(self.hours), "rent_usd": str(self.rent_usd.quantize(_CENT)),
            "allocated_usd": str(self.allocated_usd), "api_usd": str(self.api_usd),
            "self_hosted_usd_per_million_tokens":
                str(self.usd_per_million_tokens(self.rent_usd).quantize(_CENT)),
            "api_usd_per_million_tokens":
                str(self.usd_per_million_tokens(self.api_usd).quantize(_CENT)),
            "utilisation": str(self.utilisation.quantize(_SHARE)),
            "crossover_utilisation": None if crossover is None else str(crossover.quantize(_SHARE)),
        }

    def render(self) -> str:
        """The comparison as a short block of text."""
        crossover = self.crossover_utilisation
        per_m_self = self.usd_per_million_tokens(self.rent_usd)
        per_m_api = self.usd_per_million_tokens(self.api_usd)
        lines = [
            f"Self-hosted {self.price_id}: {self.calls:,} calls, {self.input_tokens:,} input + "
            f"{self.output_tokens:,} output tokens in {self.hours:g} rented hours",
            f"  rent {format_usd(self.rent_usd)} at "
            f"{format_usd(self.usd_per_hour)}/h, busy {self.utilisation:.2%} of it "
            f"(allocated {format_usd(self.allocated_usd)})",
            f"  = {format_usd(per_m_self)} per million tokens at that utilisation",
            f"Same tokens on {self.api_model}: {format_usd(self.api_usd)}"
            f" = {format_usd(per_m_api)} per million tokens",
        ]
        if crossover is None:
            lines.append("The API prices these tokens at $0: no crossover.")
        elif crossover > 1:
            lines.append(f"Crossover at {crossover:.2%} utilisation: above 100 %, so at this "
                         "traffic mix the API stays cheaper however busy the GPUs are.")
        else:
            cheaper = "self-hosting" if self.utilisation >= crossover else "the API"
            lines.append(f"Crossover at {crossover:.2%} utilisation; at {self.utilisation:.2%} "
                         f"{cheaper} is cheaper.")
        return "\n".join(lines)


def _usage(tokens: Mapping[str, int]) -> Usage:
    return Usage(input_tokens=tokens.get("input", 0),
                 cache_read_tokens=tokens.get("cache_read", 0),
                 cache_write_tokens={kind.removeprefix("cache_write_"): n
                                     for kind, n in tokens.items()
                                     if kind.startswith("cache_write_")},
                 output_tokens=tokens.get("output", 0))


def compare_self_hosted(records: Iterable[SpendLike], *, deployment: str, table: PriceTable,
                        api_model: str, since: datetime, until: datetime,
                        hours_per_day: Decimal | str | int = 24) -> SelfHostedComparison:
    """Sum the deployment's records with ``since <= time < until`` (pure: no clock, no I/O)."""
    host = table.hosts.get(deployment)
    served = [m for m in table.models() if host and m.startswith(host.price_id(""))
              and table.get(m).self_hosted is not None]
    if not served:
        known = sorted(name for name, h in table.hosts.items()
                       if any(table.get(m).self_hosted for m in table.models()
                              if m.startswith(h.price_id(""))))
        raise ConfigError(f"--self-hosted: no self-hosted deployment {deployment!r} in the "
                          f"price table (known: {', '.join(known) or 'none'}); declare it in a "
                          "[self_hosted.<name>] section of a price file (docs/sizing.md)")
    price_id = served[0]
    entry = table.get(price_id).self_hosted
    assert entry is not None
    table.get(api_model)  # an unknown API model fails here, naming the fix
    hours = Decimal(str(hours_per_day)) * Decimal(str((until - since) / timedelta(days=1)))
    calls, allocated, api, inputs, outputs = 0, ZERO, ZERO, 0, 0
    for record in records:
        if record.model != price_id or not since <= record.time < until:
            continue
        calls += 1
        allocated += record.actual_usd
        api += cost(api_model, _usage(record.tokens), table=table).total
        outputs += record.tokens.get("output", 0)
        inputs += sum(n for kind, n in record.tokens.items()
                      if kind == "input" or kind.startswith("cache_"))
    return SelfHostedComparison(
        deployment=deployment, price_id=price_id, api_model=api_model, since=since,
        until=until, calls=calls, input_tokens=inputs, output_tokens=outputs,
        usd_per_hour=entry.usd_per_gpu_hour * entry.gpu_count, hours=hours,
        allocated_usd=allocated, api_usd=api)


def self_hosted_from_ledger(ledger: RecordSource, *, deployment: str, table: PriceTable,
                            api_model: str, now: datetime, days: int = 30,
                            hours_per_day: Decimal | str | int = 24) -> SelfHostedComparison:
    """The last ``days`` days of one deployment in ``ledger``, ending at ``now``."""
    since = now - timedelta(days=days)
    return compare_self_hosted(ledger.records(since=since, until=now), deployment=deployment,
                               table=table, api_model=api_model, since=since, until=now,
                               hours_per_day=hours_per_day)
