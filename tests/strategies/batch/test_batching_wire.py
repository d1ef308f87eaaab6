"""The pure parts: result lines read, sizes measured, polling waits computed (no provider)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion

from spendguard import ConfigError, Polling
from spendguard._providers.anthropic.batch_wire import AnthropicBatches
from spendguard._providers.openai.batch_wire import OpenAIBatches, jsonl_line
from spendguard._strategies.batch.polling import Round, poll_until
from spendguard.testing import ManualClock

CHAT = "/v1/chat/completions"
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-5.5",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "hi"}}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
           "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
           "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 3, "service_tier": "batch"}}


def openai_line(**fields: Any) -> dict[str, Any]:
    return {"id": "batch_req_1", "custom_id": "r0", "error": None, **fields}


def test_an_openai_success_line_gives_the_body_and_batch_usage() -> None:
    outcome = OpenAIBatches().outcome(openai_line(response={
        "status_code": 200, "request_id": "req_1", "body": COMPLETION}), CHAT)
    assert (outcome.status, outcome.request_id) == ("succeeded", "req_1")
    assert outcome.usage is not None
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (10, 3)
    assert outcome.usage.service_tier == "batch"
    assert isinstance(OpenAIBatches().response_object(CHAT, COMPLETION), ChatCompletion)


@pytest.mark.parametrize(("line", "status"), [
    (openai_line(response=None, error={"code": "batch_expired", "message": "late"}), "expired"),
    (openai_line(response=None, error={"code": "batch_cancelled", "message": "x"}), "cancelled"),
    (openai_line(response={"status_code": 400, "body": {"error": {"message": "bad"}}}),
     "errored"),
    (openai_line(response=None, error={"code": "server_error", "message": "boom"}), "errored"),
])
def test_openai_lines_that_did_not_succeed(line: dict[str, Any], status: str) -> None:
    outcome = OpenAIBatches().outcome(line, CHAT)
    assert outcome.status == status and outcome.usage is None and outcome.error


def test_an_openai_success_with_unreadable_usage_is_still_a_success() -> None:
    body = {**COMPLETION, "usage": {"prompt_tokens": "many"}}
    outcome = OpenAIBatches().outcome(openai_line(response={"status_code": 200, "body": body}),
                                      CHAT)
    assert outcome.status == "succeeded" and outcome.usage is None  # settled at worst case


@pytest.mark.parametrize(("result", "status"), [
    ({"type": "succeeded", "message": MESSAGE}, "succeeded"),
    ({"type": "errored", "error": {"type": "error", "error": {"message": "bad"}}}, "errored"),
    ({"type": "expired"}, "expired"),
    ({"type": "canceled"}, "cancelled"),
    ({"type": "succeeded"}, "errored"),
    ({"type": "new-kind"}, "errored"),
])
def test_anthropic_result_lines(result: dict[str, Any], status: str) -> None:
    outcome = AnthropicBatches().outcome({"custom_id": "r0", "result": result}, "/v1/messages")
    assert outcome.status == status
    assert (outcome.usage is not None) == (status == "succeeded")


def test_an_anthropic_message_is_rebuilt_as_the_sdk_type() -> None:
    message = AnthropicBatches().response_object("/v1/messages", MESSAGE)
    assert isinstance(message, Message) and message.content[0].text == "hi"  # type: ignore[union-attr]


def test_sizes_bound_what_is_sent() -> None:
    body = {"model": "claude-sonnet-5", "max_tokens": 5,
            "messages": [{"role": "user", "content": "naïve café ☕ " * 20}]}
    ids = [f"r{i}" for i in range(3)]
    entries = [{"custom_id": custom_id, "params": body} for custom_id in ids]
    counted = AnthropicBatches().overhead_bytes() + sum(
        AnthropicBatches().line_bytes(custom_id, "/v1/messages", body) for custom_id in ids)
    sent = {"requests": entries}
    assert counted >= len(json.dumps(sent).encode())
    assert counted >= len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False).encode())
    line = jsonl_line("r0", CHAT, body)
    assert line.endswith(b"\n") and OpenAIBatches().line_bytes("r0", CHAT, body) == len(line)
    assert json.loads(line)["url"] == CHAT


def test_the_wrong_endpoint_for_a_provider_is_refused() -> None:
    with pytest.raises(ConfigError, match="Anthropic batches run"):
        AnthropicBatches().submit(object(), "sgb", CHAT, [], {})
    with pytest.raises(ConfigError, match="OpenAI batches run"):
        OpenAIBatches().submit(object(), "sgb", "/v1/messages", [], {})


def test_waits_grow_to_the_cap_and_never_pass_the_deadline() -> None:
    clock = ManualClock(0)
    looks: list[float] = []

    def look() -> Round:
        looks.append(clock())
        return Round(False)

    polling = Polling.manual(clock, first_wait_s=5, max_wait_s=30, multiplier=3, progress=None)
    assert poll_until(look, polling, until_s=100) is False
    assert looks == [0, 5, 20, 50, 80, 100]


def test_a_wake_moment_cuts_a_wait_short_once() -> None:
    clock = ManualClock(0)
    looks: list[float] = []

    def look() -> Round:
        looks.append(clock())
        return Round(clock() >= 60, wake_at_s=25)

    assert poll_until(look, Polling.manual(clock, progress=None), until_s=None)
    assert looks == [0, 10, 25, 65]


def test_an_error_in_a_look_is_raised_not_retried() -> None:
    calls: list[int] = []

    def look() -> Round:
        calls.append(1)
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        poll_until(look, Polling.manual(ManualClock(), progress=None), until_s=None)
    assert calls == [1]


@pytest.mark.parametrize("options", [{"first_wait_s": 0}, {"first_wait_s": 20, "max_wait_s": 10},
                                     {"multiplier": 0.5}])
def test_polling_settings_that_make_no_sense_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="Polling"):
        Polling(**options)  # type: ignore[arg-type]
