"""acascade is the twin of cascade: same decisions, same trace, for async clients."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
import respx

import spendguard
from spendguard import (
    Candidate,
    CascadeFailed,
    CascadeResult,
    Check,
    ConfigError,
    Learning,
    MemoryStats,
    Verdict,
    check_matches,
)
from tests.cascade_helpers import ANTHROPIC_MESSAGES, OPENAI_CHAT, Script

QUESTION = {"messages": [{"role": "user", "content": "Pick B. A) no B) yes"}], "max_tokens": 20}
SMALL, MID, LARGE = "gpt-4o-mini", "gpt-4.1-mini", "gpt-4o"
ANSWERS = {SMALL: "A", MID: "B", LARGE: "B"}


def trace(result: CascadeResult) -> list[tuple[Any, ...]]:
    return [(a.model, a.outcome, a.reason, a.input_tokens, a.output_tokens, a.cost_usd,
             a.worst_case_usd) for a in result.attempts]


@respx.mock
async def test_async_and_sync_cascades_give_the_same_trace() -> None:
    script = Script(ANSWERS)
    respx.post(OPENAI_CHAT).mock(side_effect=script.responder(OPENAI_CHAT))
    kwargs: dict[str, Any] = {"models": [LARGE, MID, SMALL], "check": check_matches("^B$"),
                              "max_usd": "1"}
    sync = spendguard.cascade(openai.OpenAI(api_key="test", max_retries=0), QUESTION, **kwargs)
    sync_calls = list(script.calls)
    script.calls.clear()
    async_ = await spendguard.acascade(openai.AsyncOpenAI(api_key="test", max_retries=0),
                                       QUESTION, **kwargs)
    assert script.calls == sync_calls == [SMALL, MID]
    assert trace(async_) == trace(sync)
    assert (async_.model, async_.text, async_.baseline_usd) == (sync.model, sync.text,
                                                                 sync.baseline_usd)


@respx.mock
async def test_async_failure_and_learning_match_the_sync_twin() -> None:
    script = Script({SMALL: "A", LARGE: "C"})
    respx.post(OPENAI_CHAT).mock(side_effect=script.responder(OPENAI_CHAT))
    sync_learning = Learning(MemoryStats(), min_tries=1, skip_below=0.5, explore=0.0)
    async_learning = Learning(MemoryStats(), min_tries=1, skip_below=0.5, explore=0.0)
    errors = []
    for _ in range(2):
        with pytest.raises(CascadeFailed) as sync_error:
            spendguard.cascade(openai.OpenAI(api_key="test", max_retries=0), QUESTION,
                               models=[SMALL, LARGE], check=check_matches("^B$"), task="t",
                               learning=sync_learning)
        with pytest.raises(CascadeFailed) as async_error:
            await spendguard.acascade(openai.AsyncOpenAI(api_key="test", max_retries=0),
                                      QUESTION, models=[SMALL, LARGE],
                                      check=check_matches("^B$"), task="t",
                                      learning=async_learning)
        errors.append((sync_error.value, async_error.value))
    for sync_exc, async_exc in errors:
        assert str(sync_exc) == str(async_exc)
        assert [(a.model, a.outcome) for a in sync_exc.attempts] == \
            [(a.model, a.outcome) for a in async_exc.attempts]
    assert errors[1][1].attempts[0].outcome == "skipped"


class SlowUpper(Check):
    """An async-only check: passes upper-case replies."""

    def check(self, candidate: Candidate) -> Verdict:
        raise AssertionError("the async cascade must call acheck")

    async def acheck(self, candidate: Candidate) -> Verdict:
        return Verdict(candidate.text.isupper(), "not upper case")


@respx.mock
async def test_async_cascade_awaits_async_checks_and_judges_with_the_async_client() -> None:
    script = Script({"claude-haiku-5-5": "b", "claude-sonnet-5-5": "B"}, judge="PASS")
    respx.post(ANTHROPIC_MESSAGES).mock(side_effect=script.responder(ANTHROPIC_MESSAGES))
    client = anthropic.AsyncAnthropic(api_key="test", max_retries=0)
    judge = spendguard.check_judge("The reply is one letter", model="claude-haiku-5-5")
    result = await spendguard.acascade(client, QUESTION,
                                       models=["claude-haiku-5-5", "claude-sonnet-5-5"],
                                       check=SlowUpper() & judge)
    assert script.calls == ["claude-haiku-5-5", "claude-sonnet-5-5", "judge:claude-haiku-5-5"]
    assert result.model == "claude-sonnet-5-5"
    assert result.attempts[1].check_usd > 0


async def test_a_sync_client_needs_cascade_not_acascade() -> None:
    with pytest.raises(ConfigError, match=r"use spendguard\.cascade"):
        await spendguard.acascade(openai.OpenAI(api_key="test"), QUESTION, models=[SMALL])
