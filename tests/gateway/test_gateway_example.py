"""``examples/gateway.py``: calls go through until the budget is spent, then 402, unsent."""

from __future__ import annotations

from tests.example_runs import RunExample, on_examples_worker


@on_examples_worker("gateway")
def test_the_gateway_example_answers_then_refuses_without_reaching_the_provider(
        run_example: RunExample) -> None:
    done = run_example("gateway")
    lines = done.stdout.splitlines()
    assert lines[1:4] == ["HTTP call 0: 200", "HTTP call 1: 200", "HTTP call 2: 402"]
    assert lines[4].startswith("SDK call: 402 spendguard gateway: budget 'team:demo'")
    assert lines[-1] == "requests that reached the provider: 2"
