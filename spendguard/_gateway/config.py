"""What a gateway is asked to do: upstreams, budget, keys and limits (from the CLI or a test)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spendguard._adoption.running import GUARDED_HEADER
from spendguard._gateway.upstreams import Upstream

__all__ = ["GUARDED_HEADER", "SCOPE_HEADER", "GatewayConfig"]

SCOPE_HEADER = "x-spendguard-scope"
"""A request header naming a scope nested under the gateway's (or the virtual key's) budget."""


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """A gateway's settings; every amount is a USD string, as on the command line."""

    upstreams: tuple[Upstream, ...] = ()
    """Upstreams added to (or replacing, by name) the default OpenAI and Anthropic ones."""
    limit_usd: str | None = None
    """The gateway's budget (every call is charged to it); None: recorded, unlimited."""
    scope: str = "gateway"
    period: str | None = None
    ledger: str | None = None
    observe: bool = False
    scope_limit_usd: str | None = None
    """The limit of each scope named by ``x-spendguard-scope`` (default: its parent's)."""
    per_user_usd: str | None = None
    """A budget per end user (the request's ``user`` / ``safety_identifier`` /
    ``metadata.user_id``), as ``Budget.per("user", ...)``."""
    allow_unpriced: bool = False
    """Forward requests to endpoints spendguard cannot price (uncounted) instead of refusing."""
    keys_file: str | None = None
    """Virtual keys: every request must present one (see :mod:`spendguard._gateway.keys`)."""
    provider_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Real provider keys by environment variable name, used with virtual keys only."""
    max_body_bytes: int = 32 * 1024 * 1024
    body_timeout_s: float = 60.0
    """How long a client may take to send its request body."""
    connect_timeout_s: float = 10.0
    upstream_timeout_s: float = 600.0
    """The longest wait for the upstream's next bytes (a long generation streams slowly)."""
    guarded_token: str | None = field(default=None, repr=False)
    """The secret of :data:`GUARDED_HEADER`, set by ``spendguard run`` only."""
