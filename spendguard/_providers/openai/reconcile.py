"""OpenAI's organization reports: completions usage and costs (``/v1/organization/...``).

Usage buckets hold ``results`` of ``organization.usage.completions.result``: ``input_tokens``
*includes* ``input_cached_tokens`` (and cache writes), so uncached input is what remains (or
``input_uncached_tokens`` where the report gives it). Costs buckets hold
``organization.costs.result`` with ``amount.value`` in dollars and a ``line_item`` such as
``"gpt-4o-2024-08-06, input"``; a line item without a comma (``"Image models"``, ``"Credit"``)
names no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._reporting.reconcile.lines import (
    ProviderLine,
    ProviderReport,
    count_at,
    decimal_at,
    utc_moment,
)

__all__ = ["JSON_ONLY", "read_openai_pages", "read_pages"]

JSON_ONLY = ("OpenAI reports are read as the API's JSON; save the response of "
             "/v1/organization/usage/completions or /costs")

_USAGE = "organization.usage.completions.result"
_COSTS = "organization.costs.result"
_LINE_ITEM_KINDS = {"input": "input", "cached input": "cache_read", "cache read": "cache_read",
                    "cached input write": "cache_write", "cache write": "cache_write",
                    "output": "output"}


def read_openai_pages(pages: Sequence[Mapping[str, Any]], *, source: str) -> ProviderReport:
    """Pages of the usage or costs endpoint (one file may hold several, from paging)."""
    lines: list[ProviderLine] = []
    starts, ends, kinds = [], [], set()
    for page_index, page in enumerate(pages):
        buckets = page.get("data")
        if not isinstance(buckets, list):
            raise ConfigError(f"{source}: page {page_index} has no 'data' list; is this a "
                              f"response of /v1/organization/usage/completions or /costs?")
        for bucket_index, bucket in enumerate(buckets):
            where = f"{source}: data[{bucket_index}]"
            if "starting_at" in bucket:
                raise ConfigError(f"{source}: this is an Anthropic report (its buckets have "
                                  f"'starting_at'); use --provider anthropic")
            start = utc_moment(bucket.get("start_time"), where=f"{where}.start_time")
            end = utc_moment(bucket.get("end_time"), where=f"{where}.end_time")
            starts.append(start)
            ends.append(end)
            for index, result in enumerate(bucket.get("results") or []):
                spot = f"{where}.results[{index}]"
                kind = result.get("object")
                kinds.add(kind)
                if kind == _USAGE:
                    lines += _usage(start.date(), result, spot)
                elif kind == _COSTS:
                    lines.append(_cost(start.date(), result, spot))
                else:
                    raise ConfigError(f"{spot}.object: {kind!r} is neither a completions usage "
                                      f"nor a costs result")
    if not starts:
        raise ConfigError(f"{source}: the report has no buckets, so it covers no time")
    return ProviderReport("openai", tuple(lines), min(starts), max(ends), _USAGE in kinds,
                          _COSTS in kinds)


def _usage(day: Any, result: Mapping[str, Any], where: str) -> list[ProviderLine]:
    model = result.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}.model: missing; request the usage report with "
                          f"group_by=model so it can be compared per model")
    total_input = count_at(result, "input_tokens", where=where)
    cached = count_at(result, "input_cached_tokens", where=where)
    written = count_at(result, "input_cache_write_tokens", where=where)
    uncached = (count_at(result, "input_uncached_tokens", where=where)
                if result.get("input_uncached_tokens") is not None
                else total_input - cached - written)
    if uncached < 0:
        raise ConfigError(f"{where}: input_tokens ({total_input}) is less than its cached and "
                          f"cache-write parts ({cached} + {written})")
    counts = {"input": uncached, "cache_read": cached, "cache_write": written,
              "output": count_at(result, "output_tokens", where=where)}
    return [ProviderLine(day, model, kind, tokens=count) for kind, count in counts.items()]


def _cost(day: Any, result: Mapping[str, Any], where: str) -> ProviderLine:
    amount = result.get("amount")
    if not isinstance(amount, Mapping):
        raise ConfigError(f"{where}.amount: expected {{value, currency}}, got {amount!r}")
    currency = str(amount.get("currency", "usd")).lower()
    if currency != "usd":
        raise ConfigError(f"{where}.amount.currency: {currency!r}; spendguard keeps USD only")
    usd = decimal_at(amount.get("value"), where=f"{where}.amount.value")
    item = str(result.get("line_item") or "")
    model, sep, kind_text = item.rpartition(", ")
    if not sep or not model:
        return ProviderLine(day, None, None, usd=usd, label=item or "(no line item)")
    return ProviderLine(day, model, _LINE_ITEM_KINDS.get(kind_text.strip().lower()), usd=usd,
                        label=item)


read_pages = read_openai_pages
