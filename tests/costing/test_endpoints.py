"""The endpoint vocabulary: every path form resolves to one member, which knows the rest."""

from __future__ import annotations

import copy
import pickle

import anthropic
import openai
import pytest

from spendguard import Endpoint, count_request_tokens

CHAT, RESPONSES, EMBEDDINGS, MESSAGES, GENERATE = map(Endpoint, (
    "chat.completions", "responses", "embeddings", "messages", "generate_content"))
OPENAI = "openai"
ANTHROPIC = "anthropic"
BODY = {"model": "gpt-4o-mini", "input": [{"role": "user", "content": "Summarise the report"}]}


@pytest.mark.parametrize(("provider", "path", "endpoint"), [
    (OPENAI, "/v1/chat/completions", CHAT),
    (OPENAI, "/openai/deployments/prod-4o/chat/completions", CHAT),  # Azure
    (OPENAI, "/v1/chat/completions?api-version=2025-01-01", CHAT),
    (OPENAI, "/v1/responses", RESPONSES),
    (OPENAI, "/v1/responses/compact", RESPONSES),
    (OPENAI, "/v1/embeddings/", EMBEDDINGS),
    (ANTHROPIC, "/v1/messages", MESSAGES),
    (ANTHROPIC, "/model/anthropic.claude-sonnet-4-5-v1:0/invoke", MESSAGES),  # Bedrock
    (ANTHROPIC, "/model/us.anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream",
     MESSAGES),
    (ANTHROPIC, "/v1/projects/p/locations/global/publishers/anthropic/models/"
                "claude-sonnet-4-5@20250929:streamRawPredict", MESSAGES),  # Vertex
])
def test_every_path_form_of_a_priced_endpoint_resolves_to_its_member(
        provider: str, path: str, endpoint: Endpoint) -> None:
    assert Endpoint.from_path(provider, path) is endpoint


@pytest.mark.parametrize(("provider", "path"), [
    (OPENAI, "/v1/files"), (OPENAI, "/v1/responses/input_tokens"),
    (OPENAI, "/v1/batches/b1/cancel"), (OPENAI, "/v1/chat/completions/chatcmpl-1"),
    (OPENAI, "/v1/conversations/c1/items"), (ANTHROPIC, "/v1/messages/count_tokens"),
    (ANTHROPIC, "/v1/projects/p/locations/global/publishers/anthropic/models/"
                "count-tokens:rawPredict"),
])
def test_paths_that_cannot_spend_are_free(provider: str, path: str) -> None:
    assert Endpoint.from_path(provider, path) is Endpoint.FREE


@pytest.mark.parametrize(("provider", "path"), [
    (OPENAI, "/v1/batches"), (OPENAI, "/v1/images/generations"), (OPENAI, "/v1/messages"),
    (ANTHROPIC, "/v1/chat/completions"), (ANTHROPIC, "/v1/messages/batches"),
])
def test_paths_spendguard_cannot_price_resolve_to_none(provider: str, path: str) -> None:
    assert Endpoint.from_path(provider, path) is None


def test_each_member_carries_its_provider_path_and_batch_url() -> None:
    assert [(e.provider, e.path, e.batch_url) for e in Endpoint] == [
        (OPENAI, "/v1/chat/completions", "/v1/chat/completions"),
        (OPENAI, "/v1/responses", "/v1/responses"),
        (OPENAI, "/v1/embeddings", "/v1/embeddings"),
        (ANTHROPIC, "/v1/messages", "/v1/messages"),
        ("gemini", None, "/v1beta/models/{model}:generateContent"),
        ("gemini", None, None),
        ("gemini", None, None),
        ("gemini", None, None),
        (None, None, None),
    ]
    assert Endpoint.of(OPENAI) == (CHAT, RESPONSES, EMBEDDINGS)
    assert Endpoint.of("anthropic") == (MESSAGES,)
    assert not Endpoint.FREE.batchable


@pytest.mark.parametrize(("name", "endpoint"), [
    ("chat", CHAT), ("chat.completions", CHAT),
    ("/v1/chat/completions", CHAT), (" responses ", RESPONSES),
    ("/v1/embeddings", EMBEDDINGS), ("messages", MESSAGES),
    ("free", None), ("completions", None),
])
def test_a_named_endpoint_is_read_from_its_short_name_value_or_path(
        name: str, endpoint: Endpoint | None) -> None:
    assert Endpoint.named(name) is endpoint


def test_a_batch_url_names_its_endpoint_and_anything_else_none() -> None:
    assert Endpoint.from_batch_url("/v1/responses") is RESPONSES
    assert Endpoint.from_batch_url("/v1/messages/") is MESSAGES
    assert Endpoint.from_batch_url("/v1beta/models/{model}:generateContent") \
        is GENERATE
    assert Endpoint.from_batch_url("/v1/completions") is None
    assert Endpoint.from_batch_url(None) is None


def test_the_sdk_method_is_resolved_from_the_member_on_real_clients() -> None:
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9")
    claude = anthropic.Anthropic(api_key="sk-ant-test", base_url="http://127.0.0.1:9")
    assert CHAT.method_of(client) == client.chat.completions.create
    assert RESPONSES.method_of(client) == client.responses.create
    assert EMBEDDINGS.method_of(client) == client.embeddings.create
    assert MESSAGES.method_of(claude) == claude.messages.create
    with pytest.raises(ValueError, match="no SDK method"):
        Endpoint.FREE.method_of(client)


def test_tokens_are_counted_alike_for_the_member_and_every_path_form_of_it() -> None:
    by_member = count_request_tokens("openai", RESPONSES, BODY)
    for path in ("/v1/responses", "/v1/responses/compact"):
        assert count_request_tokens("openai", path, BODY) == by_member
        assert count_request_tokens("openai", path, BODY).method == by_member.method


def test_an_endpoint_is_its_value_made_once() -> None:
    assert Endpoint("chat.completions") is CHAT is Endpoint.CHAT
    assert CHAT == "chat.completions" and hash(CHAT) == hash("chat.completions")
    assert CHAT.value == "chat.completions" and type(CHAT.value) is str and CHAT.name == "CHAT"
    assert f"{CHAT}" == "chat.completions" and {"chat.completions": 1}[CHAT] == 1
    assert pickle.loads(pickle.dumps(CHAT)) is CHAT and copy.deepcopy(GENERATE) is GENERATE
    with pytest.raises(ValueError, match="not a valid Endpoint"):
        Endpoint("completions")
    with pytest.raises(AttributeError, match="COMPLETIONS"):
        Endpoint.COMPLETIONS  # noqa: B018 - the lookup is what is tested
    with pytest.raises(AttributeError, match="read-only"):
        CHAT.generates = False
