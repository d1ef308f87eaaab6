"""The providers' batch limits, and splitting requests into batches that respect them.

Pure arithmetic over sizes the wire adapters measured: no I/O. OpenAI and Gemini take one
model (and OpenAI one endpoint) per batch, so their requests are grouped first; an Anthropic
Message Batch may mix models. Requests keep their order inside each batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Protocol, TypeVar

from spendguard._core.errors import ConfigError
from spendguard._costing.calls import Provider
from spendguard._strategies.batch.wire import api_for

__all__ = ["BatchLimits", "Sized", "split"]

# Published as "200 MB" / "256 MB": read as decimal megabytes, the smaller reading, so a split
# batch fits whichever the provider means.
_MB = 1_000_000


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """Most requests and bytes one provider batch may hold (the providers' published limits).

    The field names match :class:`spendguard.testing.BatchLimits`, so a test can give the
    emulator and :func:`spendguard.batch` the same small numbers.
    """

    openai_max_requests: int = 50_000
    openai_max_file_bytes: int = 200 * _MB
    openai_max_embedding_inputs: int = 50_000
    anthropic_max_requests: int = 100_000
    anthropic_max_bytes: int = 256 * _MB
    gemini_max_requests: int = 10_000
    """spendguard's own cap, not Google's (which publishes none for inline requests): a
    batch's inline results all come back in one ``batches.get`` reply."""
    gemini_max_bytes: int = 20 * _MB
    """Inline requests, "under 20MB" in all (ai.google.dev/gemini-api/docs/batch-mode)."""

    def __post_init__(self) -> None:
        for name in (limit.name for limit in fields(self)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"BatchLimits.{name}: expected a positive whole number, "
                                  f"got {value!r}")

    def of(self, provider: Provider) -> tuple[int, int, int | None]:
        """(most requests, most bytes, most embedding inputs or None) for one provider.

        A provider's limits are the fields named for it: ``<provider>_max_requests``,
        ``<provider>_max_file_bytes`` where a batch is an uploaded file (else
        ``<provider>_max_bytes``), and ``<provider>_max_embedding_inputs`` where it caps them;
        a provider with no fields here has the limits its batch wire publishes.
        """
        named = {limit.name for limit in fields(self)}
        prefix = f"{provider.value}_max_"
        if f"{prefix}requests" not in named:
            return api_for(provider).published_limits
        size = (f"{prefix}file_bytes" if f"{prefix}file_bytes" in named
                else f"{prefix}bytes")
        inputs = f"{prefix}embedding_inputs"
        return (getattr(self, f"{prefix}requests"), getattr(self, size),
                getattr(self, inputs) if inputs in named else None)


class Sized(Protocol):
    """What splitting needs to know of a request."""

    @property
    def custom_id(self) -> str: ...
    @property
    def group(self) -> tuple[str, ...]: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def inputs(self) -> int: ...


_S = TypeVar("_S", bound=Sized)


def split(requests: Sequence[_S], provider: Provider, limits: BatchLimits, *,
          overhead_bytes: int = 0) -> list[list[_S]]:
    """Requests in batches of one group each, none over the provider's limits.

    ``size_bytes`` is what a request adds to its batch's file or body; ``overhead_bytes`` what
    the batch adds once. A single request too large for any batch is an error naming it.
    """
    max_requests, max_bytes, max_inputs = limits.of(provider)
    groups: dict[tuple[str, ...], list[_S]] = {}
    for request in requests:
        groups.setdefault(request.group, []).append(request)
    batches: list[list[_S]] = []
    for members in groups.values():
        current: list[_S] = []
        size, inputs = overhead_bytes, 0
        for request in members:
            if overhead_bytes + request.size_bytes > max_bytes:
                raise ConfigError(
                    f"request {request.custom_id!r} is {request.size_bytes:,} bytes; a "
                    f"{provider.value} batch holds at most {max_bytes:,}. Send it as an "
                    f"ordinary call, or shrink it")
            if max_inputs is not None and request.inputs > max_inputs:
                raise ConfigError(
                    f"request {request.custom_id!r} has {request.inputs:,} embedding inputs; "
                    f"a batch holds at most {max_inputs:,}. Split its input list")
            full = (len(current) >= max_requests or size + request.size_bytes > max_bytes
                    or (max_inputs is not None and inputs + request.inputs > max_inputs))
            if current and full:
                batches.append(current)
                current, size, inputs = [], overhead_bytes, 0
            current.append(request)
            size += request.size_bytes
            inputs += request.inputs
        if current:
            batches.append(current)
    return batches
