"""A provider's usage or cost report, read into lines of one shape whatever the provider.

Token kinds are the ledger's: ``input`` (uncached), ``cache_read``, ``cache_write`` (all TTLs
together: OpenAI's reports do not split them) and ``output``. Money is Decimal USD; reading
never goes through float.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from spendguard._core.errors import ConfigError

__all__ = ["KINDS", "ProviderLine", "ProviderReport", "count_at", "decimal_at", "utc_moment"]

KINDS = ("input", "cache_read", "cache_write", "output")


@dataclass(frozen=True, slots=True)
class ProviderLine:
    """On ``day`` (UTC), ``model`` used ``tokens`` of ``kind``, or cost ``usd`` for it.

    ``model`` is None for a charge that no model made (web search, credits, images...);
    ``label`` then names it as the report did. ``kind`` is None for a cost not per token kind.
    """

    day: date
    model: str | None
    kind: str | None
    tokens: int | None = None
    usd: Decimal | None = None
    label: str = ""


@dataclass(frozen=True)
class ProviderReport:
    """Lines read from one or more files, and the time they cover: ``start <= t < end``."""

    provider: str
    lines: tuple[ProviderLine, ...]
    start: datetime
    end: datetime
    has_usage: bool
    has_costs: bool

    @staticmethod
    def merge(provider: str, reports: Iterable[ProviderReport]) -> ProviderReport:
        """Several files of one provider as one report covering all of their time."""
        parts = list(reports)
        if not parts:
            raise ConfigError("files: name at least one report file")
        return ProviderReport(provider, tuple(line for part in parts for line in part.lines),
                              min(part.start for part in parts), max(part.end for part in parts),
                              any(part.has_usage for part in parts),
                              any(part.has_costs for part in parts))


def utc_moment(value: Any, *, where: str) -> datetime:
    """A bucket bound: unix seconds (OpenAI) or RFC 3339 text (Anthropic), as UTC."""
    if isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not a time")
    if isinstance(value, int | Decimal):
        return datetime.fromtimestamp(int(value), UTC)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    raise ConfigError(f"{where}: {value!r} is not a time (unix seconds or RFC 3339)")


def count_at(item: Mapping[str, Any], key: str, *, where: str) -> int:
    """A whole number of tokens at ``item[key]`` (missing or null: 0)."""
    value = item.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ConfigError(f"{where}.{key}: {value!r} is not a token count")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ConfigError(f"{where}.{key}: {value!r} is not a token count") from None
    if number != number.to_integral_value() or number < 0:
        raise ConfigError(f"{where}.{key}: {value!r} is not a whole number >= 0")
    return int(number)


def decimal_at(value: Any, *, where: str) -> Decimal:
    """An amount as Decimal (the JSON was read with Decimal numbers, never float)."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ConfigError(f"{where}: {value!r} is not an amount")
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise ConfigError(f"{where}: {value!r} is not an amount") from None
    if not amount.is_finite():
        raise ConfigError(f"{where}: {value!r} is not a finite amount")
    return amount
