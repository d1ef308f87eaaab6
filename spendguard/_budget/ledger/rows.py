"""A SQL backend's rows of ``calls``, to and from calls, derived from the declared fields.

A backend gives, once per kind of field (a time, an amount, a JSON mapping...), how it writes
a value and how it reads one back (:class:`RowCodec`); which field is where in a row, and
where its value lives on a :class:`Call` or a :class:`CallRow`, comes from
:data:`~spendguard._budget.ledger.fields.COLUMNS`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from decimal import Decimal
from operator import attrgetter
from typing import Any

from spendguard._budget.ledger.base import ScopeClaim, SpendRecord
from spendguard._budget.ledger.engine import Call, CallRow
from spendguard._budget.ledger.fields import CLOSING, COLUMNS, Field, Kind

__all__ = ["Convert", "RowCodec", "amount_key", "claims_from_text", "claims_text",
           "json_object"]

Convert = Callable[[Any], Any]
"""One value of a kind, to what the backend stores or back."""

_NAMES = tuple(f.name for f in COLUMNS)
_RECORD = tuple(f.name for f in fields(SpendRecord) if f.name in _NAMES)
_ROW = tuple(f.name for f in COLUMNS if f.on_row)


def _call_path(name: str) -> str:
    # An open Call keeps what the transport knew before sending (its CallInfo) as it came.
    return name if name in Call.__slots__ else f"info.{name}"


def _steps(columns: tuple[Field, ...],
           converts: Mapping[Kind, Convert]) -> tuple[tuple[int, Convert], ...]:
    """(position, function) for each column whose kind the backend converts; NULL stays."""
    steps = []
    for position, column in enumerate(columns):
        convert = converts.get(column.kind)
        if convert is None:
            continue
        if column.nullable:
            convert = _or_none(convert)
        steps.append((position, convert))
    return tuple(steps)


def _or_none(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


class RowCodec:
    """One backend's rows of ``calls``: a kind it stores as it is needs no function."""

    __slots__ = ("_closing", "_closing_steps", "_decode", "_encode", "_of_call", "_of_row")

    def __init__(self, encode: Mapping[Kind, Convert], decode: Mapping[Kind, Convert]) -> None:
        # attrgetter reads every field in one call, without a Python frame per field.
        self._of_row = attrgetter(*(f.name if f.on_row else f"record.{f.name}" for f in COLUMNS))
        self._of_call = attrgetter(*(_call_path(f.name) for f in COLUMNS))
        self._closing = attrgetter(*(f.name for f in CLOSING))
        self._encode = _steps(COLUMNS, encode)
        self._closing_steps = _steps(CLOSING, encode)
        self._decode = _steps(COLUMNS, decode)

    def values(self, row: Call | CallRow) -> list[Any]:
        """The row's values, in the columns' order."""
        values = list(self._of_call(row) if isinstance(row, Call) else self._of_row(row))
        for position, convert in self._encode:
            values[position] = convert(values[position])
        return values

    def closing_values(self, call: Call) -> list[Any]:
        """What a call's close writes, in the order of ``CLOSING``."""
        values = list(self._closing(call))
        for position, convert in self._closing_steps:
            values[position] = convert(values[position])
        return values

    def reader(self, names: Sequence[str]) -> Callable[[Sequence[Any]], list[Any]]:
        """Decoding a row whose first values are the columns ``names``, in that order (a read
        that needs a few of a call's fields, not its record); any values after them are left
        as they are."""
        by_position = dict(self._decode)
        steps = tuple((position, by_position[_NAMES.index(name)])
                      for position, name in enumerate(names)
                      if _NAMES.index(name) in by_position)

        def read(stored: Sequence[Any]) -> list[Any]:
            values = list(stored)
            for position, convert in steps:
                values[position] = convert(values[position])
            return values

        return read

    def call_row(self, stored: Sequence[Any]) -> CallRow:
        """The call a row read back holds."""
        values = list(stored)
        for position, convert in self._decode:
            values[position] = convert(values[position])
        named = dict(zip(_NAMES, values, strict=True))
        claims = named["claims"]
        record = SpendRecord(**{name: named[name] for name in _RECORD},
                             limits_usd=tuple(claim.limit_usd for claim in claims))
        return CallRow(record=record, **{name: named[name] for name in _ROW})


# The JSON columns both SQL backends write alike (tags and tokens, a call's claims), and the
# text of a warning level.

_json = json.JSONEncoder().encode  # json.dumps less its own call and option checks


def amount_key(amount: Decimal) -> str:
    """Equal amounts as equal text (``8.0`` and ``8.00`` are one warning level)."""
    return format(amount.normalize(), "f")


def json_object(mapping: Mapping[str, Any]) -> str:
    """A mapping (tags, token counts) as JSON; most calls have no tags, and no tokens until
    settled, so the empty one is not encoded each time."""
    return _json(dict(mapping)) if mapping else "{}"


@functools.lru_cache(maxsize=256)
def _claims_json(rows: tuple[tuple[str | int | None, ...], ...]) -> str:
    # A budget claims the same for a whole period: encoded once per period, not per call.
    return _json([list(row) for row in rows])


def claims_text(claims: tuple[ScopeClaim, ...]) -> str:
    """A call's claims as JSON: ``[[scope, period_key, limit, warn, max_calls], ...]``."""
    # Amounts as their own text, so equal amounts written differently ("8", "8.00") keep it.
    return _claims_json(tuple([(c.scope, c.period_key,
                                None if c.limit_usd is None else str(c.limit_usd),
                                None if c.warn_usd is None else str(c.warn_usd), c.max_calls)
                               for c in claims]))


def _optional_decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def claims_from_text(text: str) -> tuple[ScopeClaim, ...]:
    """The claims :func:`claims_text` wrote."""
    # A call cap is the fifth element (claims written before call caps have four).
    return tuple(ScopeClaim(scope, key, _optional_decimal(limit), _optional_decimal(warn),
                            cap[0] if cap else None)
                 for scope, key, limit, warn, *cap in json.loads(text))
