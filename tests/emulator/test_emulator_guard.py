"""The emulator as the offline provider behind spendguard's own guard (end to end)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import spendguard
from spendguard.testing import Emulator, ManualClock

USER: Any = [{"role": "user", "content": "hi"}]


def test_guarded_calls_settle_from_emulated_usage() -> None:
    emulator = Emulator(clock=ManualClock())
    budget = spendguard.Budget("100", ledger="memory://")
    openai_client = spendguard.wrap(emulator.openai_client(), budget)
    claude = spendguard.wrap(emulator.anthropic_client(), budget)
    openai_client.chat.completions.create(model="gpt-5.5", messages=USER)
    with claude.messages.stream(model="claude-sonnet-5", max_tokens=50,
                                messages=USER) as stream:
        stream.get_final_message()
    assert Decimal(0) < budget.spent < Decimal("0.01")
    assert budget.reserved == 0


def test_a_refused_call_sends_zero_requests() -> None:
    emulator = Emulator()
    client = spendguard.wrap(emulator.openai_client(),
                             spendguard.Budget("0.000001", ledger="memory://"))
    with pytest.raises(spendguard.BudgetExceeded):
        client.chat.completions.create(model="gpt-5.5", messages=USER)
    assert emulator.requests == []
