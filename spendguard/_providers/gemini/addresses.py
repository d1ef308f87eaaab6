"""Where Gemini's API is reached through the gateway's default route.

google-genai sends ``/v1beta/...`` (e.g. ``/v1beta/models/gemini-2.5-flash:generateContent``),
or ``/v1/models/<model>:<method>`` on its stable version; its base URL is the gateway's, and
the path is forwarded whole.
"""

from __future__ import annotations

import re

__all__ = ["gateway_path"]

# OpenAI's /v1/models paths never carry a ":method".
_STABLE_METHOD = re.compile(r"/v1/(models|tunedModels)/[^/]+:[A-Za-z]+$")


def gateway_path(path: str) -> str | None:
    """``path`` itself for google-genai's paths; else None."""
    return path if path.startswith("/v1beta/") or _STABLE_METHOD.match(path) else None
