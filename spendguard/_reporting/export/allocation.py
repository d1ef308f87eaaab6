"""Splitting one call's cost over its token kinds so that the parts add up exactly.

The ledger knows what a call cost in total; FOCUS wants a row per token kind. When today's
list prices reproduce the total (the usual case) each kind gets its priced line as is. When
they don't — a batch or priority discount, a price changed since — the total is shared in
proportion to the list lines, each share rounded to ``QUANTUM_USD`` and the rounding left on
the largest share, so the rows still sum to the ledger's amount to the last digit.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

from spendguard._core.money import ZERO

__all__ = ["QUANTUM_USD", "split_cost"]

QUANTUM_USD = Decimal("1E-12")
"""Shares are rounded to a millionth of a millionth of a dollar (the remainder moves)."""


def split_cost(total_usd: Decimal, weights: Sequence[Decimal]) -> list[Decimal]:
    """``total_usd`` shared in proportion to ``weights`` (>= 0); the shares sum to it exactly.

    Equal weights are used when all are zero. An empty list of weights takes nothing and is
    only allowed for a zero total.
    """
    if not weights:
        if total_usd != 0:
            raise ValueError(f"cannot share {total_usd} USD over no parts")
        return []
    if any(weight < 0 for weight in weights):
        raise ValueError(f"weights must be >= 0, got {list(weights)}")
    whole = sum(weights, ZERO)
    if whole == 0:
        weights, whole = [Decimal(1)] * len(weights), Decimal(len(weights))
    largest = max(range(len(weights)), key=lambda index: weights[index])
    with localcontext() as context:
        context.prec = 60  # far beyond any USD amount times any token count
        shares = [(total_usd * weight / whole).quantize(QUANTUM_USD, ROUND_HALF_EVEN)
                  for weight in weights]
        shares[largest] = ZERO
        shares[largest] = total_usd - sum(shares, ZERO)
    return shares
