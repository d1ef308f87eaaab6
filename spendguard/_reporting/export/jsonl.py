"""JSON Lines: one JSON object per row, money as exact decimal strings."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, TextIO

from spendguard._reporting.export.records import decimal_text

__all__ = ["write_jsonl"]


def write_jsonl(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], out: TextIO) -> int:
    """Write each row as one line with its keys in ``columns`` order; returns the count."""
    count = 0
    encode = _JSON.encode
    for row in rows:
        out.write(encode({column: row.get(column) for column in columns}))
        out.write("\n")
        count += 1
    return count


def _exact(value: object) -> str:
    # Money must never pass through float: a Decimal is written as its exact text.
    if isinstance(value, Decimal):
        return decimal_text(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


# One encoder for every row (json.dumps with options builds a new one per call).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_exact)
