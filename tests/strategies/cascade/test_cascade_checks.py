"""Checks: plain callables, pydantic models, regexes, and their & / | combinations."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pydantic
import pytest

import spendguard
from spendguard import (
    Candidate,
    ConfigError,
    Verdict,
    always_pass,
    check_all,
    check_any,
    check_matches,
    check_parses,
    check_with,
)
from spendguard._strategies.cascade.checks import as_check


def reply(text: str) -> Candidate:
    return Candidate(model="gpt-4o-mini", text=text)


class Ticket(pydantic.BaseModel):
    priority: int
    team: str


def test_callable_check_passes_on_true_and_fails_on_false() -> None:
    check = as_check(lambda text: "42" in text)
    assert check(reply("the answer is 42")).passed
    verdict = check(reply("no idea"))
    assert not verdict.passed
    assert "returned False" in verdict.reason


def test_callable_raising_value_error_or_assertion_fails_with_the_message() -> None:
    def is_json(text: str) -> bool:
        json.loads(text)
        return True

    def positive(text: str) -> bool:
        assert int(text) > 0, "must be positive"
        return True

    assert not as_check(is_json)(reply("{nope")).passed
    assert "JSONDecodeError" in as_check(is_json)(reply("{nope")).reason
    assert as_check(positive)(reply("-3")).reason.startswith(
        "positive: AssertionError: must be positive")


def test_callable_returning_something_else_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="must return a bool"):
        as_check(lambda text: "yes")(reply("x"))


def test_pydantic_check_parses_json_even_inside_a_code_fence() -> None:
    check = check_parses(Ticket)
    fenced = reply('Here you go:\n```json\n{"priority": 2, "team": "billing"}\n```')
    verdict = check(fenced)
    assert verdict.passed
    assert verdict.value == Ticket(priority=2, team="billing")


def test_pydantic_check_names_the_failing_field() -> None:
    verdict = as_check(Ticket)(reply('{"priority": "high"}'))
    assert not verdict.passed
    assert "priority" in verdict.reason
    assert "Ticket" in verdict.reason


def test_regex_check_searches_or_matches_whole_reply() -> None:
    assert check_matches(r"[ABCD]")(reply("Answer: C")).passed
    assert not check_matches(r"[ABCD]", full=True)(reply("Answer: C")).passed
    assert check_matches(r"[ABCD]", full=True)(reply(" C\n")).passed
    verdict = as_check(re.compile(r"(\d+)"))(reply("x = 17"))
    assert verdict.value.group(1) == "17"


def test_and_stops_at_first_failure_so_later_checks_do_not_run() -> None:
    seen: list[str] = []

    def later(text: str) -> bool:
        seen.append(text)
        return True

    combined = check_matches(r"^\{") & later
    assert not combined(reply("plain text")).passed
    assert seen == []
    assert combined(reply("{}")).passed
    assert seen == ["{}"]


def test_or_stops_at_first_pass() -> None:
    seen: list[str] = []

    def later(text: str) -> bool:
        seen.append(text)
        return False

    combined = check_any(check_matches("yes"), later)
    assert combined(reply("yes")).passed
    assert seen == []
    assert not combined(reply("no")).passed
    assert seen == ["no"]


def test_combined_verdict_sums_check_costs_and_keeps_the_parsed_value() -> None:
    paid = check_with(lambda text: Verdict(True, cost_usd=Decimal("0.001")))
    also_paid = check_with(lambda text: Verdict(True, cost_usd=Decimal("0.002")))
    verdict = check_all(paid, check_parses(Ticket), also_paid)(
        reply('{"priority": 1, "team": "ops"}'))
    assert verdict.passed
    assert verdict.cost_usd == Decimal("0.003")
    assert verdict.value == Ticket(priority=1, team="ops")


def test_always_pass_is_the_null_check_and_none_means_it() -> None:
    assert as_check(None) is always_pass
    assert always_pass(reply("")).passed
    assert (always_pass & check_matches("x"))(reply("y")).passed is False


def test_a_regex_string_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="check_matches"):
        as_check("[ABCD]")  # type: ignore[arg-type]


def test_check_parses_refuses_a_non_pydantic_class() -> None:
    with pytest.raises(ConfigError, match="BaseModel"):
        check_parses(dict)


def test_async_callable_cannot_run_in_a_sync_cascade() -> None:
    async def slow(text: str) -> bool:
        return True

    with pytest.raises(ConfigError, match="acascade"):
        as_check(slow)(reply("x"))


async def test_async_callable_runs_under_acheck() -> None:
    async def has_digit(text: str) -> bool:
        return any(c.isdigit() for c in text)

    assert (await as_check(has_digit).acheck(reply("a1"))).passed
    assert not (await (as_check(has_digit) & check_matches("z")).acheck(reply("a1"))).passed


def test_check_constructors_are_exported() -> None:
    for name in ("check_all", "check_any", "check_judge", "check_matches", "check_parses",
                 "check_with", "always_pass", "Verdict", "Candidate"):
        assert name in spendguard.__all__


def test_a_hand_built_candidate_is_its_endpoints_providers() -> None:
    assert reply("ok").provider == "openai"
    messages = Candidate(model="claude-haiku-4-5", text="ok",
                         endpoint=spendguard.Endpoint("messages"))
    assert messages.provider == "anthropic"
    assert Candidate(model="m", text="ok", provider="gemini").provider == "gemini"
