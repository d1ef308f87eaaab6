"""``count_request_tokens``: the input tokens of a whole request body, as the SDKs send it.

This is what the estimator calls for every guarded request (and the planner for every planned
one), so it never raises on a body's shape: an endpoint or part it does not recognise is
counted as JSON text with headroom, and a model with no known tokenizer gets a loose bound.
Repeated strings (a shared system prompt or document) are encoded once (``bpe.count_text``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint, Provider
from spendguard._costing.tokens.content import json_text, unknown
from spendguard._costing.tokens.count import Tally, TokenCount
from spendguard._costing.tokens.models import Family, Profile, foreign_profile, profile_for
from spendguard._providers.adapter import adapter_for, providers

__all__ = ["Walkers", "count_request_tokens", "count_with"]

Handler = Callable[[Profile, Mapping[str, Any], Tally], None]
Sum = Callable[[Profile, Mapping[str, Any]], int | None]


# What a walker can raise on a body of an unexpected shape; TokenizerError (corrupt data)
# is deliberately not here: that must surface.
_SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError,
                 OverflowError)


def count_request_tokens(provider: str, endpoint: Endpoint | str,
                         body: Mapping[str, Any]) -> TokenCount:
    """Input tokens of a request ``body`` sent to ``endpoint`` (an :class:`Endpoint`, or the
    URL path it was sent to: ``"/v1/chat/completions"``…), as the provider's adapter counts
    them: exactly, or a stated upper bound. Never raises on the body's shape.
    """
    # The estimator passes a provider's own (lower-case) name: no call to lower it.
    names = Provider.names()
    lowered = provider if provider in names or not isinstance(provider, str) \
        else provider.lower()
    if lowered not in names:
        raise ConfigError(f"provider must be one of {', '.join(providers())}, got {provider!r}")
    return adapter_for(lowered).count_input(endpoint, body)


def count_with(family: Family, walkers: Walkers,
               endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
    """Input tokens of a body by a tokenizer ``family``'s rules (a model with no known
    tokenizer is bounded as that family's), walking it with the ``walkers`` of its endpoint."""
    # A plain dict (the usual body) is told by its class: an ABC check costs more; so are
    # its model (a str) and a priced endpoint (an Endpoint member), by membership and class.
    mapping = body.__class__ is dict or isinstance(body, Mapping)
    model: Any = body["model"] if mapping and "model" in body else None
    named = model.__class__ is str or isinstance(model, str)
    profile = profile_for(model) if named else None
    if profile is None:
        profile = foreign_profile(model if named else "", family)
    if endpoint.__class__ is Endpoint and endpoint in walkers.by_endpoint:
        handler: Handler | None = walkers.by_endpoint[endpoint]
        if mapping and endpoint in walkers.sums:  # the usual body in one pass, no tally
            total = walkers.sums[endpoint](profile, body)
            if total is not None:
                return TokenCount._made(total, exact=True, method=profile.label)
    else:
        handler = walkers.handler(endpoint) if isinstance(endpoint, str) else None
    tally = profile.tally()
    if handler is not None and mapping:
        try:
            handler(profile, body, tally)
            return tally.result()
        except _SHAPE_ERRORS:
            tally = profile.tally()  # a shape no walker foresaw: fall back to the JSON text
    unknown(profile, tally, json_text(body))
    return tally.result()


@dataclass(frozen=True, slots=True)
class Walkers:
    """Which walker counts a body: by its priced endpoint, or, for a path that is no priced
    endpoint but whose input is counted all the same, by its ending."""

    by_endpoint: Mapping[Endpoint, Handler]
    by_path: tuple[tuple[str, Handler], ...]
    endpoint_of: Callable[[str], Endpoint | None]
    sums: Mapping[Endpoint, Sum] = field(default_factory=dict)
    """Per priced endpoint, the exact count of its usual body in one pass, tried before the
    walker (every guarded call comes here); None from it for any other body, then walked."""

    def handler(self, endpoint: Endpoint | str) -> Handler | None:
        if not isinstance(endpoint, Endpoint):
            path = endpoint.split("?", 1)[0].rstrip("/")
            named = self.endpoint_of(path)
            if named is None or named not in self.by_endpoint:
                return next((handler for suffix, handler in self.by_path
                             if path.endswith(suffix)), None)
            endpoint = named
        return self.by_endpoint.get(endpoint)
