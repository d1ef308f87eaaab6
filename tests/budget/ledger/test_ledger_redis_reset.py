"""A Redis that comes back without its data is detected, never read as $0 spent: calls are
refused (or spend the fail-open allowance) until it is restored or reseeded from a durable
copy — in the process that saw the ledger, and in a new process on the same machine.

Each test starts a Redis of its own without persistence on a free port and restarts it empty
(or empties its ledger's keys under a live connection); the shared server is never touched.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

import spendguard
from spendguard import Budget
from spendguard._budget.ledger.redis import LOST_RESERVATION_NOTE, RedisLedger
from spendguard._budget.reservations import reserve_call
from spendguard.cli import main
from tests.ledger_helpers import REPO_ROOT, call_info, settle, spend
from tests.redis_helpers import (
    ThrowawayRedis,
    drop_prefix,
    fixture_open_redis,  # noqa: F401 - a fixture: pytest finds it here
    fixture_server,  # noqa: F401 - a fixture: pytest finds it here
    ledger_url,
    requires_redis_server_binary,
)

D = Decimal
pytestmark = [pytest.mark.redis, requires_redis_server_binary]


def _reseed(*args: str) -> str:
    result = CliRunner().invoke(main, ["ledger", "reseed", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _drain(url: str, copy: str) -> None:
    result = CliRunner().invoke(main, ["ledger", "drain", copy, "--ledger", url],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_redis_restarted_empty_under_a_live_process_refuses_calls_until_reseeded(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger],
        tmp_path: Path) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5")
    budget = Budget("1", scope="team", period="monthly", warn_at=None, ledger=open_redis(url))
    for _ in range(3):
        spend(budget, "0.25", "0.2")
    assert budget.spent == D("0.6")
    copy = f"sqlite:///{tmp_path / 'copy.db'}"
    _drain(url, copy)  # the durable copy, as a cron job would keep it

    server.kill()
    server.start()  # no persistence: it has forgotten everything
    with pytest.raises(spendguard.LedgerReset, match=r"is empty.*ledger reseed"):
        budget.remaining  # noqa: B018 - never a silent $0
    with pytest.raises(spendguard.LedgerReset):
        reserve_call(budget, D("0.25"), call=call_info())

    assert "wrote 3 new" in _reseed("--ledger", url, "--from", copy)
    assert budget.spent == D("0.6")  # the process carries on from the restored totals
    spend(budget, "0.25", "0.2")
    with pytest.raises(spendguard.BudgetExceeded):  # $0.80 spent: no room for $0.25 more
        reserve_call(budget, D("0.25"), call=call_info())
    assert budget.ledger.verify() == []


def test_a_new_process_finds_an_empty_redis_where_a_ledger_existed(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5")
    spend(Budget("1", scope="team", warn_at=None, ledger=open_redis(url)), "0.5", "0.5")
    server.kill()
    server.start()
    # A fresh interpreter: it knows the ledger only from this machine's marker.
    child = subprocess.run(
        [sys.executable, "-c", "import spendguard, sys\n"
         "b = spendguard.Budget('1', scope='team', ledger=sys.argv[1], warn_at=None)\n"
         "try:\n    print(b.remaining)\n"
         "except spendguard.LedgerReset as exc:\n    print('refused:', exc)\n", url],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
        timeout=60, check=True)
    assert child.stdout.startswith("refused:") and "is empty" in child.stdout
    assert "spendguard ledger reseed" in child.stdout


def test_a_ledger_flushed_under_a_live_connection_keeps_settles_until_reseeded(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger],
        caplog: pytest.LogCaptureFixture) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5")
    ledger = open_redis(url)
    budget = Budget("10", scope="team", warn_at=None, ledger=ledger)
    spend(budget, "1", "1")
    in_flight = reserve_call(budget, D("2"), call=call_info("gpt-lost"))
    drop_prefix("sg:", server.port)  # FLUSHALL, as far as the ledger is concerned
    with pytest.raises(spendguard.LedgerReset, match="flushed"):
        reserve_call(budget, D("1"), call=call_info())
    with caplog.at_level(logging.WARNING, logger="spendguard.ledger"):
        settle(in_flight, "1.5")  # billed: no error for the caller, and not written into it
    assert "kept in this process" in caplog.text
    with pytest.raises(spendguard.LedgerReset):
        budget.remaining  # noqa: B018

    assert "started empty" in _reseed("--ledger", url, "--empty")
    assert budget.spent == D("1.5")  # the kept settle, recorded as a call Redis lost
    (record,) = list(ledger.records())
    assert record.note == LOST_RESERVATION_NOTE and record.actual_usd == D("1.5")
    spend(budget, "1", "1")
    assert budget.spent == D("2.5")


def test_fail_open_spends_only_the_local_allowance_while_the_ledger_is_reset(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5", fail_open="1", local_cap_usd="1",
                     retry_s="0")
    budget = Budget("100", scope="team", warn_at=None, ledger=open_redis(url))
    spend(budget, "5", "5")
    server.kill()
    server.start()
    spend(budget, "0.5", "0.5")  # the local allowance, as while Redis is unreachable
    with pytest.raises(spendguard.LedgerUnavailable, match="allowance is used up"):
        reserve_call(budget, D("0.75"), call=call_info())


def test_reseed_needs_a_copy_or_empty_and_a_redis_ledger(tmp_path: Path) -> None:
    runner = CliRunner()
    neither = runner.invoke(main, ["ledger", "reseed", "--ledger", "redis://127.0.0.1:1/0"])
    assert neither.exit_code == 2 and "--empty" in neither.output
    assert "Traceback" not in neither.output
    sqlite = runner.invoke(main, ["ledger", "reseed", "--ledger",
                                  f"sqlite:///{tmp_path / 'l.db'}", "--empty"])
    assert sqlite.exit_code == 2 and "not one" in sqlite.output


def test_redis_restored_from_an_older_snapshot_is_refused_as_older(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger]) -> None:
    import redis

    url = ledger_url("sg:", server.port, timeout="0.5")
    budget = Budget("10", scope="team", warn_at=None, ledger=open_redis(url))
    spend(budget, "1", "1")
    admin = redis.Redis(host="127.0.0.1", port=server.port)
    admin.save()  # the snapshot: $1 spent
    admin.close()
    spend(budget, "2", "2")  # $3 spent, after the snapshot
    server.kill()
    server.start()  # it loads the snapshot: the same ledger, two calls behind
    with pytest.raises(spendguard.LedgerReset, match="is older than this process saw"):
        budget.remaining  # noqa: B018


def test_a_ledger_another_machine_started_afresh_is_refused_where_the_old_one_was_seen(
        server: ThrowawayRedis, open_redis: Callable[[str], RedisLedger],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = ledger_url("sg:", server.port, timeout="0.5")
    budget = Budget("10", scope="team", warn_at=None, ledger=open_redis(url))
    spend(budget, "1", "1")
    server.kill()
    server.start()
    monkeypatch.setenv("SPENDGUARD_HOME", str(tmp_path / "another-machine"))  # no marker
    elsewhere = Budget("10", scope="team", warn_at=None, ledger=open_redis(url))
    spend(elsewhere, "1", "0.5")  # it never saw the ledger: an empty Redis is new to it
    with pytest.raises(spendguard.LedgerReset, match="holds another ledger"):
        budget.remaining  # noqa: B018 - but here $1 was spent: not $0.50
