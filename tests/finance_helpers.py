"""Helpers for the export, report and reconcile tests: book calls in a ledger, read files back."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from spendguard import cost
from spendguard._budget.budget import Budget, CallInfo
from spendguard._budget.reservations import Reservation, reserve_call
from spendguard._costing.prices import price
from spendguard._costing.usage import Usage

D = Decimal


def usage_of(tokens: Mapping[str, int]) -> Usage:
    """The Usage a ledger's token counts stand for."""
    return Usage(input_tokens=tokens.get("input", 0),
                 cache_read_tokens=tokens.get("cache_read", 0),
                 cache_write_tokens={k.removeprefix("cache_write_"): v for k, v in tokens.items()
                                     if k.startswith("cache_write_")},
                 output_tokens=tokens.get("output", 0),
                 reasoning_tokens=tokens.get("reasoning", 0))


def list_cost(model: str, tokens: Mapping[str, int], *, batch: bool = False) -> Decimal:
    """What today's price table says these tokens cost."""
    return cost(model, usage_of(tokens), batch=batch).total


def book(budget: Budget | None, model: str, tokens: Mapping[str, int], *,
         actual_usd: Decimal | str | None = None, worst_usd: Decimal | str | None = None,
         endpoint: str = "chat", status: str = "ok", estimated_input: int | None = None,
         estimated_output: int = 1000, usage_estimated: bool = False) -> Reservation:
    """One call as the transport records it: reserve the worst case, settle the actual cost
    (by default today's list price of ``tokens``)."""
    actual = D(actual_usd) if actual_usd is not None else list_cost(model, tokens)
    worst = D(worst_usd) if worst_usd is not None else actual * 3 + D("0.001")
    info = CallInfo(provider=price(model).provider, model=model, endpoint=endpoint,
                    prompt_hash="h" * 64,
                    estimated_input_tokens=(estimated_input if estimated_input is not None
                                            else tokens.get("input", 0)),
                    estimated_output_tokens=estimated_output, input_exact=True)
    reservation = reserve_call(budget, worst, call=info)
    reservation.settle(actual_usd=actual, tokens=dict(tokens), usage_estimated=usage_estimated,
                       table_version="test", latency_s=0.5, request_id="req_1",
                       status=status)
    return reservation


def read_csv(path: Path | str) -> list[dict[str, str]]:
    """A CSV file's rows as dicts of text."""
    with Path(path).open(encoding="utf-8", newline="") as stream:
        return list(csv.DictReader(stream))


def csv_rows(text: str) -> list[dict[str, str]]:
    """CSV text's rows as dicts."""
    return list(csv.DictReader(io.StringIO(text, newline="")))


def total(rows: list[dict[str, Any]], column: str) -> Decimal:
    """The exact sum of a money column."""
    return sum((D(row[column]) for row in rows if row[column] not in ("", None)), D(0))
