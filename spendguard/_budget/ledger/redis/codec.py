"""How the Redis ledger writes money, times and records: exact text that Lua can add up.

Money travels to Redis as decimal text with exactly 15 places — femto-USD, 1e-15 USD — such
as ``"12.500000000000000"``. The Lua scripts split it into whole dollars and femto-dollars and
add those as two integers, each exact in Lua's doubles (whole dollars up to 2**53 - 1, about
$9 quadrillion). 15 places hold every cost the price tables produce in practice (a price of
$0.0375 per million tokens, halved for batch and times 1.25 for a cache write, is 2.34375e-8
USD a token: 14 places). An amount finer than the scale is never rounded silently toward less
spending: a reservation, a cost or a correction is rounded *up* (toward +infinity), a limit or
a warning level *down*; the record then holds the amount as charged, so totals always equal
the sum of the records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from typing import Any, Literal

from spendguard._budget.ledger.base import CallInfo, Crossing, ScopeClaim, Settlement, SpendRecord
from spendguard._budget.ledger.fields import FIELDS
from spendguard._core.errors import ConfigError
from spendguard._core.money import ZERO
from spendguard._core.periods import as_utc, warning_key

__all__ = [
    "MAX_WHOLE_USD",
    "SCALE_PLACES",
    "changes_from_json",
    "changes_json",
    "claims_from_json",
    "claims_json",
    "crossings",
    "exact",
    "micros",
    "open_record_json",
    "record_from_json",
    "record_json",
    "scaled",
    "scaled_claims",
    "settlement_json",
    "tidy",
]

SCALE_PLACES = 15
MAX_WHOLE_USD = 2**53 - 1
_QUANTUM = Decimal(1).scaleb(-SCALE_PLACES)
# Wide enough for MAX_WHOLE_USD with 15 places: quantize must never run out of digits.
_WIDE = Context(prec=50)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_ZERO_TEXT = str(ZERO)
# Compact JSON, non-ASCII kept as is; one encoder for every call rather than one per call.
_to_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

Rounding = Literal["up", "down"]


def scaled(amount: Decimal, *, rounding: Rounding, field: str) -> tuple[Decimal, str]:
    """``amount`` as charged and as 15-place text; rounded ``"up"``/``"down"`` only if finer.

    ``"up"`` is for what is spent or held (never undercount), ``"down"`` for limits (never
    allow more than the limit).
    """
    if not amount.is_finite():
        raise ConfigError(f"{field}: {amount} is not a finite amount of USD")
    if abs(amount) > MAX_WHOLE_USD:
        raise ConfigError(f"{field}: {amount} USD is more than the Redis ledger holds exactly "
                          f"(up to {MAX_WHOLE_USD} USD)")
    mode = ROUND_CEILING if rounding == "up" else ROUND_FLOOR
    quantized = amount.quantize(_QUANTUM, rounding=mode, context=_WIDE)
    if quantized == 0:
        quantized = abs(quantized)  # no "-0" text
    charged = amount if quantized == amount else quantized
    return charged, format(quantized, "f")


def exact() -> AbstractContextManager[Context]:
    """A decimal context wide enough that sums of 15-place amounts are never rounded."""
    return localcontext(_WIDE)


def tidy(text: str) -> Decimal:
    """A 15-place amount read back, without its trailing zeros (``"2.500…0"`` -> ``2.5``)."""
    amount = Decimal(text)
    if amount == amount.to_integral_value():
        return amount.quantize(Decimal(1))
    return amount.normalize(_WIDE)


def micros(moment: datetime) -> int:
    """Microseconds since 1970 (UTC): exact in a Redis sorted-set score (below 2**53)."""
    return (as_utc(moment) - _EPOCH) // _MICROSECOND


# -- records as JSON: every field of SpendRecord, so a field added later round-trips too ----

# How each field is held, from the one declaration of a stored call's fields.
_KIND = {f.name: f.kind for f in FIELDS}


def _encode(name: str, value: Any) -> Any:
    kind = _KIND[name]
    if kind == "time":
        return as_utc(value).isoformat()
    if kind == "usd":
        return str(value)
    if kind == "limits":
        return [None if limit is None else str(limit) for limit in value]
    if kind == "list":
        return list(value)
    if kind == "map":
        return dict(value)
    return value


def _decode(name: str, value: Any) -> Any:
    kind = _KIND[name]
    if kind == "time":
        return datetime.fromisoformat(value)
    if kind == "usd":
        return Decimal(value)
    if kind == "limits":
        return tuple(None if limit is None else Decimal(limit) for limit in value)
    if kind == "list":
        return tuple(value)
    return value


_FIELDS = tuple(f.name for f in fields(SpendRecord))


def record_json(record: SpendRecord, **changes: Any) -> str:
    """``record`` (with ``changes`` applied) as compact JSON text."""
    data = {name: _encode(name, changes.get(name, getattr(record, name))) for name in _FIELDS}
    return _to_json(data)


def record_from_json(text: str, **changes: Any) -> SpendRecord:
    """The record :func:`record_json` wrote, with ``changes`` (already decoded) applied."""
    data = json.loads(text)
    values = {name: _decode(name, data[name]) for name in _FIELDS if name in data}
    values.update(changes)
    return SpendRecord(**values)


def open_record_json(call_id: str, claims: Sequence[ScopeClaim], worst: Decimal, call: CallInfo,
                     time: datetime, tags: Mapping[str, str]) -> str:
    """The record of a call just reserved, as :func:`record_json` writes it.

    Written straight from the call, without building the :class:`SpendRecord` first: this
    is on every reservation's path, and the record is read back only once the call closes.
    """
    return _to_json({
        "id": call_id, "time": as_utc(time).isoformat(), "scopes": [c.scope for c in claims],
        "tags": dict(tags), "provider": call.provider, "model": call.model,
        "endpoint": call.endpoint, "tokens": {}, "estimated_usd": str(worst),
        "actual_usd": _ZERO_TEXT, "usage_estimated": False, "table_version": "",
        "latency_s": None, "request_id": call.request_id, "attempt": call.attempt,
        "status": "open", "prompt_hash": call.prompt_hash, "prompt_text": call.prompt_text,
        "estimated_input_tokens": call.estimated_input_tokens,
        "estimated_output_tokens": call.estimated_output_tokens,
        "input_exact": call.input_exact, "note": None,
        "period_keys": [c.period_key for c in claims],
        "limits_usd": [None if c.limit_usd is None else str(c.limit_usd) for c in claims]})


def settlement_json(settlement: Settlement) -> str:
    """What a settlement changes in its call's record, as :func:`changes_json` writes it."""
    done: dict[str, Any] = {
        "actual_usd": str(settlement.actual_usd), "tokens": dict(settlement.tokens),
        "usage_estimated": settlement.usage_estimated,
        "table_version": settlement.table_version, "latency_s": settlement.latency_s,
        "status": settlement.status}
    if settlement.request_id:
        done["request_id"] = settlement.request_id
    if settlement.note:
        done["note"] = settlement.note
    return _to_json(done)


def changes_from_json(text: str) -> dict[str, Any]:
    """Field changes stored as JSON by :func:`changes_json`, decoded."""
    return {name: _decode(name, value) for name, value in json.loads(text).items()}


def changes_json(**changes: Any) -> str:
    """Field changes of a record (what a settlement adds to it) as JSON text."""
    return _to_json({name: _encode(name, value) for name, value in changes.items()})


# -- claims: a call's scopes as the scripts read them --------------------------------------

def scaled_claims(claims: Sequence[ScopeClaim]) -> tuple[ScopeClaim, ...]:
    """Claims with limits and warning levels on the 15-place scale, rounded down if finer."""
    out = []
    for claim in claims:
        if " " in claim.period_key:
            raise ConfigError(f"period_key: {claim.period_key!r} contains a space; period keys "
                              f"are words such as 'all' or '2026-05'")
        limit = None if claim.limit_usd is None else scaled(
            claim.limit_usd, rounding="down", field="limit_usd")[0]
        warn = None if claim.warn_usd is None else scaled(
            claim.warn_usd, rounding="down", field="warn_usd")[0]
        out.append(ScopeClaim(claim.scope, claim.period_key, limit, warn, claim.max_calls))
    return tuple(out)


def claims_json(claims: Sequence[ScopeClaim]) -> str:
    """``[[scope, period_key, limit, warn, max_calls], ...]``: amounts as 15-place text, the
    call cap as integer text, ``""`` for none."""

    def text(amount: Decimal | None, field: str) -> str:
        return "" if amount is None else scaled(amount, rounding="down", field=field)[1]

    return json.dumps([[c.scope, c.period_key, text(c.limit_usd, "limit_usd"),
                        text(c.warn_usd, "warn_usd"),
                        "" if c.max_calls is None else str(c.max_calls)] for c in claims],
                      ensure_ascii=False, separators=(",", ":"))


def claims_from_json(text: str) -> tuple[ScopeClaim, ...]:
    """The claims :func:`claims_json` wrote."""
    # Claims written before call caps have four elements.
    return tuple(ScopeClaim(scope, key, tidy(limit) if limit else None,
                            tidy(warn) if warn else None, int(cap[0]) if cap and cap[0] else None)
                 for scope, key, limit, warn, *cap in json.loads(text))


def crossings(claims_text: str, found: Sequence[str]) -> list[Crossing]:
    """Crossings from a script's reply: pairs of (1-based claim index, spent text)."""
    claims = claims_from_json(claims_text)
    out = []
    for i in range(0, len(found), 2):
        claim = claims[int(found[i]) - 1]
        assert claim.limit_usd is not None and claim.warn_usd is not None  # Lua checked both
        out.append(Crossing(claim.scope, warning_key(claim.period_key), tidy(found[i + 1]),
                            claim.limit_usd, claim.warn_usd))
    return out
