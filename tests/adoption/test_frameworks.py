"""Frameworks that build their own clients, under ``spendguard.install()``: the client each
builds internally is guarded (the ledger agrees with the framework's own usage), a tight budget
refuses with no request reaching the emulator, and ``uninstall()`` gives plain clients back.

The frameworks come with the ``[frameworks]`` test extra (CI installs it); without one, its
tests are skipped. Each talks to the emulator over loopback HTTP, configured from the
environment as the framework's users would do it.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator

import pytest

import spendguard
from spendguard import BudgetExceeded
from spendguard.testing import Emulator, serve

PROMPT = "Say something short."


@pytest.fixture(name="emulator")
def fixture_emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    emulator = Emulator()
    with serve(emulator) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # it would upload traces
        yield emulator
    spendguard.uninstall()


async def _close_clients_built_inside() -> None:
    """Close the async SDK clients the frameworks built and keep to themselves, while this
    test's event loop still runs (their sockets would otherwise outlive it)."""
    import anthropic
    import openai

    for client in [o for o in gc.get_objects()
                   if isinstance(o, (openai.AsyncOpenAI, anthropic.AsyncAnthropic))]:
        await client.close()


def _budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger=f"memory://fw-{uuid.uuid4().hex[:8]}",
                             warn_at=None)


def _refused(exc: BaseException) -> bool:
    """Whether a framework's exception is (or wraps) spendguard's refusal."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BudgetExceeded):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _tokens(budget: spendguard.Budget) -> tuple[int, int, int]:
    records = list(budget.ledger.records(scope=budget.scope))
    return (len(records), sum(r.tokens.get("input", 0) + r.tokens.get("cache_read", 0)
                              for r in records),
            sum(r.tokens.get("output", 0) for r in records))


def test_langchain_chat_openai_builds_a_guarded_client(emulator: Emulator) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    chat = langchain_openai.ChatOpenAI
    budget = _budget()
    spendguard.install(budget=budget)
    # ChatOpenAI shares one cached httpx client per (base URL, timeout): a new timeout gets a
    # new one, so each step below starts from a client built while it runs.
    reply = chat(model="gpt-5.5", max_tokens=30, timeout=41).invoke(PROMPT)
    usage = reply.usage_metadata
    assert usage is not None
    assert _tokens(budget) == (1, usage["input_tokens"], usage["output_tokens"])

    spendguard.install(budget=_budget("0.00001"))
    with pytest.raises(Exception) as error:
        chat(model="gpt-5.5", max_tokens=30, max_retries=0, timeout=42).invoke(PROMPT)
    assert _refused(error.value)
    assert len(emulator.requests) == 1

    spendguard.uninstall()
    chat(model="gpt-5.5", max_tokens=30, timeout=43).invoke(PROMPT)
    assert len(emulator.requests) == 2 and _tokens(budget)[0] == 1


def test_langchain_clients_sharing_an_httpx_client_each_get_the_budget_installed_then(
        emulator: Emulator) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    spendguard.install(budget=_budget())
    langchain_openai.ChatOpenAI(model="gpt-5.5", max_tokens=30, timeout=44).invoke(PROMPT)
    spendguard.install(budget=_budget("0.00001"))
    with pytest.raises(BudgetExceeded):
        langchain_openai.ChatOpenAI(model="gpt-5.5", max_tokens=30, max_retries=0,
                                    timeout=44).invoke(PROMPT)


async def test_openai_agents_default_client_is_guarded(emulator: Emulator) -> None:
    agents = pytest.importorskip("agents")
    budget = _budget()
    spendguard.install(budget=budget)
    agent = agents.Agent(name="helper", instructions="Be brief.", model="gpt-5.5",
                         model_settings=agents.ModelSettings(max_tokens=30))
    result = await agents.Runner.run(agent, PROMPT)
    usage = result.context_wrapper.usage
    assert _tokens(budget) == (usage.requests, usage.input_tokens, usage.output_tokens)

    spendguard.install(budget=_budget("0.00001"))
    fresh = agents.Agent(name="helper", instructions="Be brief.",
                         model=agents.OpenAIResponsesModel(
                             "gpt-5.5", agents.AsyncOpenAI(max_retries=0)))
    with pytest.raises(Exception) as error:
        await agents.Runner.run(fresh, PROMPT)
    assert _refused(error.value)
    assert len(emulator.requests) == usage.requests

    spendguard.uninstall()
    plain = agents.OpenAIResponsesModel("gpt-5.5", agents.AsyncOpenAI())
    await agents.Runner.run(agents.Agent(name="helper", model=plain), PROMPT)
    await _close_clients_built_inside()
    assert len(emulator.requests) == usage.requests + 1
    assert _tokens(budget)[0] == usage.requests


async def test_pydantic_ai_openai_provider_builds_a_guarded_client(emulator: Emulator) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.settings import ModelSettings

    budget = _budget()
    spendguard.install(budget=budget)
    agent = Agent(OpenAIChatModel("gpt-5.5"), model_settings=ModelSettings(max_tokens=30))
    usage = (await agent.run(PROMPT)).usage
    assert _tokens(budget) == (usage.requests, usage.input_tokens, usage.output_tokens)

    spendguard.install(budget=_budget("0.00001"))
    with pytest.raises(Exception) as error:
        await Agent(OpenAIChatModel("gpt-5.5")).run(PROMPT)
    assert _refused(error.value)
    assert len(emulator.requests) == usage.requests

    spendguard.uninstall()
    await Agent(OpenAIChatModel("gpt-5.5")).run(PROMPT)
    await _close_clients_built_inside()
    assert len(emulator.requests) == usage.requests + 1
    assert _tokens(budget)[0] == usage.requests


async def test_pydantic_ai_anthropic_provider_builds_a_guarded_client(emulator: Emulator) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.settings import ModelSettings

    budget = _budget()
    spendguard.install(budget=budget)
    agent = Agent(AnthropicModel("claude-sonnet-4-6"),
                  model_settings=ModelSettings(max_tokens=30))
    usage = (await agent.run(PROMPT)).usage
    assert _tokens(budget) == (usage.requests, usage.input_tokens, usage.output_tokens)

    spendguard.install(budget=_budget("0.00001"))
    with pytest.raises(Exception) as error:
        await Agent(AnthropicModel("claude-sonnet-4-6"),
                    model_settings=ModelSettings(max_tokens=30)).run(PROMPT)
    await _close_clients_built_inside()
    assert _refused(error.value)
    assert len(emulator.requests) == usage.requests
