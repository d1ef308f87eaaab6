"""Reading ledger records for finance: billed token kinds, batch calls, cache use, exact text.

Every export and report reads :class:`~spendguard._budget.ledger.SpendRecord` through these few
rules, so they all agree on what a call consumed and what counts as one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal

from spendguard._budget.ledger.base import SpendRecord
from spendguard._core.money import EXACT

__all__ = [
    "ADJUSTMENT",
    "BILLED_KINDS_ORDER",
    "INTERNAL_TAG_PREFIX",
    "RECOVERED",
    "RELEASED",
    "billed_tokens",
    "cache_write_tokens",
    "decimal_text",
    "input_side_tokens",
    "is_batch",
    "is_billed_call",
    "is_internal_tag",
    "is_marker",
    "json_text",
    "reported_tokens",
    "shown_tags",
    "utc_day",
    "utc_text",
]

ADJUSTMENT = "adjustment"
RECOVERED = "recovered"
RELEASED = "released"
# Kinds a provider bills, in the order people read them. "reasoning" is not here: it is a
# part of "output" (both providers bill it as output), so a row of its own would count it twice.
BILLED_KINDS_ORDER = ("input", "cache_read", "cache_write_5m", "cache_write_1h",
                      "cache_write_30m", "cache_write_12h", "output")
_TRUE_WORDS = frozenset({"true", "1", "yes"})
BATCH_JOB_TAG = "batch_job"  # set by spendguard._strategies.batch on every batched request's record
INTERNAL_TAG_PREFIX = "spendguard."
"""Tags whose key starts with this are spendguard's own bookkeeping (``spendguard.call_id``
links the attempts of one call, ``spendguard.would_refuse`` keeps an observed limit, ...).
They stay in the ledger and its CSV / JSON Lines export, but never become report groups, FOCUS
``Tags`` entries or keys of a per-day aggregation unless asked for."""


def is_internal_tag(key: str) -> bool:
    """A tag spendguard sets for itself (see :data:`INTERNAL_TAG_PREFIX`)."""
    return key.startswith(INTERNAL_TAG_PREFIX)


def shown_tags(tags: Mapping[str, str], *, internal: bool = False) -> dict[str, str]:
    """``tags`` without spendguard's own (all of them with ``internal``)."""
    if internal:
        return dict(tags)
    return {key: value for key, value in tags.items() if not is_internal_tag(key)}


def decimal_text(amount: Decimal) -> str:
    """An exact decimal as plain text: no exponent, no trailing zeros, no ``-0``."""
    if amount == 0:
        return "0"
    # normalize() rounds to its context's precision: given the exact one, not entered per
    # value (a local context per cell was a tenth of a large export's time).
    return format(amount.normalize(EXACT), "f")


def _exact(value: object) -> str:
    # Money must never pass through float: a Decimal is written as its exact text.
    if isinstance(value, Decimal):
        return decimal_text(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_exact).encode
"""A value as compact JSON, a Decimal as its exact text (one encoder for every export's cells
and lines: ``json.dumps`` with options builds a new one per call)."""


def utc_text(moment: datetime, *, micro: bool = False) -> str:
    """``2031-01-31T23:00:00Z`` (FOCUS's date/time format); with ``micro``, microseconds too."""
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def utc_day(record: SpendRecord) -> date:
    """The UTC day a record belongs to (the day its call started)."""
    return record.time.astimezone(UTC).date()


def is_marker(record: SpendRecord) -> bool:
    """A $0 adjustment that carries only tags (e.g. a cascade outcome): not money."""
    return record.status == ADJUSTMENT and record.actual_usd == 0 and not record.tokens


def is_billed_call(record: SpendRecord) -> bool:
    """A call the provider billed (or that was charged for it): not released, not a correction."""
    return record.status not in (ADJUSTMENT, RELEASED)


def is_batch(record: SpendRecord) -> bool:
    """A call sent through a provider's Batch API.

    ``spendguard.batch`` tags each request's record ``batch_job=<id>``; a record whose
    endpoint names a batch, or tagged ``batch=true`` by hand, counts too.
    """
    return (BATCH_JOB_TAG in record.tags or "batch" in record.endpoint.lower()
            or record.tags.get("batch", "").lower() in _TRUE_WORDS)


def billed_tokens(record: SpendRecord) -> dict[str, int]:
    """Tokens by billed kind, zero kinds dropped, in reading order.

    A reservation recovered after its process vanished has no usage: it was charged at its
    worst case, which was priced from the estimated input and the output cap, so those are
    the tokens it stands for. Adjustments consume nothing.
    """
    if record.status == ADJUSTMENT:
        return {}
    tokens = {kind: count for kind, count in record.tokens.items()
              if kind != "reasoning" and count}
    if not tokens and record.status == RECOVERED:
        tokens = {kind: count for kind, count in (
            ("input", record.estimated_input_tokens or 0),
            ("output", record.estimated_output_tokens or 0)) if count}
    known = [kind for kind in BILLED_KINDS_ORDER if kind in tokens]
    return {kind: tokens[kind] for kind in [*known, *sorted(set(tokens) - set(known))]}


def reported_tokens(record: SpendRecord) -> dict[str, int]:
    """The tokens the ledger holds for a record, reasoning left out (it is part of output).

    Unlike :func:`billed_tokens` this stands in nothing for a recovered call, and keeps the
    usage a late correction carries: it is what the providers reported.
    """
    return {kind: count for kind, count in record.tokens.items()
            if kind != "reasoning" and count}


def cache_write_tokens(tokens: dict[str, int]) -> int:
    """Cache-write tokens over every TTL."""
    return sum(count for kind, count in tokens.items() if kind.startswith("cache_write_"))


def input_side_tokens(tokens: dict[str, int]) -> int:
    """Every input token: uncached, read from the cache, and written to it."""
    return tokens.get("input", 0) + tokens.get("cache_read", 0) + cache_write_tokens(tokens)
