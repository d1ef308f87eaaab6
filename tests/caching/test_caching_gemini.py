"""Cache ordering for Gemini: implicit prefix caching, so stable content first, no markers,
and a note when the prefix is under the model's minimum; through order_for_cache and a
guarded client's cache_order=."""

from __future__ import annotations

from typing import Any

from google.genai import types

import spendguard
from spendguard.testing import Emulator

AGENT = " ".join(["You are the Acme support agent. Answer in two sentences."] * 3)
TOOLS = [{"functionDeclarations": [
    {"parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
     "name": "weather"},
    {"name": "lookup", "description": "Find an order"}]}]


def _body(stamp: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gemini-2.5-flash",
            "systemInstruction": {"parts": [{"text": f"Now: {stamp}.\n\n{AGENT}"}]},
            "tools": TOOLS, "contents": [{"role": "user", "parts": [{"text": "Where is #42?"}]}],
            **extra}


def test_a_gemini_body_gets_stable_system_text_and_sorted_tools_first_without_markers() -> None:
    ordered = spendguard.order_for_cache(_body("2026-12-06T10:01:07Z"))
    assert (ordered.provider, ordered.endpoint) == ("gemini", "generate_content")
    assert ordered.body["systemInstruction"]["parts"] == [
        {"text": AGENT}, {"text": "Now: 2026-12-06T10:01:07Z."}]
    [tool] = ordered.body["tools"]
    assert [d["name"] for d in tool["functionDeclarations"]] == ["lookup", "weather"]
    assert list(tool["functionDeclarations"][1]) == ["name", "parameters"]
    assert ordered.breakpoints == () and ordered.prompt_cache_key is None
    assert [v.kind for v in ordered.volatile] == ["timestamp"]
    assert "cache_control" not in str(ordered.body) and "'type': 'text'" not in str(ordered.body)


def test_two_requests_differing_only_in_a_timestamp_share_their_ordered_prefix() -> None:
    first = spendguard.order_for_cache(_body("2026-12-06T10:01:07Z")).body
    second = spendguard.order_for_cache(_body("2026-12-06T11:22:33Z")).body
    assert first["tools"] == second["tools"]
    assert first["systemInstruction"]["parts"][0] == second["systemInstruction"]["parts"][0]


def test_a_prefix_under_the_models_published_minimum_is_noted() -> None:
    short = spendguard.order_for_cache(_body("2026-12-06T10:01:07Z"))
    assert any("2048-token minimum" in note for note in short.notes)
    long = spendguard.order_for_cache(_body("2026-12-06T10:01:07Z", systemInstruction={
        "parts": [{"text": "Policy clause. " * 3000}]}))
    assert long.notes == ()


def test_reorder_content_puts_media_first_only_when_asked_and_reports_it() -> None:
    parts = [{"text": "Summarise the file"},
             {"fileData": {"mimeType": "application/pdf", "fileUri": "files/abc"}}]
    body = {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": parts}]}
    assert spendguard.order_for_cache(body).body["contents"][0]["parts"] == parts
    moved = spendguard.order_for_cache(body, reorder_content=True)
    assert moved.body["contents"][0]["parts"] == parts[::-1] and moved.moves


def test_volatile_system_text_can_go_to_the_last_user_turn() -> None:
    ordered = spendguard.order_for_cache(_body("2026-12-06T10:01:07Z"),
                                         volatile_to_last_message=True)
    assert ordered.body["systemInstruction"]["parts"] == [{"text": AGENT}]
    assert ordered.body["contents"][-1]["parts"][-1] == {"text": "Now: 2026-12-06T10:01:07Z."}


def ask_with_a_timestamp_first(client: Any) -> None:
    """One call whose system instruction opens with a volatile timestamp."""
    client.models.generate_content(
        model="gemini-2.5-flash", contents="Where is #42?",
        config=types.GenerateContentConfig(
            system_instruction=f"Now: 2026-12-06T10:01:07Z.\n\n{AGENT}", max_output_tokens=50,
            thinking_config=types.ThinkingConfig(thinking_budget=0)))


def test_a_guarded_gemini_client_sends_its_requests_ordered_for_the_cache() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    client = spendguard.Gemini(api_key="emulated", http_options=emulator.gemini_http_options(),
                               budget=budget, cache_order=True)
    ask_with_a_timestamp_first(client)
    [sent] = emulator.requests
    assert sent.body["systemInstruction"]["parts"][0] == {"text": AGENT}
    [record] = budget.ledger.records()
    assert record.status == "ok" and record.estimated_usd >= record.actual_usd


def test_install_orders_the_requests_of_a_genai_client_built_elsewhere() -> None:
    emulator = Emulator()
    budget = spendguard.Budget("1", ledger="memory://")
    spendguard.install(budget, cache_order=True)
    try:
        client = emulator.gemini_client()  # as a framework would build it
    finally:
        spendguard.uninstall()
    ask_with_a_timestamp_first(client)
    [sent] = emulator.requests
    assert sent.body["systemInstruction"]["parts"][0] == {"text": AGENT}
