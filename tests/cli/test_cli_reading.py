"""Reading never writes: every read command leaves a ledger byte-identical, and a ledger that
is not there (a SQLite path, an empty Redis prefix) is a one-line error naming it, exit 1."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spendguard import LedgerError, open_ledger
from spendguard.cli import main
from tests.paths import REPO
from tests.reconcile_helpers import openai_files
from tests.redis_helpers import SHARED_PORT, ledger_url, requires_redis

# Built in a child process, so that this process has never opened the file for writing (a
# process that has a ledger open reads through that connection). One reservation is left
# open and long expired: any writable open of the file would recover it, a write.
_BUILD = """
import sys
from datetime import UTC, datetime
from decimal import Decimal
import spendguard
from spendguard._budget.budget import CallInfo
from spendguard._budget.reservations import reserve_call
from tests.finance_helpers import book
from tests.reconcile_helpers import openai_ledger
from tests.ledger_helpers import FakeClock
url = sys.argv[1]
openai_ledger(url)
clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
old = spendguard.Budget("5", ledger=url, scope="old", clock=clock)
with spendguard.tags(team="search"):
    book(old, "gpt-4o-mini", {"input": 100, "output": 10})
reserve_call(old, Decimal("0.5"), call=CallInfo("openai", "gpt-4o-mini", "chat"))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ledger")
    subprocess.run([sys.executable, "-c", _BUILD, f"sqlite:///{folder / 'ledger.db'}"],
                   check=True, cwd=REPO, timeout=60)
    return folder


def _fingerprint(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.iterdir())}


_READS = [
    ["report"], ["report", "--by", "tag", "--json"], ["report", "--by", "scope"],
    ["export"], ["export", "--format", "jsonl"], ["export", "--format", "focus"],
    ["export", "--format", "focus", "--aggregate", "day"],
    ["ledger", "verify"], ["batches", "list"], ["batches", "list", "--json"],
    ["breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "2",
     "--from-ledger", "--model", "gpt-4o"],
]


@pytest.mark.parametrize("command", _READS, ids=" ".join)
def test_a_read_command_leaves_the_ledger_byte_identical(built: Path, tmp_path: Path,
                                                        command: list[str]) -> None:
    before = _fingerprint(built)
    assert list(before) == ["ledger.db"]  # at rest: no -wal, no -shm
    url = f"sqlite:///{built / 'ledger.db'}"
    result = CliRunner().invoke(main, [*command, "--ledger", url])
    # breakeven reads the last 30 days, and the ledger's calls are older: a usage error
    assert result.exit_code == (2 if command[0] == "breakeven" else 0), result.output
    assert "Traceback" not in result.output
    assert _fingerprint(built) == before


def test_an_idle_ledger_rewritten_while_it_is_read_says_so(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ledger.db"
    copy.write_bytes((built / "ledger.db").read_bytes())
    reading = open_ledger(f"sqlite:///{copy}", read_only=True)
    records = reading.records()
    next(records)
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a checkpoint
    with pytest.raises(LedgerError, match="written while it was being read"):
        list(records)


def test_reconcile_without_accept_leaves_the_ledger_byte_identical(built: Path,
                                                                  tmp_path: Path) -> None:
    before = _fingerprint(built)
    files = [str(path) for path in openai_files(tmp_path)]
    result = CliRunner().invoke(main, ["reconcile", *files, "--provider", "openai",
                                       "--ledger", f"sqlite:///{built / 'ledger.db'}"])
    assert result.exit_code in (0, 1), result.output  # 1: differences found, as designed
    assert "Traceback" not in result.output
    assert _fingerprint(built) == before


_MISSING = [["report"], ["export"], ["export", "--format", "focus"], ["ledger", "verify"],
            ["ledger", "recover"], ["batches", "list"],
            ["breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "2",
             "--from-ledger", "--model", "gpt-4o"],
            ["ledger", "drain", "sqlite:///{dest}", "--since", "2026-05"]]


@pytest.mark.parametrize("command", _MISSING, ids=" ".join)
def test_a_missing_sqlite_ledger_is_one_line_naming_it_and_nothing_is_created(
        tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.db"
    args = [part.format(dest=tmp_path / "dest.db") for part in command]
    result = CliRunner().invoke(main, [*args, "--ledger", f"sqlite:///{missing}"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert f"no ledger at {missing}" in line
    assert sorted(path.name for path in tmp_path.iterdir()) == []


@requires_redis
@pytest.mark.parametrize("command", [["report"], ["export"], ["ledger", "verify"]],
                         ids=" ".join)
def test_an_empty_redis_prefix_is_an_error_and_nothing_is_written(command: list[str]) -> None:
    import redis

    prefix = f"sgtest:empty:{command[-1]}:{id(command)}:"
    url = ledger_url(prefix, timeout="2")
    result = CliRunner().invoke(main, [*command, "--ledger", url])
    assert result.exit_code == 1, result.output
    assert "no ledger at redis://127.0.0.1" in result.stderr and prefix in result.stderr
    client = redis.Redis(host="127.0.0.1", port=SHARED_PORT)
    try:
        assert list(client.scan_iter(match=f"{prefix}*")) == []
    finally:
        client.close()


def test_a_missing_ledger_under_json_is_a_json_error(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = CliRunner().invoke(main, ["report", "--json", "--ledger", f"sqlite:///{missing}"])
    assert result.exit_code == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["exit_code"] == 1 and f"no ledger at {missing}" in error["message"]
