"""The progress line of long reads (``report``, ``export``, ``ledger verify``).

A real read of a large ledger takes seconds before the line appears; here the wait is set to
nothing and the terminal test answers yes (``stream_is_terminal``, what the command asks of
standard error and standard output), so a dozen calls show it. No clock is read by the tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from spendguard.cli import main
from spendguard.cli.progress import stream_is_terminal
from tests.report_helpers import varied_ledger


@pytest.fixture
def url(tmp_path: Path) -> str:
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    varied_ledger(ledger)
    return ledger


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard error and output are terminals; the line shows from the first record."""
    monkeypatch.setattr("spendguard.cli.progress.stream_is_terminal", lambda stream: True)
    monkeypatch.setattr("spendguard.cli.progress.DELAY_S", -1.0)
    monkeypatch.setattr("spendguard.cli.progress._REDRAW_S", -1.0)
    monkeypatch.setattr("spendguard.cli.progress._CHECK_EVERY", 1)


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_report_on_a_terminal_counts_records_on_stderr_then_wipes_the_line(
        url: str, terminal: None) -> None:
    result = _run("report", "--ledger", url)
    assert "reading the ledger: 12 records" in result.stderr
    assert result.stderr.endswith("\r")  # wiped: the prompt or the next line starts clean
    last_line = result.stderr.rsplit("\r", 2)[-2]
    assert last_line.strip() == ""
    assert "reading the ledger" not in result.stdout


def test_verify_on_a_terminal_counts_the_events_replayed(url: str, terminal: None) -> None:
    result = _run("ledger", "verify", "--ledger", url)
    assert "replaying the events: 24 events" in result.stderr
    assert "the totals agree with the events" in result.stdout


def test_export_to_a_file_shows_progress_but_not_when_its_data_goes_to_the_terminal(
        url: str, terminal: None, tmp_path: Path) -> None:
    to_file = _run("export", "--ledger", url, "--format", "focus", "-o",
                   str(tmp_path / "focus.csv"))
    assert "exporting: 12 records" in to_file.stderr
    on_screen = _run("export", "--ledger", url)
    assert "exporting" not in on_screen.stderr


@pytest.mark.parametrize("command", [["report", "--json"], ["ledger", "verify", "--json"],
                                     ["export", "--json", "-o", "out.csv"]])
def test_json_output_has_no_progress_even_on_a_terminal(url: str, terminal: None,
                                                        command: list[str],
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = _run(*command, "--ledger", url)
    assert "\r" not in result.stderr


@pytest.mark.parametrize("command", [["report"], ["ledger", "verify"],
                                     ["export", "-o", "out.csv"]])
def test_no_progress_where_no_one_watches(url: str, command: list[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Pipes, files and captures get none, however long the read (no wait at all here)."""
    monkeypatch.setattr("spendguard.cli.progress.DELAY_S", -1.0)
    monkeypatch.setattr("spendguard.cli.progress._CHECK_EVERY", 1)
    monkeypatch.chdir(tmp_path)
    result = _run(*command, "--ledger", url)
    assert "\r" not in result.stderr


def test_a_dumb_terminal_gets_no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    assert stream_is_terminal(Tty())  # type: ignore[arg-type]
    monkeypatch.setenv("TERM", "dumb")
    assert not stream_is_terminal(Tty())  # type: ignore[arg-type]
