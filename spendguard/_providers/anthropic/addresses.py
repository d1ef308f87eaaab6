"""Where Anthropic's API is reached: the gateway's default route, and the hosts install() guards.

- The gateway's default route ``/v1/...`` is Anthropic's for ``/v1/messages`` and
  ``/v1/complete``, or a request carrying a header only its client sends (``anthropic-version``,
  ``x-api-key``); the path is forwarded whole (the official client's base URL has no ``/v1``).
- install()'s traffic guard: ``api.anthropic.com``; Amazon Bedrock runtime
  (``bedrock-runtime[-fips].<region>.amazonaws.com``) and Vertex AI's Anthropic publisher
  (``[<region>-]aiplatform.googleapis.com/.../publishers/anthropic/...``), whose paths name the
  model.
"""

from __future__ import annotations

import re

__all__ = ["GATEWAY_HEADERS", "gateway_path", "traffic_kind"]

GATEWAY_HEADERS = ("anthropic-version", "x-api-key")
"""Headers the official client sends and OpenAI's does not."""

_API_HOST = "api.anthropic.com"
_BEDROCK = re.compile(r"bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com")
_VERTEX = re.compile(r"([a-z0-9-]+-)?aiplatform\.googleapis\.com")


def gateway_path(path: str) -> str | None:
    """``path`` itself for the Messages and Text Completions paths; else None."""
    return path if path.startswith(("/v1/messages", "/v1/complete")) else None


def traffic_kind(name: str, host: str, path: str) -> str | None:
    """``name`` for the Claude API's host, Bedrock's runtime and Vertex's Anthropic publisher;
    ``""`` for Vertex's other publishers (not a host for anyone else to claim); else None."""
    if host == _API_HOST or _BEDROCK.fullmatch(host):
        return name
    if _VERTEX.fullmatch(host):
        # Vertex serves many publishers; spendguard prices Anthropic's only.
        return name if "/publishers/anthropic/" in path else ""
    return None
