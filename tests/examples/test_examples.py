"""Every example runs offline, against the emulator, and exits 0.

Each example runs once in the session (``run_example``, ``tests/example_runs.py``); the
feature tests that check what an example prints read that same run.
"""

from __future__ import annotations

import pytest

from tests.example_runs import EXAMPLES, RunExample, on_examples_worker


@pytest.mark.parametrize("example", [pytest.param(name, marks=on_examples_worker(name))
                                     for name in EXAMPLES])
def test_example_runs_offline(example: str, run_example: RunExample) -> None:
    done = run_example(example)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
