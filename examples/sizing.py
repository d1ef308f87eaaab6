"""Should we self-host? Size an open model, then compare renting GPUs with the API we pay for.

Pure arithmetic over spendguard's GPU and model tables: no key, no network, no GPU.

    .venv/bin/python examples/sizing.py
"""

from __future__ import annotations

from decimal import Decimal

import spendguard
from spendguard.sizing import render_breakeven, render_size, serving_capacity

# 1. What does Llama 3.3 70B at FP8 need for 16 users at 8k context?
sized = spendguard.size_model("llama-3.3-70b", precision="fp8", context=8192, concurrency=16)
print(render_size(sized))
best = sized.best
assert best is not None
print(f"\nBest option: {best.count} × {best.gpu_name}, {sized.total_gb:,.1f} GB in total\n")

# 2. The same model, as vLLM would really allocate it on H100s.
engine = spendguard.size_model("llama-3.3-70b", precision="fp8", context=8192,
                               concurrency=16, gpu="h100", mode="calibrated").engine
assert engine is not None
print(f"vLLM on {engine.count} × H100: {engine.kv_available_gib:,.1f} GiB of KV per GPU, "
      f"room for {engine.max_concurrency:,.0f} requests of 8,192 tokens\n")

# 3. Fine-tuning it on a budget: formula mode (the seed's F4) against measured mode, which is
#    fitted to published QLoRA peaks and says how far off it expects to be.
for mode in ("spec", "measured"):
    tuned = spendguard.size_model("llama-3.1-8b", precision="int4", task="qlora", context=512,
                                  concurrency=2, gpu="a10g", mode=mode)
    error = ("" if tuned.memory_error_pct is None
             else f", expected within ±{tuned.memory_error_pct:g} %")
    print(f"QLoRA Llama 3.1 8B, {mode} mode: {tuned.total_gb:,.1f} GB"
          f" ({tuned.memory_basis}{error})")

# 4. One user's decode speed on an H100, by the H100 class's measured share of bandwidth.
stream = spendguard.size_model("llama-3.1-8b", precision="bf16", context=4096, gpu="h100",
                               mode="measured").best
assert stream is not None and stream.single_stream_low_tok_s is not None
print(f"One stream on an H100: about {stream.single_stream_tok_s:,.0f} tok/s (expect"
      f" {stream.single_stream_low_tok_s:,.0f}-{stream.single_stream_high_tok_s:,.0f};"
      f" {stream.decode_class})\n")

# 5. Renting an 8 × H100 node always on, against an API at 15 USD per million output tokens.
capacity = serving_capacity("llama-3.3-70b", gpu="h100", count=8, precision="fp8")
result = spendguard.breakeven(gpu="h100", count=8, usd_per_gpu_hour=Decimal("2.50"),
                              api_output_usd_per_million=Decimal("15.00"),
                              capacity_tok_s=capacity.tok_s)
print(render_breakeven(result))
