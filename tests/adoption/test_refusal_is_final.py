"""A refusal is final: the SDKs' own retries, the retry loops frameworks build with tenacity,
openai-agents' runner retries and pydantic-ai neither send it nor ask again, and the program
gets a ``BudgetExceeded`` (or a framework error caused by one).

Its place in each SDK's error tree: an instance of the SDK's base error (``OpenAIError`` /
``AnthropicError``), so the SDK passes it through unwrapped, and of nothing below it
(``APIError``, ``APIConnectionError``, ``APIStatusError``), which is what retry predicates
test for.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import spendguard
from spendguard import BudgetExceeded, CallEvent
from spendguard.testing import Emulator, serve
from tests.adoption.frameworks_helpers import import_framework, quiet_framework_warnings

MESSAGES: Any = [{"role": "user", "content": "Say something short."}]
RETRYABLE = (openai.APIError, openai.APIConnectionError, openai.APIStatusError,
             anthropic.APIError, anthropic.APIConnectionError, anthropic.APIStatusError)
"""What retry predicates (the SDKs', LangChain's, tenacity loops in the wild) look for."""


@pytest.fixture(name="refusals")
def fixture_refusals() -> Iterator[list[CallEvent]]:
    seen: list[CallEvent] = []

    def listen(event: CallEvent) -> None:
        if event.stage == "refused":
            seen.append(event)

    spendguard.subscribe(listen)
    yield seen
    spendguard.unsubscribe(listen)
    spendguard.uninstall()


def _tight() -> spendguard.Budget:
    return spendguard.Budget("0.00001", ledger=f"memory://final-{uuid.uuid4().hex[:8]}",
                             warn_at=None)


def _refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BudgetExceeded):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_the_sdks_own_retries_never_retry_a_refusal(sdk: str,
                                                    refusals: list[CallEvent]) -> None:
    emulator = Emulator()
    with pytest.raises(BudgetExceeded) as refused:
        if sdk == "openai":
            client: Any = spendguard.wrap(emulator.openai_client(max_retries=5), _tight())
            client.chat.completions.create(model="gpt-5.5", messages=MESSAGES, max_tokens=30)
        else:
            client = spendguard.wrap(emulator.anthropic_client(max_retries=5), _tight())
            client.messages.create(model="claude-sonnet-4-6", messages=MESSAGES,
                                   max_tokens=30)
    assert isinstance(refused.value, (openai.OpenAIError, anthropic.AnthropicError))
    assert not isinstance(refused.value, RETRYABLE)
    assert len(refusals) == 1 and emulator.requests == []


def test_a_tenacity_retry_loop_on_api_errors_does_not_retry_a_refusal(
        refusals: list[CallEvent]) -> None:
    tenacity = pytest.importorskip("tenacity")
    emulator = Emulator()
    client = spendguard.wrap(emulator.openai_client(max_retries=0), _tight())
    retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(RETRYABLE),
                                 stop=tenacity.stop_after_attempt(4), reraise=True)
    with pytest.raises(BudgetExceeded):
        retrying(client.chat.completions.create, model="gpt-5.5", messages=MESSAGES,
                 max_tokens=30)
    assert len(refusals) == 1 and emulator.requests == []


async def test_openai_agents_runner_retries_do_not_retry_a_refusal(
        refusals: list[CallEvent], monkeypatch: pytest.MonkeyPatch) -> None:
    agents = pytest.importorskip("agents")
    from agents.retry import ModelRetrySettings, retry_policies

    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    emulator = Emulator()
    client = spendguard.AsyncOpenAI(api_key="k", base_url="http://emulator.invalid/v1",
                                    budget=_tight(), max_retries=0,
                                    http_client=httpx2.AsyncClient(
                                        transport=emulator.transport()))
    retry = ModelRetrySettings(max_retries=3, policy=retry_policies.any(
        retry_policies.provider_suggested(), retry_policies.network_error()))
    agent = agents.Agent(name="helper", model=agents.OpenAIResponsesModel("gpt-5.5", client),
                         model_settings=agents.ModelSettings(max_tokens=30, retry=retry))
    with pytest.raises(Exception) as error:
        await agents.Runner.run(agent, "hi")
    assert _refused(error.value)
    assert len(refusals) == 1 and emulator.requests == []
    await client.close()


async def test_pydantic_ai_surfaces_a_refusal_without_retrying_it(
        refusals: list[CallEvent]) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    emulator = Emulator()
    client = spendguard.AsyncAnthropic(api_key="k", base_url="http://emulator.invalid",
                                       budget=_tight(), max_retries=2,
                                       http_client=httpx2.AsyncClient(
                                           transport=emulator.transport()))
    agent = Agent(AnthropicModel("claude-sonnet-4-6",
                                 provider=AnthropicProvider(anthropic_client=client)),
                  retries=3)
    with pytest.raises(Exception) as error:
        await agent.run("hi")
    assert _refused(error.value)
    assert len(refusals) == 1 and emulator.requests == []
    await client.close()


@quiet_framework_warnings
def test_litellm_surfaces_a_refusal_it_was_not_asked_to_retry(
        refusals: list[CallEvent], monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_framework("litellm", monkeypatch)
    emulator = Emulator()
    with serve(emulator) as running:
        spendguard.install(_tight(), base_urls={running.anthropic_base_url: "anthropic"})
        with pytest.raises(Exception) as error:
            litellm.completion(model="anthropic/claude-sonnet-4-6", messages=MESSAGES,
                               max_tokens=30, api_base=running.anthropic_base_url,
                               api_key="k")
    assert _refused(error.value)
    assert len(refusals) == 1 and emulator.requests == []
