"""Anthropic's endpoints and their facts, as docs.anthropic.com/en/api/messages names them.

Pure data: the shared vocabulary (:class:`~spendguard._costing.endpoints.Endpoint`) loads it
by name; the rest of this package speaks of its endpoints through these constants.
"""

from __future__ import annotations

from spendguard._costing.endpoints import Endpoint, Provider

PROVIDER = Provider("anthropic")

MESSAGES = Endpoint.declare("messages", PROVIDER, "/v1/messages", ("messages", "create"), True,
                            turns_field="messages", system_field="system",
                            cap_fields=("max_tokens",), cache_ttl_choice=True,
                            loose_words=("message",))
