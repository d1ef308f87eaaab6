"""Emulated batch APIs through the SDKs' batch methods, driven by a manual clock."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

import anthropic
import httpx2
import openai
import pytest

from spendguard.testing import BatchLimits, EmulatedError, Emulator, ManualClock, Prompt

CHAT: Final = "/v1/chat/completions"


def _line(custom_id: str, *, url: str = CHAT, **body: Any) -> dict[str, Any]:
    body = {"model": "gpt-5.5", "messages": [{"role": "user", "content": custom_id}],
            "max_completion_tokens": 30, **body}
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def _upload(client: openai.OpenAI, lines: list[dict[str, Any]]) -> str:
    data = "\n".join(json.dumps(line) for line in lines).encode()
    return client.files.create(file=("batch.jsonl", data), purpose="batch").id


def _pairs(*pairs: tuple[str, str]) -> Any:
    return pairs  # endpoints as plain strings; the SDK types them as a Literal


def _results(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    assert file_id is not None
    lines = client.files.content(file_id).text.splitlines()
    return {record["custom_id"]: record for record in map(json.loads, lines)}


def test_openai_batch_runs_validating_in_progress_finalizing_completed() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=100).openai_client()
    file_id = _upload(client, [_line(f"req-{i}") for i in range(4)])
    batch = client.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    seen = [(batch.status, batch.request_counts.completed)]  # type: ignore[union-attr]
    for step in (15, 35, 45, 10):
        clock.advance(step)
        batch = client.batches.retrieve(batch.id)
        seen.append((batch.status, batch.request_counts.completed))  # type: ignore[union-attr]
    assert seen == [("validating", 0), ("in_progress", 0), ("in_progress", 2),
                    ("finalizing", 4), ("completed", 4)]
    assert batch.completed_at == batch.created_at + 100
    assert batch.error_file_id is None
    results = _results(client, batch.output_file_id)
    assert sorted(results) == ["req-0", "req-1", "req-2", "req-3"]
    first = results["req-0"]["response"]
    assert first["status_code"] == 200
    completion = openai.types.chat.ChatCompletion.model_validate(first["body"])
    assert completion.usage is not None and completion.usage.completion_tokens <= 30
    total_input = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in results.values())
    assert batch.usage is not None and batch.usage.input_tokens == total_input


def test_openai_batches_run_responses_and_embeddings_lines() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=0).openai_client()
    responses = _upload(client, [{"custom_id": "r", "method": "POST", "url": "/v1/responses",
                                  "body": {"model": "gpt-5.5", "input": "hi"}}])
    embeddings = _upload(client, [{"custom_id": "e", "method": "POST", "url": "/v1/embeddings",
                                   "body": {"model": "text-embedding-3-small", "input": "hi"}}])
    done = [client.batches.retrieve(client.batches.create(
        input_file_id=file_id, endpoint=endpoint, completion_window="24h").id)
        for file_id, endpoint in _pairs((responses, "/v1/responses"),
                                        (embeddings, "/v1/embeddings"))]
    assert [b.status for b in done] == ["completed", "completed"]
    assert _results(client, done[0].output_file_id)["r"]["response"]["body"]["usage"]
    body = _results(client, done[1].output_file_id)["e"]["response"]["body"]
    assert body["usage"]["prompt_tokens"] >= 1


def test_openai_partial_failures_go_to_the_error_file() -> None:
    def respond(prompt: Prompt) -> str:
        if prompt.last_user_text == "bad":
            raise EmulatedError(400, "This model does not support that.")
        return "fine"

    clock = ManualClock()
    client = Emulator(clock=clock, respond=respond, batch_completion_s=10).openai_client()
    file_id = _upload(client, [_line("good"), _line("bad")])
    batch = client.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    clock.advance(10)
    batch = client.batches.retrieve(batch.id)
    assert batch.request_counts is not None
    assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
    errors = _results(client, batch.error_file_id)
    assert errors["bad"]["response"]["status_code"] == 400
    assert errors["bad"]["response"]["body"]["error"]["message"].startswith("This model")
    assert list(_results(client, batch.output_file_id)) == ["good"]


def test_openai_batch_error_rate_fails_a_seeded_share_of_lines() -> None:
    def failed(seed: int) -> list[str]:
        clock = ManualClock()
        client = Emulator(clock=clock, seed=seed, batch_error_rate=0.3,
                          batch_completion_s=0).openai_client()
        file_id = _upload(client, [_line(f"r{i}") for i in range(20)])
        batch = client.batches.create(input_file_id=file_id, endpoint=CHAT,
                                      completion_window="24h")
        return sorted(_results(client, client.batches.retrieve(batch.id).error_file_id))

    assert failed(3) == failed(3)
    assert 0 < len(failed(3)) < 20


def test_openai_invalid_lines_fail_the_batch_at_validation() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock).openai_client()
    file_id = _upload(client, [_line("a"), _line("a"), _line("b", url="/v1/embeddings")])
    batch = client.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    clock.advance(60)
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "failed"
    assert batch.errors is not None and batch.errors.data is not None
    assert [(e.code, e.line) for e in batch.errors.data] == [("duplicate_custom_id", 2),
                                                             ("invalid_url", 3)]


def test_openai_batch_past_the_24h_window_expires_with_partial_results() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=48 * 3600).openai_client()
    file_id = _upload(client, [_line(f"r{i}") for i in range(10)])
    batch = client.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    clock.advance(24 * 3600)
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "expired"
    assert batch.expired_at == batch.expires_at == batch.created_at + 86_400
    done = _results(client, batch.output_file_id)
    expired = _results(client, batch.error_file_id)
    assert len(done) + len(expired) == 10 and 0 < len(done) < 10
    assert {r["error"]["code"] for r in expired.values()} == {"batch_expired"}


def test_openai_cancel_moves_through_cancelling_to_cancelled() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=100, batch_cancel_s=30).openai_client()
    file_id = _upload(client, [_line(f"r{i}") for i in range(8)])
    batch = client.batches.create(input_file_id=file_id, endpoint=CHAT, completion_window="24h")
    clock.advance(50)
    assert client.batches.cancel(batch.id).status == "cancelling"
    clock.advance(30)
    batch = client.batches.retrieve(batch.id)
    assert batch.status == "cancelled"
    assert batch.request_counts is not None
    assert batch.request_counts.completed == 4 and batch.request_counts.failed == 4
    with pytest.raises(openai.BadRequestError, match="cancelled"):
        client.batches.cancel(batch.id)


def test_openai_batch_limits_are_provider_style_400s() -> None:
    assert BatchLimits().openai_max_requests == 50_000
    assert BatchLimits().openai_max_file_bytes == 200 * 1024 * 1024
    emulator = Emulator(clock=ManualClock())
    client = emulator.openai_client()
    too_many = _upload(client, [{"custom_id": str(i)} for i in range(50_001)])
    with pytest.raises(openai.BadRequestError, match="at most 50,000"):
        client.batches.create(input_file_id=too_many, endpoint=CHAT, completion_window="24h")
    small = Emulator(batch_limits=BatchLimits(openai_max_file_bytes=1000)).openai_client()
    too_big = _upload(small, [_line(f"r{i}") for i in range(10)])
    with pytest.raises(openai.BadRequestError, match="at most 1,000 bytes"):
        small.batches.create(input_file_id=too_big, endpoint=CHAT, completion_window="24h")


def test_openai_batches_and_files_list_and_page_through_the_sdk() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock).openai_client()
    file_id = _upload(client, [_line("x")])
    created = []
    for _ in range(3):
        created.append(client.batches.create(input_file_id=file_id, endpoint=CHAT,
                                             completion_window="24h").id)
        clock.advance(1)
    assert [b.id for b in client.batches.list(limit=2)] == created[::-1]
    assert [f.id for f in client.files.list(purpose="batch")] == [file_id]
    assert client.files.retrieve(file_id).bytes > 0
    assert client.files.delete(file_id).deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(file_id)


def _request(custom_id: str, **params: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "params": {
        "model": "claude-sonnet-5", "max_tokens": 40,
        "messages": [{"role": "user", "content": custom_id}], **params}}


def test_anthropic_message_batch_ends_with_succeeded_results_at_batch_tier() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=600).anthropic_client()
    batch = client.messages.batches.create(requests=[_request(f"q{i}") for i in range(3)])  # type: ignore[misc]
    assert batch.processing_status == "in_progress"
    assert batch.request_counts.processing == 3
    assert batch.results_url is None
    clock.advance(599)
    assert client.messages.batches.retrieve(batch.id).request_counts.succeeded == 0
    clock.advance(1)
    batch = client.messages.batches.retrieve(batch.id)
    assert batch.processing_status == "ended"
    assert (batch.request_counts.processing, batch.request_counts.succeeded) == (0, 3)
    assert batch.ended_at is not None and batch.expires_at > batch.created_at
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert sorted(results) == ["q0", "q1", "q2"]
    message = results["q0"].message  # type: ignore[union-attr]
    assert message.usage.service_tier == "batch"
    assert message.usage.output_tokens <= 40


def test_anthropic_batch_reports_errored_requests() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=0).anthropic_client()
    broken = {"custom_id": "broken", "params": {"model": "claude-sonnet-5", "messages": []}}
    batch = client.messages.batches.create(requests=[_request("ok"), broken])  # type: ignore[list-item]
    batch = client.messages.batches.retrieve(batch.id)
    assert (batch.request_counts.succeeded, batch.request_counts.errored) == (1, 1)
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["broken"].type == "errored"
    assert results["broken"].error.error.type == "invalid_request_error"


def test_anthropic_cancel_ends_the_batch_with_canceled_requests() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=100, batch_cancel_s=5).anthropic_client()
    batch = client.messages.batches.create(requests=[_request(f"q{i}") for i in range(4)])  # type: ignore[misc]
    clock.advance(50)
    canceling = client.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling"
    assert canceling.cancel_initiated_at is not None
    clock.advance(5)
    batch = client.messages.batches.retrieve(batch.id)
    assert batch.processing_status == "ended"
    assert (batch.request_counts.succeeded, batch.request_counts.canceled) == (2, 2)
    kinds = sorted(r.result.type for r in client.messages.batches.results(batch.id))
    assert kinds == ["canceled", "canceled", "succeeded", "succeeded"]
    assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"


def test_anthropic_batch_past_24h_expires_unfinished_requests() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock, batch_completion_s=30 * 3600).anthropic_client()
    batch = client.messages.batches.create(requests=[_request(f"q{i}") for i in range(5)])  # type: ignore[misc]
    clock.advance(24 * 3600)
    batch = client.messages.batches.retrieve(batch.id)
    assert batch.processing_status == "ended"
    # requests finish every 6 h: four by the 24 h deadline, the fifth expires
    assert batch.request_counts.expired == 1 and batch.request_counts.succeeded == 4


def test_anthropic_results_before_the_end_and_deleting_early_are_refused() -> None:
    clock = ManualClock()
    emulator = Emulator(clock=clock)
    client = emulator.anthropic_client()
    batch = client.messages.batches.create(requests=[_request("q")])  # type: ignore[list-item]
    with pytest.raises(anthropic.AnthropicError):  # the SDK refuses: results_url is null
        client.messages.batches.results(batch.id)
    with pytest.raises(anthropic.BadRequestError, match="not ended"):
        client.get(f"/v1/messages/batches/{batch.id}/results", cast_to=object)
    with pytest.raises(anthropic.BadRequestError, match="still processing"):
        client.messages.batches.delete(batch.id)


def test_anthropic_batch_limits_and_duplicate_ids_are_refused() -> None:
    assert BatchLimits().anthropic_max_requests == 100_000
    assert BatchLimits().anthropic_max_bytes == 256 * 1024 * 1024
    emulator = Emulator()
    requests = [{"custom_id": f"r{i}", "params": {}} for i in range(100_001)]
    with httpx2.Client(transport=emulator.transport()) as raw:
        reply = raw.post("https://api.anthropic.com/v1/messages/batches",
                         json={"requests": requests})
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"
    assert "at most 100,000" in reply.json()["error"]["message"]
    client = emulator.anthropic_client()
    with pytest.raises(anthropic.BadRequestError, match="more than once"):
        client.messages.batches.create(requests=[_request("same"), _request("same")])  # type: ignore[list-item]
    small = Emulator(batch_limits=BatchLimits(anthropic_max_bytes=500)).anthropic_client()
    with pytest.raises(anthropic.APIStatusError) as too_big:
        small.messages.batches.create(requests=[_request(f"q{i}") for i in range(10)])  # type: ignore[misc]
    assert too_big.value.status_code == 413
    assert too_big.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]


def test_anthropic_batches_list_pages_newest_first() -> None:
    clock = ManualClock()
    client = Emulator(clock=clock).anthropic_client()
    created = []
    for i in range(3):
        created.append(client.messages.batches.create(requests=[_request(f"q{i}")]).id)  # type: ignore[list-item]
        clock.advance(1)
    assert [b.id for b in client.messages.batches.list(limit=2)] == created[::-1]


def test_async_batch_lifecycles_match_sync_ones() -> None:
    async def run() -> tuple[str, list[str]]:
        clock = ManualClock()
        emulator = Emulator(clock=clock, batch_completion_s=10)
        openai_client = emulator.async_openai_client()
        data = json.dumps(_line("a")).encode()
        uploaded = await openai_client.files.create(file=("b.jsonl", data), purpose="batch")
        batch = await openai_client.batches.create(input_file_id=uploaded.id, endpoint=CHAT,
                                                   completion_window="24h")
        anthropic_client = emulator.async_anthropic_client()
        message_batch = await anthropic_client.messages.batches.create(
            requests=[_request("a")])  # type: ignore[list-item]
        clock.advance(10)
        status: str = (await openai_client.batches.retrieve(batch.id)).status
        results: list[str] = [r.result.type async for r in
                   await anthropic_client.messages.batches.results(message_batch.id)]
        return status, results

    assert asyncio.run(run()) == ("completed", ["succeeded"])
