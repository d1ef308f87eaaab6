"""Money: Decimal USD, parsed strictly and shown consistently."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from spendguard.errors import ConfigError

__all__ = ["MILLION", "ZERO", "format_usd", "parse_usd"]

ZERO = Decimal(0)
MILLION = Decimal(1_000_000)


def parse_usd(value: object, *, field: str, allow_zero: bool = True) -> Decimal:
    """An amount of USD as Decimal; rejects floats, NaN, infinities and negatives.

    Floats are refused because ``0.1`` is not 0.1: pass ``Decimal("0.1")``, ``"0.1"`` or an int.
    """
    if isinstance(value, bool):
        raise ConfigError(f"{field}: expected an amount in USD, got a bool ({value!r})")
    if isinstance(value, float):
        raise ConfigError(
            f"{field}: floats are not accepted for money ({value!r} is not exact); "
            f"pass a string or Decimal instead, e.g. {field}=\"{value}\""
        )
    if isinstance(value, Decimal):
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
    return amount


def format_usd(amount: Decimal, *, places: int = 4) -> str:
    """``$1,234.5678``-style text for people; exports use the exact ``str(Decimal)``."""
    quantum = Decimal(1).scaleb(-places)
    rounded = amount.quantize(quantum)
    sign = "-" if rounded < 0 else ""
    return f"{sign}${abs(rounded):,.{places}f}"
