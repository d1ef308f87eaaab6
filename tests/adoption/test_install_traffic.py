"""``install()`` follows the traffic, not the SDK class: every HTTP client guards requests
addressed to a provider (once, however many layers they cross) and passes the rest untouched;
clients built before ``install()``, http clients swapped in later, and the platform clients
(Bedrock, Vertex, Azure) are covered."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import spendguard
from spendguard import BudgetExceeded
from spendguard._adoption.install import installed
from spendguard.testing import Emulator

MESSAGES: Any = [{"role": "user", "content": "Say something short."}]
EMULATED = "http://provider.spendguard.invalid"
US_SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture(autouse=True)
def _uninstalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    yield
    spendguard.uninstall()


def _budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://traffic-{uuid.uuid4().hex[:8]}",
                             warn_at=None)


def _models(budget: spendguard.Budget) -> list[str]:
    return sorted(r.model for r in budget.ledger.records(scope=budget.scope))


def _message(model: str = "claude-sonnet-4-6") -> dict[str, Any]:
    return {"model": model, "max_tokens": 30, "messages": MESSAGES}


def test_a_raw_http_request_to_a_declared_provider_is_guarded_and_others_pass(
        ) -> None:
    emulator = Emulator()
    budget = _budget()
    spendguard.install(budget, base_urls={EMULATED: "anthropic"})
    with httpx2.Client(transport=emulator.transport()) as http:  # a framework's own client
        answer = http.post(f"{EMULATED}/v1/messages", json=_message(),
                           headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
        elsewhere = http.post("http://other.spendguard.invalid/v1/messages", json=_message())
    [record] = list(budget.ledger.records(scope=budget.scope))
    assert record.tokens["output"] == answer.json()["usage"]["output_tokens"]
    assert elsewhere.status_code == 200  # the emulator answered it; spendguard did not look
    assert len(emulator.requests) == 2


async def test_an_async_raw_request_over_a_tight_budget_is_refused_before_sending() -> None:
    emulator = Emulator()
    spendguard.install(_budget("0.00001"), base_urls={EMULATED: "anthropic"})
    async with httpx2.AsyncClient(transport=emulator.transport()) as http:
        with pytest.raises(BudgetExceeded):
            await http.post(f"{EMULATED}/v1/messages", json=_message())
    assert emulator.requests == []


def test_a_client_built_before_install_is_guarded_from_then_on_and_released_after() -> None:
    emulator = Emulator()
    early = openai.OpenAI(api_key="k", base_url=f"{EMULATED}/v1", max_retries=3,
                          http_client=httpx2.Client(transport=emulator.transport()))
    spendguard.install(_budget("0.00001"), base_urls={f"{EMULATED}/v1": "openai"})
    with pytest.raises(BudgetExceeded) as refused:
        early.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    assert isinstance(refused.value, openai.OpenAIError)  # the SDK neither wraps nor retries
    assert emulator.requests == []
    spendguard.uninstall()
    early.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    assert len(emulator.requests) == 1


def test_a_request_crossing_two_guarded_layers_is_recorded_once() -> None:
    emulator = Emulator()
    budget = _budget()
    spendguard.install(budget, base_urls={f"{EMULATED}/v1": "openai"})
    inner = httpx2.Client(transport=emulator.transport())  # gets the dispatcher
    outer = httpx2.Client(transport=inner._transport)  # a client layered on another's
    client = openai.OpenAI(api_key="k", base_url=f"{EMULATED}/v1", http_client=outer,
                           max_retries=0)  # guarded by install() too
    client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
    assert _models(budget) == ["gpt-5.5"]
    assert len(emulator.requests) == 1


async def test_an_http_client_swapped_in_after_the_sdk_client_was_built_is_guarded() -> None:
    emulator = Emulator()
    budget = _budget()
    client = spendguard.AsyncAnthropic(api_key="k", base_url=EMULATED, budget=budget,
                                       max_retries=0)
    # What pydantic-ai does on a new event loop: a fresh http client, set on the SDK client.
    client._client = httpx2.AsyncClient(transport=emulator.transport())
    await client.messages.create(**_message())
    assert _models(budget) == ["claude-sonnet-4-6"]
    await client.close()


def test_bedrock_and_vertex_clients_built_after_install_are_guarded() -> None:
    emulator = Emulator(reply_tokens=40)
    budget = _budget()
    spendguard.install(budget)
    bedrock = anthropic.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url="http://bedrock.spendguard.invalid",
        http_client=httpx2.Client(transport=emulator.transport()), max_retries=0)
    bedrock.messages.create(model=US_SONNET, messages=MESSAGES, max_tokens=100)
    vertex = anthropic.AnthropicVertex(
        region="global", project_id="p", access_token="t",
        base_url="http://vertex.spendguard.invalid/v1",
        http_client=httpx2.Client(transport=emulator.transport()), max_retries=0)
    vertex.messages.create(model="claude-sonnet-4-5@20250929", messages=MESSAGES,
                           max_tokens=100)
    assert _models(budget) == [f"bedrock/{US_SONNET}", "vertex/claude-sonnet-4-5@20250929"]
    assert len(emulator.requests) == 2


async def test_azure_clients_built_after_install_price_the_installed_deployments() -> None:
    emulator = Emulator(reply_tokens=40)
    budget = _budget()
    spendguard.install(budget, azure_deployments={"prod-4o": "gpt-4o"})
    azure = openai.AsyncAzureOpenAI(
        api_key="k", azure_endpoint="http://azure.spendguard.invalid", api_version="2024-10-21",
        http_client=httpx2.AsyncClient(transport=emulator.transport()), max_retries=0)
    reply = await azure.chat.completions.create(model="prod-4o", messages=MESSAGES,
                                                max_tokens=100)
    assert reply.usage is not None
    [record] = list(budget.ledger.records(scope=budget.scope))
    # gpt-4o: $2.50 in, $10 out per million
    assert record.actual_usd == (Decimal(reply.usage.prompt_tokens) * Decimal("2.5")
                                 + 40 * 10) / 1_000_000
    with pytest.raises(spendguard.UnknownModelError, match="not mapped"):
        await azure.chat.completions.create(model="other", messages=MESSAGES, max_tokens=10)
    assert len(emulator.requests) == 1


def test_install_names_the_field_of_a_bad_platform_argument() -> None:
    with pytest.raises(spendguard.ConfigError, match="base_urls"):
        spendguard.install(base_urls={"localhost:8000": "openai"})
    with pytest.raises(spendguard.ConfigError, match="base_urls"):
        spendguard.install(base_urls={"http://localhost:8000": "gemini"})
    with pytest.raises(spendguard.ConfigError, match="unmapped_deployments"):
        spendguard.install(unmapped_deployments="ignore")
    assert not installed()


def test_the_sdk_base_url_variables_count_as_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    emulator = Emulator()
    budget = _budget()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", EMULATED)
    spendguard.install(budget)
    with httpx2.Client(transport=emulator.transport()) as http:
        http.post(f"{EMULATED}/v1/messages", json=_message())
    assert _models(budget) == ["claude-sonnet-4-6"]


def test_two_event_loops_each_swapping_clients_leave_one_record_per_request() -> None:
    emulator = Emulator()
    budget = _budget()
    spendguard.install(budget, base_urls={EMULATED: "anthropic"})
    client = anthropic.AsyncAnthropic(api_key="k", base_url=EMULATED, max_retries=0)

    async def one_run() -> None:
        client._client = httpx2.AsyncClient(transport=emulator.transport())
        await client.messages.create(**_message())

    for _ in range(2):
        asyncio.run(one_run())
    assert len(_models(budget)) == len(emulator.requests) == 2
