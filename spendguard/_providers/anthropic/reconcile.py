"""Anthropic's Admin API reports: messages usage and costs, as JSON or flattened to CSV.

Usage results (``/v1/organizations/usage_report/messages``) count ``uncached_input_tokens``,
``cache_read_input_tokens``, ``cache_creation.ephemeral_{5m,1h}_input_tokens`` and
``output_tokens`` per bucket (group by model to compare per model). Cost results
(``/v1/organizations/cost_report``, group by description) carry ``amount`` as a decimal string
in **cents**, with ``model`` and ``token_type``; web search and other non-token costs have no
model. Priority Tier costs are not in the cost report (Anthropic's documentation says so).

A CSV has one row per result with the same names as columns, plus ``starting_at`` (or
``date``) and optionally ``ending_at``; nested names are written with a dot
(``cache_creation.ephemeral_5m_input_tokens``). A cost CSV may give dollars in ``cost_usd``
instead of cents in ``amount``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._reporting.reconcile.lines import (
    ProviderLine,
    ProviderReport,
    count_at,
    decimal_at,
    utc_moment,
)

__all__ = ["csv_pages", "read_anthropic_pages", "read_pages"]

_CENTS = Decimal(100)
_TOKEN_TYPES = {"uncached_input_tokens": "input", "cache_read_input_tokens": "cache_read",
                "cache_creation.ephemeral_5m_input_tokens": "cache_write",
                "cache_creation.ephemeral_1h_input_tokens": "cache_write",
                "output_tokens": "output"}
_WRITES = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def read_anthropic_pages(pages: Sequence[Mapping[str, Any]], *, source: str) -> ProviderReport:
    """Pages of the usage or cost report (a file may hold several, from paging)."""
    lines: list[ProviderLine] = []
    starts, ends = [], []
    usage = costs = False
    for page_index, page in enumerate(pages):
        buckets = page.get("data")
        if not isinstance(buckets, list):
            raise ConfigError(f"{source}: page {page_index} has no 'data' list; is this a "
                              f"usage_report/messages or cost_report response?")
        for bucket_index, bucket in enumerate(buckets):
            where = f"{source}: data[{bucket_index}]"
            if "start_time" in bucket:
                raise ConfigError(f"{source}: this is an OpenAI report (its buckets have "
                                  f"'start_time'); use --provider openai")
            start = utc_moment(bucket.get("starting_at"), where=f"{where}.starting_at")
            end = utc_moment(bucket.get("ending_at"), where=f"{where}.ending_at")
            starts.append(start)
            ends.append(end)
            for index, result in enumerate(bucket.get("results") or []):
                spot = f"{where}.results[{index}]"
                if "amount" in result or "cost_usd" in result:
                    costs = True
                    lines.append(_cost(start.date(), result, spot))
                else:
                    usage = True
                    lines += _usage(start.date(), result, spot)
    if not starts:
        raise ConfigError(f"{source}: the report has no buckets, so it covers no time")
    return ProviderReport("anthropic", tuple(lines), min(starts), max(ends), usage, costs)


def csv_pages(rows: Sequence[Mapping[str, str]], *, source: str) -> list[dict[str, Any]]:
    """CSV rows as one page of buckets, so they are read like the JSON."""
    buckets: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for number, row in enumerate(rows, start=1):
        start = row.get("starting_at") or row.get("date") or ""
        if not start:
            raise ConfigError(f"{source}: row {number} has no starting_at (or date) column")
        end = row.get("ending_at") or ""
        if not end:
            day = utc_moment(start, where=f"{source}: row {number}.starting_at").date()
            end = (day + timedelta(days=1)).isoformat()
        result: dict[str, Any] = {key: value for key, value in row.items()
                                  if value not in ("", None) and "." not in key}
        writes = {key.partition(".")[2]: value for key, value in row.items()
                  if key.startswith("cache_creation.") and value not in ("", None)}
        if writes:
            result["cache_creation"] = writes
        buckets.setdefault((start, end), []).append(result)
    return [{"data": [{"starting_at": start, "ending_at": end, "results": results}
                      for (start, end), results in buckets.items()]}]


def _usage(day: date, result: Mapping[str, Any], where: str) -> list[ProviderLine]:
    model = result.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}.model: missing; request the usage report with "
                          f"group_by[]=model so it can be compared per model")
    writes = result.get("cache_creation") or {}
    if not isinstance(writes, Mapping):
        raise ConfigError(f"{where}.cache_creation: expected an object, got {writes!r}")
    written = sum(count_at(writes, key, where=f"{where}.cache_creation") for key in _WRITES)
    counts = {"input": count_at(result, "uncached_input_tokens", where=where),
              "cache_read": count_at(result, "cache_read_input_tokens", where=where),
              "cache_write": written,
              "output": count_at(result, "output_tokens", where=where)}
    return [ProviderLine(day, model, kind, tokens=count) for kind, count in counts.items()]


def _cost(day: date, result: Mapping[str, Any], where: str) -> ProviderLine:
    currency = str(result.get("currency") or "USD").upper()
    if currency != "USD":
        raise ConfigError(f"{where}.currency: {currency!r}; spendguard keeps USD only")
    if result.get("amount") is not None:
        usd = decimal_at(result["amount"], where=f"{where}.amount") / _CENTS
    else:
        usd = decimal_at(result.get("cost_usd"), where=f"{where}.cost_usd")
    model = result.get("model") or None
    label = str(result.get("description") or result.get("cost_type") or "(no description)")
    if model is None:
        return ProviderLine(day, None, None, usd=usd, label=label)
    token_type = result.get("token_type")
    return ProviderLine(day, str(model), _TOKEN_TYPES.get(str(token_type)) if token_type
                        else None, usd=usd, label=label)


read_pages = read_anthropic_pages
