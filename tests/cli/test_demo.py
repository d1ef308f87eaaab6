"""`spendguard demo`: the README's first command, offline."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

import spendguard
from spendguard.cli import main
from spendguard.cli.demo_story import run_demo


def test_the_demo_stops_the_agent_before_sending_and_exports_exact_totals(
        tmp_path: Path) -> None:
    lines: list[str] = []
    shown = run_demo(out_dir=tmp_path, echo=lines.append)
    text = "\n".join(lines)
    assert "EMULATOR" in text
    assert "WARNING" in text and "passed 80% of its limit" in text
    assert "REFUSED before sending" in text
    assert "requests that reached the provider for this step: 0" in text
    assert "estimated before anything is sent" in text
    assert "equals the ledger's" in text
    assert spendguard.validate_focus(shown["export"]) == []


def test_the_demo_command_exits_zero(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "FOCUS export written" in result.output
