"""Runaway detection and degrading before refusing, through the real SDKs and the emulator."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

import spendguard
from spendguard.cli import main
from spendguard.testing import Emulator, ManualClock
from tests.ledger_helpers import FakeClock
from tests.paths import REPO
from tests.redis_helpers import fixture_redis_prefix, ledger_url, requires_redis

__all__ = ["fixture_redis_prefix"]



def _client(emulator: Emulator, budget: spendguard.Budget, **options: Any) -> Any:
    return spendguard.wrap(emulator.openai_client(max_retries=0, **options), budget)


def _ask(client: Any, text: str = "Is the build green?", model: str = "gpt-4o-mini") -> Any:
    return client.chat.completions.create(model=model, max_tokens=20,
                                          messages=[{"role": "user", "content": text}])


def _budget(clock: FakeClock, scope: str, **options: Any) -> spendguard.Budget:
    return spendguard.Budget(options.pop("limit", "10"), ledger="memory://", scope=scope,
                             clock=clock, **options)


def test_a_repeated_request_is_cooled_down_and_nothing_more_reaches_the_provider() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "agent:repeat", runaway=spendguard.RunawayRules(max_repeats=5))
    client = _client(emulator, budget)
    for _ in range(5):
        _ask(client)
    with pytest.raises(spendguard.RunawayRefused) as refused:
        _ask(client)
    assert refused.value.rule == "repeats"
    assert "max_repeats" in str(refused.value) and "runaway=None" in str(refused.value)
    assert isinstance(refused.value, spendguard.BudgetExceeded)
    for _ in range(10):  # the cool-down: refused at once, silently, nothing sent
        clock.advance(seconds=10)
        with pytest.raises(spendguard.RunawayRefused):
            _ask(client)
    assert len(emulator.requests) == 5
    _ask(client, "Something else entirely")  # other requests still go
    clock.advance(seconds=300)
    _ask(client)  # the cool-down is over
    assert len(emulator.requests) == 7


def test_a_plain_client_under_install_is_stopped_by_the_default_rule() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    spendguard.install(budget=_budget(clock, "agent:unwrapped"))  # default RunawayRules
    try:
        client = emulator.openai_client(max_retries=2)  # a plain openai.OpenAI: code we don't own
        assert type(client) is openai.OpenAI
        for _ in range(20):
            _ask(client)
        with pytest.raises(spendguard.RunawayRefused):  # not retried by the SDK either
            _ask(client)
        clock.advance(seconds=120)  # still cooling down (five minutes)
        with pytest.raises(spendguard.RunawayRefused):
            _ask(client)
    finally:
        spendguard.uninstall()
    assert len(emulator.requests) == 20


def test_repeats_that_differ_only_in_a_timestamp_or_an_id_are_the_same_request() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "agent:stamps", runaway=spendguard.RunawayRules(max_repeats=3))
    client = _client(emulator, budget)
    _ask(client, "Service X down (checked 2026-12-01T10:01:00Z), request req_a1b2c3d4e5")
    _ask(client, "Service X down (checked 2026-12-01T10:02:00Z), request req_f6a7b8c9d0")
    _ask(client, "Service X down (checked 2026-12-01T10:03:00Z), request req_0a1b2c3d4e")
    with pytest.raises(spendguard.RunawayRefused):
        _ask(client, "Service X down (checked 2026-12-01T10:04:00Z), request req_9f8e7d6c5b")
    assert len(emulator.requests) == 3


def test_varied_traffic_at_the_same_rate_is_not_a_runaway() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:varied", runaway=spendguard.RunawayRules(max_repeats=3))
    client = _client(emulator, budget)
    for index in range(30):
        _ask(client, f"Summarise ticket number {index} for the weekly report")
    assert len(emulator.requests) == 30


def test_repeats_spread_wider_than_the_window_are_not_a_runaway() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:polling",
                     runaway=spendguard.RunawayRules(max_repeats=3, repeat_window_s=60))
    client = _client(emulator, budget)
    for _ in range(10):
        _ask(client)
        clock.advance(seconds=30)  # two per window at most
    assert len(emulator.requests) == 10


def test_a_trip_is_told_once_to_on_warn_and_written_to_the_ledger() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    told: list[Any] = []
    budget = _budget(clock, "agent:told", on_warn=told.append,
                     runaway=spendguard.RunawayRules(max_repeats=2, action="warn"))
    client = _client(emulator, budget)
    for _ in range(5):
        _ask(client)  # warn only: nothing refused
    assert len(emulator.requests) == 5
    trips = [event for event in told if isinstance(event, spendguard.RunawayTrip)]
    assert [trip.rule for trip in trips] == ["repeats", "repeats"]  # every 2 repeats
    assert trips[0].until is None
    events = list(budget.ledger.records(tag="spendguard.event=runaway"))
    assert len(events) == 2
    assert all(event.actual_usd == 0 and "max_repeats" in (event.note or "")
               for event in events)
    assert budget.spent == sum(r.actual_usd for r in budget.ledger.records()
                               if r.status == "ok")


def test_refuse_scope_stops_every_call_of_the_scope_until_lifted() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "agent:scope",
                     runaway=spendguard.RunawayRules(max_repeats=2, action="refuse_scope"))
    client = _client(emulator, budget)
    _ask(client)
    _ask(client)
    with pytest.raises(spendguard.RunawayRefused):
        _ask(client)
    with pytest.raises(spendguard.RunawayRefused):
        _ask(client, "A different question")
    spendguard.lift_runaway("agent:scope")
    _ask(client, "A different question")
    assert len(emulator.requests) == 3


def test_observe_mode_records_a_runaway_trip_but_refuses_nothing() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "agent:observed", enforce=False,
                     runaway=spendguard.RunawayRules(max_repeats=2))
    client = _client(emulator, budget)
    for _ in range(5):
        _ask(client)
    assert len(emulator.requests) == 5
    assert len(list(budget.ledger.records(tag="spendguard.event=runaway"))) == 1


def test_runaway_none_turns_detection_off() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    client = _client(emulator, _budget(clock, "agent:off", runaway=None))
    for _ in range(30):
        _ask(client)
    assert len(emulator.requests) == 30


def test_bad_runaway_rules_name_the_field() -> None:
    with pytest.raises(spendguard.BudgetConfigError, match="max_repeats"):
        spendguard.RunawayRules(max_repeats=0)
    with pytest.raises(spendguard.BudgetConfigError, match="action"):
        spendguard.RunawayRules(action="explode")  # type: ignore[arg-type]
    with pytest.raises(spendguard.BudgetConfigError, match="runaway"):
        spendguard.Budget("1", ledger="memory://", runaway="yes")  # type: ignore[arg-type]


def test_the_retries_of_one_call_are_linked_by_one_call_id() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:retries")
    client = spendguard.wrap(emulator.openai_client(max_retries=3), budget)
    emulator.fail_next(2, status=429, retry_after_ms=0)
    _ask(client)
    _ask(client, "A second call")
    calls: dict[str, list[Any]] = {}
    for record in budget.ledger.records():
        calls.setdefault(record.tags["spendguard.call_id"], []).append(record)
    assert sorted(len(attempts) for attempts in calls.values()) == [1, 3]
    retried = sorted(next(a for a in calls.values() if len(a) == 3), key=lambda r: r.attempt)
    assert [r.attempt for r in retried] == [1, 2, 3]
    assert [r.status for r in retried] == ["released", "released", "ok"]


def test_attempts_per_call_are_capped_and_the_cap_is_not_retried() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:capped",
                     runaway=spendguard.RunawayRules(max_attempts_per_call=2))
    client = spendguard.wrap(emulator.openai_client(max_retries=5), budget)
    emulator.fail_next(5, status=503, retry_after_ms=0)
    with pytest.raises(spendguard.RunawayRefused) as refused:
        _ask(client)
    assert refused.value.rule == "attempts_per_call"
    assert isinstance(refused.value, openai.OpenAIError)  # the SDK neither wraps nor retries
    assert len(emulator.requests) == 2


def test_attempts_per_minute_are_capped() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:rate",
                     runaway=spendguard.RunawayRules(max_attempts_per_minute=4))
    client = _client(emulator, budget)
    for index in range(4):
        _ask(client, f"question {index}")
    with pytest.raises(spendguard.RunawayRefused) as refused:
        _ask(client, "question 5")
    assert refused.value.rule == "attempts_per_minute"
    clock.advance(seconds=301)
    _ask(client, "question 6")
    assert len(emulator.requests) == 5


# -- degrade before refusing ----------------------------------------------------------------

def test_past_the_threshold_calls_go_to_the_cheaper_model_and_the_record_names_both() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:degrade", limit="0.01",
                     degrade=spendguard.Degrade({"gpt-4o": ["gpt-4o-mini"]}, at=0.5))
    client = _client(emulator, budget)
    models: list[str] = []
    for index in range(40):
        try:
            reply = _ask(client, f"Question {index}: " + "explain this. " * 20, model="gpt-4o")
        except spendguard.BudgetExceeded:
            break
        models.append(reply.model)
    sent = [request.body["model"] for request in emulator.requests]
    assert sent[0] == "gpt-4o" and "gpt-4o-mini" in sent
    switch = sent.index("gpt-4o-mini")
    assert set(sent[switch:]) == {"gpt-4o-mini"}
    records = [r for r in budget.ledger.records() if r.status == "ok"]
    assert sorted(r.model for r in records) == sorted(sent)
    degraded = [r for r in records if r.model == "gpt-4o-mini"]
    asked = [r for r in records if r.model == "gpt-4o"]
    assert all(r.tags["spendguard.requested_model"] == "gpt-4o" for r in degraded)
    assert all("spendguard.requested_model" not in r.tags for r in asked)
    # The switch came with the first call after half the limit was committed.
    spent_before_switch = sum((r.actual_usd for r in asked), Decimal(0))
    largest = max(r.actual_usd for r in asked)
    assert Decimal("0.005") <= spent_before_switch < Decimal("0.005") + largest
    assert budget.spent <= Decimal("0.01")


def test_degrade_refuses_only_when_even_the_cheapest_cannot_fit() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:tiny", limit="0.00002",
                     degrade=spendguard.Degrade({"gpt-4o": ["gpt-4o-mini"]}))
    client = _client(emulator, budget)
    reply = _ask(client, model="gpt-4o")  # gpt-4o's worst case cannot fit; mini's can
    assert reply.model.startswith("gpt-4o-mini")
    with pytest.raises(spendguard.BudgetExceeded):
        _ask(client, "x " * 2000, model="gpt-4o")
    assert [r.body["model"] for r in emulator.requests] == ["gpt-4o-mini"]


def test_models_the_user_did_not_list_are_never_substituted() -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    budget = _budget(clock, "app:unlisted", limit="0.00002",
                     degrade=spendguard.Degrade({"gpt-4o": ["gpt-4o-mini"]}))
    client = _client(emulator, budget)
    with pytest.raises(spendguard.BudgetExceeded):
        _ask(client, model="gpt-4.1")
    assert emulator.requests == []


def test_bad_degrade_policies_name_the_field() -> None:
    with pytest.raises(spendguard.BudgetConfigError, match="models"):
        spendguard.Degrade({"gpt-4o": "gpt-4o-mini"})
    with pytest.raises(spendguard.BudgetConfigError, match="at"):
        spendguard.Degrade({"gpt-4o": ["gpt-4o-mini"]}, at=1.5)


# -- spend velocity across processes ----------------------------------------------------------

VELOCITY_WORKER = textwrap.dedent("""
    import sys
    import httpx2
    import spendguard
    from tests.provider_bodies import chat_completion

    url, per_minute, calls, worker = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

    def handler(request):
        return httpx2.Response(200, json=chat_completion(prompt_tokens=9, completion_tokens=50))

    budget = spendguard.Budget("100", ledger=url, scope="fleet",
                               runaway=spendguard.RunawayRules(max_usd_per_minute=per_minute))
    client = spendguard.OpenAI(api_key="sk-test", max_retries=0, budget=budget,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    sent = refused = 0
    for index in range(calls):
        try:
            client.chat.completions.create(
                model="gpt-4o-mini", max_tokens=50,
                messages=[{"role": "user", "content": f"worker {worker} step {index}"}])
            sent += 1
        except spendguard.RunawayRefused as exc:
            refused += 1
    print(sent, refused)
""")


# Two processes are enough to show that the window is shared: both are stopped, and the overshoot
# stays within one call in flight each.
FLEET, CALLS_EACH = 2, 20


def _velocity_fleet(url: str) -> tuple[list[tuple[int, int]], Decimal]:
    per_minute = "0.0004"  # about 13 of the 40 calls' actual cost ($0.0000314 each)
    workers = [subprocess.Popen([sys.executable, "-c", VELOCITY_WORKER, url, per_minute,
                                 str(CALLS_EACH), str(n)], stdout=subprocess.PIPE, text=True,
                                cwd=REPO)
               for n in range(FLEET)]
    outputs = [w.communicate(timeout=120)[0].split() for w in workers]
    assert all(w.returncode == 0 for w in workers)
    return [(int(sent), int(refused)) for sent, refused in outputs], Decimal(per_minute)


def _check_fleet(results: list[tuple[int, int]], per_minute: Decimal, url: str) -> None:
    records = [r for r in spendguard.open_ledger(url).records() if r.status == "ok"]
    spent = sum((r.actual_usd for r in records), Decimal(0))
    assert sum(sent for sent, _ in results) == len(records) < FLEET * CALLS_EACH
    assert all(refused > 0 for _, refused in results)  # every process was stopped
    worst_call = max(r.actual_usd for r in records)
    # Overshoot is bounded by the calls in flight when the limit was crossed: one a process.
    assert per_minute < spent <= per_minute + FLEET * worst_call


def test_spend_velocity_trips_across_processes_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    results, per_minute = _velocity_fleet(url)
    _check_fleet(results, per_minute, url)


@requires_redis
def test_spend_velocity_trips_across_processes_on_redis(redis_prefix: str) -> None:
    url = ledger_url(redis_prefix)
    results, per_minute = _velocity_fleet(url)
    _check_fleet(results, per_minute, url)


def test_calls_charged_to_no_budget_have_no_runaway_rules(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    monkeypatch.setenv("SPENDGUARD_LEDGER", f"sqlite:///{tmp_path / 'default.db'}")
    emulator = Emulator(clock=ManualClock())
    client = spendguard.wrap(emulator.openai_client(max_retries=0), None)
    for _ in range(25):  # more than the default max_repeats: there is no scope to protect
        _ask(client, "the same unbudgeted question")
    assert len(emulator.requests) == 25


def test_the_report_lists_runaway_trips_and_does_not_count_them_as_calls(tmp_path: Path) -> None:
    clock, emulator = FakeClock(), Emulator(clock=ManualClock())
    url = f"sqlite:///{tmp_path / 'trips.db'}"
    budget = spendguard.Budget("10", ledger=url, scope="agent:report", clock=clock,
                               runaway=spendguard.RunawayRules(max_repeats=2))
    client = _client(emulator, budget)
    _ask(client)
    _ask(client)
    with pytest.raises(spendguard.RunawayRefused):
        _ask(client)
    report = spendguard.report_spend(url)
    assert report.total.calls == 2
    assert report.runaway_trips == {("agent:report", "repeats"): 1}
    assert report.as_dict()["runaway_trips"] == [
        {"scope": "agent:report", "rule": "repeats", "trips": 1}]
    result = CliRunner().invoke(main, ["report", "--ledger", url])
    assert result.exit_code == 0, result.output
    assert "RUNAWAY TRIPS" in result.output and "agent:report" in result.output
