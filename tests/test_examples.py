"""Every example runs offline, against the emulator, and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parents[1] / "examples").glob("*.py")
                  if not p.name.startswith("_"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_offline(example: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SPENDGUARD_LEDGER")}
    env["SPENDGUARD_HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
