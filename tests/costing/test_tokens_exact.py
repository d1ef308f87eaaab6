"""count_tokens_exact: the providers' own count endpoints, mocked with respx."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx

from spendguard import ConfigError, ProviderResponseError, acount_tokens_exact, count_tokens_exact
from tests.tokens_helpers import COOKBOOK_TOOLS

ANTHROPIC_COUNT = "https://api.anthropic.com/v1/messages/count_tokens"
OPENAI_COUNT = "https://api.openai.com/v1/responses/input_tokens"


@respx.mock
def test_anthropic_count_tokens_is_exact_and_sends_the_request() -> None:
    route = respx.post(ANTHROPIC_COUNT).mock(
        return_value=httpx.Response(200, json={"input_tokens": 42}))
    client = anthropic.Anthropic(api_key="test-key")
    count = count_tokens_exact(client, "claude-opus-4-7", system="Be terse.",
                               messages=[{"role": "user", "content": "hello"}],
                               tools=COOKBOOK_TOOLS)
    assert count == 42
    assert count.exact
    assert count.method == "provider count_tokens"
    sent = json.loads(route.calls.last.request.content)
    assert sent["model"] == "claude-opus-4-7"
    assert sent["system"] == "Be terse."
    assert sent["messages"] == [{"role": "user", "content": "hello"}]
    assert sent["tools"][0]["name"] == "get_current_weather"
    assert "input_schema" in sent["tools"][0]  # OpenAI-shaped tool converted


@respx.mock
def test_openai_responses_input_tokens_is_exact_and_converts_chat_messages() -> None:
    route = respx.post(OPENAI_COUNT).mock(return_value=httpx.Response(
        200, json={"object": "response.input_tokens", "input_tokens": 17}))
    client = openai.OpenAI(api_key="test-key")
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "get_current_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    count = count_tokens_exact(client, "gpt-6.2-sol", messages=messages, system="Be brief.",
                               tools=COOKBOOK_TOOLS)
    assert count == 17
    assert count.exact
    sent = json.loads(route.calls.last.request.content)
    assert sent["instructions"] == "Be brief."
    assert sent["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "get_current_weather",
         "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    assert sent["tools"][0]["type"] == "function"
    assert sent["tools"][0]["name"] == "get_current_weather"


@respx.mock
async def test_async_twin_uses_the_async_clients() -> None:
    respx.post(ANTHROPIC_COUNT).mock(return_value=httpx.Response(200, json={"input_tokens": 9}))
    respx.post(OPENAI_COUNT).mock(return_value=httpx.Response(200, json={"input_tokens": 8}))
    messages = [{"role": "user", "content": "hello"}]
    claude = await acount_tokens_exact(anthropic.AsyncAnthropic(api_key="k"), "claude-haiku-4-5",
                                       messages=messages)
    gpt = await acount_tokens_exact(openai.AsyncOpenAI(api_key="k"), "gpt-5", messages=messages)
    assert (claude, claude.exact, gpt, gpt.exact) == (9, True, 8, True)


@respx.mock
def test_a_reply_without_input_tokens_is_a_provider_response_error() -> None:
    respx.post(OPENAI_COUNT).mock(return_value=httpx.Response(200, json={"object": "x"}))
    with pytest.raises(ProviderResponseError, match="input_tokens"):
        count_tokens_exact(openai.OpenAI(api_key="k"), "gpt-5",
                           messages=[{"role": "user", "content": "hi"}])


def test_a_client_that_cannot_count_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="client must be"):
        count_tokens_exact(object(), "gpt-5", messages=[{"role": "user", "content": "hi"}])


def test_messages_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match="messages"):
        count_tokens_exact(anthropic.Anthropic(api_key="k"), "claude-opus-4-7",
                           messages="hello")  # type: ignore[arg-type]
