"""Every example runs offline, against the emulator, and exits 0.

Each example runs once in the session (``run_example``, ``tests/example_runs.py``); the
feature tests that check what an example prints read that same run.
"""

from __future__ import annotations

import os

import pytest

from tests.example_runs import EXAMPLES, RunExample, on_examples_worker


@pytest.mark.parametrize("example", [pytest.param(name, marks=on_examples_worker(name))
                                     for name in EXAMPLES])
def test_example_runs_offline(example: str, run_example: RunExample) -> None:
    done = run_example(example)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()


@on_examples_worker("self-check")
def test_a_test_marked_with_an_example_runs_on_that_examples_worker(
        request: pytest.FixtureRequest) -> None:
    """An example runs once only if pytest-xdist sends every test of it to one worker, which it
    does by the group it writes into the test's id; on pytest 9.2 that write is lost
    (pytest-dev/pytest-xdist#1386) and every worker runs the example again."""
    # pytest-xdist tells its workers "loadgroup" this way (their own "dist" is "no").
    if not getattr(request.config.option, "loadgroup", False) \
            or "PYTEST_XDIST_WORKER" not in os.environ:
        return  # one process (-n 0): every test runs where the examples' runs are kept
    assert request.node.nodeid.endswith("@example-self-check"), (
        "pytest-xdist did not group this test: this pytest and pytest-xdist do not work "
        "together; install the versions pinned in requirements/test.txt")
