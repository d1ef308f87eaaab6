"""GPU sizing and self-hosting break-even: pure arithmetic over two data tables.

Spec mode implements the sizing formulas F1-F8 exactly (GB = 1e9 bytes); calibrated mode models
what vLLM really allocates. See docs/sizing.md.
"""

from __future__ import annotations

from spendguard._sizing.arch import ModelArch, ModelCatalogue, default_models, load_models
from spendguard._sizing.capacity import Capacity, serving_capacity
from spendguard._sizing.hardware import Gpu, GpuCatalogue, default_gpus, load_gpus
from spendguard._sizing.hf_config import read_hf_config
from spendguard._sizing.ledger_compare import (
    LedgerSpend,
    SelfHostComparison,
    compare_with_ledger,
    ledger_spend,
    spend_from_ledger,
)
from spendguard._sizing.rent import BreakEven, MonthlyRent, breakeven, monthly_rent
from spendguard._sizing.result import CostEstimate, GpuOption, SizingResult
from spendguard._sizing.sizer import SizingRequest, size, size_model

__all__ = [
    "BreakEven",
    "Capacity",
    "CostEstimate",
    "Gpu",
    "GpuCatalogue",
    "GpuOption",
    "LedgerSpend",
    "ModelArch",
    "ModelCatalogue",
    "MonthlyRent",
    "SelfHostComparison",
    "SizingRequest",
    "SizingResult",
    "breakeven",
    "compare_with_ledger",
    "default_gpus",
    "default_models",
    "ledger_spend",
    "load_gpus",
    "load_models",
    "monthly_rent",
    "read_hf_config",
    "serving_capacity",
    "size",
    "size_model",
    "spend_from_ledger",
]
