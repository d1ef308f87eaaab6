"""``spendguard.install()`` / ``uninstall()``: every openai and anthropic client built while
installed is guarded exactly as ``spendguard.OpenAI(...)`` would be; reversible, idempotent,
thread-safe, never a second guard on a guarded client."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import spendguard
from spendguard import BudgetExceeded, ConfigError, open_ledger
from spendguard._adoption.install import installed
from spendguard.testing import Emulator

MESSAGES: Any = [{"role": "user", "content": "Say something short."}]


@pytest.fixture(autouse=True)
def _uninstalled() -> Iterator[None]:
    yield
    spendguard.uninstall()


def _budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://install-{uuid.uuid4().hex[:8]}",
                             warn_at=None)


def _chat(client: openai.OpenAI) -> None:
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=40)


def test_a_plain_client_built_after_install_is_guarded_by_the_installed_budget() -> None:
    budget = _budget()
    emulator = Emulator()
    spendguard.install(budget=budget)
    client = emulator.openai_client(max_retries=0)  # a plain openai.OpenAI, own http_client
    assert type(client) is openai.OpenAI
    _chat(client)
    _chat(client)
    records = list(budget.ledger.records(scope=budget.scope))
    assert [r.model for r in records] == ["gpt-5.5", "gpt-5.5"]
    assert budget.spent == sum(r.actual_usd for r in records) > 0


def test_a_tight_installed_budget_refuses_before_anything_is_sent() -> None:
    emulator = Emulator()
    spendguard.install(budget=_budget("0.00001"))
    client = emulator.openai_client()  # the SDK's default retries: a refusal is not retried
    with pytest.raises(BudgetExceeded):
        _chat(client)
    with pytest.raises(openai.OpenAIError):  # also the SDK's own base error
        _chat(client)
    assert emulator.requests == []


async def test_async_and_anthropic_clients_are_guarded_too() -> None:
    budget = _budget()
    emulator = Emulator()
    spendguard.install(budget=budget)
    async_openai = emulator.async_openai_client(max_retries=0)
    await async_openai.chat.completions.create(model="gpt-5.5", messages=MESSAGES,
                                               max_tokens=20)
    claude = emulator.anthropic_client(max_retries=0)
    claude.messages.create(model="claude-sonnet-4-6", max_tokens=20, messages=MESSAGES)
    async_claude = emulator.async_anthropic_client(max_retries=0)
    await async_claude.messages.create(model="claude-sonnet-4-6", max_tokens=20,
                                       messages=MESSAGES)
    providers = sorted(r.provider for r in budget.ledger.records(scope=budget.scope))
    assert providers == ["anthropic", "anthropic", "openai"]
    assert len(emulator.requests) == 3


def test_uninstall_restores_plain_clients_and_leaves_guarded_ones_guarded() -> None:
    budget = _budget("0.00001")
    emulator = Emulator()
    spendguard.install(budget=budget)
    guarded = emulator.openai_client(max_retries=0)
    spendguard.uninstall()
    assert not installed()
    assert not hasattr(openai.OpenAI.__init__, "__spendguard_original_init__")
    plain = emulator.openai_client(max_retries=0)
    _chat(plain)  # not guarded: the tight budget does not apply
    assert len(emulator.requests) == 1
    with pytest.raises(BudgetExceeded):
        _chat(guarded)
    assert len(emulator.requests) == 1


def test_install_twice_wraps_once_and_the_second_budget_applies_to_new_clients() -> None:
    first, second = _budget(), _budget()
    emulator = Emulator()
    spendguard.install(budget=first)
    spendguard.install(budget=second)
    init = openai.OpenAI.__init__
    assert not hasattr(init.__spendguard_original_init__,  # type: ignore[attr-defined]
                       "__spendguard_original_init__")
    _chat(emulator.openai_client(max_retries=0))
    assert [len(list(b.ledger.records(scope=b.scope))) for b in (first, second)] == [0, 1]
    spendguard.uninstall()
    spendguard.uninstall()  # idempotent too
    assert "__spendguard_original_init__" not in dir(openai.OpenAI.__init__)


def test_an_already_guarded_client_keeps_its_own_budget_and_is_guarded_once() -> None:
    own, installed_budget = _budget(), _budget()
    emulator = Emulator()
    spendguard.install(budget=installed_budget)
    dropin = spendguard.OpenAI(api_key="emulated", base_url="https://api.openai.com/v1",
                               http_client=httpx2.Client(transport=emulator.transport()),
                               budget=own, max_retries=0)
    _chat(dropin)
    _chat(dropin.with_options(timeout=30))  # a copy built while installed: still its guard
    wrapped = spendguard.wrap(emulator.openai_client(max_retries=0), budget=own)
    _chat(wrapped.with_options(max_retries=0))
    assert len(list(own.ledger.records(scope=own.scope))) == 3  # one record per call
    assert list(installed_budget.ledger.records(scope=installed_budget.scope)) == []
    assert len(emulator.requests) == 3


def test_install_takes_a_budget_or_none() -> None:
    with pytest.raises(ConfigError, match="budget"):
        spendguard.install(budget="5")  # type: ignore[arg-type]
    assert not installed()
    spendguard.install()  # no budget: every call recorded, unlimited, in the default ledger
    client = Emulator().openai_client(max_retries=0)
    _chat(client)
    records = list(open_ledger().records())
    assert [r.model for r in records] == ["gpt-5.5"]
    assert records[0].actual_usd > Decimal(0)


def test_install_and_uninstall_from_many_threads_leave_a_consistent_state() -> None:
    budget = _budget()
    emulator = Emulator()
    original = openai.OpenAI.__init__
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def churn(index: int) -> None:
        try:
            start.wait()
            for _ in range(20):
                if index % 2:
                    spendguard.install(budget=budget)
                else:
                    spendguard.uninstall()
                emulator.openai_client(max_retries=0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    spendguard.install(budget=budget)
    init = openai.OpenAI.__init__
    assert init.__spendguard_original_init__ is original  # type: ignore[attr-defined]
    spendguard.uninstall()
    assert openai.OpenAI.__init__ is original
    assert anthropic.Anthropic.__init__.__name__ == "__init__"
