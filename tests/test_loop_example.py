"""The agent-loop example runs offline and stops because the loop stalled."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_agent_loop_example_stops_when_nothing_new_is_found(
        capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "agent_loop_guard.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "sub-agent: cap $" in out
    assert "stopped after 8 steps" in out
    assert "stalled (3 steps in a row found nothing new" in out
