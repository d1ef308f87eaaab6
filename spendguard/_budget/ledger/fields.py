"""A stored call's fields, declared once: their order, their kind, and where each one lives.

SQLite's and PostgreSQL's ``calls`` tables have one column per stored field, in this order;
their column lists, ``INSERT`` and ``SELECT`` statements and the row <-> record conversion
are derived from this declaration (:mod:`spendguard._budget.ledger.rows`), and so are the
Redis codec's field encodings. Each backend says once how it stores a *kind* (a time, an
amount of USD, a JSON mapping...), never field by field.

Adding a field to the record: add it to :class:`~spendguard._budget.ledger.base.SpendRecord`,
declare it here (a stored one last, since the tables' columns keep their order), and add a
migration giving the SQL tables its column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CLOSING", "COLUMNS", "FIELDS", "Field", "Kind", "column_list"]

Kind = Literal["text", "int", "real", "flag", "usd", "time", "map", "list", "claims", "limits"]
"""How a value is held: ``text``/``int``/``real`` as they are; ``flag`` a bool; ``usd`` an
exact Decimal; ``time`` an aware datetime; ``map`` a str -> str or int mapping (tags, token
counts); ``list`` a tuple of str; ``claims`` a call's :class:`ScopeClaim` tuple; ``limits``
a tuple of optional Decimals."""


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a stored call."""

    name: str
    kind: Kind
    nullable: bool = False
    # Kept on the stored row beside its record (its state, who holds it, its claims), not a
    # field of the SpendRecord itself.
    on_row: bool = False
    # A column of its own; False for what is read from another column (limits, from claims).
    stored: bool = True
    # Written again when the call closes (settled, released, recovered); the rest never
    # change after the insert.
    closing: bool = False


FIELDS: tuple[Field, ...] = (
    Field("id", "text"),
    Field("time", "time"),
    Field("state", "text", on_row=True, closing=True),
    Field("expires_at", "time", nullable=True, on_row=True),
    Field("owner_pid", "int", nullable=True, on_row=True),
    Field("owner_host", "text", nullable=True, on_row=True),
    Field("claims", "claims", on_row=True),
    Field("scopes", "list"),
    Field("period_keys", "list"),
    Field("tags", "map"),
    Field("provider", "text"),
    Field("model", "text"),
    Field("endpoint", "text"),
    Field("attempt", "int"),
    Field("request_id", "text", nullable=True, closing=True),
    Field("prompt_hash", "text", nullable=True),
    Field("prompt_text", "text", nullable=True),
    Field("estimated_input_tokens", "int", nullable=True),
    Field("estimated_output_tokens", "int", nullable=True),
    Field("input_exact", "flag", nullable=True),
    Field("estimated_usd", "usd"),
    Field("actual_usd", "usd", closing=True),
    Field("tokens", "map", closing=True),
    Field("usage_estimated", "flag", closing=True),
    Field("table_version", "text", closing=True),
    Field("latency_s", "real", nullable=True, closing=True),
    Field("status", "text", closing=True),
    Field("note", "text", nullable=True, closing=True),
    # Each claim's limit when the call was made, parallel to scopes: read from the claims.
    Field("limits_usd", "limits", stored=False),
)

COLUMNS: tuple[Field, ...] = tuple(f for f in FIELDS if f.stored)
"""The ``calls`` table's columns, in the tables' order."""

CLOSING: tuple[Field, ...] = tuple(f for f in COLUMNS if f.closing)
"""The columns a call's close writes."""


def column_list(columns: tuple[Field, ...] = COLUMNS) -> str:
    """``id, time, state, ...``: the names of ``columns`` for a statement."""
    return ", ".join(f.name for f in columns)
