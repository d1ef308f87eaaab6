"""Parity of ``Plan.run`` (threads) and ``Plan.arun`` (tasks) over the one plan worker core.

Each scenario runs on two identical emulators, once per shell; the requests the provider
received, the ledger's records (the plan's $0 marker included) and every outcome must be the
same, ids aside. With ``concurrency=1`` the order of the requests is compared too; with more
workers in flight it is the set of requests, and what warm-up sends first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any

import pytest

import spendguard
from spendguard.testing import Emulator
from tests.plan_helpers import (
    anthropic_client,
    anthropic_fanout,
    async_anthropic_client,
    async_openai_client,
    budget,
    emulator,
    openai_client,
    openai_fanout,
)

_IDS = re.compile(r"[0-9a-f]{12,}")
_CLIENTS = {("openai", False): openai_client, ("openai", True): async_openai_client,
            ("anthropic", False): anthropic_client, ("anthropic", True): async_anthropic_client}


def _normalised(value: Any) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    seen: dict[str, str] = {}
    return _IDS.sub(lambda m: seen.setdefault(m.group(), f"<id{len(seen)}>"), text)


def _record(record: Any) -> dict[str, Any]:
    kept = dataclasses.asdict(record)
    for volatile in ("id", "time", "latency_s"):  # random ids, wall-clock times
        kept.pop(volatile)
    kept["scopes"] = len(kept["scopes"])  # each budget() has a random scope name
    return kept


def _outcomes(result: spendguard.PlanResult) -> list[tuple[Any, ...]]:
    return [(outcome.index, outcome.custom_id, outcome.model, outcome.ok, outcome.cost_usd,
             type(outcome.error).__name__ if outcome.error is not None else None,
             None if outcome.usage is None else outcome.usage.as_dict())
            for outcome in result.outcomes]


def run_twice(provider: str, bodies: list[dict[str, Any]], *, limit: str = "10",
              prepare: Any = None, cache_order: bool = False, **options: Any
              ) -> tuple[str, str]:
    """The same plan run by each shell on its own emulator: (sync trace, async trace)."""
    traces = []
    for is_async in (False, True):
        emu: Emulator = emulator()
        if prepare is not None:
            prepare(emu)
        spend = budget(limit)
        client = _CLIENTS[provider, is_async](emu, spend)
        plan = spendguard.plan(bodies, cache_order=cache_order)
        try:
            result: Any = (asyncio.run(plan.arun(client, **options)) if is_async
                           else plan.run(client, **options))
            returned: Any = _outcomes(result)
        except spendguard.BudgetExceeded as exc:
            returned = f"refused: {exc}".replace(plan.id, "<plan>")
        requests = [(r.method, r.path, r.body) for r in emu.requests]
        concurrent = options.get("concurrency", 1) > 1
        trace = {
            "first": requests[:1],
            "requests": sorted(map(json.dumps, requests)) if concurrent else requests,
            "records": sorted(_normalised(_record(r)) for r in spend.ledger.records()),
            "returned": returned, "spent": spend.spent, "reserved": spend.reserved,
        }
        traces.append(_normalised(trace))
    return traces[0], traces[1]


def assert_parity(*args: Any, **options: Any) -> None:
    sync_trace, async_trace = run_twice(*args, **options)
    assert sync_trace == async_trace
    assert '"requests": []' not in sync_trace and '"records": []' not in sync_trace


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_warmed_up_fanout_is_sent_the_same_by_threads_and_tasks(concurrency: int) -> None:
    assert_parity("anthropic", anthropic_fanout(8), cache_order=True, concurrency=concurrency)


def test_failed_requests_are_recorded_alike() -> None:
    assert_parity("openai", openai_fanout(5), concurrency=1,
                  prepare=lambda emu: emu.fail_next(2, status=400))


def test_an_approved_plan_over_budget_runs_alike_and_refusals_mid_run_are_outcomes() -> None:
    assert_parity("anthropic", anthropic_fanout(6), limit="0.03", concurrency=1,
                  approve=lambda plan: True)


@pytest.mark.parametrize("approve", [None, lambda plan: False])
def test_a_plan_over_budget_is_refused_alike_before_anything_is_sent(approve: Any) -> None:
    sync_trace, async_trace = run_twice("openai", openai_fanout(3), limit="0.0001",
                                        approve=approve)
    assert sync_trace == async_trace
    assert '"requests": []' in sync_trace


def test_fields_the_sdk_does_not_name_travel_alike() -> None:
    bodies = [{**body, "custom_field": {"kept": True}} for body in openai_fanout(2)]
    assert_parity("openai", bodies, concurrency=1, warm_up=False)
