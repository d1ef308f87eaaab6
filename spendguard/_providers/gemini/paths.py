"""Gemini paths: which endpoint a request reaches and which model it names.

The Gemini Developer API puts the model in the path
(``/v1beta/models/{model}:generateContent``), and so does Vertex AI
(``/v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:generateContent``);
the body has no ``model``. Method names are the REST reference's
(ai.google.dev/api/generate-content, ai.google.dev/api/embeddings, ai.google.dev/api/tokens).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from spendguard._costing.endpoints import Endpoint
from spendguard._providers.gemini import endpoints

__all__ = ["GEMINI_METHOD", "endpoint_of", "model_of"]

GEMINI_METHOD = re.compile(
    r"/(?:projects/[^/]+/locations/(?P<region>[^/]+)/publishers/google/)?models/"
    r"(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
"""A model method: ``…/models/{model}:{method}`` (Developer API and Vertex AI forms)."""

_PRICED = {"generateContent": endpoints.GENERATE, "streamGenerateContent": endpoints.GENERATE,
           "embedContent": endpoints.EMBED, "batchEmbedContents": endpoints.EMBED}
_FREE_METHODS = frozenset({"countTokens", "computeTokens"})
# Uploads (``/upload/v1beta/files``), file registration and a batch's cancel cannot spend.
_CACHES = re.compile(r"/cachedContents$")
_CACHE = re.compile(r"/cachedContents/[^/]+$")
_FREE_PATHS = re.compile(r"/files(?::[A-Za-z]+)?$|/files/[^/]+:download$"
                         r"|/batches/[^/]+:cancel$")


def _clean(path: str) -> str:
    return unquote(path.split("?", 1)[0].rstrip("/"))


def endpoint_of(path: str) -> Endpoint | None:
    """The endpoint a POST (or a cache's PATCH) to ``path`` reaches; FREE for token counts,
    uploads and batch cancels; None for one spendguard cannot price (a batch's submission,
    which ``spendguard.batch()`` reserves itself; image and video
    generation)."""
    clean = _clean(path)
    match = GEMINI_METHOD.search(clean)
    if match is not None:
        method = match["method"]
        if method in _FREE_METHODS:
            return Endpoint.FREE
        return _PRICED.get(method)
    if _FREE_PATHS.search(clean):
        return Endpoint.FREE
    if _CACHES.search(clean):
        return endpoints.CACHE
    if _CACHE.search(clean):  # a PATCH: the cache's new TTL
        return endpoints.CACHE_UPDATE
    return None


def model_of(path: str) -> tuple[str, bool] | None:
    """The model a model-method path names, and whether it streams; None for other paths."""
    match = GEMINI_METHOD.search(_clean(path))
    if match is None:
        return None
    return match["model"], match["method"] == "streamGenerateContent"
