"""One ledger record as charge lines: one per billed token kind, or one for a correction.

A line carries what FOCUS needs to be self-consistent: the tokens, today's list rate for that
token kind of that model (batch rate for a batch call, long-context tier applied), and the
share of the ledger's amount it stands for. The shares of a record add up to its ledger
amount exactly (see :mod:`spendguard._reporting.export.allocation`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.errors import SpendguardError
from spendguard._core.money import MILLION, ZERO
from spendguard._costing.cost import cost as price_usage
from spendguard._costing.prices import PriceTable
from spendguard._costing.usage import Usage
from spendguard._reporting.export.allocation import split_cost
from spendguard._reporting.export.records import ADJUSTMENT, billed_tokens, is_batch, is_marker

__all__ = ["REQUEST", "ChargeLine", "Rates", "charge_lines"]

REQUEST = "request"
"""The kind of the single line of a call that today's price table cannot price per token."""


@dataclass(frozen=True, slots=True)
class ChargeLine:
    """A part of one record: ``tokens`` of ``kind`` at ``usd_per_million``, billed ``billed_usd``.

    ``kind`` is a token kind (``input``, ``cache_read``, ``cache_write_<ttl>``, ``output``),
    ``request`` (an unpriced call, priced as one request) or ``adjustment``.
    """

    kind: str
    tokens: int
    usd_per_million: Decimal | None
    billed_usd: Decimal
    batch: bool = False
    tier_above_tokens: int | None = None

    @property
    def list_usd(self) -> Decimal | None:
        """The line at list price: tokens x rate (exact), or None without a rate."""
        if self.usd_per_million is None:
            return None
        return self.tokens * self.usd_per_million / MILLION


Rates = tuple[dict[str, Decimal], int | None]
"""Today's rate of each token kind of a call (USD per million), and its long-context tier."""


def charge_lines(record: SpendRecord, table: PriceTable,
                 known: dict[tuple[object, ...], Rates | None] | None = None,
                 ) -> list[ChargeLine]:
    """The lines of one record; none for a $0 record that consumed nothing.

    ``known``: the rates already found by the calls before (an export passes one dict for
    all its records: a model's rates for the same kinds, batch or not, and tier are the
    same for every call)."""
    if is_marker(record):
        return []
    if record.status == ADJUSTMENT:
        return [ChargeLine(ADJUSTMENT, 0, None, record.actual_usd)]
    tokens = billed_tokens(record)
    batch = is_batch(record)
    if not tokens:
        return [] if record.actual_usd == 0 else [
            ChargeLine(REQUEST, 0, None, record.actual_usd, batch)]
    priced = _list_rates(record.model, tokens, table, batch=batch, known=known)
    if priced is None:
        return [ChargeLine(REQUEST, sum(tokens.values()), None, record.actual_usd, batch)]
    rates, tier = priced
    lines = [ChargeLine(kind, count, rates[kind], ZERO, batch, tier)
             for kind, count in tokens.items()]
    list_usd = [line.list_usd or ZERO for line in lines]
    # Today's prices reproduce the ledger's amount in the usual case; otherwise share it.
    billed = list_usd if sum(list_usd, ZERO) == record.actual_usd else split_cost(
        record.actual_usd, list_usd if sum(list_usd, ZERO) > 0 else
        [Decimal(line.tokens) for line in lines])
    return [ChargeLine(line.kind, line.tokens, line.usd_per_million, share, batch, tier)
            for line, share in zip(lines, billed, strict=True)]


def _list_rates(model: str, tokens: dict[str, int], table: PriceTable, *, batch: bool,
                known: dict[tuple[object, ...], Rates | None] | None) -> Rates | None:
    """Today's rate of each kind (USD per million), and the long-context tier, or None."""
    writes = {kind.removeprefix("cache_write_"): count for kind, count in tokens.items()
              if kind.startswith("cache_write_")}
    kinds = {"input", "cache_read", "output", *(f"cache_write_{ttl}" for ttl in writes)}
    if set(tokens) - kinds:
        return None  # a kind this version cannot price: keep the ledger's amount whole
    try:
        usage = Usage(input_tokens=tokens.get("input", 0),
                      cache_read_tokens=tokens.get("cache_read", 0), cache_write_tokens=writes,
                      output_tokens=tokens.get("output", 0))
        model_price = table.get(model)
    except SpendguardError:
        return None  # the model has no price in today's table
    # The rates depend on the kinds, batch and the tier the input falls in, not on the counts.
    tier = model_price.tier_for(usage.total_input_tokens) if model_price.tiers else None
    key = (model, batch, *tokens, None if tier is None else tier.above_input_tokens)
    if known is not None and key in known:
        return known[key]
    rates = _rates(model, usage, table, batch=batch, kinds=tokens.keys())
    if known is not None:
        known[key] = rates
    return rates


def _rates(model: str, usage: Usage, table: PriceTable, *, batch: bool,
           kinds: Iterable[str]) -> Rates | None:
    try:
        priced = price_usage(model, usage, batch=batch, table=table)
    except SpendguardError:
        return None  # a kind of the model has no price in today's table
    rates = {line.kind: line.usd_per_million for line in priced.lines}
    if set(kinds) - set(rates):
        return None
    return rates, None if priced.tier is None else priced.tier.above_input_tokens
