"""Audio tokens have no rate in the price table: refused before sending, never billed as text."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import respx

import spendguard
from spendguard import UnknownModelError
from tests.provider_bodies import chat_completion

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"


def _audio_reply() -> dict[str, Any]:
    body = chat_completion("gpt-4o", prompt_tokens=100, completion_tokens=50)
    body["usage"]["completion_tokens_details"]["audio_tokens"] = 40
    return body


def test_audio_tokens_in_a_usage_block_are_refused_not_priced_as_text() -> None:
    with pytest.raises(UnknownModelError, match=r"audio_tokens = 40: .*no rate for audio"):
        spendguard.cost("gpt-4o", _audio_reply())
    text_only = chat_completion("gpt-4o", prompt_tokens=100, completion_tokens=50)
    assert spendguard.cost("gpt-4o", text_only).total > 0  # audio_tokens 0 is plain text


@pytest.mark.parametrize("extra", [
    {"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
    {"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}]},
    {"extra_body": {"input": ["a plain string item", {
        "type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}},
])
def test_a_request_for_audio_is_refused_before_it_is_sent(tmp_path: Path,
                                                          extra: dict[str, Any]) -> None:
    budget = spendguard.Budget("1", ledger=f"sqlite:///{tmp_path / 'ledger.db'}")
    client = spendguard.OpenAI(api_key="sk-test", budget=budget)
    request: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 50,
                               "messages": [{"role": "user", "content": "hi"}], **extra}
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=_audio_reply())
        with pytest.raises(UnknownModelError, match="asks for audio"):
            client.chat.completions.create(**request)
        assert not route.called
    assert budget.spent == 0


def test_a_reply_with_unexpected_audio_is_recorded_at_the_worst_case(tmp_path: Path) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    budget = spendguard.Budget("1", ledger=ledger_url)
    client = spendguard.OpenAI(api_key="sk-test", budget=budget)
    with respx.mock:
        respx.post(OPENAI_CHAT).respond(200, json=_audio_reply())
        client.chat.completions.create(model="gpt-4o", max_tokens=50,
                                       messages=[{"role": "user", "content": "hi"}])
    [record] = spendguard.open_ledger(ledger_url).records()
    assert record.status == "usage_unreadable" and "audio" in (record.note or "")
    assert record.actual_usd == record.estimated_usd > Decimal(0)


@pytest.mark.parametrize("raw", [
    # JSON may spell a letter as a \u escape: the bytes then hold no "audio" at all.
    b'{"model":"gpt-4o","max_tokens":50,"modalities":["text","\\u0061udio"],'
    b'"messages":[{"role":"user","content":"hi"}]}',
    b'{"model":"gpt-4o","max_tokens":50,"messages":[{"role":"user","content":'
    b'[{"type":"input_\\u0061udio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}',
    # The same request in UTF-16: json reads it, and no byte string "audio" is in it.
    '{"model":"gpt-4o","max_tokens":50,"modalities":["text","audio"],'
    '"messages":[{"role":"user","content":"hi"}]}'.encode("utf-16"),
])
def test_a_request_for_audio_is_refused_however_its_json_is_spelled(tmp_path: Path,
                                                                     raw: bytes) -> None:
    budget = spendguard.Budget("1", ledger=f"sqlite:///{tmp_path / 'ledger.db'}")
    client = spendguard.OpenAI(api_key="sk-test", budget=budget)
    with respx.mock:
        route = respx.post(OPENAI_CHAT).respond(200, json=_audio_reply())
        with pytest.raises(UnknownModelError, match="asks for audio"):
            client.post("/chat/completions", cast_to=object, content=raw,
                        options={"headers": {"Content-Type": "application/json"}})
        assert not route.called
    assert budget.spent == 0
