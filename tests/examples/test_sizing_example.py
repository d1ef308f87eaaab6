"""``examples/sizing.py`` runs offline and prints the sizing, the engine view and the break-even."""

from __future__ import annotations

from tests.example_runs import RunExample, on_examples_worker


@on_examples_worker("sizing")
def test_sizing_example_runs(run_example: RunExample) -> None:
    out = run_example("sizing").stdout
    assert "F1  70.55 B params × 1 B" in out
    assert "vLLM on 2 × H100" in out
    assert "Self-hosting pays above 960,000,000 output tokens a month." in out
