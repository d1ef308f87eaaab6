"""Every command ends a user's mistake or an unusable ledger in one line and a non-zero exit:
no traceback, and a read command never creates the ledger it was asked to read."""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from spendguard.cli import main
from tests.ledger_helpers import worker


def _one_line_error(result: Result) -> str:
    """The error line of a failed command, after checking it failed cleanly."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # click's own exit, not a raised error
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: ")
    return lines[-1]


@pytest.mark.parametrize("command", [["report"], ["export"], ["ledger", "verify"]])
def test_a_read_command_given_a_missing_sqlite_file_says_so_and_creates_nothing(
        tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "typo.db"
    result = CliRunner().invoke(main, [*command, "--ledger", f"sqlite:///{missing}"])
    assert f"no ledger at {missing}" in _one_line_error(result)
    assert not missing.exists()


@pytest.mark.parametrize("command", [["report"], ["export"], ["ledger", "verify"],
                                     ["ledger", "recover"], ["batches", "list"]])
def test_a_bad_spendguard_ledger_url_is_one_line_naming_it(
        command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPENDGUARD_LEDGER", "ledger.db")
    line = _one_line_error(CliRunner().invoke(main, command))
    assert "'ledger.db' is not a ledger URL" in line and "sqlite:///" in line


@pytest.mark.parametrize("command", [["report"], ["export"], ["ledger", "verify"],
                                     ["ledger", "recover"]])
def test_an_unreachable_redis_ledger_is_one_line_naming_the_url(command: list[str]) -> None:
    url = "redis://127.0.0.1:1/0?timeout=0.5"  # port 1: refused at once
    result = CliRunner().invoke(main, [*command, "--ledger", url])
    line = _one_line_error(result)
    assert "redis://127.0.0.1:1/0" in line and "unreachable" in line
    # What to do about it, for a command that sends no calls: nothing about failing open.
    assert line.endswith("start or fix Redis, or check the URL") and "fail_open" not in line
    assert result.stdout == ""  # not even a CSV header


@pytest.mark.usefixtures("fresh_default_prices")
def test_a_broken_price_file_is_one_line_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "prices.toml"
    broken.write_text("[models.gpt-x\nusd = \n")
    monkeypatch.setenv("SPENDGUARD_PRICES", str(broken))
    assert str(broken) in _one_line_error(CliRunner().invoke(main, ["prices"]))


@pytest.mark.parametrize("option", ["--output", "--html"])
def test_an_unwritable_output_file_is_one_line_naming_it(tmp_path: Path, option: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = blocker / "out.csv"  # under a file: no user, root included, can create it
    command = ["export"] if option == "--output" else ["report"]
    result = CliRunner().invoke(main, [*command, "--ledger", "memory://cli-out", option,
                                       str(target)])
    assert str(target) in _one_line_error(result)


def test_recover_lists_the_calls_that_opening_the_ledger_recovered(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    holder = worker("hold", url, "team", "10", "0.5", past)
    assert holder.stdout is not None
    call_id = holder.stdout.readline().strip()
    holder.send_signal(signal.SIGKILL)  # died mid-call: its reservation is abandoned
    holder.communicate()
    # This process has not opened the ledger: the open itself recovers the call.
    result = CliRunner().invoke(main, ["ledger", "recover", "--ledger", url])
    assert result.exit_code == 0, result.output
    assert "1 abandoned call(s)" in result.output and call_id in result.output
