"""Money: Decimal USD, parsed strictly and shown consistently."""

from __future__ import annotations

from contextlib import AbstractContextManager
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation, localcontext

from spendguard._core.errors import ConfigError

__all__ = ["EXACT", "MAX_LIMIT_USD", "MILLION", "ZERO", "exact_sums", "format_usd",
           "normalised", "parse_usd"]

ZERO = Decimal(0)
MILLION = Decimal(1_000_000)
# The largest limit a budget takes: far above any real spending, and far inside what every
# ledger keeps exactly (Redis: 9e15 USD). Larger is a typo or a stand-in for "no limit".
MAX_LIMIT_USD = Decimal(10) ** 12
_SIGNIFICANT_BELOW_A_DOLLAR = 4  # digits shown of an amount under $1
_CENT = Decimal("0.01")
_PLAIN_DIGITS = 18
# Python's default 28 digits would round a sum such as 10^24 + 0.000001; 100 keep any total a
# ledger can hold exact (ratios computed inside stay cheap at 100 digits).
_SUMS = Context(prec=100)  # whole-dollar digits written out before switching to 1.234567E+21


def parse_usd(value: object, *, field: str, allow_zero: bool = True,
              maximum: Decimal | None = None) -> Decimal:
    """An amount of USD as Decimal; rejects floats, NaN, infinities, negatives and any amount
    above ``maximum``.

    Floats are refused because ``0.1`` is not 0.1: pass ``Decimal("0.1")``, ``"0.1"`` or an int.
    """
    if type(value) is Decimal:  # the usual case (every guarded call): no isinstance chain
        amount = value
    elif isinstance(value, bool):
        raise ConfigError(f"{field}: expected an amount in USD, got a bool ({value!r})")
    elif isinstance(value, float):
        raise ConfigError(
            f"{field}: floats are not accepted for money ({value!r} is not exact); "
            f"pass a string or Decimal instead, e.g. {field}=\"{value}\""
        )
    elif isinstance(value, Decimal):
        amount = value
    elif isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, str):
        try:
            amount = Decimal(value.strip().removeprefix("$"))
        except InvalidOperation:
            raise ConfigError(
                f"{field}: {value!r} is not a number of USD; write it like \"12.50\""
            ) from None
    else:
        raise ConfigError(
            f"{field}: expected Decimal, str or int USD, got {type(value).__name__}"
        )
    if not amount.is_finite():
        raise ConfigError(f"{field}: {value!r} is not a finite amount of USD")
    if amount < 0:
        raise ConfigError(f"{field}: {value!r} is negative; amounts of USD must be >= 0")
    if not allow_zero and amount == 0:
        raise ConfigError(f"{field}: must be greater than 0 USD")
    if maximum is not None and amount > maximum:
        raise ConfigError(f"{field}: {value!r} is above the largest amount accepted here "
                          f"({format_usd(maximum)}); for no limit at all, make the "
                          f"calls outside any budget (they are still recorded)")
    return amount


EXACT = _SUMS
"""The context of :func:`exact_sums`, for one operation given its context (``x.normalize(EXACT)``)
where entering a local context per value would cost more than the operation."""


def exact_sums() -> AbstractContextManager[Context]:
    """A decimal context in which adding up a ledger's amounts (reports, exports) is exact."""
    return localcontext(_SUMS)


def format_usd(amount: Decimal) -> str:
    """Money for people, by the one rule every surface follows (docs/finance.md, "Money"):

    - $1 or more (either sign): to the cent, with thousands separators: ``$250,000.00``;
    - under $1: four significant digits, trailing zeros dropped down to cents:
      ``$0.1575``, ``$0.50``, ``$0.04618``, ``$0.00033``, ``$0.000007``;
    - zero: ``$0.00``; beyond 10^18 USD: ``$1.000000E+24``.

    A non-zero amount is never shown as zero. Exports, ``--json`` and the Python API keep the
    exact amount (:func:`normalised`).
    """
    if not amount.is_finite():
        return f"${amount}"
    sign = "-" if amount < 0 else ""
    size = abs(amount)
    if size and size.adjusted() >= _PLAIN_DIGITS:
        return f"{sign}${size:.6E}"
    with localcontext() as context:
        context.prec = _PLAIN_DIGITS + _SIGNIFICANT_BELOW_A_DOLLAR - min(size.adjusted(), 0) + 4
        if size >= 1 or not size:
            rounded = size.quantize(_CENT, ROUND_HALF_EVEN)
            if rounded >= 1 or not size:
                return f"{sign if rounded else ''}${rounded:,.2f}"
        places = _SIGNIFICANT_BELOW_A_DOLLAR - 1 - size.adjusted()
        rounded = size.quantize(Decimal(1).scaleb(-places), ROUND_HALF_EVEN)
        if rounded >= 1:  # 0.99996 rounds up to a dollar: shown by the dollar rule
            return f"{sign}${rounded.quantize(_CENT):,.2f}"
        text = f"{rounded:.{places}f}".rstrip("0")
        whole, _, decimals = text.partition(".")
        return f"{sign}${whole}.{decimals.ljust(2, '0')}"


def normalised(amount: Decimal) -> Decimal:
    """``amount`` without exponent or trailing zeros, for the Python API: ``Decimal("0.0000001")``
    rather than ``Decimal("0E-7")`` or ``Decimal("1E-7")``, ``Decimal("0")`` for any zero."""
    if not amount:
        return ZERO
    with exact_sums():
        reduced = amount.normalize()
    if reduced.as_tuple().exponent > 0:  # type: ignore[operator]
        return reduced.quantize(Decimal(1))
    return reduced
