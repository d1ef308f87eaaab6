"""Reporting after sending never breaks the call: overruns reach on_warn, and warnings (under
``-W error``) or a failing on_warn neither fail nor repeat a paid call."""

from __future__ import annotations

import logging
import warnings
from decimal import Decimal

import anthropic
import pytest
import respx

import spendguard
from spendguard import CallOverrun, ThresholdCrossed, render_report_text
from tests.provider_bodies import (
    anthropic_message,
    chat_completion,
)
from tests.transport_helpers import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    anthropic_call,
    fixture_ledger_url,  # noqa: F401 - a fixture: pytest finds it here
    openai_call,
    records,
)


@respx.mock
def test_usage_above_the_worst_case_is_recorded_truthfully_and_reaches_on_warn(
        ledger_url: str) -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion(completion_tokens=10**9))
    heard: list[ThresholdCrossed] = []
    b = spendguard.Budget("10", ledger=ledger_url, on_warn=heard.append)
    reply = openai_call(False, b)
    assert reply.usage is not None
    [record] = records(ledger_url)
    assert record.status == "overrun"
    # 1000 prompt × $0.15 + 10**9 completion × $0.60, per million: what was reported
    assert record.actual_usd == Decimal("600.00015")
    assert "above the reserved worst case" in (record.note or "")
    overruns = [e for e in heard if isinstance(e, CallOverrun)]
    assert len(overruns) == 1
    assert (overruns[0].actual_usd, overruns[0].spent_usd) == (record.actual_usd, b.spent)
    report = spendguard.report_spend(ledger_url)
    assert (report.overrun_calls, report.overrun_usd) == (1, record.actual_usd)
    assert "on 1 call that cost more than the worst case reserved" in render_report_text(report)


@pytest.mark.parametrize("is_async", [False, True])
@respx.mock
def test_a_budget_warning_under_w_error_leaves_the_paid_call_returned_and_sent_once(
        ledger_url: str, is_async: bool, caplog: pytest.LogCaptureFixture) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message(
        output_tokens=100))
    b = spendguard.Budget("0.001", ledger=ledger_url, warn_at="0.1")
    with warnings.catch_warnings(), caplog.at_level(logging.ERROR, "spendguard.budget"):
        warnings.simplefilter("error")
        reply = anthropic_call(is_async, b)
    assert isinstance(reply, anthropic.types.Message)
    assert route.call_count == 1
    assert any("BudgetWarning" in (r.exc_text or "") for r in caplog.records)
    assert b.spent == Decimal("0.00055")


@respx.mock
def test_an_on_warn_that_raises_does_not_fail_or_repeat_the_call(ledger_url: str) -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())

    def explode(event: ThresholdCrossed) -> None:
        raise RuntimeError("pager is down")

    b = spendguard.Budget("0.001", ledger=ledger_url, warn_at="0.1", on_warn=explode)
    anthropic_call(False, b)
    assert route.call_count == 1
    assert len(records(ledger_url)) == 1
