"""Anthropic paths: the Messages API, and Claude on Bedrock and Vertex AI, whose paths name the
model (docs.anthropic.com/en/api/messages, the Bedrock InvokeModel and Vertex rawPredict
pages).
"""

from __future__ import annotations

import re

from spendguard._costing.endpoints import Endpoint
from spendguard._providers.anthropic import endpoints

__all__ = ["BEDROCK_INVOKE", "VERTEX_PREDICT", "endpoint_of"]

BEDROCK_INVOKE = re.compile(r"/model/(?P<id>[^/]+)/(?P<kind>invoke|invoke-with-response-stream)$")
"""Claude on Bedrock: the Messages API with the model id in the path."""
VERTEX_PREDICT = re.compile(r"(?:/projects/[^/]+/locations/(?P<region>[^/]+))?"
                            r"/publishers/anthropic/models/(?P<model>(?!count-tokens:)[^/:]+)"
                            r":(?P<kind>rawPredict|streamRawPredict)$")
"""Claude on Vertex AI: the Messages API with the model (and region) in the path."""

# POST paths that cannot spend, by the end of the path: token counts, cancels, uploads.
_FREE_SUFFIXES = ("/count_tokens", "/cancel", "/files", "/count-tokens:rawPredict")


def endpoint_of(path: str) -> Endpoint | None:
    """MESSAGES (behind any prefix, or a platform's path), FREE for one that cannot spend, None
    for one spendguard does not know."""
    suffix = path.split("?", 1)[0].rstrip("/")
    if suffix.endswith("/messages") or BEDROCK_INVOKE.search(suffix) or \
            VERTEX_PREDICT.search(suffix):
        return endpoints.MESSAGES
    if suffix.endswith(_FREE_SUFFIXES):
        return Endpoint.FREE
    return None
