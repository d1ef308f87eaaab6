"""The cascade with spendguard's guarded clients: their budgets, refusals and ledger tags."""

from __future__ import annotations

from decimal import Decimal

import pytest
import respx

import spendguard
from spendguard import (
    AttemptOutcome,
    Budget,
    CascadeFailed,
    LedgerStats,
    Usage,
    check_matches,
    cost,
)
from tests.cascade_helpers import IN_TOKENS, OPENAI_CHAT, OUT_TOKENS, Script

QUESTION = {"messages": [{"role": "user", "content": "2+2? A) 3 B) 4"}], "max_tokens": 20}
SMALL, LARGE = "gpt-4o-mini", "gpt-4o"
LETTER = check_matches(r"^B$")


def usd(model: str) -> Decimal:
    return cost(model, Usage(input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS)).total


def scripted(answers: dict[str, str], judge: str = "PASS") -> Script:
    script = Script(answers, judge=judge)
    respx.post(OPENAI_CHAT).mock(side_effect=script.responder(OPENAI_CHAT))
    return script


@respx.mock
def test_the_guarded_clients_budget_is_checked_before_each_tier() -> None:
    script = scripted({SMALL: "A", LARGE: "B"})
    budget = Budget("0.0002", ledger="memory://")
    client = spendguard.OpenAI(api_key="test", max_retries=0, budget=budget)
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(client, QUESTION, models=[SMALL, LARGE], check=LETTER)
    assert script.calls == [SMALL]  # the large tier's worst case did not fit what was left
    failed, unaffordable = caught.value.attempts
    assert failed.cost_usd == usd(SMALL) == budget.spent
    assert unaffordable.outcome is AttemptOutcome.UNAFFORDABLE
    assert caught.value.reason == "budget"


@respx.mock
def test_a_with_budget_block_limits_an_unguarded_cascade_too() -> None:
    script = scripted({SMALL: "B"})
    with Budget("0", ledger="memory://"), pytest.raises(CascadeFailed):
        spendguard.cascade(spendguard.OpenAI(api_key="test", max_retries=0), QUESTION,
                           models=[SMALL, LARGE], check=LETTER)
    assert script.calls == []


@respx.mock
def test_a_judge_call_refused_by_the_budget_ends_the_cascade_with_the_call_charged() -> None:
    script = scripted({SMALL: "B", LARGE: "B"})
    budget = Budget("0.0001", ledger="memory://")
    client = spendguard.OpenAI(api_key="test", max_retries=0, budget=budget)
    # The judge may write up to 4,000 tokens: its worst case does not fit what is left.
    judge = spendguard.check_judge("one correct letter", model=LARGE, max_tokens=4000)
    with pytest.raises(CascadeFailed) as caught:
        spendguard.cascade(client, QUESTION, models=[SMALL, LARGE], check=judge)
    assert script.calls == [SMALL]
    (refused,) = caught.value.attempts
    assert refused.outcome is AttemptOutcome.REFUSED
    assert "refused the check" in refused.reason
    assert refused.call_usd == usd(SMALL) == budget.spent
    assert isinstance(caught.value.__cause__, spendguard.BudgetExceeded)


@respx.mock
def test_calls_of_a_named_task_are_tagged_in_the_ledger() -> None:
    scripted({SMALL: "A", LARGE: "B"})
    ledger = spendguard.open_ledger("memory://")
    budget = Budget("1", ledger=ledger)
    client = spendguard.OpenAI(api_key="test", max_retries=0, budget=budget)
    spendguard.cascade(client, QUESTION, models=[SMALL, LARGE], check=LETTER, task="quiz")
    records = list(ledger.records(tag="cascade.task=quiz"))
    assert [(r.model, r.tags["cascade.tier"]) for r in records] == [(SMALL, SMALL),
                                                                    (LARGE, LARGE)]
    assert sum(r.actual_usd for r in records) == usd(SMALL) + usd(LARGE)


@respx.mock
def test_ledger_learning_skips_a_failing_tier_in_a_later_process() -> None:
    script = scripted({SMALL: "A", LARGE: "B"})
    client = spendguard.OpenAI(api_key="test", max_retries=0)
    url = "memory://cascade-guarded-learning"
    first = spendguard.Learning(LedgerStats(url), min_tries=2,
                                explore=0.0)
    for _ in range(2):
        spendguard.cascade(client, QUESTION, models=[SMALL, LARGE], check=LETTER, task="quiz",
                           learning=first)
    script.calls.clear()
    later = spendguard.Learning(LedgerStats(url), min_tries=2,
                                explore=0.0)
    result = spendguard.cascade(client, QUESTION, models=[SMALL, LARGE], check=LETTER,
                                task="quiz", learning=later)
    assert script.calls == [LARGE]
    assert result.attempts[0].outcome is AttemptOutcome.SKIPPED
    assert later.savings("quiz").runs == 3
