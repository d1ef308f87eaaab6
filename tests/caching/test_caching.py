"""order_for_cache: stable content first, volatile values flagged, cache markers where they pay."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spendguard
from tests.plan_helpers import CLAUDE, DOCUMENT, GPT, SYSTEM, anthropic_fanout, openai_fanout

STAMPED = f"{SYSTEM}\n\nCurrent time: 2026-05-21T10:22:33Z. Request req_8f3a9b2c11d4e5."


def _tool(name: str, **properties: Any) -> dict[str, Any]:
    return {"name": name, "description": f"the {name} tool",
            "input_schema": {"type": "object", "properties": properties}}


def test_tools_are_sorted_by_name_with_their_keys_sorted() -> None:
    body = anthropic_fanout(1)[0]
    body["tools"] = [_tool("zeta", b={"type": "string"}, a={"type": "string"}), _tool("alpha")]
    ordered = spendguard.order_for_cache(body).body
    assert [tool["name"] for tool in ordered["tools"]] == ["alpha", "zeta"]
    assert list(ordered["tools"][1]) == ["description", "input_schema", "name"]
    assert list(ordered["tools"][1]["input_schema"]["properties"]) == ["a", "b"]


def test_a_marker_on_the_last_tool_stays_on_the_last_tool() -> None:
    body = anthropic_fanout(1)[0]
    body["tools"] = [_tool("zeta"), {**_tool("alpha"), "cache_control": {"type": "ephemeral"}}]
    tools = spendguard.order_for_cache(body).body["tools"]
    assert [("cache_control" in tool) for tool in tools] == [False, True]


def test_volatile_system_paragraphs_move_after_the_stable_text_in_their_own_block() -> None:
    body = {**anthropic_fanout(1)[0], "system": STAMPED}
    result = spendguard.order_for_cache(body)
    assert result.body["system"][0]["text"] == SYSTEM
    assert "2026-05-21T10:22:33Z" in result.body["system"][1]["text"]
    kinds = {value.kind: value.moved for value in result.volatile}
    assert kinds == {"timestamp": True, "request id": True}


def test_openai_system_text_is_split_into_a_stable_and_a_volatile_part() -> None:
    body = openai_fanout(1)[0]
    body["messages"][0]["content"] = STAMPED
    content = spendguard.order_for_cache(body).body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": SYSTEM}
    assert "req_8f3a9b2c11d4e5" in content[1]["text"]


def test_a_volatile_value_that_cannot_move_is_flagged_as_breaking_the_prefix() -> None:
    body = {**anthropic_fanout(1)[0], "system": "Session 3f2b8c1e-9a4d-4e2f-8b1a-0c9d8e7f6a5b."}
    result = spendguard.order_for_cache(body)
    assert [(v.kind, v.moved) for v in result.volatile] == [("uuid", False)]
    assert "breaks the cached prefix" in str(result.volatile[0])
    assert any("stops at system" in note for note in result.notes)
    assert result.breakpoints == ()


def test_move_volatile_false_only_flags() -> None:
    body = {**anthropic_fanout(1)[0], "system": STAMPED}
    result = spendguard.order_for_cache(body, move_volatile=False)
    assert result.body["system"] == STAMPED
    assert {v.moved for v in result.volatile} == {False}


def test_content_keeps_its_order_by_default_and_moves_only_when_asked_and_reported() -> None:
    body = anthropic_fanout(1, question_first=True)[0]
    body["messages"] += [{"role": "assistant", "content": "Acme."},
                         {"role": "user", "content": [{"type": "text", "text": "And item 9?"},
                                                      body["messages"][0]["content"][1]]}]
    kept = spendguard.order_for_cache(body)
    assert kept.body["messages"] == body["messages"] and kept.moves == ()
    ordered = spendguard.order_for_cache(body, reorder_content=True)
    messages = ordered.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[0]["content"]] == ["document", "text"]
    assert [b["type"] for b in messages[2]["content"]] == ["text", "document"]  # untouched
    assert ordered.moves and "messages[0].content: blocks [1, 0]" in ordered.moves[0]
    assert "moved: messages[0].content" in ordered.report()


def test_two_instructions_each_before_its_document_stay_in_order() -> None:
    doc_a = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": DOCUMENT}}
    doc_b = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": DOCUMENT.replace("supplier", "carrier")}}
    content = [{"type": "text", "text": "Summarise the document immediately below."}, doc_a,
               {"type": "text", "text": "Now translate the document immediately below."}, doc_b]
    body = {"model": CLAUDE, "max_tokens": 100, "system": SYSTEM,
            "messages": [{"role": "user", "content": content}]}
    ordered = spendguard.order_for_cache(body)
    assert [_bare_block(b) for b in ordered.body["messages"][0]["content"]] == content
    assert ordered.moves == ()
    plan = spendguard.plan([body, body], cache_order=True)
    assert [_bare_block(b) for b in plan.requests[0].body["messages"][0]["content"]] == content
    assert not any("reordered" in note for note in plan.notes)


def _bare_block(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def test_long_texts_and_texts_shared_across_requests_go_first_when_asked() -> None:
    body = openai_fanout(1, question_first=True)[0]
    assert spendguard.order_for_cache(body, reorder_content=True).body[
        "messages"][1]["content"][0]["text"] == DOCUMENT
    short = copy.deepcopy(body)
    short["messages"][1]["content"][1]["text"] = "Annex: item 7 ships by sea."
    alone = spendguard.order_for_cache(short, reorder_content=True).body["messages"][1][
        "content"]
    shared = spendguard.order_for_cache(short, shared=["Annex: item 7 ships by sea."],
                                        reorder_content=True)
    assert alone[0]["text"].startswith("Who delivers")  # short text: not known to be shared
    assert shared.body["messages"][1]["content"][0]["text"].startswith("Annex")


def test_the_input_body_is_not_modified() -> None:
    body = {**anthropic_fanout(1)[0], "system": STAMPED}
    body["tools"] = [_tool("zeta"), _tool("alpha")]
    before = copy.deepcopy(body)
    spendguard.order_for_cache(body)
    assert body == before


@pytest.mark.parametrize("body", [
    {**anthropic_fanout(1)[0], "system": STAMPED, "tools": [_tool("b"), _tool("a")]},
    openai_fanout(1)[0],
    {**openai_fanout(1, model="gpt-5.6-sol")[0]},
    {"model": "gpt-5.5", "instructions": STAMPED, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "q?"},
                                     {"type": "input_file", "file_data": "x"}]}]},
])
def test_ordering_an_ordered_body_changes_nothing(body: dict[str, Any]) -> None:
    once = spendguard.order_for_cache(body, shared=[DOCUMENT]).body
    assert spendguard.order_for_cache(once, shared=[DOCUMENT]).body == once


def test_anthropic_gets_a_breakpoint_after_the_shared_document() -> None:
    result = spendguard.order_for_cache(anthropic_fanout(1)[0])
    assert result.breakpoints == ("messages[0].content[0]",)
    block = result.body["messages"][0]["content"][0]
    assert block["type"] == "document"
    assert block["cache_control"] == {"type": "ephemeral"}
    assert result.ttl == "5m"


def test_no_breakpoint_under_the_models_minimum_length() -> None:
    body = {"model": "claude-haiku-4-5", "max_tokens": 10, "system": "Short, stable rules.",
            "messages": [{"role": "user", "content": "hi"}]}
    result = spendguard.order_for_cache(body)
    assert result.breakpoints == ()
    assert any("4096-token minimum" in note for note in result.notes)


def test_long_gaps_between_reuses_choose_the_one_hour_ttl_when_it_pays_back() -> None:
    body = anthropic_fanout(1)[0]
    one_hour = spendguard.order_for_cache(body, reuses=5, reuse_gap_s=20 * 60)
    assert one_hour.ttl == "1h"
    block = one_hour.body["messages"][0]["content"][0]
    assert block["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # 1-hour writes cost 2x input: one reuse (2 + 0.1 > 2 plain reads) does not pay them back
    once = spendguard.order_for_cache(body, reuses=1, reuse_gap_s=20 * 60)
    assert once.breakpoints == () and "do not pay back" in once.notes[0]


@pytest.mark.parametrize(("reuses", "gap_s"), [(0, None), (10, 2 * 3600)])
def test_no_cache_write_when_it_cannot_be_read_back(reuses: int, gap_s: float | None) -> None:
    result = spendguard.order_for_cache(anthropic_fanout(1)[0], reuses=reuses,
                                        reuse_gap_s=gap_s)
    assert result.breakpoints == ()
    assert "cache_control" not in str(result.body)


def test_at_most_four_breakpoints() -> None:
    body = anthropic_fanout(1)[0]
    marked = {"type": "ephemeral"}
    body["system"] = [{"type": "text", "text": f"rule {i}", "cache_control": marked}
                      for i in range(4)]
    result = spendguard.order_for_cache(body)
    assert len(result.breakpoints) == 4
    assert "cache_control" not in result.body["messages"][0]["content"][0]
    assert any("already has 4" in note for note in result.notes)


def test_openai_prompt_cache_key_follows_the_shared_prefix() -> None:
    first, second = openai_fanout(2)
    other = copy.deepcopy(first)
    other["messages"][1]["content"][1]["text"] = DOCUMENT.replace("supplier", "vendor")
    keys = [spendguard.order_for_cache(b, shared=[DOCUMENT]).prompt_cache_key
            for b in (first, second)]
    assert keys[0] is not None and keys[0] == keys[1] and keys[0].startswith("sg-")
    assert spendguard.order_for_cache(other).prompt_cache_key != keys[0]
    kept = spendguard.order_for_cache({**first, "prompt_cache_key": "mine"}, shared=[DOCUMENT])
    assert kept.body["prompt_cache_key"] == "mine"


def test_openai_explicit_breakpoints_only_where_the_model_has_them() -> None:
    older = spendguard.order_for_cache(openai_fanout(1, model=GPT)[0])
    newer = spendguard.order_for_cache(openai_fanout(1, model="gpt-5.6-sol")[0])
    assert older.breakpoints == () and "prompt_cache_breakpoint" not in str(older.body)
    assert newer.breakpoints == ("messages[1].content[0]",)
    assert newer.body["messages"][1]["content"][0]["prompt_cache_breakpoint"] == {
        "mode": "explicit"}


def test_openai_responses_long_gaps_ask_for_twelve_hour_retention() -> None:
    body = {"model": "gpt-5.6-sol", "instructions": DOCUMENT, "input": "q?",
            "max_output_tokens": 10}
    result = spendguard.order_for_cache(body, reuses=10, reuse_gap_s=3 * 3600)
    assert result.body["prompt_cache_options"] == {"ttl": "12h"}


def test_provider_and_endpoint_are_read_from_the_body() -> None:
    assert spendguard.order_for_cache(anthropic_fanout(1)[0]).provider == "anthropic"
    assert spendguard.order_for_cache(openai_fanout(1)[0]).endpoint == "chat.completions"
    responses = spendguard.order_for_cache({"model": "gpt-5.5", "input": "hi"})
    assert responses.endpoint == "responses"
    embeddings = spendguard.order_for_cache({"model": "text-embedding-3-small", "input": "hi"})
    assert embeddings.endpoint == "embeddings" and embeddings.breakpoints == ()


def test_a_bad_provider_names_the_field() -> None:
    with pytest.raises(spendguard.ConfigError, match="provider"):
        spendguard.order_for_cache({"model": CLAUDE}, provider="bedrock")


def test_report_lists_markers_flags_and_notes() -> None:
    marked = spendguard.order_for_cache(anthropic_fanout(1)[0]).report()
    assert "breakpoints messages[0].content[0] (ttl 5m)" in marked
    # a stamp left in the system prompt keeps the document after it out of the cache
    stamped = spendguard.order_for_cache({**anthropic_fanout(1)[0], "system": STAMPED}).report()
    assert "breakpoints none" in stamped
    assert "volatile: timestamp" in stamped and "stops at system[1]" in stamped


def test_volatile_system_text_can_move_to_the_end_of_the_last_user_message() -> None:
    body = {**anthropic_fanout(1)[0], "system": STAMPED}
    result = spendguard.order_for_cache(body, volatile_to_last_message=True)
    assert result.body["system"] == SYSTEM
    last = result.body["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["document", "text", "text"]
    assert "2026-05-21T10:22:33Z" in last[-1]["text"]
    assert {v.moved_to for v in result.volatile} == {"the end of the last user message"}
    assert result.breakpoints == ("messages[0].content[0]",)  # the document caches again
    again = spendguard.order_for_cache(result.body, volatile_to_last_message=True)
    assert again.body == result.body


def test_openai_volatile_text_moves_to_the_last_user_message_too() -> None:
    chat = openai_fanout(1)[0]
    chat["messages"][0]["content"] = STAMPED
    chat["messages"] += [{"role": "assistant", "content": "Acme."},
                         {"role": "user", "content": "And item 9?"}]
    moved = spendguard.order_for_cache(chat, volatile_to_last_message=True).body["messages"]
    assert moved[0]["content"] == SYSTEM
    assert moved[3]["content"][0] == {"type": "text", "text": "And item 9?"}
    assert "req_8f3a9b2c11d4e5" in moved[3]["content"][1]["text"]
    responses = {"model": "gpt-5.5", "instructions": STAMPED, "input": "q?"}
    body = spendguard.order_for_cache(responses, volatile_to_last_message=True).body
    assert body["instructions"] == SYSTEM
    assert body["input"][0]["role"] == "user"
    assert [part["type"] for part in body["input"][0]["content"]] == ["input_text"] * 2


def test_without_a_user_message_volatile_text_stays_in_the_system_prompt() -> None:
    body = {"model": CLAUDE, "max_tokens": 5, "system": STAMPED,
            "messages": [{"role": "assistant", "content": "Hello"}]}
    result = spendguard.order_for_cache(body, volatile_to_last_message=True)
    assert result.body["system"][1]["text"].startswith("Current time")
    assert {v.moved_to for v in result.volatile} == {"the end of the system prompt"}


@given(st.integers(min_value=0, max_value=12),
       st.sampled_from(["claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5"]),
       st.sampled_from([60.0, 1800.0]))
@settings(max_examples=40, deadline=None)
def test_a_breakpoint_is_placed_exactly_when_the_write_pays_back(
        reuses: int, model: str, gap_s: float) -> None:
    rates = spendguard.price(model)
    ttl = "5m" if gap_s <= 300 else "1h"
    write = rates.cache_write_usd_per_million[ttl]
    read = rates.cache_read_usd_per_million or rates.input_usd_per_million
    pays = reuses >= 1 and write + reuses * read < (1 + reuses) * rates.input_usd_per_million
    body = anthropic_fanout(1, model=model)[0]
    result = spendguard.order_for_cache(body, reuses=reuses, reuse_gap_s=gap_s)
    assert bool(result.breakpoints) == pays
    assert result.ttl == (ttl if pays else None)
