"""GPU sizing and the break-even of self-hosting (docs/sizing.md): the names beyond
``spendguard.size_model`` and ``spendguard.breakeven``."""

from spendguard._reporting.selfhosted import compare_self_hosted, self_hosted_from_ledger
from spendguard._sizing import (
    BreakEven,
    Capacity,
    GpuOption,
    MonthlyRent,
    SizingRequest,
    SizingResult,
    breakeven,
    compare_with_ledger,
    load_gpus,
    load_models,
    monthly_rent,
    read_hf_config,
    serving_capacity,
    size,
    size_model,
    spend_from_ledger,
)
from spendguard._sizing.report import render_breakeven, render_size

__all__ = [
    "BreakEven",
    "Capacity",
    "GpuOption",
    "MonthlyRent",
    "SizingRequest",
    "SizingResult",
    "breakeven",
    "compare_self_hosted",
    "compare_with_ledger",
    "load_gpus",
    "load_models",
    "monthly_rent",
    "read_hf_config",
    "render_breakeven",
    "render_size",
    "self_hosted_from_ledger",
    "serving_capacity",
    "size",
    "size_model",
    "spend_from_ledger",
]
