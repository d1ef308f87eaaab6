"""The names of the platforms that speak OpenAI's API under another address."""

from __future__ import annotations

__all__ = ["AZURE", "AZURE_PRICE_AFTER", "GEMINI_OPENAI_PATH"]

AZURE = "azure"
"""The ``platform`` of a guard installed on an Azure OpenAI client."""
AZURE_PRICE_AFTER = "azure:price_after"
"""Azure, opted into sending unmapped deployments unguarded and pricing them afterwards."""

GEMINI_OPENAI_PATH = "/v1beta/openai/"
"""Gemini's OpenAI-compatible endpoint (generativelanguage.googleapis.com/v1beta/openai/):
OpenAI's wire, Gemini's models and prices, billed by Google."""
