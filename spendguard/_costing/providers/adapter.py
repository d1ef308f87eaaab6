"""The provider adapter seam: what the choke point asks of a provider, in one small interface.

A provider is one adapter package (``spendguard._costing.providers.<name>``) that owns what is
particular to its API: which endpoint a path reaches, the price id a request is priced with
when its body does not name it, reading a body into a :class:`~spendguard._costing.calls.Call`,
bounding its input, reading usage from bodies and streams. The guard attaches to the SDK's
client in the choke-point layer (``spendguard._guard.<name>``), which sits above this one.

Gemini is the first provider behind it; OpenAI and Anthropic still answer through the older
module functions (``usage_from_<provider>``, ``stream_reader``) and can move behind it later
without a change to the interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from spendguard._costing.calls import Call
    from spendguard._costing.endpoints import Endpoint
    from spendguard._costing.providers import StreamReader
    from spendguard._costing.tokens import TokenCount
    from spendguard._costing.usage import Usage

__all__ = ["ProviderAdapter"]


class ProviderAdapter(Protocol):
    """One provider's API, as the choke point, the estimator and the emulator need it."""

    name: str
    """The provider's name in the ledger and price files (``"gemini"``)."""
    otel_name: str
    """The OpenTelemetry ``gen_ai.provider.name`` of its calls."""

    def endpoint(self, path: str) -> Endpoint | None:
        """The endpoint a POST to ``path`` reaches: priced, ``Endpoint.FREE``, or None."""
        ...

    def price_id(self, path: str) -> str | None:
        """The model a request is priced as when the path names it (None: the body does)."""
        ...

    def build_call(self, endpoint: Endpoint, body: dict[str, Any]) -> Call:
        """A priced request body (with ``model`` set) read into a call."""
        ...

    def count_input(self, endpoint: Endpoint | str, body: Mapping[str, Any]) -> TokenCount:
        """The input tokens of a body: exact, or a stated upper bound. Never raises on shape."""
        ...

    def read_usage(self, payload: object, *, endpoint: str | None = None) -> Usage:
        """Usage from a reply body, a stream chunk or an SDK object."""
        ...

    def stream_reader(self, endpoint: str) -> StreamReader:
        """A fresh reader for one streamed reply."""
        ...
