"""The agent-loop example runs offline and stops because the loop stalled."""

from __future__ import annotations

from tests.example_runs import RunExample, on_examples_worker


@on_examples_worker("agent_loop_guard")
def test_agent_loop_example_stops_when_nothing_new_is_found(run_example: RunExample) -> None:
    out = run_example("agent_loop_guard").stdout
    assert "sub-agent: cap $" in out
    assert "stopped after 8 steps" in out
    assert "stalled (3 steps in a row found nothing new" in out
