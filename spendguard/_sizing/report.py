"""Terminal rendering: the math once, in a short block, with every estimate labelled."""

from __future__ import annotations

from spendguard._core.money import format_usd
from spendguard._sizing.memory import GB, GIB
from spendguard._sizing.precision import format_bytes, parse_precision
from spendguard._sizing.rent import BreakEven
from spendguard._sizing.result import SizingResult

__all__ = ["render_breakeven", "render_size"]

SHOWN_OPTIONS = 6
FLOOR_GPUS = ("h100", "h200", "b200", "gb300")  # the seed's Kimi K3 table


def _count(n: float) -> str:
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if n >= size:
            return f"{n / size:,.2f} {unit}".replace(".00 ", " ")
    return f"{n:,.0f}"


def _gb(value: float) -> str:
    return f"{value:,.2f} GB"


def _row(label: str, math: str, value: str) -> str:
    return f"  {label:<12}{math:<54}{value:>14}"


def _weights_math(result: SizingResult) -> str:
    i = result.inputs
    if i.weights_from_checkpoint:
        return "the checkpoint's size on disk"
    p = parse_precision(i.precision)
    if i.expert_params and p.experts:
        other = i.params - i.expert_params
        return (f"{_count(i.expert_params)} experts × {format_bytes(p.expert_format):g} B"
                f" + {_count(other)} other × {format_bytes(p.base):g} B")
    if p.embeddings:
        return f"{_count(i.params)} params, {p.base} (embeddings {p.embeddings})"
    return f"{_count(i.params)} params × {format_bytes(p.base):g} B"


def _memory_block(result: SizingResult) -> list[str]:
    i, m = result.inputs, result.memory
    lines = []
    if i.task == "serve":
        lines.append(_row("weights", "F1  " + _weights_math(result), _gb(m.weights_gb)))
        kv_math = f"F2  {m.kv_bytes_per_token:,.0f} B/token × {i.context:,} × {i.concurrency}"
        if result.engine is not None:
            kv_math = (f"{result.engine.request_kv_bytes * result.engine.count / 1e6:,.1f} MB a"
                       f" request × {i.concurrency}")
        elif m.kv_state_bytes_per_sequence:
            kv_math += f" + {m.kv_state_bytes_per_sequence / 1e6:,.0f} MB state each"
        lines.append(_row("KV cache", kv_math, _gb(m.kv_gb))
                     + f"  ({m.kv_gb * GB / GIB:,.2f} GiB)")
        if i.mode != "calibrated":
            lines.append(_row("overhead", "F3  0.10 × weights", _gb(m.overhead_gb)))
        else:
            lines.append(_row("activations", "engine's profiled peak, every GPU",
                              _gb(m.activations_gb)))
            lines.append(_row("overhead", "CUDA context and NCCL, every GPU", _gb(m.overhead_gb)))
    elif i.mode == "measured" and i.task in ("lora", "qlora"):
        lines += _measured_training_block(result)
    else:
        formula = "F5" if i.task == "full" else "F4"
        lines.append(_row("weights", f"{formula}  " + _weights_math(result), _gb(m.weights_gb)))
        state = ("params × (g + 12 B) gradients + AdamW" if i.task == "full"
                 else "0.005 × params × 16 B adapters")
        lines.append(_row("training", f"{formula}  {state}", _gb(m.training_state_gb)))
        lines.append(_row("activations", f"F6  s={i.context:,} b={i.concurrency}: "
                          "s·b·h·(2L+34) + s·b·vocab·4", _gb(m.activations_gb)))
        lines.append(_row("overhead", f"{formula}  + 10 %", _gb(m.overhead_gb)))
    lines.append(_row("total", "", _gb(m.total_gb)))
    if i.mode == "measured":
        # Measured mode says which terms sized the memory; the other modes' headers already do.
        error = ("" if result.memory_error_pct is None
                 else f"; expected error ±{result.memory_error_pct:g} % of the measured peak")
        lines.append(f"  memory by {result.memory_basis}{error}")
    return lines


def _measured_training_block(result: SizingResult) -> list[str]:
    i, m = result.inputs, result.memory
    extra = ("dequantisation 0.34 × 16-bit weights + CUDA context" if i.task == "qlora"
             else "CUDA context")
    return [
        _row("weights", "F1  " + _weights_math(result), _gb(m.weights_gb)),
        _row("adapters", "0.005 × params × 16 B (FP32 + grad + AdamW)", _gb(m.training_state_gb)),
        _row("activations", f"no checkpointing: 34·s·b·h·L + s·b·vocab·10, s={i.context:,}"
             f" b={i.concurrency}", _gb(m.activations_gb)),
        _row("overhead", extra, _gb(m.overhead_gb)),
    ]


def _engine_block(result: SizingResult) -> list[str]:
    e = result.engine
    if e is None:
        return []
    return [
        f"vLLM on {e.count} × {e.gpu.name}, per GPU (GiB = 2^30 B):",
        f"  {e.memory_fraction:g} × {e.gpu.engine_memory_gib:,.2f} GiB = {e.budget_gib:,.2f}"
        f" - weights {e.weights_gib:,.2f} - activations {e.activation_gib:g}"
        f" - non-torch {e.non_torch_gib:g} = {e.kv_available_gib:,.2f} GiB for KV",
        f"  needs {e.kv_needed_gib:,.2f} GiB; holds {e.kv_capacity_tokens:,} tokens ="
        f" {e.max_concurrency:,.1f} requests of {e.context:,} tokens",
    ]


def _options_block(result: SizingResult) -> list[str]:
    if not result.options:
        return ["  nothing fits (consumer cards are limited to one node)"]
    header = (f"  {'GPU':<42}{'count':>5}{'VRAM GB':>9}"
              f"{'F8 ceiling':>13}{'1 stream (est.)':>17}")
    lines = [header]
    for o in result.options[:SHOWN_OPTIONS]:
        lines.append(f"  {o.gpu_name:<42}{o.count:>5}{o.total_vram_gb:>9,.0f}"
                     f"{o.decode_tok_s_ceiling:>9,.0f} t/s{o.single_stream_tok_s:>13,.0f} t/s")
    if len(result.options) > SHOWN_OPTIONS:
        lines.append(f"  … {len(result.options) - SHOWN_OPTIONS} more with --json")
    best = result.best
    if best is not None and best.single_stream_low_tok_s is not None:
        lines.append(f"  1 stream on {best.gpu} (measured, {best.decode_class}): expect"
                     f" {best.single_stream_low_tok_s:,.0f}-{best.single_stream_high_tok_s:,.0f}"
                     " tok/s")
    return lines


def _floor_lines(result: SizingResult) -> list[str]:
    wanted = [g for g in FLOOR_GPUS if g in result.floor] or list(result.floor)[:4]
    best = result.best
    if best is not None and best.gpu not in wanted:
        wanted.append(best.gpu)
    shown = " · ".join(f"{g} ×{result.floor[g]}" for g in wanted)
    lines = [f"Weights-only floor (perfect split, no KV, no headroom): {shown}"]
    values = result.values_only
    if values is not None:
        counted = " · ".join(f"{g} ×{values.floor[g]}" for g in wanted)
        lines.append(
            f"  block scales left out (4-bit values at 0.5 B, as model pages quote them):"
            f" {_gb(values.weights_gb)} → {counted}; the block scales add"
            f" {_gb(result.memory.weights_gb - values.weights_gb)}, so"
            f" {_gb(result.memory.weights_gb)} on disk and in memory")
    native = result.native_weights_gb
    if native is not None:
        i = result.inputs
        lines.append(
            f"  vs native ({i.native_precision}): {_gb(native)} of weights; {i.precision}"
            f" stores {_gb(abs(native - result.memory.weights_gb))}"
            f" {'less' if native > result.memory.weights_gb else 'more'}"
            f"{_native_reason(result)}")
    return lines


def _native_reason(result: SizingResult) -> str:
    i = result.inputs
    native = parse_precision(i.native_precision)
    chosen = parse_precision(i.precision)
    if i.expert_params and native.experts and chosen.base != native.base:
        other = i.params - i.expert_params
        return (f" (native keeps the {_count(other)} non-expert weights in {native.base},"
                f" {format_bytes(native.base):g} B each)")
    return ""


def _figure_notes(result: SizingResult) -> list[str]:
    shown = result.options[:SHOWN_OPTIONS]
    lines = []
    for option in shown:
        if option.figure_note is None:
            continue
        line = f"Figures: {option.figure_note}."
        other = option.count_at_other_memory
        if other is not None and other != option.count:
            line += (f" Here: {option.count} × {option.gpu} at"
                     f" {option.total_vram_gb / option.count:g} GB; {other} at the other figure.")
        lines.append(line)
    return list(dict.fromkeys(lines))


def _speed_lines(result: SizingResult) -> list[str]:
    r, best = result.roofline, result.best
    if r is None or best is None:
        return []
    lines = [
        f"Roofline on {best.count} × {best.gpu} at batch {r.batch}: decode {r.decode_bound}-bound"
        f" ({r.decode_memory_s * 1e3:,.2f} ms reading vs {r.decode_compute_s * 1e3:,.2f} ms"
        f" computing, ≤ {r.decode_tok_s:,.0f} tok/s); prefill of {r.context:,} tokens"
        f" {r.prefill_bound}-bound ({r.prefill_compute_s * 1e3:,.1f} ms computing at peak)",
    ]
    if result.costs:
        first, last = result.costs[0], result.costs[-1]
        usd = format_usd(first.usd_per_million_output)
        rate = f"${first.usd_per_gpu_hour}"
        if last is not first:
            usd += f"-{format_usd(last.usd_per_million_output)}"
            rate += f"-{last.usd_per_gpu_hour}"
        lines.append(
            f"Cost per 1M output tokens (estimate): {usd} = {first.gpus} × {rate}/GPU-h ÷"
            f" ({first.tok_s:,.0f} tok/s × {first.utilisation:.0%} utilisation);"
            f" rate: {first.rate_source}")
    return lines


def render_size(result: SizingResult) -> str:
    """The sizing as a short block of text for a terminal."""
    i = result.inputs
    mode = {"spec": "spec mode: formulas F1-F8, GB = 1e9 B",
            "calibrated": "calibrated mode: what vLLM allocates",
            "measured": "measured mode: fitted to published measurements, GB = 1e9 B"}[i.mode]
    shape = " (shape estimated)" if i.estimated_shape else ""
    head = [
        f"{i.model_name}{shape} · {i.task} · {mode}",
        f"{_count(i.params)} params ({_count(i.active_params)} active) · weights {i.precision}"
        f" · KV {i.kv_precision} · {i.layout} layers · {i.context:,} tokens × {i.concurrency}",
        "",
    ]
    if i.defaults:
        head.insert(2, "Defaults (config.json left these out): " + "; ".join(i.defaults))
    body = [*head, *_memory_block(result), ""]
    body += _engine_block(result)
    rule = (f"vLLM's budget at {i.memory_fraction:g} of memory" if i.mode == "calibrated"
            else "F7: 90 % of memory")
    body += [f"GPUs ({rule}; fewest, then least VRAM, then most bandwidth):"]
    body += _options_block(result)
    body += _figure_notes(result)
    body += _floor_lines(result)
    body.append(f"Download (estimate): {_gb(result.memory.weights_gb)} at 1 GB/s ≈"
                f" {result.download_min():,.0f} min of billed time before the first token")
    body += _speed_lines(result)
    if result.training is not None:
        t = result.training
        body.append(f"Training (estimate): {t.flops:.3g} FLOPs ÷ (GPUs × peak × 0.35) ="
                    f" {t.hours:,.1f} h ({t.gpu_hours:,.1f} GPU-h) for {t.tokens:,} tokens")
    if i.moe:
        body.append("MoE: memory follows total parameters, speed follows active ones.")
        if not i.expert_params:
            body.append("  No expert table: each weight counts as routed with probability"
                        " active ÷ total, so one sequence reads its active weights and a batch"
                        " tends to all of them.")
    share = ("the card class's measured share of bandwidth" if i.mode == "measured"
             else "0.7 × bandwidth")
    body.append(f"Estimates: the single-stream speed ({share}), roofline tok/s and costs.")
    return "\n".join(body)


def render_breakeven(result: BreakEven) -> str:
    """Rent vs API as a short block of text for a terminal."""
    rent = result.rent
    gpu = f" × {result.gpu}" if result.gpu else " GPUs"
    lines = [
        f"Rent: {rent.gpus}{gpu} × {rent.hours_per_day:g} h/day × {rent.days} days"
        f" = {rent.gpu_hours:,} GPU-h × ${rent.usd_per_gpu_hour}/GPU-h"
        f" = {format_usd(result.monthly_cost_usd)} a month (idle hours included)",
        f"API: {format_usd(result.api_output_usd_per_million)} per 1M output tokens"
        f" → the rent buys {result.breakeven_output_tokens_per_month:,} output tokens"
        f" ({result.breakeven_output_tokens_per_day:,} a day)",
        f"Self-hosting pays above {result.breakeven_output_tokens_per_month:,} output tokens"
        " a month.",
    ]
    needed = result.utilisation_needed
    if needed is not None and result.capacity_output_tokens_per_month is not None:
        verdict = (f"that is {needed:.0%} of what they can produce: self-hosting can never pay"
                   " at this price" if needed > 1 else
                   f"it pays once the GPUs are busy more than {needed:.1%} of the rented hours"
                   " (at the roofline; real engines deliver less, so budget for more)")
        lines.append(
            f"Capacity (estimate): {result.capacity_tok_s:,.0f} tok/s →"
            f" {result.capacity_output_tokens_per_month:,} output tokens a month; {verdict}.")
    if result.prefill_tok_s is not None:
        lines.append(f"Prefill (estimate): {result.prefill_tok_s:,.0f} prompt tokens/s at the"
                     " roofline; input tokens keep the GPUs busy too.")
    return "\n".join(lines)
