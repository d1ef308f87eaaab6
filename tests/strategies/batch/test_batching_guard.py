"""The guard's one sanctioned pass for batch submissions (spendguard.batch reserved them)."""

from __future__ import annotations

import json

import httpx2
import pytest

import spendguard
from spendguard import UnsupportedEndpointError
from spendguard._guard.metering import PRERESERVED_HEADER, prereserved
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator, ManualClock

LINE = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
        "body": {"model": "gpt-5.5", "messages": [{"role": "user", "content": "hi"}],
                 "max_completion_tokens": 20}}


def clients(emulator: Emulator, budget: spendguard.Budget | None = None,
            ) -> tuple[spendguard.OpenAI, spendguard.Anthropic]:
    budget = budget or spendguard.Budget("5", ledger="memory://")
    http = httpx2.Client(transport=emulator.transport())
    return (spendguard.OpenAI(api_key="k", base_url=OPENAI_BASE_URL, http_client=http,
                              budget=budget, max_retries=0),
            spendguard.Anthropic(api_key="k", base_url=ANTHROPIC_BASE_URL, http_client=http,
                                 budget=budget, max_retries=0))


def test_a_prereserved_batch_submission_passes_and_the_token_is_not_sent_on() -> None:
    emulator = Emulator(clock=ManualClock())
    openai_client, anthropic_client = clients(emulator)
    upload = openai_client.files.create(file=("b.jsonl", json.dumps(LINE).encode()),
                                        purpose="batch")
    with prereserved() as headers:
        made = openai_client.batches.create(input_file_id=upload.id,
                                            endpoint="/v1/chat/completions",
                                            completion_window="24h", extra_headers=headers)
        message_batch = anthropic_client.messages.batches.create(
            requests=[{"custom_id": "a", "params": {"model": "claude-sonnet-5",
                                                     "max_tokens": 10, "messages": []}}],
            extra_headers=headers)
    assert made.status == "validating"
    assert message_batch.processing_status == "in_progress"
    assert all(PRERESERVED_HEADER not in r.headers for r in emulator.requests)


def test_a_made_up_or_expired_token_is_refused_and_never_sent() -> None:
    emulator = Emulator(clock=ManualClock())
    openai_client, _ = clients(emulator)
    with prereserved() as headers:
        pass  # the block is over: its token no longer opens anything
    for sent in (headers, {PRERESERVED_HEADER: "guessed"}):
        with pytest.raises(UnsupportedEndpointError, match=r"spendguard\.batch\(\)"):
            openai_client.batches.create(input_file_id="file-x", endpoint="/v1/chat/completions",
                                         completion_window="24h", extra_headers=sent)
    assert emulator.requests == []


def test_a_guessed_token_leaves_an_ordinary_call_priced() -> None:
    budget = spendguard.Budget("5", ledger="memory://")
    openai_client, _ = clients(Emulator(clock=ManualClock()), budget)
    with prereserved():
        openai_client.chat.completions.create(
            model="gpt-5.5", messages=[{"role": "user", "content": "hi"}],
            max_completion_tokens=5, extra_headers={PRERESERVED_HEADER: "guessed"})
    assert [r.endpoint for r in budget.ledger.records()] == ["chat.completions"]
    assert budget.spent > 0
