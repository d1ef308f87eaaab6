"""Cache ordering's default keeps meaning: a volatile system sentence is split out within the
system role (and the rest is cached), and more cache markers than Anthropic takes are capped."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import anthropic
import httpx2
import pytest

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator, ManualClock
from tests.plan_helpers import CLAUDE, DOCUMENT, GPT

RULES = " ".join(f"Rule {i}: answer politely and cite policy section {i}." for i in range(300))


def stamped_system(n: int) -> str:
    """The volatile value inside the first paragraph, before the long stable rules."""
    return f"Current time: 2026-05-01T10:{n:02d}:07Z. You are the Acme support agent. {RULES}"


BUDGETS: dict[int, spendguard.Budget] = {}


def anthropic_client(emulator: Emulator, cache_order: Any) -> spendguard.Anthropic:
    budget = spendguard.Budget("5", ledger="memory://", warn_at=None)
    client = spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                  max_retries=0, budget=budget, cache_order=cache_order,
                                  http_client=httpx2.Client(transport=emulator.transport()))
    BUDGETS[id(client)] = budget
    return client


def hit_rate(client: object) -> float:
    """The hit rate measured from the usage the client's calls returned (in its ledger)."""
    return spendguard.cache_stats(BUDGETS[id(client)].ledger).hit_rate


@pytest.mark.parametrize(("cache_order", "least", "most"), [(False, 0.0, 0.0),
                                                           (True, 0.85, 1.0)])
def test_a_timestamp_inside_a_system_paragraph_no_longer_stops_the_cache(
        cache_order: bool, least: float, most: float) -> None:
    emulator = Emulator(clock=ManualClock())
    client = anthropic_client(emulator, cache_order)
    for n in range(10):
        client.messages.create(model=CLAUDE, max_tokens=5, system=stamped_system(n),
                               messages=[{"role": "user", "content": f"Ticket {n}: late?"}])
    assert least <= hit_rate(client) <= most
    sent = emulator.requests[-1].body
    if cache_order:  # both parts are still system text, the volatile one after the rules
        assert [block["text"][:14] for block in sent["system"]] == ["You are the Ac",
                                                                     "Current time: "]
        assert sent["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert sent["messages"] == [{"role": "user", "content": "Ticket 9: late?"}]


def test_openai_system_text_is_split_within_the_system_message_and_cached() -> None:
    emulator = Emulator(clock=ManualClock())
    budget = spendguard.Budget("5", ledger="memory://", warn_at=None)
    client = spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL, max_retries=0,
                               http_client=httpx2.Client(transport=emulator.transport()),
                               budget=budget, cache_order=True)
    BUDGETS[id(client)] = budget
    for n in range(10):
        client.chat.completions.create(model=GPT, max_completion_tokens=5, messages=[
            {"role": "system", "content": stamped_system(n)},
            {"role": "user", "content": f"Ticket {n}: late?"}])
    assert hit_rate(client) > 0.8
    system = emulator.requests[-1].body["messages"][0]
    assert system["role"] == "system"
    assert system["content"][1]["text"] == "Current time: 2026-05-01T10:09:07Z."


def test_sentences_and_lines_without_volatile_values_stay_where_they_were() -> None:
    body = {"model": CLAUDE, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "system": "Be brief.\nRequest req_8f3a9b2c11d4e5 came in.\nAlways cite rules."}
    system = spendguard.order_for_cache(body, breakpoints=False).body["system"]
    assert [block["text"] for block in system] == ["Be brief.\nAlways cite rules.",
                                                   "Request req_8f3a9b2c11d4e5 came in."]


def marked(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


def over_marked(n: int) -> dict[str, Any]:
    """Five markers: three on the stable head and document, two after this request's own
    question (worth nothing: no later request shares those prefixes)."""
    return {"model": CLAUDE, "max_tokens": 5,
            "system": [marked("You are a contracts analyst."), marked(RULES)],
            "messages": [{"role": "user", "content": [
                marked(DOCUMENT), marked(f"Question {n}: who delivers item {n}?"),
                marked("Answer in one line.")]}]}


def test_more_markers_than_anthropic_takes_keeps_the_stable_ones_and_warns(
        caplog: pytest.LogCaptureFixture) -> None:
    emulator = Emulator(clock=ManualClock())
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        anthropic_client(emulator, False).messages.create(**over_marked(0))
    client = anthropic_client(emulator, True)
    with caplog.at_level(logging.WARNING, logger="spendguard"):
        for n in range(3):
            client.messages.create(**over_marked(n))
    assert "5 cache_control markers, Anthropic takes at most 4" in caplog.text
    sent = emulator.requests[-1].body
    kept = [("system", i) for i, b in enumerate(sent["system"]) if "cache_control" in b] + [
        ("user", i) for i, b in enumerate(sent["messages"][0]["content"])
        if "cache_control" in b]
    # The markers after the question cache per-request prefixes: the last of them goes.
    assert kept == [("system", 0), ("system", 1), ("user", 0), ("user", 1)]
    assert hit_rate(client) > 0.5


def test_markers_are_capped_even_without_adding_breakpoints() -> None:
    ordered = spendguard.order_for_cache(over_marked(1), breakpoints=False)
    assert len(ordered.breakpoints) == 0
    assert any("dropped the one(s) worth least (messages[0].content[2])" in note
               for note in ordered.notes)
    content = ordered.body["messages"][0]["content"]
    assert [("cache_control" in block) for block in content] == [True, True, False]


def one_string(i: int, *, document_first: bool) -> dict[str, Any]:
    question = f"Who delivers item {i}?"
    text = f"{DOCUMENT}\n\n{question}" if document_first else f"{question}\n\n{DOCUMENT}"
    return {"model": CLAUDE, "max_tokens": 50, "system": "You are a contracts analyst.",
            "messages": [{"role": "user", "content": text}]}


def test_a_shared_document_leading_a_single_string_is_split_into_its_own_block() -> None:
    ordered = spendguard.order_for_cache(one_string(3, document_first=True), shared=[DOCUMENT])
    content = ordered.body["messages"][0]["content"]
    assert [block["text"] for block in content] == [DOCUMENT, "Who delivers item 3?"]
    assert ordered.breakpoints == ("messages[0].content[0]",)
    assert ordered.moves == ()


def test_a_shared_document_after_the_question_is_left_in_place_and_noted() -> None:
    body = one_string(3, document_first=False)
    ordered = spendguard.order_for_cache(body, shared=[DOCUMENT])
    assert ordered.body["messages"] == body["messages"]
    assert any("follows this request's own text" in note for note in ordered.notes)
    moved = spendguard.order_for_cache(body, shared=[DOCUMENT], reorder_content=True)
    assert [b["text"] for b in moved.body["messages"][0]["content"]] == [
        DOCUMENT, "Who delivers item 3?"]
    assert moved.moves


def test_a_plan_finds_a_document_its_requests_share_inside_their_strings() -> None:
    leading = spendguard.plan([one_string(i, document_first=True) for i in range(20)],
                              cache_order=True)
    assert leading.totals.cache_read_tokens > 0
    assert any("split into a block of its own in 20 request(s)" in n for n in leading.notes)
    trailing_requests = [one_string(i, document_first=False) for i in range(20)]
    trailing = spendguard.plan(trailing_requests, cache_order=True)
    assert trailing.totals.cache_read_tokens == 0  # nothing moved: the question comes first
    note = next(n for n in trailing.notes if "20 requests share a" in n)
    saving = Decimal(note.rsplit("$", 1)[1])
    reordered = spendguard.plan(trailing_requests,
                                cache_order=spendguard.CacheOrder(reorder_content=True))
    actual = trailing.expected_usd - reordered.expected_usd
    assert abs(saving - actual) < actual / 50  # the note's estimate is within 2 %
