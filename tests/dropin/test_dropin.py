"""Drop-in behaviour through the public API: shared http clients, copies, uploads, signatures."""

from __future__ import annotations

import ast
import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest
import respx

import spendguard
from tests.provider_bodies import anthropic_message, chat_completion

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_MESSAGES = "https://api.anthropic.com/v1/messages"
MESSAGES: Any = [{"role": "user", "content": "Say hi"}]
DROP_INS: list[Any] = [spendguard.OpenAI, spendguard.AsyncOpenAI, spendguard.Anthropic,
                       spendguard.AsyncAnthropic]
SPENDGUARD_OPTIONS = ("budget", "cap_output", "allow_unpriced", "store_prompts", "prices",
                      "cache_order")


def memory_budget(limit: str = "1") -> spendguard.Budget:
    return spendguard.Budget(limit, ledger="memory://")


def chat(client: Any) -> Any:
    return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=600)


def message(client: Any) -> Any:
    return client.messages.create(model="claude-haiku-4-5", messages=MESSAGES, max_tokens=600)


# --- a budget belongs to the SDK client, not to the httpx client ---------------------------

@respx.mock
def test_two_clients_sharing_one_http_client_keep_their_own_budgets() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    shared = httpx2.Client()
    tiny, roomy = memory_budget("0.000001"), memory_budget("1")
    client_a = spendguard.OpenAI(api_key="k", http_client=shared, budget=tiny)
    client_b = spendguard.OpenAI(api_key="k", http_client=shared, budget=roomy)
    with pytest.raises(spendguard.BudgetExceeded):
        chat(client_a)
    chat(client_b)
    assert tiny.spent == 0 and tiny.reserved == 0
    assert roomy.spent > 0
    assert len(respx.calls) == 1


@respx.mock
def test_a_plain_client_sharing_a_guarded_http_client_is_charged_to_no_budget() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    shared = httpx2.Client()
    guarded_budget = memory_budget()
    spendguard.OpenAI(api_key="k", http_client=shared, budget=guarded_budget)
    plain = openai.OpenAI(api_key="k", http_client=shared)
    chat(plain)
    assert guarded_budget.spent == 0
    assert list(guarded_budget.ledger.records()) == []


@respx.mock
def test_wrapping_one_client_does_not_rebudget_another_on_its_http_client() -> None:
    # LangChain's ChatAnthropic caches one http client for every instance it builds.
    respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    shared = httpx2.Client()
    first_budget, second_budget = memory_budget(), memory_budget()
    first = spendguard.wrap(anthropic.Anthropic(api_key="k", http_client=shared),
                            budget=first_budget)
    second = anthropic.Anthropic(api_key="k", http_client=shared)
    message(second)
    assert first_budget.spent == 0
    spendguard.wrap(second, budget=second_budget)
    message(first)
    message(second)
    assert first_budget.spent == second_budget.spent > 0
    assert len(list(first_budget.ledger.records())) == 1
    assert len(list(second_budget.ledger.records())) == 1


def test_async_clients_sharing_one_http_client_keep_their_own_budgets() -> None:
    async def scenario() -> None:
        shared = httpx2.AsyncClient()
        tiny, roomy = memory_budget("0.000001"), memory_budget("1")
        client_a = spendguard.AsyncAnthropic(api_key="k", http_client=shared, budget=tiny)
        client_b = spendguard.AsyncAnthropic(api_key="k", http_client=shared, budget=roomy)
        plain = anthropic.AsyncAnthropic(api_key="k", http_client=shared)
        with pytest.raises(spendguard.BudgetExceeded):
            await message(client_a)
        await message(client_b)
        await message(plain)
        assert tiny.spent == 0 and tiny.reserved == 0
        assert len(list(roomy.ledger.records())) == 1

    with respx.mock:
        route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
        asyncio.run(scenario())
        assert route.call_count == 2


def test_a_wrapped_async_client_is_charged_and_its_neighbour_is_not() -> None:
    async def scenario(wrapped_budget: spendguard.Budget) -> None:
        shared = httpx2.AsyncClient()
        wrapped = spendguard.wrap(openai.AsyncOpenAI(api_key="k", http_client=shared),
                                  budget=wrapped_budget)
        neighbour = openai.AsyncOpenAI(api_key="k", http_client=shared)
        await chat(wrapped)
        await chat(neighbour)
        await chat(wrapped.with_options(timeout=3))

    wrapped_budget = memory_budget()
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
        asyncio.run(scenario(wrapped_budget))
        assert route.call_count == 3
    assert len(list(wrapped_budget.ledger.records())) == 2


# --- copy() / with_options() --------------------------------------------------------------

@respx.mock
def test_a_copy_keeps_its_parents_budget_and_options() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    parent_budget = memory_budget()
    client = spendguard.OpenAI(api_key="k", budget=parent_budget, store_prompts=True)
    chat(client.with_options(timeout=5))
    chat(client.copy(max_retries=0))
    records = list(parent_budget.ledger.records())
    assert len(records) == 2
    assert all(record.prompt_text for record in records)


@respx.mock
def test_with_options_budget_charges_the_copy_to_the_new_budget() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    parent_budget, copy_budget = memory_budget(), memory_budget()
    client = spendguard.OpenAI(api_key="k", budget=parent_budget)
    chat(client.with_options(budget=copy_budget))
    chat(client)
    assert len(list(copy_budget.ledger.records())) == 1
    assert len(list(parent_budget.ledger.records())) == 1


@respx.mock
def test_with_options_http_client_is_guarded_like_the_constructors() -> None:
    route = respx.post(ANTHROPIC_MESSAGES).respond(200, json=anthropic_message())
    tiny = memory_budget("0.000001")
    client = spendguard.Anthropic(api_key="k", budget=tiny)
    copied = client.with_options(http_client=httpx2.Client())
    with pytest.raises(spendguard.BudgetExceeded):
        message(copied)
    assert route.call_count == 0
    roomy = memory_budget()
    message(client.with_options(http_client=httpx2.Client(), budget=roomy))
    assert len(list(roomy.ledger.records())) == 1


@respx.mock
def test_a_copy_of_a_wrapped_client_keeps_its_budget() -> None:
    respx.post(OPENAI_CHAT).respond(200, json=chat_completion())
    wrapped_budget = memory_budget()
    client = spendguard.wrap(openai.OpenAI(api_key="k"), budget=wrapped_budget)
    chat(client.with_options(http_client=httpx2.Client()))
    other = memory_budget()
    chat(client.copy(budget=other))
    assert len(list(wrapped_budget.ledger.records())) == 1
    assert len(list(other.ledger.records())) == 1
    chat(openai.OpenAI(api_key="k"))  # the SDK class itself is untouched
    assert len(list(wrapped_budget.ledger.records())) == 1


@pytest.mark.parametrize("cls", DROP_INS, ids=lambda cls: cls.__name__)
def test_constructor_and_copy_show_the_sdks_parameters_and_spendguards(cls: Any) -> None:
    sdk_class = cls.__mro__[2]
    init = inspect.signature(cls.__init__).parameters
    copy = inspect.signature(cls.copy).parameters
    for name in inspect.signature(sdk_class.__init__).parameters:
        assert name in init
    for name in inspect.signature(sdk_class.copy).parameters:
        assert name in copy
    for name in SPENDGUARD_OPTIONS:
        assert init[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert name in copy
    assert "args" not in init and "kwargs" not in init
    # The SDKs' own check: everything the constructor takes, copy() takes too.
    excluded = {"transport", "proxies", "_strict_response_validation", "_token_cache"}
    assert set(init) - excluded - {"self"} <= set(copy)
    assert cls.with_options is cls.copy


def test_a_subclass_keeps_the_constructor_of_the_class_it_derives_from() -> None:
    class Unpriced(spendguard.OpenAI):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("allow_unpriced", True)
            super().__init__(*args, **kwargs)

    class Derived(Unpriced):
        pass

    assert Derived.__init__ is Unpriced.__init__
    assert Derived(api_key="k").with_options(timeout=1)._spendguard_options["allow_unpriced"]


def test_a_copy_is_an_instance_of_the_drop_in_class() -> None:
    client = spendguard.AsyncOpenAI(api_key="k", budget=memory_budget())
    copied = client.with_options(timeout=3)
    assert type(copied) is spendguard.AsyncOpenAI
    assert copied.timeout == 3


# --- streamed request bodies ----------------------------------------------------------------

class Chunks:
    """An upload body that counts the chunks pulled from it."""

    def __init__(self) -> None:
        self.pulled = 0

    def __iter__(self) -> Iterator[bytes]:
        for part in (b"part-1 ", b"part-2"):
            self.pulled += 1
            yield part

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in (b"part-1 ", b"part-2"):
            self.pulled += 1
            yield part


class Provider(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """The transport under spendguard's: notes how much of the body was pulled on arrival.

    (httpx's MockTransport reads the body before its handler runs, so it cannot tell.)
    """

    def __init__(self, body: Chunks) -> None:
        self.body = body
        self.pulled_on_arrival: int | None = None
        self.content = b""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.pulled_on_arrival = self.body.pulled
        self.content = request.read()
        return httpx2.Response(200, json={"id": "file-1"})

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.pulled_on_arrival = self.body.pulled
        self.content = await request.aread()
        return httpx2.Response(200, json={"id": "file-1"})


UPLOADS = [(spendguard.OpenAI, "/files"), (spendguard.Anthropic, "/v1/files")]
ASYNC_UPLOADS = [(spendguard.AsyncOpenAI, "/files"), (spendguard.AsyncAnthropic, "/v1/files")]


@pytest.mark.parametrize(("cls", "path"), UPLOADS, ids=["openai", "anthropic"])
def test_an_iterator_upload_pulls_no_chunk_before_the_wrapped_transport(cls: Any,
                                                                        path: str) -> None:
    body = Chunks()
    provider = Provider(body)
    client = cls(api_key="k", base_url="https://provider.test", budget=memory_budget(),
                 http_client=httpx2.Client(transport=provider))
    client.post(path, content=body, cast_to=httpx2.Response,
                options={"headers": {"Content-Type": "application/octet-stream"}})
    assert provider.pulled_on_arrival == 0
    assert provider.content == b"part-1 part-2"


@pytest.mark.parametrize(("cls", "path"), ASYNC_UPLOADS, ids=["openai", "anthropic"])
def test_an_async_iterator_upload_pulls_no_chunk_before_the_wrapped_transport(
        cls: Any, path: str) -> None:
    body = Chunks()
    provider = Provider(body)

    async def upload() -> None:
        client = cls(api_key="k", base_url="https://provider.test", budget=memory_budget(),
                     http_client=httpx2.AsyncClient(transport=provider))
        await client.post(path, content=body.__aiter__(), cast_to=httpx2.Response,
                          options={"headers": {"Content-Type": "application/octet-stream"}})

    asyncio.run(upload())
    assert provider.pulled_on_arrival == 0
    assert provider.content == b"part-1 part-2"


def test_a_refused_endpoint_is_refused_before_its_body_is_read() -> None:
    body = Chunks()
    client = spendguard.OpenAI(api_key="k", base_url="https://provider.test",
                               http_client=httpx2.Client(transport=httpx2.MockTransport(
                                   lambda request: httpx2.Response(200))))
    with pytest.raises(spendguard.UnsupportedEndpointError):
        client.post("/images/generations", content=body, cast_to=httpx2.Response)
    assert body.pulled == 0



def declared_parameters(module_path: str, class_name: str, method: str) -> list[str]:
    """The parameters of a method as the drop-in module declares it for type checkers."""
    tree = ast.parse(Path(module_path).read_text())
    cls = next(node for node in tree.body
               if isinstance(node, ast.ClassDef) and node.name == class_name)
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef) and node.name == method:
            return [arg.arg for arg in node.args.kwonlyargs]
    raise AssertionError(f"{class_name}.{method} is not declared")


@pytest.mark.parametrize("cls", DROP_INS, ids=lambda cls: cls.__name__)
def test_the_signatures_type_checkers_see_follow_the_installed_sdk(cls: Any) -> None:
    # A new SDK parameter fails here until the declaration in the drop-in module gains it.
    module_path = inspect.getfile(cls)
    for method in ("__init__", "copy"):
        runtime = [name for name in inspect.signature(getattr(cls, method)).parameters
                   if name != "self"]
        assert declared_parameters(module_path, cls.__name__, method) == runtime
