"""Provider reports for the reconciliation tests, shaped as the admin APIs return them, and
the ledger they are compared with."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from spendguard._budget.budget import Budget
from tests.finance_helpers import book
from tests.ledger_helpers import FakeClock

DAY1 = date(2031, 1, 10)
DAY2 = date(2031, 1, 11)


def unix(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def rfc3339(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def openai_page(buckets: dict[date, list[dict[str, Any]]]) -> dict[str, Any]:
    """A page of /v1/organization/usage/completions or /costs, one bucket per day."""
    return {"object": "page", "has_more": False, "next_page": None, "data": [
        {"object": "bucket", "start_time": unix(day), "end_time": unix(day + timedelta(days=1)),
         "results": results} for day, results in buckets.items()]}


def openai_usage(model: str, *, input_tokens: int, cached: int = 0, output: int = 0,
                 requests: int = 1) -> dict[str, Any]:
    return {"object": "organization.usage.completions.result", "model": model,
            "input_tokens": input_tokens, "input_cached_tokens": cached,
            "output_tokens": output, "input_audio_tokens": 0, "output_audio_tokens": 0,
            "num_model_requests": requests, "project_id": None, "batch": None}


def openai_cost(line_item: str, dollars: str) -> dict[str, Any]:
    # The API sends a JSON number. json.dumps writes a float as its shortest exact text
    # ("0.0025"), which spendguard parses straight into a Decimal.
    return {"object": "organization.costs.result", "line_item": line_item, "project_id": None,
            "amount": {"value": float(dollars), "currency": "usd"}}


def anthropic_page(buckets: dict[date, list[dict[str, Any]]]) -> dict[str, Any]:
    """A page of usage_report/messages or cost_report, one bucket per day."""
    return {"has_more": False, "next_page": None, "data": [
        {"starting_at": rfc3339(day), "ending_at": rfc3339(day + timedelta(days=1)),
         "results": results} for day, results in buckets.items()]}


def anthropic_usage(model: str, *, uncached: int, cache_read: int = 0, write_5m: int = 0,
                    write_1h: int = 0, output: int = 0) -> dict[str, Any]:
    return {"model": model, "uncached_input_tokens": uncached,
            "cache_read_input_tokens": cache_read, "output_tokens": output,
            "cache_creation": {"ephemeral_5m_input_tokens": write_5m,
                               "ephemeral_1h_input_tokens": write_1h},
            "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard",
            "context_window": "0-200k", "api_key_id": None, "workspace_id": None}


def anthropic_cost(model: str | None, token_type: str | None, cents: str, *,
                   cost_type: str = "tokens", description: str = "") -> dict[str, Any]:
    return {"amount": cents, "currency": "USD", "cost_type": cost_type,
            "token_type": token_type, "model": model, "description": description or None,
            "service_tier": "standard" if model else None, "context_window": None,
            "workspace_id": None}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path


def openai_ledger(url: str) -> Budget:
    clock = FakeClock(datetime(2031, 1, 10, 9, tzinfo=UTC))
    b = Budget("100", ledger=url, scope="app", clock=clock)
    book(b, "gpt-4o-mini", {"input": 800, "cache_read": 200, "output": 500})  # $0.000435
    book(b, "gpt-4o", {"input": 10_000, "output": 1_000})  # $0.035
    clock.advance(days=1)
    book(b, "gpt-4o-mini", {"input": 1_000, "output": 100})  # $0.00021
    return b


def openai_files(tmp_path: Path) -> list[Path]:
    usage = openai_page({
        DAY1: [openai_usage("gpt-4o-mini-2024-07-18", input_tokens=1_000, cached=200,
                            output=500),
               # 10,000 more input tokens than the ledger saw: a call that bypassed the guard
               openai_usage("gpt-4o-2024-08-06", input_tokens=20_000, output=1_000)],
        DAY2: [openai_usage("gpt-4o-mini", input_tokens=1_000, output=100)]})
    costs = openai_page({
        DAY1: [openai_cost("gpt-4o-mini-2024-07-18, input", "0.00012"),
               openai_cost("gpt-4o-mini-2024-07-18, cached input", "0.000015"),
               openai_cost("gpt-4o-mini-2024-07-18, output", "0.0003"),
               openai_cost("gpt-4o-2024-08-06, input", "0.05"),
               openai_cost("gpt-4o-2024-08-06, output", "0.01"),
               openai_cost("Credit", "-5.0")],
        DAY2: [openai_cost("gpt-4o-mini, input", "0.00015"),
               openai_cost("gpt-4o-mini, output", "0.00006")]})
    return [write_json(tmp_path / "usage.json", usage), write_json(tmp_path / "costs.json", costs)]
