"""Azure OpenAI and OpenAI-compatible hosts, through the real openai SDK with respx mocks."""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest
import respx

import spendguard
from spendguard import open_ledger
from tests.provider_bodies import chat_completion, chat_stream_events, sse

AZURE = "https://res.openai.azure.com"
AZURE_CHAT = f"{AZURE}/openai/deployments/prod-4o/chat/completions"
MOONSHOT_CHAT = "https://api.moonshot.ai/v1/chat/completions"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
# gpt-4o: $2.50 input, $1.25 cached, $10 output per million. 800 uncached + 200 cached + 500 out:
GPT4O_USD = Decimal("0.00725")


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


def azure(ledger_url: str, limit: str = "1", **kwargs: Any) -> spendguard.AzureOpenAI:
    kwargs.setdefault("deployments", {"prod-4o": "gpt-4o"})
    return spendguard.AzureOpenAI(api_key="az-test", azure_endpoint=AZURE,
                                  api_version="2024-10-21", max_retries=2,
                                  budget=spendguard.Budget(limit, ledger=ledger_url), **kwargs)


def test_platform_clients_are_instances_of_the_sdk_classes(ledger_url: str) -> None:
    client = azure(ledger_url)
    assert isinstance(client, openai.AzureOpenAI)
    assert isinstance(spendguard.AsyncAzureOpenAI(api_key="k", azure_endpoint=AZURE,
                                                  api_version="2024-10-21"),
                      openai.AsyncAzureOpenAI)


@respx.mock
def test_an_azure_deployment_is_priced_as_the_model_it_is_mapped_to(ledger_url: str) -> None:
    route = respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion(
        "gpt-4o-2024-11-20", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    client = azure(ledger_url)
    client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=600)
    assert route.call_count == 1
    [record] = list(open_ledger(ledger_url).records())
    assert record.model == "azure:prod-4o"
    assert record.actual_usd == GPT4O_USD


@respx.mock
def test_a_data_zone_deployment_costs_ten_percent_more(ledger_url: str) -> None:
    respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion(
        "gpt-4o", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    client = azure(ledger_url, deployments={
        "prod-4o": spendguard.AzureDeployment("gpt-4o", deployment_type="data_zone")})
    client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=600)
    [record] = list(open_ledger(ledger_url).records())
    assert record.actual_usd == GPT4O_USD * Decimal("1.1")


@respx.mock
def test_an_unmapped_deployment_is_refused_before_sending_with_the_fix(ledger_url: str) -> None:
    route = respx.post(url__startswith=AZURE).respond(200, json=chat_completion())
    client = azure(ledger_url)
    with pytest.raises(spendguard.UnknownModelError) as refused:
        client.chat.completions.create(model="other-dep", messages=MESSAGES, max_tokens=10)
    assert route.call_count == 0
    assert 'deployments={"other-dep": "gpt-4o"}' in str(refused.value)
    assert "[azure_deployments" in str(refused.value)
    assert isinstance(refused.value, openai.OpenAIError)  # the SDK passes it through
    assert list(open_ledger(ledger_url).records()) == []


def test_a_regional_deployment_must_state_its_uplift(ledger_url: str) -> None:
    with pytest.raises(spendguard.ConfigError, match="rate_multiplier"):
        azure(ledger_url, deployments={
            "eu-4o": spendguard.AzureDeployment("gpt-4o", deployment_type="regional")})


@respx.mock
def test_a_refused_azure_call_sends_nothing(ledger_url: str) -> None:
    route = respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion())
    client = azure(ledger_url, limit="0.001")
    with pytest.raises(spendguard.BudgetExceeded):
        client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=4000)
    assert route.call_count == 0


@respx.mock
def test_azure_retries_are_each_metered(ledger_url: str) -> None:
    route = respx.post(url__startswith=AZURE_CHAT)
    route.side_effect = [
        respx.MockResponse(500, json={"error": {"message": "boom"}},
                           headers={"retry-after-ms": "1"}),
        respx.MockResponse(200, json=chat_completion(
            "gpt-4o", prompt_tokens=1000, cached_tokens=200, completion_tokens=500)),
    ]
    client = azure(ledger_url)
    client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=600)
    records = sorted(open_ledger(ledger_url).records(), key=lambda r: r.attempt)
    # The mock bills 1,000 input tokens for a few-token request: more than its worst case, so
    # the settled attempt is charged as billed and flagged an overrun.
    assert [(r.attempt, r.status) for r in records] == [(1, "released"), (2, "overrun")]
    assert records[1].actual_usd == GPT4O_USD


@respx.mock
def test_an_azure_stream_settles_from_its_usage_chunk(ledger_url: str) -> None:
    respx.post(url__startswith=AZURE_CHAT).respond(
        200, content=sse(chat_stream_events("gpt-4o", words=5, prompt_tokens=20)),
        headers={"content-type": "text/event-stream"})
    client = azure(ledger_url)
    stream = client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=50,
                                            stream=True, stream_options={"include_usage": True})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    [record] = list(open_ledger(ledger_url).records())
    # 20 input × $2.50 + 10 output × $10 per million
    assert record.actual_usd == Decimal("0.00015")
    assert record.status == "ok"


@respx.mock
def test_the_async_azure_client_is_guarded_the_same_way(ledger_url: str) -> None:
    respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion(
        "gpt-4o", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    client = spendguard.AsyncAzureOpenAI(
        api_key="az-test", azure_endpoint=AZURE, api_version="2024-10-21",
        deployments={"prod-4o": "gpt-4o"}, budget=spendguard.Budget("1", ledger=ledger_url))
    asyncio.run(client.chat.completions.create(model="prod-4o", messages=MESSAGES,
                                               max_tokens=600))
    [record] = list(open_ledger(ledger_url).records())
    assert record.actual_usd == GPT4O_USD


@respx.mock
def test_deployments_can_come_from_a_price_file(tmp_path: Path, ledger_url: str) -> None:
    prices = tmp_path / "azure.toml"
    prices.write_text('schema = 1\n[azure_deployments."prod-4o"]\nmodel = "gpt-4o"\n'
                      'deployment_type = "data_zone"\n')
    respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion(
        "gpt-4o", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    table = spendguard.PriceTable.bundled().with_overrides(prices)
    client = azure(ledger_url, deployments=None, prices=table)
    client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=600)
    [record] = list(open_ledger(ledger_url).records())
    assert record.actual_usd == GPT4O_USD * Decimal("1.1")


@respx.mock
def test_a_host_base_url_prices_kimi_k3_at_moonshots_rates(ledger_url: str) -> None:
    respx.post(MOONSHOT_CHAT).respond(200, json=chat_completion(
        "kimi-k3", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    b = spendguard.Budget("1", ledger=ledger_url)
    client = spendguard.OpenAI(api_key="k", base_url="https://api.moonshot.ai/v1", budget=b)
    client.chat.completions.create(model="kimi-k3", messages=MESSAGES, max_tokens=600)
    # 800 cache-miss × $3.00 + 200 cache-hit × $0.30 + 500 output × $15.00, per million
    assert b.spent == Decimal("0.00996")
    [record] = list(open_ledger(ledger_url).records())
    assert record.model == "moonshot/kimi-k3"
    assert record.estimated_input_tokens is not None


@respx.mock
def test_deepseek_cache_hits_are_read_from_its_own_usage_field(ledger_url: str) -> None:
    body = chat_completion("deepseek-chat", prompt_tokens=1000, completion_tokens=500)
    body["usage"].pop("prompt_tokens_details")
    body["usage"].update(prompt_cache_hit_tokens=600, prompt_cache_miss_tokens=400)
    respx.post("https://api.deepseek.com/chat/completions").respond(200, json=body)
    b = spendguard.Budget("1", ledger=ledger_url)
    client = spendguard.OpenAI(api_key="k", base_url="https://api.deepseek.com", budget=b)
    client.chat.completions.create(model="deepseek-chat", messages=MESSAGES, max_tokens=600)
    # 400 miss × $0.28 + 600 hit × $0.028 + 500 output × $0.42, per million
    assert b.spent == Decimal("0.0003388")


@respx.mock
def test_a_model_the_host_does_not_list_is_refused_not_priced_as_a_namesake(
        ledger_url: str) -> None:
    route = respx.post(MOONSHOT_CHAT).respond(200, json=chat_completion())
    client = spendguard.OpenAI(api_key="k", base_url="https://api.moonshot.ai/v1",
                               budget=spendguard.Budget("1", ledger=ledger_url))
    with pytest.raises(spendguard.UnknownModelError, match=r'\[hosts.moonshot.models."gpt-4o"\]'):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=10)
    assert route.call_count == 0


@respx.mock
def test_a_host_stream_settles_exactly(ledger_url: str) -> None:
    respx.post("https://api.groq.com/openai/v1/chat/completions").respond(
        200, content=sse(chat_stream_events("llama-3.3-70b-versatile", words=5,
                                            prompt_tokens=100)),
        headers={"content-type": "text/event-stream"})
    client = spendguard.OpenAI(api_key="k", base_url="https://api.groq.com/openai/v1",
                               budget=spendguard.Budget("1", ledger=ledger_url))
    for _ in client.chat.completions.create(model="llama-3.3-70b-versatile", messages=MESSAGES,
                                            max_tokens=50, stream=True):
        pass
    [record] = list(open_ledger(ledger_url).records())
    # 100 input × $0.59 + 10 output × $0.79 per million
    assert record.actual_usd == Decimal("0.0000669")
    assert record.model == "groq/llama-3.3-70b-versatile"


@respx.mock
def test_an_opted_in_unmapped_deployment_is_priced_from_the_response(ledger_url: str) -> None:
    route = respx.post(url__startswith=f"{AZURE}/openai/deployments/new-dep/").respond(
        200, json=chat_completion("gpt-4o-2024-11-20", prompt_tokens=1000, cached_tokens=200,
                                  completion_tokens=500))
    client = azure(ledger_url, unmapped_deployments="price_from_response")
    client.chat.completions.create(model="new-dep", messages=MESSAGES, max_tokens=600)
    assert route.call_count == 1  # sent unguarded: nothing was reserved for it
    [record] = list(open_ledger(ledger_url).records())
    assert record.model == "azure:new-dep"
    assert record.estimated_usd == 0
    assert record.actual_usd == GPT4O_USD  # priced after the fact as the reported gpt-4o


@respx.mock
def test_an_unguarded_call_whose_model_is_unknown_is_recorded_unpriced(
        ledger_url: str, caplog: pytest.LogCaptureFixture) -> None:
    respx.post(url__startswith=f"{AZURE}/openai/deployments/new-dep/").respond(
        200, json=chat_completion("mystery-model"))
    client = azure(ledger_url, unmapped_deployments="price_from_response")
    caplog.set_level(logging.DEBUG, logger="spendguard")  # WARNING once per cause, then DEBUG
    reply = client.chat.completions.create(model="new-dep", messages=MESSAGES, max_tokens=600)
    assert "status 'unpriced'" in caplog.text  # logged, never a Python warning after sending
    assert reply.choices[0].message.content == "hi"  # the caller still gets the answer
    [record] = list(open_ledger(ledger_url).records())
    assert (record.status, record.actual_usd) == ("unpriced", Decimal(0))


def test_unmapped_deployments_takes_one_of_two_modes(ledger_url: str) -> None:
    with pytest.raises(spendguard.ConfigError, match="price_from_response"):
        azure(ledger_url, unmapped_deployments="guess")


@respx.mock
def test_a_wrapped_sdk_azure_client_uses_the_price_file_mapping(tmp_path: Path,
                                                                 ledger_url: str) -> None:
    prices = tmp_path / "azure.toml"
    prices.write_text('schema = 1\n[azure_deployments."prod-4o"]\nmodel = "gpt-4o"\n')
    respx.post(url__startswith=AZURE_CHAT).respond(200, json=chat_completion(
        "gpt-4o", prompt_tokens=1000, cached_tokens=200, completion_tokens=500))
    client = spendguard.wrap(
        openai.AzureOpenAI(api_key="k", azure_endpoint=AZURE, api_version="2024-10-21"),
        budget=spendguard.Budget("1", ledger=ledger_url),
        prices=spendguard.PriceTable.bundled().with_overrides(prices))
    client.chat.completions.create(model="prod-4o", messages=MESSAGES, max_tokens=600)
    [record] = list(open_ledger(ledger_url).records())
    assert (record.model, record.actual_usd) == ("azure:prod-4o", GPT4O_USD)
