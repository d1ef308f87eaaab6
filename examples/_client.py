"""How the examples get a client: the real provider when its API key is set, else the emulator.

The emulator (``spendguard.testing``) is offline and labelled as such; token counts and prices
are real, replies are not. Set ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``GEMINI_API_KEY``
to run against the real APIs (that spends real money, within the example's budget).
"""

from __future__ import annotations

import os
from typing import Any

import httpx2

import spendguard
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator

_EMULATOR = Emulator(seed=1, reply_tokens=250)


def openai_client(**options: Any) -> Any:
    """A guarded OpenAI client: real when OPENAI_API_KEY is set, else the emulator."""
    if os.environ.get("OPENAI_API_KEY"):
        return spendguard.OpenAI(**options)
    return spendguard.OpenAI(api_key="emulated", base_url=OPENAI_BASE_URL,
                             http_client=httpx2.Client(transport=_EMULATOR.transport()),
                             **options)


def anthropic_client(**options: Any) -> Any:
    """A guarded Anthropic client: real when ANTHROPIC_API_KEY is set, else the emulator."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return spendguard.Anthropic(**options)
    return spendguard.Anthropic(api_key="emulated", base_url=ANTHROPIC_BASE_URL,
                                http_client=httpx2.Client(transport=_EMULATOR.transport()),
                                **options)


def gemini_client(**options: Any) -> Any:
    """A guarded Gemini client: real when GEMINI_API_KEY is set, else the emulator."""
    if os.environ.get("GEMINI_API_KEY"):
        return spendguard.Gemini(**options)
    return spendguard.Gemini(api_key="emulated", http_options=_EMULATOR.gemini_http_options(),
                             **options)


def where() -> str:
    """Say where the calls go, for the example's first line."""
    real = [name for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
            if os.environ.get(name)]
    return f"real provider ({', '.join(real)})" if real else "offline emulator (not a provider)"


def ledger_url() -> str:
    """The example's ledger: $SPENDGUARD_LEDGER, else a fresh SQLite file in a temp folder."""
    import tempfile  # noqa: PLC0415

    return os.environ.get("SPENDGUARD_LEDGER") or (
        f"sqlite:///{tempfile.mkdtemp(prefix='spendguard-example-')}/ledger.db")
