"""Learned input bounds for Claude: through guarded clients, the emulator and real SQLite files."""

from __future__ import annotations

import logging
import statistics
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spendguard
from spendguard import (
    CallOverrun,
    LedgerError,
    SpendRecord,
    ThresholdCrossed,
    count_request_tokens,
    open_ledger,
)
from spendguard._budget import learned_bounds
from spendguard._budget.learned_bounds import MIN_SAMPLES, STATIC_BOUND_TAG
from spendguard._budget.ledger.base import Ledger
from spendguard.testing import Emulator

MODEL = "claude-haiku-4-5"
REPLY = 16  # the emulator's reply length, also the output cap: output never has slack


def _body(index: int) -> dict[str, Any]:
    words = " ".join(f"word{n % 97} item {n}" for n in range(20 + 13 * index))
    return {"model": MODEL, "max_tokens": REPLY,
            "messages": [{"role": "user", "content": f"Summarise: {words}"}]}


def _send(client: Any, first: int, count: int) -> None:
    for index in range(first, first + count):
        client.messages.create(**_body(index))


def _client(budget: spendguard.Budget, ratio: float = 0.8, spread: float = 0.05) -> Any:
    emulator = Emulator(anthropic_token_ratio=ratio, anthropic_token_spread=spread,
                        reply_tokens=REPLY)
    return spendguard.wrap(emulator.anthropic_client(), budget)


def _billed_input(record: SpendRecord) -> int:
    return sum(n for kind, n in record.tokens.items()
               if kind == "input" or kind.startswith("cache_"))


def _calls(budget: spendguard.Budget) -> list[SpendRecord]:
    return list(budget.ledger.records(model=MODEL))


def _static(index: int) -> int:
    return int(count_request_tokens("anthropic", "/v1/messages", _body(index)))


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'spend.db'}"


def test_thin_history_reserves_the_static_bound(db: str) -> None:
    budget = spendguard.Budget("10", ledger=db)
    _send(_client(budget), 0, MIN_SAMPLES)
    records = _calls(budget)
    assert [r.estimated_input_tokens for r in records] == [_static(i) for i in range(MIN_SAMPLES)]
    assert all(STATIC_BOUND_TAG not in r.tags for r in records)


def test_with_history_the_reserved_input_is_within_15_percent_of_billed_at_the_median(
        db: str) -> None:
    budget = spendguard.Budget("10", ledger=db)
    client = _client(budget)
    _send(client, 0, MIN_SAMPLES)
    _send(client, MIN_SAMPLES, 40)
    learned = _calls(budget)[MIN_SAMPLES:]
    reserved_over_billed = [(r.estimated_input_tokens or 0) / _billed_input(r) for r in learned]
    static_over_billed = [int(r.tags[STATIC_BOUND_TAG]) / _billed_input(r) for r in learned]
    assert statistics.median(reserved_over_billed) <= 1.15
    assert statistics.median(static_over_billed) > 1.5  # what the static bound held back
    assert all(r.status == "ok" for r in learned)  # the traffic did not change: no overrun


def test_the_learned_bound_is_never_above_the_static_bound(db: str) -> None:
    # Billed above even the static bound: the window's largest ratio × SAFETY is above 1.
    budget = spendguard.Budget("10", ledger=db)
    _send(_client(budget, ratio=1.4, spread=0.02), 0, MIN_SAMPLES + 10)
    records = _calls(budget)
    assert [r.estimated_input_tokens for r in records] == [_static(i) for i in
                                                           range(MIN_SAMPLES + 10)]


def test_learn_bounds_false_keeps_the_static_bound(db: str) -> None:
    budget = spendguard.Budget("10", ledger=db, learn_bounds=False)
    _send(_client(budget), 0, MIN_SAMPLES + 5)
    assert [r.estimated_input_tokens for r in _calls(budget)] == [
        _static(i) for i in range(MIN_SAMPLES + 5)]


def test_an_enclosing_budget_that_opts_out_keeps_the_static_bound(db: str) -> None:
    outer = spendguard.Budget("10", ledger=db, learn_bounds=False, scope="outer")
    inner = spendguard.Budget("10", ledger=db, scope="inner")
    with outer:
        _send(_client(inner), 0, MIN_SAMPLES + 5)
    assert all(STATIC_BOUND_TAG not in r.tags for r in _calls(inner))


def test_history_of_one_model_does_not_bound_another(db: str) -> None:
    budget = spendguard.Budget("10", ledger=db)
    client = _client(budget)
    _send(client, 0, MIN_SAMPLES)
    client.messages.create(**{**_body(0), "model": "claude-sonnet-4-5"})
    other = list(budget.ledger.records(model="claude-sonnet-4-5"))
    assert len(other) == 1 and STATIC_BOUND_TAG not in other[0].tags


def test_a_jump_in_the_billed_ratio_is_charged_as_billed_and_the_bound_relearns(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learned_bounds, "REFRESH_CALLS", 5)
    told: list[ThresholdCrossed] = []
    budget = spendguard.Budget("10", ledger=db, on_warn=told.append)
    _send(_client(budget, ratio=0.8, spread=0.0), 0, MIN_SAMPLES + 1)
    # The real tokenizer now bills 30 % more per counted token than the window has seen.
    _send(_client(budget, ratio=1.05, spread=0.0), MIN_SAMPLES + 1, 12)
    after = _calls(budget)[MIN_SAMPLES + 1:]
    overruns = [r for r in after if r.status == "overrun"]
    assert overruns and overruns == after[:len(overruns)]  # until the next refresh
    for record in overruns:
        assert _billed_input(record) > (record.estimated_input_tokens or 0)
        assert record.actual_usd > record.estimated_usd  # charged what was billed
        assert record.actual_usd == spendguard.cost(MODEL, spendguard.Usage(
            input_tokens=record.tokens["input"], output_tokens=record.tokens["output"])).total
    assert len([t for t in told if isinstance(t, CallOverrun)]) == len(overruns)
    relearned = after[len(overruns):]
    assert len(relearned) >= 5 and all(r.status == "ok" for r in relearned)
    assert all(STATIC_BOUND_TAG in r.tags for r in relearned)  # still tighter than static
    assert budget.spent == sum((r.actual_usd for r in _calls(budget)), Decimal(0))


class _UnreadableRecords:
    """A real SQLite ledger whose history cannot be read back (reservations still work)."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self.url = ledger.url

    def records(self, **_: Any) -> Any:
        raise LedgerError("the ledger cannot be read just now")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


def test_an_unreadable_ledger_gives_the_static_bound_and_one_warning(
        db: str, caplog: pytest.LogCaptureFixture) -> None:
    real = open_ledger(db)
    history = spendguard.Budget("10", ledger=real, scope="shared")
    _send(_client(history), 0, MIN_SAMPLES)
    unreadable: Any = _UnreadableRecords(real)
    budget = spendguard.Budget("10", ledger=unreadable, scope="shared")
    with caplog.at_level(logging.WARNING, logger="spendguard"):
        _send(_client(budget), MIN_SAMPLES, 2 * MIN_SAMPLES + 1)  # three reads, all failing
    later = _calls(history)[MIN_SAMPLES:]
    assert len(later) == 2 * MIN_SAMPLES + 1
    assert [r.estimated_input_tokens for r in later] == [
        _static(i) for i in range(MIN_SAMPLES, 3 * MIN_SAMPLES + 1)]
    warnings = [r for r in caplog.records if "learn input bounds" in r.getMessage()]
    assert len(warnings) == 1


def test_threads_sharing_a_budget_all_get_a_bound_no_looser_than_static(db: str) -> None:
    budget = spendguard.Budget("10", ledger=db)
    client = _client(budget)
    _send(client, 0, MIN_SAMPLES)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda index: _send(client, index, 1), range(MIN_SAMPLES, 3 * MIN_SAMPLES)))
    later = _calls(budget)[MIN_SAMPLES:]
    assert len(later) == 2 * MIN_SAMPLES and all(r.status == "ok" for r in later)
    assert all((r.estimated_input_tokens or 0) <= int(r.tags[STATIC_BOUND_TAG])
               for r in later if STATIC_BOUND_TAG in r.tags)
    assert any(STATIC_BOUND_TAG in r.tags for r in later)
    assert budget.ledger.verify() == []
