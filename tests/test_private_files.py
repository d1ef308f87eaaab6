"""Every folder spendguard makes is 0700 and every file it writes 0600, unless the umask is
stricter; a file that already exists keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from click.testing import CliRunner

import spendguard
from spendguard.cli import main
from spendguard.testing import Emulator


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, which leaves new files world-readable unless their mode says not."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _spend(url: str) -> spendguard.Budget:
    """One guarded call, its prompt kept, recorded in the ledger at ``url``."""
    budget = spendguard.Budget("10", ledger=url, scope="team")
    with Emulator().openai_client(max_retries=0) as client:
        spendguard.wrap(client, budget=budget, store_prompts=True).chat.completions.create(
            model="gpt-4o-mini", max_tokens=5,
            messages=[{"role": "user", "content": "a private prompt"}])
    return budget


@pytest.mark.usefixtures("umask_022")
def test_the_default_ledger_folder_is_0700_and_the_ledger_and_its_journals_0600(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "data" / "spendguard"
    monkeypatch.setenv("SPENDGUARD_HOME", str(home))
    monkeypatch.delenv("SPENDGUARD_LEDGER", raising=False)
    ledger = spendguard.open_ledger()
    _spend(ledger.url)
    assert mode(home) == 0o700 and mode(home.parent) == 0o700
    files = sorted(home.iterdir())
    assert [f.name for f in files] == ["ledger.db", "ledger.db-shm", "ledger.db-wal"]
    assert [mode(f) for f in files] == [0o600, 0o600, 0o600]
    ledger.close()


@pytest.mark.usefixtures("umask_022")
def test_exports_and_html_reports_are_written_0600(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _spend(url)
    formats: tuple[Literal["csv", "jsonl", "focus"], ...] = ("csv", "jsonl", "focus")
    for fmt in formats:
        spendguard.export_spend(tmp_path / f"spend.{fmt}", format=fmt, ledger=url)
        assert mode(tmp_path / f"spend.{fmt}") == 0o600
    runner = CliRunner()
    exported = runner.invoke(main, ["export", "--ledger", url, "-o", str(tmp_path / "cli.csv")])
    report = runner.invoke(main, ["report", "--ledger", url, "--html",
                                  str(tmp_path / "report.html")])
    assert exported.exit_code == 0 and report.exit_code == 0, exported.output + report.output
    assert mode(tmp_path / "cli.csv") == 0o600
    assert mode(tmp_path / "report.html") == 0o600


@pytest.mark.usefixtures("umask_022")
def test_batch_results_appended_to_a_file_go_into_a_0600_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _spend(url)
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(main, ["batches", "results", "no-such-job", "--ledger", url,
                                       "-o", str(out)])
    assert result.exit_code != 0  # no such job; the output file was opened first
    assert mode(out) == 0o600


def test_a_stricter_umask_wins(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _spend(url)
    old = os.umask(0o377)
    try:
        spendguard.export_spend(tmp_path / "spend.csv", ledger=url)
    finally:
        os.umask(old)
    assert mode(tmp_path / "spend.csv") == 0o400


@pytest.mark.usefixtures("umask_022")
def test_a_file_that_already_exists_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    _spend(url)
    shared = tmp_path / "shared.csv"
    shared.write_text("")
    shared.chmod(0o640)  # widened on purpose, for a group
    spendguard.export_spend(shared, ledger=url)
    assert mode(shared) == 0o640 and shared.read_text().count("\n") == 2
