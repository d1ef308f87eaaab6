"""cap_output=True on Gemini clients: the output cap sits in generationConfig, beside the
thinking budget, and both are lowered to what the budget has left (against the emulator)."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from google.genai import types

import spendguard
from spendguard.testing import Emulator

# gemini-2.5-flash: $2.50 per million output tokens (pricing/gemini.toml).
FLASH_OUT = Decimal("2.50") / 1_000_000
NO_THINKING = types.GenerateContentConfig(
    max_output_tokens=60_000, thinking_config=types.ThinkingConfig(thinking_budget=0))


def _client(emulator: Emulator, budget: spendguard.Budget) -> spendguard.Gemini:
    return spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                             budget=budget, cap_output=True)


def _config(emulator: Emulator) -> dict[str, Any]:
    [request] = emulator.requests
    config: dict[str, Any] = request.body["generationConfig"]
    return config


def _thinking_budget(config: dict[str, Any]) -> Any:
    """The REST name, or the SDK's own spelling inside thinkingConfig (the API takes both)."""
    thinking = config["thinkingConfig"]
    return thinking.get("thinkingBudget", thinking.get("thinking_budget"))


def test_a_gemini_call_that_does_not_fit_is_sent_with_a_lower_max_output_tokens() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.001", ledger="memory://")
    _client(emulator, budget).models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    config = _config(emulator)
    # $0.001 buys 400 output tokens, less the prompt's bound; no thinking stays no thinking.
    assert 300 < config["maxOutputTokens"] < 400
    assert _thinking_budget(config) == 0
    [record] = budget.ledger.records()
    assert record.status == "ok" and record.estimated_output_tokens == config["maxOutputTokens"]
    assert record.estimated_usd <= Decimal("0.001") and budget.reserved == 0


def test_dynamic_thinking_is_capped_with_an_explicit_thinking_budget() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.01", ledger="memory://")
    _client(emulator, budget).models.generate_content(
        model="gemini-2.5-flash", contents="hi",
        config=types.GenerateContentConfig(max_output_tokens=50_000))
    config = _config(emulator)
    thinking, answer = _thinking_budget(config), config["maxOutputTokens"]
    # $0.01 buys 4,000 output tokens: thinking takes half, the answer the rest.
    assert thinking >= 512 and thinking + answer < 4000 and abs(thinking - answer) <= 1
    [record] = budget.ledger.records()
    assert record.estimated_output_tokens == thinking + answer
    assert record.estimated_usd <= Decimal("0.01")


def test_a_gemini_call_with_room_for_no_answer_is_refused_and_not_sent() -> None:
    emulator = Emulator()
    client = _client(emulator, spendguard.Budget("0.000001", ledger="memory://"))
    with pytest.raises(spendguard.BudgetExceeded):
        client.models.generate_content(model="gemini-2.5-flash", contents="hi",
                                       config=NO_THINKING)
    assert emulator.requests == []


def test_dynamic_thinking_is_refused_when_less_than_the_smallest_thinking_budget_fits() -> None:
    emulator = Emulator()
    # Room for ~120 output tokens: fewer than the 512 any Gemini 2.5 model may think.
    budget = spendguard.Budget(str(120 * FLASH_OUT), ledger="memory://")
    with pytest.raises(spendguard.BudgetExceeded):
        _client(emulator, budget).models.generate_content(model="gemini-2.5-flash",
                                                          contents="hi")
    assert emulator.requests == []


def test_an_async_gemini_call_is_capped_too() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.001", ledger="memory://")
    client = _client(emulator, budget)
    asyncio.run(client.aio.models.generate_content(
        model="gemini-2.5-flash", contents="hi", config=NO_THINKING))
    assert 300 < _config(emulator)["maxOutputTokens"] < 400
    assert [r.status for r in budget.ledger.records()] == ["ok"]


def test_install_caps_genai_clients_it_guards() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.001", ledger="memory://")
    spendguard.install(budget, cap_output=True)
    try:
        client = emulator.gemini_client()
    finally:
        spendguard.uninstall()
    client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=NO_THINKING)
    assert 300 < _config(emulator)["maxOutputTokens"] < 400
    assert [r.provider for r in budget.ledger.records()] == ["gemini"]


def test_a_thinking_budget_larger_than_what_fits_is_lowered_to_half_of_it() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("0.01", ledger="memory://")
    _client(emulator, budget).models.generate_content(
        model="gemini-2.5-flash", contents="hi",
        config=types.GenerateContentConfig(
            max_output_tokens=1000, thinking_config=types.ThinkingConfig(thinking_budget=8000)))
    config = _config(emulator)
    # $0.01 buys under 4,000 output tokens: thinking gets half, the answer keeps its 1,000.
    assert 1900 < _thinking_budget(config) < 2000 and config["maxOutputTokens"] == 1000


def test_a_request_with_a_thinking_level_is_not_capped_but_refused() -> None:
    emulator = Emulator()
    client = _client(emulator, spendguard.Budget("0.01", ledger="memory://"))
    with pytest.raises(spendguard.BudgetExceeded):
        client.models.generate_content(
            model="gemini-2.5-flash", contents="hi",
            config=types.GenerateContentConfig(
                max_output_tokens=60_000,
                thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)))
    assert emulator.requests == []
