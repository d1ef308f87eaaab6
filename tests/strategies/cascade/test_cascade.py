"""The cascade through the real SDK clients, HTTP mocked: order, escalation, trace, money."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import anthropic
import openai
import pydantic
import pytest
import respx

import spendguard
from spendguard import (
    AttemptOutcome,
    CascadeFailed,
    ConfigError,
    Learning,
    MemoryStats,
    UnknownModelError,
    Usage,
    check_matches,
    cost,
)
from tests.cascade_helpers import (
    ANTHROPIC_MESSAGES,
    IN_TOKENS,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    OUT_TOKENS,
    Script,
)

QUESTION = {"messages": [{"role": "user", "content": "2+2? Answer with one letter: A) 3 B) 4"}],
            "max_tokens": 20}
LETTER = check_matches(r"^\s*B\b")
SMALL, MID, LARGE = "gpt-4o-mini", "gpt-4.1-mini", "gpt-4o"


def usd(model: str, input_tokens: int = IN_TOKENS, output_tokens: int = OUT_TOKENS) -> Decimal:
    return cost(model, Usage(input_tokens=input_tokens, output_tokens=output_tokens)).total


def openai_client() -> openai.OpenAI:
    return openai.OpenAI(api_key="test", max_retries=0)


def scripted(router: respx.MockRouter, answers: dict[str, str], url: str = OPENAI_CHAT,
             judge: str = "PASS") -> Script:
    script = Script(answers, judge=judge)
    router.post(url).mock(side_effect=script.responder(url))
    return script


@respx.mock
def test_cheapest_model_answers_when_its_reply_passes() -> None:
    script = scripted(respx.mock, {SMALL: "B", LARGE: "B"})
    result = spendguard.cascade(openai_client(), QUESTION, models=[LARGE, SMALL], check=LETTER)
    assert script.calls == [SMALL]
    assert result.model == SMALL
    assert result.text == "B"
    assert result.passed
    assert [a.outcome for a in result.attempts] == [AttemptOutcome.PASSED]


@respx.mock
def test_failed_check_escalates_and_the_trace_prices_every_attempt() -> None:
    script = scripted(respx.mock, {SMALL: "A", MID: "maybe", LARGE: "B"})
    result = spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE, MID],
                                check=LETTER)
    assert script.calls == [SMALL, MID, LARGE]
    first, second, third = result.attempts
    assert (first.model, first.outcome) == (SMALL, AttemptOutcome.FAILED)
    assert first.reason.startswith("escalated: regex")
    assert (first.input_tokens, first.output_tokens) == (IN_TOKENS, OUT_TOKENS)
    assert first.cost_usd == usd(SMALL)
    assert second.outcome is AttemptOutcome.FAILED
    assert third.outcome is AttemptOutcome.PASSED
    assert result.cost_usd == usd(SMALL) + usd(MID) + usd(LARGE)
    assert result.baseline_usd == usd(LARGE)
    assert result.savings_usd == -(usd(SMALL) + usd(MID))
    assert SMALL in result.report()


@respx.mock
def test_savings_compare_with_the_largest_model_on_the_same_tokens() -> None:
    scripted(respx.mock, {SMALL: "B", LARGE: "B"})
    result = spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER)
    assert result.baseline_usd == usd(LARGE)
    assert result.savings_usd == usd(LARGE) - usd(SMALL)


@respx.mock
def test_keep_order_tries_models_as_given() -> None:
    script = scripted(respx.mock, {SMALL: "A", LARGE: "B"})
    spendguard.cascade(openai_client(), QUESTION, models=[LARGE, SMALL], check=LETTER,
                       keep_order=True)
    assert script.calls == [LARGE]


@respx.mock
def test_every_tier_failing_raises_cascade_failed_with_the_attempts() -> None:
    scripted(respx.mock, {SMALL: "A", LARGE: "C"})
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER)
    error = caught.value
    assert error.reason == "all_failed"
    assert [a.model for a in error.attempts] == [SMALL, LARGE]
    assert error.cost_usd == usd(SMALL) + usd(LARGE)
    assert "every tier failed its check" in str(error)
    assert SMALL in str(error) and LARGE in str(error)


@respx.mock
def test_accept_last_returns_the_largest_reply_even_when_it_fails() -> None:
    scripted(respx.mock, {SMALL: "A", LARGE: "C"})
    result = spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                                accept_last=True)
    assert (result.model, result.text, result.passed) == (LARGE, "C", False)


@respx.mock
def test_max_usd_refuses_a_tier_whose_worst_case_does_not_fit() -> None:
    script = scripted(respx.mock, {SMALL: "A", LARGE: "B"})
    # Enough for the small model's worst case (20 output tokens), not the large one's.
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                           max_usd=Decimal("0.0002"))
    assert script.calls == [SMALL]
    failed, unaffordable = caught.value.attempts
    assert unaffordable.outcome is AttemptOutcome.UNAFFORDABLE
    assert unaffordable.worst_case_usd is not None
    assert unaffordable.worst_case_usd > Decimal("0.0002") - failed.cost_usd
    assert caught.value.reason == "budget"
    assert "money ran out" in str(caught.value)


class FixedBudget:
    """Anything with a Decimal ``remaining`` is read as a budget."""

    def __init__(self, remaining: str) -> None:
        self.remaining = Decimal(remaining)


@respx.mock
def test_budget_remaining_is_checked_before_the_first_call() -> None:
    script = scripted(respx.mock, {SMALL: "B"})
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                           budget=FixedBudget("0"))
    assert script.calls == []
    assert caught.value.cost_usd == 0


@respx.mock
def test_anthropic_clients_cascade_over_messages() -> None:
    script = scripted(respx.mock, {"claude-haiku-5-5": "A", "claude-sonnet-5-5": "B"},
                      url=ANTHROPIC_MESSAGES)
    client = anthropic.Anthropic(api_key="test", max_retries=0)
    result = spendguard.cascade(client, QUESTION,
                                models=["claude-sonnet-5-5", "claude-haiku-5-5"], check=LETTER)
    assert script.calls == ["claude-haiku-5-5", "claude-sonnet-5-5"]
    assert result.model == "claude-sonnet-5-5"
    assert result.attempts[0].cost_usd == usd("claude-haiku-5-5")


@respx.mock
def test_a_request_with_input_goes_to_the_responses_api() -> None:
    script = scripted(respx.mock, {SMALL: "B"}, url=OPENAI_RESPONSES)
    result = spendguard.cascade(openai_client(), {"input": "2+2? A) 3 B) 4",
                                                  "max_output_tokens": 20},
                                models=[SMALL, LARGE], check=LETTER)
    assert script.calls == [SMALL]
    assert result.text == "B"


class Answer(pydantic.BaseModel):
    letter: str


@respx.mock
def test_pydantic_check_puts_the_parsed_reply_in_value() -> None:
    scripted(respx.mock, {SMALL: "B", LARGE: '{"letter": "B"}'})
    result = spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=Answer)
    assert result.value == Answer(letter="B")
    assert "Answer" in result.attempts[0].reason


@respx.mock
def test_judge_check_is_billed_in_the_trace() -> None:
    script = scripted(respx.mock, {SMALL: "B", LARGE: "B"}, judge="FAIL, wrong")
    judge = spendguard.check_judge("The answer is a single correct letter", model=SMALL)
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=judge)
    assert script.calls == [SMALL, f"judge:{SMALL}", LARGE, f"judge:{SMALL}"]
    first = caught.value.attempts[0]
    assert first.call_usd == usd(SMALL)
    assert first.check_usd == usd(SMALL)
    assert "said 'FAIL, wrong'" in first.reason
    assert caught.value.cost_usd == 3 * usd(SMALL) + usd(LARGE)
    judge_request = script.requests[1]
    assert "2+2?" in judge_request["messages"][0]["content"]


@respx.mock
def test_learning_skips_a_tier_that_rarely_passes_the_task() -> None:
    script = scripted(respx.mock, {SMALL: "A", LARGE: "B"})
    learning = Learning(MemoryStats(), min_tries=3, skip_below=0.5, explore=0.0)
    for _ in range(3):
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                           task="quiz", learning=learning)
    script.calls.clear()
    result = spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                                task="quiz", learning=learning)
    assert script.calls == [LARGE]
    skipped = result.attempts[0]
    assert skipped.outcome is AttemptOutcome.SKIPPED
    assert "passed 0 of 3" in skipped.reason
    # Another task has its own statistics.
    script.calls.clear()
    spendguard.cascade(openai_client(), QUESTION, models=[SMALL, LARGE], check=LETTER,
                       task="other", learning=learning)
    assert script.calls == [SMALL, LARGE]
    savings = learning.savings("quiz")
    assert savings.runs == 4
    assert savings.cost_usd == 3 * (usd(SMALL) + usd(LARGE)) + usd(LARGE)
    assert savings.baseline_usd == 4 * usd(LARGE)


def test_learning_re_tests_skipped_tiers_reproducibly_with_an_injected_rng() -> None:
    def decisions(seed: int) -> list[bool]:
        store = MemoryStats()
        for _ in range(10):
            store.record_attempt("t", SMALL, passed=False, cost_usd=Decimal(0))
        learning = Learning(store, min_tries=10, explore=0.3, rng=random.Random(seed))
        return [learning.decide("t", SMALL).attempt for _ in range(200)]

    first = decisions(7)
    assert first == decisions(7)
    assert 30 <= sum(first) <= 90  # about 30 % re-tests


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"models": []}, "at least one model"),
    ({"models": [SMALL, SMALL]}, "twice"),
    ({"models": [SMALL], "learning": Learning()}, "task"),
    ({"models": [SMALL], "max_usd": 0.5}, "floats"),
])
def test_bad_arguments_name_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spendguard.cascade(openai_client(), QUESTION, **kwargs)


def test_request_must_leave_the_model_to_the_cascade() -> None:
    with pytest.raises(ConfigError, match="leave 'model' out"):
        spendguard.cascade(openai_client(), {**QUESTION, "model": SMALL}, models=[SMALL])


def test_an_async_client_needs_acascade() -> None:
    with pytest.raises(ConfigError, match="acascade"):
        spendguard.cascade(openai.AsyncOpenAI(api_key="test"), QUESTION, models=[SMALL])


def test_an_unknown_model_is_an_error_not_free() -> None:
    with pytest.raises(UnknownModelError):
        spendguard.cascade(openai_client(), QUESTION, models=[SMALL, "gpt-imaginary"])
