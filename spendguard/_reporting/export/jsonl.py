"""JSON Lines: one JSON object per row, money as exact decimal strings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from spendguard._reporting.export.records import json_text

__all__ = ["write_jsonl"]


def write_jsonl(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], out: TextIO) -> int:
    """Write each row as one line with its keys in ``columns`` order; returns the count."""
    count = 0
    for row in rows:
        out.write(json_text({column: row.get(column) for column in columns}))
        out.write("\n")
        count += 1
    return count

