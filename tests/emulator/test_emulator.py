"""The emulator answers the official SDKs offline: endpoints, labels, ids, usage, the log."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from spendguard import ConfigError, count_request_tokens
from spendguard.testing import EmulatedError, Emulator, ManualClock, Prompt, Reply, ToolCall

USER: Any = [{"role": "user", "content": "What does a token cost?"}]


def test_chat_completion_is_labelled_echoes_the_model_and_counts_usage() -> None:
    emulator = Emulator()
    completion = emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)

    assert completion.model == "gpt-5.5"
    assert completion.id.startswith("chatcmpl-emu-")
    assert (completion.choices[0].message.content or "").startswith("[spendguard emulator]")
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage is not None
    expected = count_request_tokens("openai", "/v1/chat/completions",
                                    {"model": "gpt-5.5", "messages": USER}).expected
    assert usage.prompt_tokens == expected
    assert 1 <= usage.completion_tokens <= 64
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_every_response_carries_the_emulator_header_and_a_request_id() -> None:
    emulator = Emulator()
    raw = emulator.openai_client().chat.completions.with_raw_response.create(
        model="gpt-5.5", messages=USER)
    assert raw.headers["x-spendguard-emulator"] == "not a real provider"
    assert raw.headers["x-request-id"].startswith("req_emu_")
    message = emulator.anthropic_client().messages.with_raw_response.create(
        model="claude-sonnet-5", max_tokens=20, messages=USER)
    assert message.headers["request-id"].startswith("req_emu_")


def test_output_is_capped_by_the_request_cap_with_the_providers_stop_reason() -> None:
    emulator = Emulator(reply_tokens=500)
    chat = emulator.openai_client().chat.completions.create(
        model="gpt-5.5", messages=USER, max_completion_tokens=12)
    assert chat.usage is not None and chat.usage.completion_tokens == 12
    assert chat.choices[0].finish_reason == "length"
    message = emulator.anthropic_client().messages.create(
        model="claude-sonnet-5", max_tokens=9, messages=USER)
    assert message.usage.output_tokens <= 9
    assert message.stop_reason == "max_tokens"
    response = emulator.openai_client().responses.create(
        model="gpt-5.5", input="hi", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage is not None and response.usage.output_tokens == 16


def test_same_seed_gives_the_same_ids_and_replies() -> None:
    def run(seed: int) -> tuple[str, str | None]:
        client = Emulator(seed=seed).openai_client()
        completion = client.chat.completions.create(model="gpt-5.5", messages=USER)
        return completion.id, completion.choices[0].message.content

    assert run(1) == run(1)
    assert run(1)[0] != run(2)[0]


def test_responses_api_returns_output_text_and_usage() -> None:
    response = Emulator().openai_client().responses.create(
        model="gpt-5.5", input="hello", instructions="Be brief.")
    assert response.id.startswith("resp_emu_")
    assert response.status == "completed"
    assert response.output_text.startswith("[spendguard emulator]")
    assert response.usage is not None
    assert response.usage.input_tokens == count_request_tokens(
        "openai", "/v1/responses",
        {"model": "gpt-5.5", "input": [{"role": "user", "content": "hello"}],
         "instructions": "Be brief."}).expected
    assert response.usage.input_tokens_details.cached_tokens == 0


def test_previous_response_id_bills_the_earlier_turns_again() -> None:
    client = Emulator().openai_client()
    first = client.responses.create(model="gpt-5.5", input="hello")
    second = client.responses.create(model="gpt-5.5", input="and again",
                                     previous_response_id=first.id)
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens - 5
    assert client.responses.retrieve(first.id).id == first.id
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gpt-5.5", input="x", previous_response_id="resp_nope")


def test_responses_input_token_count_matches_the_billed_input() -> None:
    client = Emulator().openai_client()
    counted = client.responses.input_tokens.count(model="gpt-5.5", input="hello there")
    billed = client.responses.create(model="gpt-5.5", input="hello there")
    assert billed.usage is not None
    assert counted.input_tokens == billed.usage.input_tokens


def test_embeddings_return_unit_vectors_and_prompt_tokens() -> None:
    client = Emulator().openai_client()
    result = client.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"])
    assert [item.index for item in result.data] == [0, 1]
    assert len(result.data[0].embedding) == 1536
    assert abs(sum(v * v for v in result.data[0].embedding) - 1.0) < 1e-3
    assert result.usage.prompt_tokens == result.usage.total_tokens >= 2
    again = client.embeddings.create(model="text-embedding-3-small", input="alpha",
                                     dimensions=8, encoding_format="float")
    assert len(again.data[0].embedding) == 8
    tokens = client.embeddings.create(model="text-embedding-3-small", input=[[1, 2, 3]])
    assert tokens.usage.prompt_tokens == 3


def test_anthropic_message_usage_and_count_tokens_agree() -> None:
    client = Emulator().anthropic_client()
    message = client.messages.create(model="claude-sonnet-5", max_tokens=100, messages=USER)
    assert message.id.startswith("msg_emu_")
    assert message.model == "claude-sonnet-5"
    assert message.content[0].type == "text"
    assert message.content[0].text.startswith("[spendguard emulator]")
    assert message.stop_reason == "end_turn"
    counted = client.messages.count_tokens(model="claude-sonnet-5", messages=USER)
    assert message.usage.input_tokens == counted.input_tokens
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.service_tier == "standard"


def test_anthropic_token_ratio_scales_billed_and_counted_claude_input_alike() -> None:
    plain = Emulator().anthropic_client()
    scaled = Emulator(anthropic_token_ratio=1.5).anthropic_client()
    central = plain.messages.create(model="claude-sonnet-5", max_tokens=10,
                                    messages=USER).usage.input_tokens
    message = scaled.messages.create(model="claude-sonnet-5", max_tokens=10, messages=USER)
    counted = scaled.messages.count_tokens(model="claude-sonnet-5", messages=USER)
    assert message.usage.input_tokens == counted.input_tokens == -(-central * 3 // 2)


def test_anthropic_token_spread_varies_by_prompt_within_its_range_and_repeats() -> None:
    plain = Emulator().anthropic_client()
    spread = Emulator(anthropic_token_spread=0.1).anthropic_client()
    ratios = set()
    for index in range(20):
        messages: Any = [{"role": "user", "content": f"prompt number {index} " * 50}]
        central = plain.messages.create(model="claude-sonnet-5", max_tokens=10,
                                        messages=messages).usage.input_tokens
        billed = [spread.messages.create(model="claude-sonnet-5", max_tokens=10,
                                         messages=messages).usage.input_tokens
                  for _ in range(2)]
        assert billed[0] == billed[1]  # the same prompt bills the same
        assert central * 0.9 <= billed[0] <= central * 1.1 + 1
        ratios.add(billed[0] / central)
    assert len(ratios) > 10


def test_an_anthropic_token_ratio_must_be_positive_and_a_spread_below_one() -> None:
    with pytest.raises(ConfigError, match="anthropic_token_ratio"):
        Emulator(anthropic_token_ratio=0)
    with pytest.raises(ConfigError, match="anthropic_token_spread"):
        Emulator(anthropic_token_spread=1.0)


def test_a_responder_scripts_text_and_tool_calls_for_both_providers() -> None:
    seen: list[Prompt] = []

    def respond(prompt: Prompt) -> Reply:
        seen.append(prompt)
        return Reply(text="Checking.", tool_calls=[ToolCall("lookup", {"city": "Oslo"})])

    emulator = Emulator(respond=respond)
    chat = emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    call = chat.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "lookup"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Oslo"}  # type: ignore[union-attr]
    assert chat.choices[0].finish_reason == "tool_calls"
    message = emulator.anthropic_client().messages.create(
        model="claude-sonnet-5", max_tokens=100, messages=USER)
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.stop_reason == "tool_use"
    response = emulator.openai_client().responses.create(model="gpt-5.5", input="hi")
    assert [item.type for item in response.output] == ["message", "function_call"]
    assert [p.endpoint for p in seen] == ["/v1/chat/completions", "/v1/messages",
                                          "/v1/responses"]
    assert seen[0].last_user_text == "What does a token cost?"


def test_scripted_reasoning_tokens_are_billed_as_output() -> None:
    emulator = Emulator(respond=lambda prompt: Reply(text="ok", reasoning_tokens=300))
    chat = emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    assert chat.usage is not None and chat.usage.completion_tokens_details is not None
    assert chat.usage.completion_tokens_details.reasoning_tokens == 300
    assert chat.usage.completion_tokens == 301


def test_a_responder_raising_an_emulated_error_fails_the_call_in_provider_style() -> None:
    def refuse(prompt: Prompt) -> str:
        raise EmulatedError(400, "context too long", code="context_length_exceeded")

    emulator = Emulator(respond=refuse)
    with pytest.raises(openai.BadRequestError) as openai_error:
        emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    assert openai_error.value.code == "context_length_exceeded"
    with pytest.raises(anthropic.BadRequestError) as anthropic_error:
        emulator.anthropic_client().messages.create(model="claude-sonnet-5", max_tokens=5,
                                                    messages=USER)
    assert anthropic_error.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_unknown_paths_get_the_providers_404() -> None:
    emulator = Emulator()
    with pytest.raises(openai.NotFoundError, match="Invalid URL"):
        emulator.openai_client().get("/models/unknown-thing/x", cast_to=object)
    with pytest.raises(anthropic.NotFoundError):
        emulator.anthropic_client().get("/v1/messages/nope/x", cast_to=object)


def test_missing_required_fields_are_provider_style_400s() -> None:
    emulator = Emulator()
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        emulator.anthropic_client().post("/v1/messages", cast_to=object,
                                         body={"model": "claude-sonnet-5", "messages": USER})
    with pytest.raises(openai.BadRequestError, match="messages"):
        emulator.openai_client().post("/chat/completions", cast_to=object,
                                      body={"model": "gpt-5.5"})


def test_the_request_log_keeps_bodies_but_never_credentials() -> None:
    emulator = Emulator()
    emulator.openai_client(api_key="sk-secret-1").chat.completions.create(
        model="gpt-5.5", messages=USER)
    emulator.anthropic_client(api_key="sk-ant-secret-2").messages.create(
        model="claude-sonnet-5", max_tokens=5, messages=USER)
    first, second = emulator.requests
    assert (first.method, first.path, first.status) == ("POST", "/v1/chat/completions", 200)
    assert first.body["messages"] == USER
    assert second.provider == "anthropic"
    logged = repr(emulator.requests)
    assert "secret" not in logged
    assert "authorization" not in first.headers and "x-api-key" not in second.headers
    emulator.clear_requests()
    assert emulator.requests == []


def test_the_transport_serves_plain_httpx2_clients_on_any_host() -> None:
    emulator = Emulator()
    with httpx2.Client(transport=emulator.transport()) as client:
        reply = client.post("https://api.openai.com/v1/chat/completions",
                            json={"model": "gpt-5.5", "messages": USER})
    assert reply.status_code == 200
    assert reply.json()["object"] == "chat.completion"
    assert emulator.requests[0].headers["host"] == "api.openai.com"


def test_async_clients_get_the_same_answers_as_sync_ones() -> None:
    async def run(emulator: Emulator) -> tuple[int, int, int]:
        chat = await emulator.async_openai_client().chat.completions.create(
            model="gpt-5.5", messages=USER)
        response = await emulator.async_openai_client().responses.create(model="gpt-5.5",
                                                                         input="hi")
        message = await emulator.async_anthropic_client().messages.create(
            model="claude-sonnet-5", max_tokens=50, messages=USER)
        assert chat.usage is not None and response.usage is not None
        return chat.usage.total_tokens, response.usage.total_tokens, message.usage.output_tokens

    emulator = Emulator()
    chat = emulator.openai_client().chat.completions.create(model="gpt-5.5", messages=USER)
    response = emulator.openai_client().responses.create(model="gpt-5.5", input="hi")
    message = emulator.anthropic_client().messages.create(model="claude-sonnet-5",
                                                          max_tokens=50, messages=USER)
    assert chat.usage is not None and response.usage is not None
    assert asyncio.run(run(Emulator())) == (chat.usage.total_tokens, response.usage.total_tokens,
                                            message.usage.output_tokens)


def test_timestamps_come_from_the_injected_clock() -> None:
    clock = ManualClock(start_s=1_900_000_000)
    completion = Emulator(clock=clock).openai_client().chat.completions.create(
        model="gpt-5.5", messages=USER)
    assert completion.created == 1_900_000_000


def test_bad_settings_are_config_errors_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="latency_s"):
        Emulator(latency_s=-1)
    with pytest.raises(ConfigError, match="error_rate"):
        Emulator(error_rate=2)
    with pytest.raises(ConfigError, match="batch_error_rate"):
        Emulator(batch_error_rate=-0.1)
    with pytest.raises(ConfigError, match="reply_tokens"):
        Emulator(reply_tokens=-1)
    with pytest.raises(ConfigError, match="advance"):
        ManualClock().advance(-1)
    with pytest.raises(ConfigError, match="respond"):
        Emulator(respond=lambda prompt: 42).openai_client(  # type: ignore[arg-type,return-value]
            max_retries=0).chat.completions.create(model="gpt-5.5", messages=USER)


def test_concurrent_requests_from_many_threads_are_all_answered_and_logged() -> None:
    emulator = Emulator()
    client = emulator.openai_client()

    def call(index: int) -> str:
        return client.chat.completions.create(
            model="gpt-5.5", messages=[{"role": "user", "content": f"q{index}"}]).id

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(call, range(40)))
    assert len(set(ids)) == 40
    assert len(emulator.requests) == 40


def test_the_public_names_all_resolve() -> None:
    from spendguard import testing

    assert all(getattr(testing, name) is not None for name in testing.__all__)
    assert {"Emulator", "ManualClock", "serve", "Reply", "EmulatedError"} <= set(testing.__all__)
