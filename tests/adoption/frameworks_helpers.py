"""Importing the frameworks of the ``[frameworks]`` test extra the way their tests need."""

from __future__ import annotations

import warnings
from types import ModuleType

import pytest


def import_framework(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``name`` imported (the test is skipped when it is not installed), offline and quiet.

    LiteLLM fetches its model-cost map over the network at import unless told to use its
    bundled copy; DSPy and LiteLLM warn while importing about their own dependencies (not
    spendguard's concern, and warnings are errors in this suite).
    """
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("LITELLM_TELEMETRY", "False")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module: ModuleType = pytest.importorskip(
            name, reason=f"{name} is not installed: pip install -e '.[frameworks]' to run "
            "the framework matrix")
    return module


quiet_framework_warnings = pytest.mark.filterwarnings(
    # Pydantic, about a TypedDict of LiteLLM's that LiteLLM imports lazily on its first call.
    "ignore:.*the `ReadOnly` qualifier:UserWarning",
)
"""Warnings the frameworks raise about themselves while they run, on their tests."""
