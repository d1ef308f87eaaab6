"""Schema versions guard each other: a ledger a newer spendguard stamped is read, never written."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import spendguard
from spendguard._budget.ledger import CallInfo
from spendguard._budget.ledger.migrations import MIGRATIONS
from spendguard._budget.ledger.sqlite import SqliteLedger
from spendguard._budget.reservations import reserve_call
from tests.ledger_helpers import REPO_ROOT
from tests.redis_helpers import drop_prefix, ledger_url, requires_redis


def _spend(url: str) -> None:
    budget = spendguard.Budget("10", ledger=url, scope="team")
    reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat")).settle(
        actual_usd=Decimal("0.25"), tokens={"input": 10, "output": 5}, usage_estimated=False,
        table_version="t", latency_s=0.1)


def _stamp_as_newer(path: Path) -> int:
    """Make the file look migrated by a newer spendguard; its schema version."""
    newer = len(MIGRATIONS) + 1
    db = sqlite3.connect(path)
    db.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_from_the_future', '')")
    db.execute(f"PRAGMA user_version = {newer}")
    db.commit()
    db.close()
    return newer


def test_a_new_sqlite_ledger_is_stamped_with_the_schema_it_was_made_with(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    spendguard.open_ledger(f"sqlite:///{path}").close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    db.close()


def test_a_sqlite_ledger_of_a_newer_schema_is_refused_for_writing_naming_both_versions(
        tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    _spend(f"sqlite:///{path}")
    spendguard.open_ledger(f"sqlite:///{path}").close()
    newer = _stamp_as_newer(path)
    with pytest.raises(spendguard.LedgerError) as caught:
        SqliteLedger(path)  # as a fresh process's open_ledger does
    message = str(caught.value)
    assert f"has schema {newer}" in message
    assert f"knows schema {len(MIGRATIONS)} at most" in message
    assert "upgrade spendguard" in message and str(path) in message


def test_a_sqlite_ledger_of_a_newer_schema_is_still_read_by_reports(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    url = f"sqlite:///{path}"
    _spend(url)
    spendguard.open_ledger(url).close()
    _stamp_as_newer(path)
    # Another process (this one keeps the ledger it opened): reports read, writes are refused.
    report = _cli("report", "--ledger", url)
    assert report.returncode == 0, report.stderr
    recover = _cli("ledger", "recover", "--ledger", url)
    assert recover.returncode != 0
    assert "upgrade spendguard" in recover.stderr + recover.stdout
    assert "Traceback" not in recover.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-c", "from spendguard.cli import main; main()",
                           *args], env=env, text=True, capture_output=True, timeout=60,
                          check=False)


@requires_redis
@pytest.mark.redis
def test_a_redis_ledger_of_a_newer_schema_is_read_but_never_written(tmp_path: Path) -> None:
    import redis

    prefix = f"sgtest:newschema:{tmp_path.name[-12:]}:"
    client = redis.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    try:
        _spend(ledger_url(prefix))
        client.hset(f"{prefix}meta", "schema", "3")
        newer = spendguard.open_ledger(ledger_url(prefix, timeout="3"))
        assert [r.actual_usd for r in newer.records()] == [Decimal("0.25")]
        budget = spendguard.Budget("10", ledger=newer, scope="team")
        assert budget.spent == Decimal("0.25")
        with pytest.raises(spendguard.LedgerError, match=r"has schema 3.*knows schema 2 at "
                                                         r"most.*upgrade spendguard"):
            reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat"))
        assert client.xlen(f"{prefix}events") == 2  # the first call's reserve and settle only
    finally:
        client.close()
        drop_prefix(prefix)


@requires_redis
@pytest.mark.redis
def test_a_redis_prefix_stamped_with_no_spendguard_schema_is_refused(tmp_path: Path) -> None:
    import redis

    prefix = f"sgtest:badschema:{tmp_path.name[-12:]}:"
    client = redis.Redis(host="127.0.0.1", port=6379, decode_responses=True)
    try:
        client.hset(f"{prefix}meta", "schema", "banana")
        budget = spendguard.Budget("10", ledger=ledger_url(prefix), scope="team")
        with pytest.raises(spendguard.LedgerError, match="not a spendguard ledger"):
            reserve_call(budget, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat"))
    finally:
        client.close()
        drop_prefix(prefix)
