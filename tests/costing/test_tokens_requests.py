"""count_request_tokens: whole request bodies, every endpoint, and shapes nobody foresaw."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spendguard import ConfigError, Endpoint, count_request_tokens, count_tokens
from spendguard._costing.tokens import bpe
from spendguard._costing.tokens.models import profile_for
from spendguard._costing.tokens.openai import count_chat, plain_chat_tokens
from tests.tokens_helpers import (
    COOKBOOK_MESSAGES,
    COOKBOOK_TOOL_MESSAGES,
    COOKBOOK_TOOLS,
    b64,
    data_url,
    pdf,
    png,
)


def test_chat_body_matches_count_tokens() -> None:
    body = {"model": "gpt-4o", "messages": COOKBOOK_MESSAGES, "max_tokens": 5, "stream": True}
    count = count_request_tokens("openai", "/v1/chat/completions", body)
    assert count == 124
    assert count.exact


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "gpt-3.5-turbo-0301"])
def test_a_plain_chat_body_counts_in_one_pass_as_the_message_walk_counts_it(model: str) -> None:
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Héllo <|endoftext|> wörld 12345"},
                {"role": "assistant", "content": ""}]
    body = {"model": model, "messages": messages, "max_tokens": 5}
    profile = profile_for(model)
    assert profile is not None
    # The same messages with a key the one pass does not take: walked key by key instead.
    walked = profile.tally()
    count_chat(profile, {**body, "messages": [{**m, "name": None} for m in messages]}, walked)
    count = count_request_tokens("openai", Endpoint.CHAT, body)
    assert plain_chat_tokens(profile, body) == int(walked.result()) == count
    assert count.exact


def test_a_chat_body_of_another_shape_is_walked_not_summed() -> None:
    profile = profile_for("gpt-4o")
    assert profile is not None
    plain = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert plain_chat_tokens(profile, plain) is not None
    for other in ({**plain, "tools": COOKBOOK_TOOLS},
                  {**plain, "response_format": {"type": "json_object"}},
                  {**plain, "messages": [{"role": "user", "content": [{"type": "text",
                                                                         "text": "hi"}]}]},
                  {**plain, "messages": [{"role": "user", "content": "hi", "name": "ann"}]},
                  {**plain, "messages": ({"role": "user", "content": "hi"},)}):
        assert plain_chat_tokens(profile, other) is None
    claude = profile_for("claude-sonnet-4-5")
    assert claude is not None and plain_chat_tokens(claude, plain) is None  # a proxy count


def test_chat_body_with_tools_matches_the_cookbook() -> None:
    body = {"model": "gpt-4o", "messages": COOKBOOK_TOOL_MESSAGES, "tools": COOKBOOK_TOOLS,
            "tool_choice": "auto"}
    assert count_request_tokens("openai", "/v1/chat/completions", body) == 101


def test_legacy_functions_count_like_tools() -> None:
    body = {"model": "gpt-4o", "messages": COOKBOOK_TOOL_MESSAGES,
            "functions": [COOKBOOK_TOOLS[0]["function"]]}
    assert count_request_tokens("openai", "/v1/chat/completions", body) == 101


@pytest.mark.parametrize("endpoint", ["/v1/chat/completions", "/chat/completions",
                                      "https://api.openai.com/v1/chat/completions?x=1"])
def test_endpoint_spellings_are_recognised(endpoint: str) -> None:
    body = {"model": "gpt-4o", "messages": COOKBOOK_MESSAGES}
    assert count_request_tokens("openai", endpoint, body).exact


def test_chat_with_content_parts_tool_calls_and_schema_is_bounded() -> None:
    body = {"model": "gpt-4.1", "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Answer in JSON."}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Describe:"},
            {"type": "image_url", "image_url": {"url": data_url(png(512, 512))}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "lookup", "arguments": '{"q": "cats"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "cats are mammals"},
    ], "response_format": {"type": "json_schema", "json_schema": {
        "name": "answer", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}}
    count = count_request_tokens("openai", "/v1/chat/completions", body)
    assert not count.exact
    assert count.expected > 255  # the 512×512 image alone
    assert int(count) >= count.expected
    for note in ("image rule", "tool calls", "response schema"):
        assert note in count.method


def test_responses_string_input_and_instructions() -> None:
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": "hello world"}
    count = count_request_tokens("openai", "/v1/responses", body)
    # framed like chat: 2 messages × (3 + role) + texts + priming, with headroom per item
    chat = count_tokens("gpt-5", messages=[{"role": "developer", "content": "Be brief."},
                                           {"role": "user", "content": "hello world"}])
    assert count.expected == int(chat)
    assert int(count) > int(chat)
    assert "responses framing" in count.method


def test_responses_item_list_with_calls_and_reasoning() -> None:
    body = {"model": "gpt-5", "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "weather?"},
                                     {"type": "input_image", "image_url": "https://x/y.png",
                                      "detail": "low"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                        "text": "thinking"}],
         "encrypted_content": "gAAAA..."},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "item_reference", "id": "msg_9"},
    ], "tools": [{"type": "function", "name": "weather", "description": "Weather.",
                  "parameters": {"type": "object", "properties": {}}},
                 {"type": "web_search"}],
        "previous_response_id": "resp_1"}
    count = count_request_tokens("openai", "/v1/responses", body)
    assert not count.exact
    assert "not counted: encrypted reasoning, item references, previous response" in count.method


def test_responses_input_tokens_endpoint_counts_like_responses() -> None:
    body = {"model": "gpt-5", "input": "hello world"}
    assert (count_request_tokens("openai", "/v1/responses/input_tokens", body)
            == count_request_tokens("openai", "/v1/responses", body))


@pytest.mark.parametrize(("given", "tokens"), [
    ("hello world", 2),
    (["hello world", "hello world"], 4),
    ([15339, 1917, 0], 3),
    ([[1, 2], [3, 4, 5]], 5),
])
def test_embeddings_inputs_are_exact(given: Any, tokens: int) -> None:
    count = count_request_tokens("openai", "/v1/embeddings",
                                 {"model": "text-embedding-3-small", "input": given})
    assert count == tokens
    assert count.exact
    assert count.method == "tiktoken cl100k_base"


def test_legacy_completions_prompt_is_counted() -> None:
    count = count_request_tokens("openai", "/v1/completions",
                                 {"model": "gpt-3.5-turbo-instruct", "prompt": "hello world"})
    assert count == 2


def test_anthropic_body_with_every_block_kind() -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are terse.",
                        "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "tools": [{"name": "lookup", "description": "Look up a word.",
                       "input_schema": {"type": "object",
                                        "properties": {"q": {"type": "string"}}}},
                      {"type": "web_search_20250305", "name": "web_search"}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Define 'cat'."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": b64(png(300, 200))}},
                    {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                    "data": "A cat is a small mammal."}}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Use the tool.", "signature": "sig"},
                    {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": "cat"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "feline"}]},
            ]}
    count = count_request_tokens("anthropic", "/v1/messages", body)
    assert not count.exact
    assert count.margin >= Decimal("0.3")
    assert count.expected > 346 + 80  # tool-use system prompt + a 300×200 image


def test_anthropic_count_tokens_and_batches_endpoints() -> None:
    params = {"model": "claude-haiku-4-5", "max_tokens": 10,
              "messages": [{"role": "user", "content": "hello world"}]}
    one = count_request_tokens("anthropic", "/v1/messages", params)
    assert count_request_tokens("anthropic", "/v1/messages/count_tokens", params) == one
    batch = {"requests": [{"custom_id": "a", "params": params},
                          {"custom_id": "b", "params": params}]}
    assert count_request_tokens("anthropic", "/v1/messages/batches", batch) >= 2 * one - 1


def test_unknown_endpoint_degrades_to_a_bounded_estimate_of_the_json() -> None:
    count = count_request_tokens("openai", "/v1/audio/speech",
                                 {"model": "gpt-4o-mini-tts", "input": "Say hello."})
    assert not count.exact
    assert count.margin == Decimal("0.25")
    assert "JSON estimate" in count.method


def test_unknown_model_degrades_to_a_loose_bound() -> None:
    count = count_request_tokens("openai", "/v1/chat/completions",
                                 {"model": "my-llama", "messages": [{"role": "user",
                                                                     "content": "hi"}]})
    assert not count.exact
    assert count.margin == Decimal("0.6")


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="provider"):
        count_request_tokens("mistral", "/v1/chat/completions", {})


@pytest.mark.parametrize("body", [
    {"model": "gpt-4o", "messages": "not a list"},
    {"model": "gpt-4o", "messages": [None, 3, {"role": 5, "content": {"weird": True}}]},
    {"model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
    {"model": "gpt-4o", "tools": [{"type": "function", "function": {"parameters": 7}}]},
    {"model": 42, "messages": []},
    {},
])
def test_malformed_chat_bodies_never_raise(body: dict[str, Any]) -> None:
    count = count_request_tokens("openai", "/v1/chat/completions", body)
    assert count >= 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["role", "content", "type", "text", "input", "messages",
                                       "tools", "system", "source", "image_url", "function",
                                       "properties", "parameters", "name", "data"]),
                      children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([("openai", "/v1/chat/completions"), ("openai", "/v1/responses"),
                        ("openai", "/v1/embeddings"), ("anthropic", "/v1/messages"),
                        ("anthropic", "/v1/messages/batches")]),
       st.sampled_from(["gpt-4o", "claude-opus-4-7", "gpt-6.2-sol", "unknown"]),
       st.dictionaries(st.sampled_from(["messages", "input", "system", "tools", "instructions",
                                        "requests", "functions", "response_format"]),
                       json_values, max_size=4))
def test_any_json_body_gives_a_count(route: tuple[str, str], model: str,
                                     body: dict[str, Any]) -> None:
    count = count_request_tokens(route[0], route[1], {"model": model, **body})
    assert count >= 0
    assert count.expected <= count


def test_a_shared_prefix_is_counted_once_across_many_requests() -> None:
    document = "Shared context paragraph with numbers 12345 and words. " * 2000
    bodies = [{"model": "gpt-4o", "messages": [{"role": "system", "content": document},
                                               {"role": "user", "content": f"Question {i}?"}]}
              for i in range(2000)]
    first = count_request_tokens("openai", "/v1/chat/completions", bodies[0])
    before = bpe.count_text.cache_info()
    counts = [count_request_tokens("openai", "/v1/chat/completions", b) for b in bodies[1:]]
    after = bpe.count_text.cache_info()
    # only the 1999 new questions were encoded; the 110 kB document never again
    assert after.misses - before.misses <= len(bodies) - 1
    assert all(abs(count - first) <= 2 for count in counts)


def test_anthropic_references_and_opaque_blocks_are_reported_not_counted() -> None:
    body = {"model": "claude-opus-4-7", "max_tokens": 10, "messages": [
        {"role": "user", "content": [
            {"type": "document", "source": {"type": "url", "url": "https://x/y.pdf"}},
            {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
            {"type": "search_result", "title": "T", "source": "https://s",
             "content": [{"type": "text", "text": "snippet"}]},
            {"type": "document", "title": "Notes", "source": {"type": "content", "content": [
                {"type": "text", "text": "inline"}]}}]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"}]}],
        "tools": [{"type": "bash_20250124", "name": "bash"},
                  {"type": "computer_20250124", "name": "computer", "display_width_px": 1024}],
        "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}
    count = count_request_tokens("anthropic", "/v1/messages", body)
    assert "not counted: files by reference, redacted thinking" in count.method
    assert count.expected > 4784 // 2  # the image by reference is bounded, not zero
    assert count.expected > (245 + 1234) * 1.5 / 1.2  # bash and computer tool prompts


def test_inline_files_are_estimated_from_their_content() -> None:
    text_file = data_url(b"plain text notes " * 50, "text/plain")
    pdf_file = data_url(pdf(2), "application/pdf")
    small = count_request_tokens("openai", "/v1/responses", {"model": "gpt-4.1", "input": [
        {"role": "user", "content": [{"type": "input_file", "filename": "a.txt",
                                      "file_data": text_file}]}]})
    large = count_request_tokens("openai", "/v1/chat/completions", {"model": "gpt-4.1",
                                 "messages": [{"role": "user", "content": [
                                     {"type": "file", "file": {"filename": "a.pdf",
                                                               "file_data": pdf_file}}]}]})
    assert 100 < small.expected < 300
    assert large.expected >= 2 * 1500


def test_a_walker_failure_falls_back_to_the_json_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from spendguard._providers.openai import counting

    def broken(*args: Any) -> None:
        raise TypeError("a shape nobody foresaw")

    walkers = counting._WALKERS
    monkeypatch.setattr(counting, "_WALKERS", replace(
        walkers, by_endpoint={**walkers.by_endpoint, Endpoint("chat.completions"): broken}))
    count = count_request_tokens("openai", "/v1/chat/completions",
                                 {"model": "gpt-4o", "messages": []})
    assert "JSON estimate" in count.method
