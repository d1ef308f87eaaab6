"""Both modes against published measurements (shared/research/sizing.md §2); prints the docs table.

Run ``python -m spendguard._sizing.validation`` to print the table that docs/sizing.md carries; a
test keeps the two identical, so the errors in the docs are computed, never typed.
A case's ``tolerance_pct`` is what the named mode is held to by the tests, and
``measured_tolerance_pct`` what measured mode is held to; cases without one are shown for
honesty (the reason is in ``note``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from spendguard._sizing.arch import AttentionLayout, ModelArch
from spendguard._sizing.calibrated import engine_fit
from spendguard._sizing.fit import HEADROOM
from spendguard._sizing.hardware import default_gpus
from spendguard._sizing.memory import GB, GIB, Task
from spendguard._sizing.sizer import Mode, resolve_model, size_model
from spendguard._sizing.speed import MFU

__all__ = ["CASES", "Case", "Outcome", "markdown_table", "run_cases"]

Value = Callable[[], float]


@dataclass(frozen=True)
class Case:
    """One published measurement and how each mode predicts it."""

    id: str
    what: str
    quantity: str
    measured: float
    spec: Value
    calibrated: Value | None = None
    held_by: Literal["spec", "calibrated"] | None = None
    tolerance_pct: float | None = None
    note: str = ""
    measured_mode: Value | None = None
    measured_tolerance_pct: float | None = None


def _weights_gib(model: str, precision: str) -> Value:
    return lambda: size_model(model, precision=precision).weights_gb * GB / GIB


def _spec_kv_gib(model: str, precision: str, gpu: str, count: int) -> Value:
    """KV room per GPU that F3 + F7 leave: count × 90 % of memory - weights × 1.1."""
    def value() -> float:
        memory = size_model(model, precision=precision).memory
        room = count * default_gpus().get(gpu).memory_gb * HEADROOM - memory.total_gb
        return (room + memory.kv_gb) * GB / GIB / count
    return value


def _engine_kv_gib(model: str, precision: str, gpu: str, count: int) -> Value:
    def value() -> float:
        weights = size_model(model, precision=precision).weights_gb * GB
        return engine_fit(resolve_model(model), weights_bytes=weights, kv_format="bf16",
                          gpu=default_gpus().get(gpu), count=count, context=16_384,
                          concurrency=1).kv_available_gib
    return value


def _count(model: str, precision: str, gpu: str, context: int, mode: Mode) -> Value:
    def value() -> float:
        result = size_model(model, precision=precision, gpu=gpu, context=context, mode=mode)
        return result.best.count if result.best else float("nan")
    return value


def _stream(model: str | None, precision: str, gpu: str, count: int, context: int,
            mode: Mode = "spec", params: int | None = None) -> Value:
    def value() -> float:
        # The estimate scales with the GPU count; F7 may pick more GPUs than were measured.
        option = size_model(model, precision=precision, gpu=gpu, context=context, mode=mode,
                            params=params).options[0]
        return option.single_stream_tok_s * count / option.count
    return value


def _prefill_ms(params: int, precision: str, gpu: str, count: int) -> Value:
    def value() -> float:
        flops = 2 * params * 2048
        peak = default_gpus().get(gpu).peak_flops("fp8" if precision == "fp8" else "bf16")
        return flops / (count * peak * MFU) * 1e3
    return value


def _training_gb(model: str | ModelArch, precision: str, task: Task, s: int, b: int,
                 mode: Mode = "spec") -> Value:
    return lambda: size_model(model, precision=precision, task=task, context=s,
                              concurrency=b, mode=mode).total_gb


# Llama 2 7B is not in the catalogue: its published config.json (meta-llama/Llama-2-7b-hf).
LLAMA_2_7B = ModelArch(
    id="llama-2-7b", name="Llama 2 7B", family="llama", params=6_738_415_616,
    active_params=6_738_415_616 - 32_000 * 4096, layers=32, hidden_size=4096,
    attention_heads=32, kv_heads=32, head_dim=128, vocab_size=32_000, tied_embeddings=False,
    attention=AttentionLayout(full_layers=32), source="meta-llama/Llama-2-7b-hf config.json",
)
_LITGPT = ("LitGPT config_hub/finetune/README.md: bf16-true, LoRA r 32 (query, value), AdamW, "
           "no checkpointing, 1×A10G")


def _litgpt(case: str, what: str, measured: float, model: str | ModelArch, task: Task,
            batch: int) -> Case:
    precision = "int4" if task == "qlora" else "bf16"
    return Case(case, what, "GB", measured, _training_gb(model, precision, task, 512, batch),
                note=f"not held in formula mode (F4 assumes checkpointing); {_LITGPT}",
                measured_mode=_training_gb(model, precision, task, 512, batch, "measured"),
                measured_tolerance_pct=15)


_LLM_D = "llm-d empirical-vllm-memory-results.md (H100, util 0.9, 16k)"
_FP8_70B = "fp8,embeddings=bf16"

CASES: tuple[Case, ...] = (
    Case("V1", "Llama-3.1-8B BF16, 1×H100, vLLM", "KV GiB/GPU", 51.38,
         _spec_kv_gib("llama-3.1-8b", "bf16", "h100", 1),
         _engine_kv_gib("llama-3.1-8b", "bf16", "h100", 1), "calibrated", 2, _LLM_D),
    Case("V2", "Qwen3-32B BF16, 1×H100, vLLM", "KV GiB/GPU", 4.45,
         _spec_kv_gib("qwen3-32b", "bf16", "h100", 1),
         _engine_kv_gib("qwen3-32b", "bf16", "h100", 1), "calibrated", 5, _LLM_D),
    Case("V3", "gpt-oss-20b MXFP4, 1×H100, vLLM", "KV GiB/GPU", 50.28,
         _spec_kv_gib("gpt-oss-20b", "native", "h100", 1),
         _engine_kv_gib("gpt-oss-20b", "native", "h100", 1), "calibrated", 2, _LLM_D),
    Case("V4", "gpt-oss-120b MXFP4, 1×H100, vLLM", "KV GiB/GPU", 3.33,
         _spec_kv_gib("gpt-oss-120b", "native", "h100", 1),
         _engine_kv_gib("gpt-oss-120b", "native", "h100", 1),
         note="not held: vLLM loads 64.38 GiB for 60.7 GiB of weights and llm-d's row does not "
              "close (research V4)"),
    Case("V5a", "Llama-3.3-70B FP8, 1×H100, vLLM", "KV GiB/GPU", -1.44,
         _spec_kv_gib("llama-3.1-70b", _FP8_70B, "h100", 1),
         _engine_kv_gib("llama-3.1-70b", _FP8_70B, "h100", 1), "calibrated", 10,
         "negative: the engine refuses to start; " + _LLM_D),
    Case("V5b", "Llama-3.3-70B FP8, 2×H100 TP2, vLLM", "KV GiB/GPU", 32.0,
         _spec_kv_gib("llama-3.1-70b", _FP8_70B, "h100", 2),
         _engine_kv_gib("llama-3.1-70b", _FP8_70B, "h100", 2), "calibrated", 2, _LLM_D),
    Case("V6", "Qwen3-0.6B BF16, 1×H100, vLLM", "KV GiB/GPU", 64.45,
         _spec_kv_gib("qwen3-0.6b", "bf16", "h100", 1),
         _engine_kv_gib("qwen3-0.6b", "bf16", "h100", 1), "calibrated", 2, _LLM_D),
    Case("V7", "Llama-3.1-8B BF16, 1×RTX 3090, vLLM", "KV GiB/GPU", 3.81,
         _spec_kv_gib("llama-3.1-8b", "bf16", "rtx-3090", 1),
         _engine_kv_gib("llama-3.1-8b", "bf16", "rtx-3090", 1),
         note="not held: an older vLLM profiled activations at max_model_len (vllm#10517)"),
    Case("W1", "Llama-3.1-8B BF16 weights", "weights GiB", 14.99,
         _weights_gib("llama-3.1-8b", "bf16"), _weights_gib("llama-3.1-8b", "bf16"),
         "spec", 1, _LLM_D),
    Case("W2", "Qwen3-32B BF16 weights", "weights GiB", 61.03,
         _weights_gib("qwen3-32b", "bf16"), _weights_gib("qwen3-32b", "bf16"), "spec", 1, _LLM_D),
    Case("W3", "gpt-oss-20b MXFP4 weights", "weights GiB", 13.47,
         _weights_gib("gpt-oss-20b", "native"), _weights_gib("gpt-oss-20b", "native"), "spec",
         6, "vLLM loads ~5 % more than the checkpoint; " + _LLM_D),
    Case("W4", "gpt-oss-120b MXFP4 weights", "weights GiB", 64.38,
         _weights_gib("gpt-oss-120b", "native"), _weights_gib("gpt-oss-120b", "native"),
         "spec", 6, "vLLM loads ~6 % more than the checkpoint (vllm#33155)"),
    Case("W5", "Llama-3.3-70B FP8 weights", "weights GiB", 67.72,
         _weights_gib("llama-3.1-70b", _FP8_70B), _weights_gib("llama-3.1-70b", _FP8_70B),
         "spec", 1, _LLM_D),
    Case("F1", "gpt-oss-120b MXFP4 on H100 80GB, 4k", "GPUs", 1,
         _count("gpt-oss-120b", "native", "h100", 4096, "spec"),
         _count("gpt-oss-120b", "native", "h100", 4096, "calibrated"), "spec", 0,
         "model card: runs on a single 80GB GPU"),
    Case("F1b", "gpt-oss-120b MXFP4 on A100 80GB, 4k", "GPUs", 1,
         _count("gpt-oss-120b", "native", "a100", 4096, "spec"),
         _count("gpt-oss-120b", "native", "a100", 4096, "calibrated"), "spec", 0,
         "model card; A100's visible memory is not measured here (97 % rule)"),
    Case("F2", "gpt-oss-20b MXFP4 on a 16 GB card, 4k", "GPUs", 1,
         _count("gpt-oss-20b", "native", "rtx-4080-super", 4096, "spec"),
         _count("gpt-oss-20b", "native", "rtx-4080-super", 4096, "calibrated"),
         note="not held: measured with llama.cpp/Ollama; F7's 90 % rule is too strict for 16 GB"),
    Case("F3", "DeepSeek-V3 FP8 on H200, 4k", "GPUs", 8,
         _count("deepseek-v3", "native", "h200", 4096, "spec"),
         _count("deepseek-v3", "native", "h200", 4096, "calibrated"), "spec", 0,
         "vllm recipes DeepSeek-V3.md"),
    Case("F3b", "DeepSeek-V3 FP8 on MI300X, 4k", "GPUs", 8,
         _count("deepseek-v3", "native", "mi300x", 4096, "spec"),
         _count("deepseek-v3", "native", "mi300x", 4096, "calibrated"), "spec", 0,
         "vllm recipes DeepSeek-V3.md"),
    Case("F3c", "DeepSeek-V3 NVFP4 on B200, 4k", "GPUs", 4,
         _count("deepseek-v3", "nvfp4,embeddings=bf16", "b200", 4096, "spec"),
         _count("deepseek-v3", "nvfp4,embeddings=bf16", "b200", 4096, "calibrated"), "spec", 0,
         "vllm recipes DeepSeek-V3.md"),
    Case("F4", "Kimi-K2 FP8 on H800, 128k", "GPUs", 16,
         _count("kimi-k2", "native", "h800", 131_072, "spec"),
         _count("kimi-k2", "native", "h800", 131_072, "calibrated"), "spec", 0,
         "vllm recipes moonshotai/Kimi-K2.md: smallest unit 16 GPUs"),
    Case("D1", "Llama-3-8B Q4_0, RTX 3090, llama.cpp, 1 stream", "tok/s", 156,
         _stream("llama-3.1-8b", "nvfp4", "rtx-3090", 1, 512), None, "spec", 10,
         "Q4_0 is 4.5 bits a weight, the bytes of nvfp4; llama.cpp PR #15802",
         _stream("llama-3.1-8b", "nvfp4", "rtx-3090", 1, 512, "measured"), 20),
    Case("D5", "Llama-3.3-70B FP8, 2×H100 TP2, NIM, 1 stream", "tok/s", 53.8,
         _stream("llama-3.1-70b", _FP8_70B, "h100", 2, 5250), None, "spec", 25,
         "NIM 1.8.0 benchmark, 5000 in / 500 out",
         _stream("llama-3.1-70b", _FP8_70B, "h100", 2, 5250, "measured"), 20),
    Case("D11", "Nemotron Super 49B FP8, 1×B200, vLLM 0.16, 1 stream", "tok/s", 74.63,
         _stream(None, _FP8_70B, "b200", 1, 2304, params=49_900_000_000), None,
         note="not held in formula mode (0.7 does not fit Blackwell at batch 1); Vultr "
              "inference cookbook, concurrency tuning (HGX B200): TPOT 13.40 ms at concurrency "
              "1, 2048 in / 512 out; 49.9 B parameters, estimated shape",
         measured_mode=_stream(None, _FP8_70B, "b200", 1, 2304, "measured", 49_900_000_000),
         measured_tolerance_pct=20),
    Case("D8", "DeepSeek-V3.2, 8×H20 TP8, vLLM, 1 stream", "tok/s", 30,
         _stream("deepseek-v3", "native", "h20", 8, 1024), None,
         note="not held: multi-GPU MoE decode reaches ~3 % of the roofline (vllm#30832); "
              "V3 architecture used",
         measured_mode=_stream("deepseek-v3", "native", "h20", 8, 1024, "measured")),
    Case("D10a", "gpt-oss-20b MXFP4, RTX 4080 SUPER, 1 stream", "tok/s", 139.1,
         _stream("gpt-oss-20b", "native", "rtx-4080-super", 1, 1024), None, "spec", 10,
         "smeltcore.com recipes",
         _stream("gpt-oss-20b", "native", "rtx-4080-super", 1, 1024, "measured"), 20),
    Case("D10b", "gpt-oss-20b MXFP4, RTX 5080, 1 stream", "tok/s", 172.4,
         _stream("gpt-oss-20b", "native", "rtx-5080", 1, 1024), None, "spec", 10,
         "smeltcore.com recipes",
         _stream("gpt-oss-20b", "native", "rtx-5080", 1, 1024, "measured"), 20),
    Case("D10c", "gpt-oss-20b MXFP4, RTX 4090, 1 stream", "tok/s", 190.6,
         _stream("gpt-oss-20b", "native", "rtx-4090", 1, 1024), None, "spec", 10,
         "smeltcore.com recipes",
         _stream("gpt-oss-20b", "native", "rtx-4090", 1, 1024, "measured"), 20),
    Case("P1", "LLaMA-7B FP8 prefill 2048, H100, TRT-LLM", "ms", 36,
         _prefill_ms(6_700_000_000, "fp8", "h100", 1), None, "spec", 15,
         "TensorRT-LLM performance.md"),
    Case("P2", "LLaMA-70B FP8 prefill 2048, 4×H100, TRT-LLM", "ms", 109,
         _prefill_ms(69_000_000_000, "fp8", "h100", 4), None, "spec", 15,
         "TensorRT-LLM performance.md"),
    Case("P3", "LLaMA-7B FP16 prefill 2048, A100, TRT-LLM", "ms", 133,
         _prefill_ms(6_700_000_000, "bf16", "a100", 1), None,
         note="not held: A100 BF16 reaches ~0.6 of peak, not 0.35"),
    Case("P4", "LLaMA-70B FP16 prefill 2048, 4×A100, TRT-LLM", "ms", 377,
         _prefill_ms(69_000_000_000, "bf16", "a100", 4), None,
         note="not held: A100 BF16 reaches ~0.6 of peak, not 0.35"),
    Case("L4a", "Llama-3-8B LoRA, 8-bit base, s 4096, b 2", "GB", 11,
         _training_gb("llama-3.1-8b", "int8", "lora", 4096, 2), None,
         note="not held: axolotl uses sample packing and an 8-bit optimizer; measured mode "
              "assumes no activation checkpointing",
         measured_mode=_training_gb("llama-3.1-8b", "int8", "lora", 4096, 2, "measured")),
    Case("L4b", "Llama-3-8B full fine-tune, s 8192, b 1", "GB", 48,
         _training_gb("llama-3.1-8b", "bf16", "full", 8192, 1), None,
         note="not held: axolotl's paged 8-bit AdamW keeps 2 B of moments, F5 counts 12; "
              "measured mode has no full fine-tuning measurements and uses F5",
         measured_mode=_training_gb("llama-3.1-8b", "bf16", "full", 8192, 1, "measured")),
    Case("L4c", "Llama-3-70B QLoRA, s 512, b 1, 2 GPUs", "GB", 42,
         _training_gb("llama-3.1-70b", "int4", "qlora", 512, 1), None, "spec", 15,
         "axolotl README: 2 GPUs at 21 GB each (FSDP); measured mode not held: FSDP shards "
         "the 16-bit staging and axolotl checkpoints activations",
         _training_gb("llama-3.1-70b", "int4", "qlora", 512, 1, "measured")),
    _litgpt("M1", "Llama-3.1-8B LoRA BF16, s 512, b 1, LitGPT", 19.73, "llama-3.1-8b", "lora", 1),
    _litgpt("M2", "Llama-3.1-8B QLoRA NF4, s 512, b 2, LitGPT", 17.41, "llama-3.1-8b", "qlora",
            2),
    _litgpt("M3", "Mistral-7B LoRA BF16, s 512, b 2, LitGPT", 20.66, "mistral-7b", "lora", 2),
    _litgpt("M4", "Mistral-7B QLoRA NF4, s 512, b 2, LitGPT", 14.29, "mistral-7b", "qlora", 2),
    _litgpt("M5", "Llama-2-7B LoRA BF16, s 512, b 2, LitGPT", 19.77, LLAMA_2_7B, "lora", 2),
    _litgpt("M6", "Llama-2-7B QLoRA NF4, s 512, b 2, LitGPT", 13.68, LLAMA_2_7B, "qlora", 2),
)


@dataclass(frozen=True)
class Outcome:
    """A case with both modes' predictions and their errors (%)."""

    case: Case
    spec: float
    calibrated: float | None
    measured_mode: float | None = None

    @staticmethod
    def error_pct(predicted: float | None, measured: float) -> float | None:
        """(predicted - measured) ÷ |measured| × 100."""
        if predicted is None:
            return None
        return (predicted - measured) / abs(measured) * 100

    @property
    def spec_error_pct(self) -> float | None:
        """Spec mode's error, %."""
        return self.error_pct(self.spec, self.case.measured)

    @property
    def calibrated_error_pct(self) -> float | None:
        """Calibrated mode's error, %."""
        return self.error_pct(self.calibrated, self.case.measured)

    @property
    def measured_error_pct(self) -> float | None:
        """Measured mode's error, %."""
        return self.error_pct(self.measured_mode, self.case.measured)

    @property
    def held(self) -> bool | None:
        """Whether every stated tolerance holds (None: no tolerance stated)."""
        c = self.case
        checks: list[bool] = []
        if c.held_by is not None and c.tolerance_pct is not None:
            error = self.spec_error_pct if c.held_by == "spec" else self.calibrated_error_pct
            checks.append(error is not None and abs(error) <= c.tolerance_pct)
        if c.measured_tolerance_pct is not None:
            error = self.measured_error_pct
            checks.append(error is not None and abs(error) <= c.measured_tolerance_pct)
        return all(checks) if checks else None


def run_cases(cases: tuple[Case, ...] = CASES) -> list[Outcome]:
    """Every case through both modes."""
    return [Outcome(case, case.spec(), case.calibrated() if case.calibrated else None,
                    case.measured_mode() if case.measured_mode else None)
            for case in cases]


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:,.2f}".rstrip("0").rstrip(".")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f} %"


def markdown_table(outcomes: list[Outcome]) -> str:
    """The validation table as Markdown (what docs/sizing.md carries)."""
    lines = ["| case | what | unit | measured | spec | spec error | calibrated | calibrated "
             "error | measured mode | measured-mode error | held to | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        c = o.case
        held = "; ".join(
            [f"{c.held_by} ±{c.tolerance_pct:g} %"] if c.held_by and c.tolerance_pct is not None
            else []) + ("" if c.measured_tolerance_pct is None else
                        ("; " if c.held_by and c.tolerance_pct is not None else "")
                        + f"measured ±{c.measured_tolerance_pct:g} %")
        lines.append(f"| {c.id} | {c.what} | {c.quantity} | {_num(c.measured)} | {_num(o.spec)} "
                     f"| {_pct(o.spec_error_pct)} | {_num(o.calibrated)} "
                     f"| {_pct(o.calibrated_error_pct)} | {_num(o.measured_mode)} "
                     f"| {_pct(o.measured_error_pct)} | {held or '–'} | {c.note} |")
    lines.append("")
    for quantity in dict.fromkeys(o.case.quantity for o in outcomes):
        group = [o for o in outcomes if o.case.quantity == quantity]
        lines.append(f"- {quantity}, {len(group)} cases: mean |error| spec "
                     f"{_mean_abs([o.spec_error_pct for o in group])}, calibrated "
                     f"{_mean_abs([o.calibrated_error_pct for o in group])}, measured "
                     f"{_mean_abs([o.measured_error_pct for o in group])}; over the cases each "
                     f"mode is held to: spec {_held_mean(group, 'spec')}, calibrated "
                     f"{_held_mean(group, 'calibrated')}, measured "
                     f"{_held_mean(group, 'measured')}")
    return "\n".join(lines)


def _held_mean(group: list[Outcome], mode: str) -> str:
    """Mean |error| of ``mode`` over the cases that hold it to a tolerance, and how many."""
    if mode == "measured":
        errors = [o.measured_error_pct for o in group if o.case.measured_tolerance_pct]
    else:
        errors = [o.spec_error_pct if mode == "spec" else o.calibrated_error_pct for o in group
                  if o.case.held_by == mode and o.case.tolerance_pct is not None]
    return f"{_mean_abs(errors)} ({len(errors)})" if errors else "–"


def _mean_abs(errors: list[float | None]) -> str:
    known = [abs(e) for e in errors if e is not None]
    return f"{sum(known) / len(known):.1f} %" if known else "–"


if __name__ == "__main__":  # pragma: no cover - prints the docs table
    print(markdown_table(run_cases()))
