"""OpenAI paths: which endpoint a POST reaches, behind any prefix (an Azure deployment, a
proxy, a compatible host's base URL). Paths are the API reference's
(platform.openai.com/docs/api-reference).
"""

from __future__ import annotations

import re

from spendguard._costing.endpoints import Endpoint
from spendguard._providers.openai import endpoints

__all__ = ["endpoint_of"]

# Path endings that name a priced endpoint; compaction is a billed model call of Responses.
_TAILS = ((("/chat/completions",), endpoints.CHAT),
          (("/responses", "/responses/compact"), endpoints.RESPONSES),
          (("/embeddings",), endpoints.EMBEDDINGS))
# POST paths that cannot spend, by the end of the path: uploads, token counts, cancels,
# moderation.
_FREE_SUFFIXES = ("/files", "/input_tokens", "/cancel", "/moderations", "/uploads")
# And those that generate nothing though their ends say less: upload parts, conversations
# and their items, the metadata of stored chat completions.
_FREE_PATHS = re.compile(r"/uploads/|/conversations(/[^/]+(/items)?)?$"
                         r"|/chat/completions/[^/]+$")


def endpoint_of(path: str) -> Endpoint | None:
    """A priced endpoint, FREE for one that cannot spend, None for one spendguard does not
    know."""
    suffix = path.split("?", 1)[0].rstrip("/")
    for tails, endpoint in _TAILS:
        if suffix.endswith(tails):
            return endpoint
    if suffix.endswith(_FREE_SUFFIXES) or _FREE_PATHS.search(suffix):
        return Endpoint.FREE
    return None
