"""The emulator matches OpenAI prefixes that end inside a message, as OpenAI does (by tokens)."""

from __future__ import annotations

from typing import Any

from spendguard.testing import Emulator, ManualClock

DOCUMENT = " ".join(f"Clause {i}: the supplier delivers item {i} on time." for i in range(260))


def _parts(question: str, part_type: str = "text") -> list[dict[str, Any]]:
    return [{"type": part_type, "text": DOCUMENT}, {"type": part_type, "text": question}]


def _user(content: list[dict[str, Any]]) -> Any:
    return [{"role": "user", "content": content}]


def test_a_shared_first_part_is_read_from_the_openai_cache_when_the_question_differs() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    usages = [client.chat.completions.create(
        model="gpt-4.1-mini", max_completion_tokens=5,
        messages=_user(_parts(question))).usage
        for question in ("Who delivers item 3?", "Who delivers item 4?")]
    assert usages[0] is not None and usages[1] is not None
    assert usages[0].prompt_tokens_details is not None
    assert usages[1].prompt_tokens_details is not None
    assert usages[0].prompt_tokens_details.cached_tokens == 0
    cached = usages[1].prompt_tokens_details.cached_tokens or 0
    assert cached >= 1024 and cached % 128 == 0
    assert usages[1].prompt_tokens - cached < 128 + 30


def test_a_question_before_the_shared_part_breaks_the_openai_prefix() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    for question in ("q1?", "q2?"):
        usage = client.chat.completions.create(
            model="gpt-4.1-mini", max_completion_tokens=5,
            messages=_user(_parts(question)[::-1])).usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_responses_input_parts_are_matched_part_by_part() -> None:
    client = Emulator(clock=ManualClock()).openai_client()
    usages = [client.responses.create(
        model="gpt-5.5", max_output_tokens=5,
        input=_user(_parts(q, "input_text"))).usage
        for q in ("q1?", "q2?")]
    assert usages[0] is not None and usages[1] is not None
    assert usages[0].input_tokens_details.cached_tokens == 0
    assert usages[1].input_tokens_details.cached_tokens >= 1024
