"""Observe mode (``Budget(..., enforce=False)``): estimated, recorded and warned exactly as in
enforce mode, nothing refused, and every call enforce mode would have refused recorded as such,
on memory, SQLite and Redis."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from decimal import Decimal

import pytest

import spendguard
from spendguard import (
    BudgetConfigError,
    BudgetExceeded,
    BudgetWarning,
    CallEvent,
    open_ledger,
    render_report_text,
    report_spend,
    subscribe,
    unsubscribe,
)
from spendguard.testing import Emulator
from tests.ledger_backends import LedgerBackend

MESSAGES = [{"role": "user", "content": "Say something short."}]
# A gpt-5.5 call with this prompt and max_tokens=50 reserves about $0.0016 and costs less.
TIGHT_USD = "0.004"
# The tag on a record enforce mode would have refused: a JSON object, scope -> the limit it
# would have broken (docs/adoption.md).
WOULD_REFUSE_TAG = "spendguard.would_refuse"


@pytest.fixture
def ledger_url_of_kind(ledger_backend: LedgerBackend) -> str:
    """A fresh ledger URL of each backend (``tests/ledger_backends.py``)."""
    return ledger_backend.url(timeout="2")


def _would_refuse_limits(tags: Mapping[str, str]) -> dict[str, Decimal]:
    return {scope: Decimal(limit) for scope, limit in json.loads(tags[WOULD_REFUSE_TAG]).items()}


def _calls(client: object, count: int) -> None:
    for _ in range(count):
        client.chat.completions.create(  # type: ignore[attr-defined]
            model="gpt-5.5", messages=MESSAGES, max_tokens=50)


def test_observe_mode_sends_every_call_and_records_those_enforce_would_refuse(
        ledger_url_of_kind: str) -> None:
    scope = f"team:{uuid.uuid4().hex[:8]}"
    emulator = Emulator()
    observed = spendguard.Budget(TIGHT_USD, scope=scope, ledger=ledger_url_of_kind,
                                 enforce=False, warn_at=None)
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget=observed)
    with pytest.warns(BudgetWarning, match="would have refused") as told:
        _calls(client, 6)
    assert len(told) == 1  # once per scope and period; the ledger keeps every call
    assert len(emulator.requests) == 6  # nothing refused

    records = list(open_ledger(ledger_url_of_kind).records(scope=scope))
    assert [r.status for r in records] == ["ok"] * 6
    flagged = [r for r in records if WOULD_REFUSE_TAG in r.tags]
    assert flagged and len(flagged) < 6  # the first calls fitted, the rest would not
    assert all(_would_refuse_limits(r.tags) == {scope: Decimal(TIGHT_USD)} for r in flagged)
    assert observed.spent == sum(r.actual_usd for r in records)
    assert observed.spent > Decimal(TIGHT_USD)  # observe mode let it run over

    # Enforce mode on the same ledger and history refuses the call, with nothing sent.
    enforced = spendguard.Budget(TIGHT_USD, scope=scope, ledger=ledger_url_of_kind)
    enforcing = spendguard.wrap(emulator.openai_client(max_retries=0), budget=enforced)
    with pytest.raises(BudgetExceeded):
        _calls(enforcing, 1)
    assert len(emulator.requests) == 6

    report = report_spend(ledger_url_of_kind, by="scope", scope=scope)
    [would] = report.would_refuse
    assert (would.scope, would.calls) == (scope, len(flagged))
    assert would.spent_usd == sum(r.actual_usd for r in flagged)
    assert f"Observe mode: budget {scope!r} would have refused {len(flagged)} call" in (
        render_report_text(report))
    assert report.as_dict()["would_refuse"][0]["calls"] == len(flagged)
    [use] = [b for b in report.budgets if b.scope == scope]
    assert use.limit_usd == Decimal(TIGHT_USD)  # the lifted limit is still reported


def test_an_enforcing_budget_around_an_observing_one_still_refuses() -> None:
    emulator = Emulator()
    ledger = f"memory://observe-{uuid.uuid4().hex[:8]}"
    outer = spendguard.Budget(TIGHT_USD, scope="org", ledger=ledger, warn_at=None)
    inner = outer.child("team", limit_usd="0.001", enforce=False)
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget=inner)
    with pytest.warns(BudgetWarning, match="would have refused"), \
            pytest.raises(BudgetExceeded) as refused:
        _calls(client, 10)
    assert refused.value.scope == "org"
    assert inner.spent == outer.spent <= Decimal(TIGHT_USD)
    assert outer.reserved == 0


def test_observe_mode_publishes_would_refuse_events_and_still_warns_at_the_level() -> None:
    seen: list[CallEvent] = []
    subscriber = subscribe(seen.append)
    try:
        crossed: list[object] = []
        budget = spendguard.Budget(TIGHT_USD, ledger="memory://", enforce=False, warn_at=0.5,
                                   on_warn=crossed.append)
        client = spendguard.wrap(Emulator().openai_client(max_retries=0), budget=budget)
        with pytest.warns(BudgetWarning, match="would have refused"):
            _calls(client, 6)
    finally:
        unsubscribe(subscriber)
    assert len(crossed) == 1  # the warning level, told once as in enforce mode
    stages: list[str] = [e.stage for e in seen]
    assert stages.count("settled") == 6
    assert "refused" not in stages
    would = [e for e in seen if e.stage == "would_refuse"]
    assert would and all(e.scope == budget.scope and e.call_id for e in would)


def test_cap_output_does_not_shrink_calls_for_an_observing_budget() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.0001", ledger="memory://", enforce=False, warn_at=None)
    client = spendguard.wrap(emulator.openai_client(max_retries=0), budget=budget,
                             cap_output=True)
    with pytest.warns(BudgetWarning):
        _calls(client, 1)
    assert emulator.requests[0].body["max_tokens"] == 50


def test_enforce_must_be_a_bool() -> None:
    with pytest.raises(BudgetConfigError, match="enforce") as error:
        spendguard.Budget("1", enforce="no")  # type: ignore[arg-type]
    assert error.value.field == "enforce"
    assert "enforce=False" in repr(spendguard.Budget("1", enforce=False))
