"""The ``run_example`` fixture: each example in ``examples/`` runs once per test session.

An example is run as its users run it, in a fresh interpreter, offline (against the emulator),
with no API keys and ``SPENDGUARD_HOME`` in a folder of its own; the finished run is kept, so
``tests/test_examples.py`` (it exits 0 and prints) and a feature's own tests (what it prints)
all read the same run. ``tests/conftest.py`` makes the fixture visible to every test module.

The suite runs on pytest-xdist workers, each with its own session; a test that reads an
example's run is marked ``on_examples_worker(name)`` so that every test of that example runs on
one worker, and the example still runs once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))

RunExample = Callable[[str], subprocess.CompletedProcess[str]]


def on_examples_worker(name: str) -> pytest.MarkDecorator:
    """Keep the tests of example ``name`` on one xdist worker, where its one run is kept."""
    return pytest.mark.xdist_group(f"example-{name}")


@pytest.fixture(scope="session")
def run_example(tmp_path_factory: pytest.TempPathFactory) -> RunExample:
    """``run_example("cascade")``: the one run of ``examples/cascade.py`` (started on first use)."""
    done: dict[str, subprocess.CompletedProcess[str]] = {}

    def run(name: str) -> subprocess.CompletedProcess[str]:
        if name not in done:
            home = tmp_path_factory.mktemp(f"example-{name}")
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SPENDGUARD_LEDGER",
                                "SPENDGUARD_PRICES")}
            env["SPENDGUARD_HOME"] = str(home)
            done[name] = subprocess.run([sys.executable, str(EXAMPLES_DIR / f"{name}.py")],
                                        capture_output=True, text=True, env=env, cwd=home,
                                        timeout=300, check=False)
        return done[name]

    return run
