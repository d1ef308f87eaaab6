"""The framework matrix under ``spendguard.install()``: for every framework of the
``[frameworks]`` test extra, each request the emulator received is one ledger record priced
from the usage it answered, a tight budget refuses with nothing received, and a program that
works without spendguard works with it.

One emulator server for the module, over loopback, configured from the environment the way
the frameworks' users do it. A framework that is not installed is skipped with the reason.
(LangChain ChatOpenAI, openai-agents and pydantic-ai's own clients: tests/adoption/
test_frameworks.py; ``spendguard run`` cells: test_framework_run.py.)
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

import spendguard
from spendguard import CallEvent
from spendguard.testing import Emulator, serve
from spendguard.testing.server import EmulatorServer
from tests.adoption.frameworks_helpers import import_framework, quiet_framework_warnings

PROMPT = "Say something short."
MESSAGES: Any = [{"role": "user", "content": PROMPT}]

pytestmark = quiet_framework_warnings


@pytest.fixture(name="server", scope="module")
def fixture_server() -> Iterator[tuple[Emulator, EmulatorServer]]:
    emulator = Emulator()
    with serve(emulator) as running:
        yield emulator, running


@pytest.fixture(name="cell")
def fixture_cell(server: tuple[Emulator, EmulatorServer],
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[Cell]:
    emulator, running = server
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", running.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", running.anthropic_base_url)
    cell = Cell(emulator, running, monkeypatch)
    spendguard.subscribe(cell.listen)
    yield cell
    spendguard.unsubscribe(cell.listen)
    spendguard.uninstall()


class Cell:
    """One framework × mode: its budget, what the emulator received meanwhile, refusals."""

    def __init__(self, emulator: Emulator, running: EmulatorServer,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.emulator = emulator
        self.running = running
        self.monkeypatch = monkeypatch
        self.start = len(emulator.requests)
        self.refusals: list[CallEvent] = []
        self.budget = spendguard.Budget("1", ledger=f"memory://matrix-{uuid.uuid4().hex[:8]}",
                                        warn_at=None)

    def listen(self, event: CallEvent) -> None:
        if event.stage == "refused":
            self.refusals.append(event)

    def install(self, limit: str = "1") -> None:
        self.budget = spendguard.Budget(limit, ledger=f"memory://matrix-{uuid.uuid4().hex[:8]}",
                                        warn_at=None)
        self.start = len(self.emulator.requests)
        self.refusals.clear()
        spendguard.install(self.budget)

    def received(self) -> int:
        return len(self.emulator.requests) - self.start

    def records(self) -> list[Any]:
        return list(self.budget.ledger.records(scope=self.budget.scope))

    def assert_exact(self, usage: list[tuple[int, int]] | None = None) -> None:
        """One ok record per request received, priced from its usage (and equal to the
        framework's own usage numbers, when it reports them: (input, output) per call)."""
        records = self.records()
        assert len(records) == self.received() > 0
        assert all(r.status == "ok" for r in records)
        assert self.budget.spent == sum((r.actual_usd for r in records), Decimal(0)) > 0
        if usage is not None:
            assert sorted(usage) == sorted(
                (r.tokens.get("input", 0) + r.tokens.get("cache_read", 0),
                 r.tokens.get("output", 0)) for r in records)

    def assert_refused(self, exc: BaseException, *, refusals: int = 1) -> None:
        seen: BaseException | None = exc
        while seen is not None and not isinstance(seen, spendguard.BudgetExceeded):
            seen = seen.__cause__ or seen.__context__
        assert seen is not None, f"not a refusal: {exc!r}"
        assert self.received() == 0 and len(self.refusals) == refusals


def test_langchain_chat_anthropic(cell: Cell) -> None:
    langchain_anthropic = import_framework("langchain_anthropic", cell.monkeypatch)
    cell.install()
    reply = langchain_anthropic.ChatAnthropic(model="claude-sonnet-4-6", max_tokens=30,
                                              default_request_timeout=51).invoke(PROMPT)
    usage = reply.usage_metadata
    cell.assert_exact([(usage["input_tokens"], usage["output_tokens"])])
    cell.install("0.00001")
    with pytest.raises(Exception) as error:
        langchain_anthropic.ChatAnthropic(model="claude-sonnet-4-6", max_tokens=30,
                                          max_retries=2, default_request_timeout=52
                                          ).invoke(PROMPT)
    cell.assert_refused(error.value)


def test_langgraph_graph_of_a_chat_model(cell: Cell) -> None:
    graph_module = import_framework("langgraph.graph", cell.monkeypatch)
    langchain_openai = import_framework("langchain_openai", cell.monkeypatch)
    cell.install()
    chat = langchain_openai.ChatOpenAI(model="gpt-5.5", max_tokens=30, timeout=53)

    def respond(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    builder = graph_module.StateGraph(graph_module.MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(graph_module.START, "respond")
    builder.add_edge("respond", graph_module.END)
    graph = builder.compile()
    result = graph.invoke({"messages": [("user", PROMPT)]})
    usage = result["messages"][-1].usage_metadata
    cell.assert_exact([(usage["input_tokens"], usage["output_tokens"])])


def test_pydantic_ai_across_two_event_loops_under_install(cell: Cell) -> None:
    import_framework("pydantic_ai", cell.monkeypatch)
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.settings import ModelSettings

    cell.install()
    agent = Agent(OpenAIChatModel("gpt-5.5"), model_settings=ModelSettings(max_tokens=30))

    async def one_run() -> tuple[int, int]:
        async with agent:  # a new loop: pydantic-ai swaps in a new http client, closed after
            run = (await agent.run(PROMPT)).usage
        return run.input_tokens, run.output_tokens

    usage = [asyncio.run(one_run()) for _ in range(2)]
    cell.assert_exact(usage)


# A client pydantic-ai does not own keeps the first loop's connections, which it never
# closes; their sockets are reported when collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_pydantic_ai_with_a_handed_in_client_charges_only_what_was_sent(cell: Cell) -> None:
    import_framework("pydantic_ai", cell.monkeypatch)
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

    client = spendguard.AsyncOpenAI(budget=cell.budget, max_retries=0)
    agent = Agent(OpenAIChatModel("gpt-5.5", provider=OpenAIProvider(openai_client=client)),
                  model_settings=ModelSettings(max_tokens=30))
    outcomes = []
    for _ in range(2):  # the second loop may find the first loop's connections unusable
        try:
            asyncio.run(agent.run(PROMPT))
            outcomes.append("ok")
        except Exception as exc:  # what pydantic-ai does with a client it does not own
            outcomes.append(type(exc).__name__)
    # One record per request; every request the emulator received is billed (a failure
    # after the request was handed to a connection is charged: it may have arrived).
    records = cell.records()
    assert len(records) == 2 and outcomes[0] == "ok"
    assert len([r for r in records if r.status != "released"]) >= cell.received()


def test_litellm_openai_and_anthropic_routes(cell: Cell) -> None:
    litellm = import_framework("litellm", cell.monkeypatch)
    cell.install()
    usage = []
    for model, base in (("openai/gpt-5.5", cell.running.openai_base_url),
                        ("anthropic/claude-sonnet-4-6", cell.running.anthropic_base_url)):
        reply = litellm.completion(model=model, messages=MESSAGES, max_tokens=30,
                                   api_base=base, api_key="k", num_retries=2, timeout=54)
        usage.append((reply.usage.prompt_tokens, reply.usage.completion_tokens))
    cell.assert_exact(usage)


def test_litellm_refusals_are_never_sent(cell: Cell) -> None:
    litellm = import_framework("litellm", cell.monkeypatch)
    for model, base in (("openai/gpt-5.5", cell.running.openai_base_url),
                        ("anthropic/claude-sonnet-4-6", cell.running.anthropic_base_url)):
        cell.install("0.00001")
        with pytest.raises(Exception) as error:
            litellm.completion(model=model, messages=MESSAGES, max_tokens=30,
                               api_base=base, api_key="k", timeout=55)
        cell.assert_refused(error.value)


def test_dspy_language_model(cell: Cell) -> None:
    dspy = import_framework("dspy", cell.monkeypatch)
    cell.install()
    lm = dspy.LM("openai/gpt-4o", api_base=cell.running.openai_base_url, api_key="k",
                 max_tokens=30, cache=False, num_retries=0)
    lm(PROMPT)
    usage = lm.history[-1]["usage"]
    cell.assert_exact([(usage["prompt_tokens"], usage["completion_tokens"])])
    cell.install("0.00001")
    tight = dspy.LM("openai/gpt-4o", api_base=cell.running.openai_base_url, api_key="k",
                    max_tokens=30, cache=False, num_retries=0, timeout=56)
    with pytest.raises(Exception) as error:
        tight(PROMPT)
    cell.assert_refused(error.value)


def test_smolagents_openai_model(cell: Cell) -> None:
    smolagents = import_framework("smolagents", cell.monkeypatch)
    cell.install()
    model = smolagents.OpenAIModel(model_id="gpt-5.5", api_base=cell.running.openai_base_url,
                                   api_key="k")
    reply = model.generate([{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                           max_tokens=30)
    cell.assert_exact([(reply.token_usage.input_tokens, reply.token_usage.output_tokens)])
    cell.install("0.00001")
    tight = smolagents.OpenAIModel(model_id="gpt-5.5", api_base=cell.running.openai_base_url,
                                   api_key="k")
    with pytest.raises(Exception) as error:
        tight.generate([{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                       max_tokens=30)
    cell.assert_refused(error.value)
