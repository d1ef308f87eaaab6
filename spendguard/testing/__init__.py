"""spendguard.testing: an offline OpenAI / Anthropic / Gemini provider emulator (NOT a real
provider).

Use it as an ``httpx2`` transport (``Emulator().transport()``, or the ready-made
``Emulator().openai_client()`` / ``.anthropic_client()``) or as a loopback HTTP server
(:func:`serve`, or ``spendguard emulate --port N``). Replies are labelled
``[spendguard emulator]``; usage is counted with spendguard's own token counters; prompt
caches, batches, latency and failures follow an injectable clock and a seed.
"""

from __future__ import annotations

from spendguard.testing.clock import ManualClock
from spendguard.testing.emulator import (
    ANTHROPIC_BASE_URL,
    GEMINI_BASE_URL,
    OPENAI_BASE_URL,
    Emulator,
    RecordedRequest,
)
from spendguard.testing.replies import Prompt, Reply, ToolCall
from spendguard.testing.server import EmulatorServer, serve
from spendguard.testing.state import BatchLimits, EmulatorConfig
from spendguard.testing.transport import EmulatorTransport
from spendguard.testing.wire import EmulatedError

__all__ = [
    "ANTHROPIC_BASE_URL",
    "GEMINI_BASE_URL",
    "OPENAI_BASE_URL",
    "BatchLimits",
    "EmulatedError",
    "Emulator",
    "EmulatorConfig",
    "EmulatorServer",
    "EmulatorTransport",
    "ManualClock",
    "Prompt",
    "RecordedRequest",
    "Reply",
    "ToolCall",
    "serve",
]
