"""The batch example: OpenAI, Anthropic and Gemini batches at their discount, offline."""

from __future__ import annotations

from tests.example_runs import RunExample


def test_the_batch_example_runs_a_gemini_batch_at_half_price(run_example: RunExample) -> None:
    out = run_example("deferred_batch").stdout
    assert "Gemini batch of 8:" in out and "(50% saved)" in out
    assert "0.00 still reserved" in out
