"""``examples/sizing.py`` runs offline and prints the sizing, the engine view, fine-tuning
in both modes and the break-even."""

from __future__ import annotations

from tests.example_runs import RunExample, on_examples_worker


@on_examples_worker("sizing")
def test_sizing_example_runs(run_example: RunExample) -> None:
    out = run_example("sizing").stdout
    assert "F1  70.55 B params × 1 B" in out
    assert "vLLM on 2 × H100" in out
    assert "Self-hosting pays above 960,000,000 output tokens a month." in out
    assert "QLoRA Llama 3.1 8B, spec mode: 6.2 GB (formula: F4 + F6)" in out
    assert "QLoRA Llama 3.1 8B, measured mode: 16.5 GB" in out
    assert "One stream on an H100: about 127 tok/s (expect 108-147" in out
