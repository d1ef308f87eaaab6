"""The ledger as rows: one per finished call or correction, every field a finance tool needs.

This is what ``--format csv`` and ``--format jsonl`` write. Money is an exact decimal string
(USD); times are UTC with microseconds. Prompt text is never written, even when the ledger
holds it (``store_prompts=True``): exports leave the machine, prompts stay in the ledger. The
ledger holds no API keys, so no export can contain one.
"""

from __future__ import annotations

from typing import Any

from spendguard._budget.ledger.base import SpendRecord
from spendguard._reporting.export.records import (
    cache_write_tokens,
    decimal_text,
    is_batch,
    utc_text,
)

__all__ = ["LEDGER_COLUMNS", "ledger_row"]

LEDGER_COLUMNS: tuple[str, ...] = (
    "id", "time", "status", "provider", "model", "endpoint", "batch", "attempt", "request_id",
    "scopes", "period_keys", "limits_usd", "tags",
    "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
    "reasoning_tokens", "tokens",
    "estimated_usd", "actual_usd", "usage_estimated",
    "estimated_input_tokens", "estimated_output_tokens", "input_exact",
    "table_version", "latency_s", "prompt_hash", "note",
)
"""Columns of the ledger export, in order (see docs/finance.md for each one's meaning)."""


def ledger_row(record: SpendRecord) -> dict[str, Any]:
    """One record as a row of plain values (lists and dicts where the ledger has them)."""
    tokens = dict(record.tokens)
    return {
        "id": record.id,
        "time": utc_text(record.time, micro=True),
        "status": record.status,
        "provider": record.provider,
        "model": record.model,
        "endpoint": record.endpoint,
        "batch": is_batch(record),
        "attempt": record.attempt,
        "request_id": record.request_id,
        "scopes": list(record.scopes),
        "period_keys": list(record.period_keys),
        "limits_usd": [None if limit is None else decimal_text(limit)
                       for limit in record.limits_usd],
        "tags": dict(sorted(record.tags.items())),
        "input_tokens": tokens.get("input", 0),
        "cache_read_tokens": tokens.get("cache_read", 0),
        "cache_write_tokens": cache_write_tokens(tokens),
        "output_tokens": tokens.get("output", 0),
        "reasoning_tokens": tokens.get("reasoning", 0),
        "tokens": tokens,
        "estimated_usd": decimal_text(record.estimated_usd),
        "actual_usd": decimal_text(record.actual_usd),
        "usage_estimated": record.usage_estimated,
        "estimated_input_tokens": record.estimated_input_tokens,
        "estimated_output_tokens": record.estimated_output_tokens,
        "input_exact": record.input_exact,
        "table_version": record.table_version,
        "latency_s": record.latency_s,
        "prompt_hash": record.prompt_hash,
        "note": record.note,
    }
