"""``examples/sizing.py`` runs offline and prints the sizing, the engine view and the break-even."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_sizing_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(ROOT / "examples" / "sizing.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "F1  70.55 B params × 1 B" in out
    assert "vLLM on 2 × H100" in out
    assert "Self-hosting pays above 960,000,000 output tokens a month." in out
