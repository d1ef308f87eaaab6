"""What a plan is made of: request bodies, from a list or a batch input file.

Accepted, one request per item (or per JSONL line):

- a bare request body (OpenAI, Anthropic or Gemini shape): the provider comes from the model,
  the endpoint from the body's shape (see :func:`spendguard._caching.kind.request_kind`); a
  Gemini request as its REST body or as ``generate_content``'s arguments (``contents``,
  ``config``), kept as the REST body;
- a provider's batch request, as its adapter reads it (``batch_request``): an OpenAI batch
  input line ``{"custom_id", "method": "POST", "url": "/v1/...", "body"}``, an Anthropic
  message-batch request ``{"custom_id", "params": {...}}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from spendguard._caching.kind import request_kind
from spendguard._core.errors import ConfigError
from spendguard._costing.endpoints import Endpoint
from spendguard._costing.prices import PriceTable
from spendguard._providers.adapter import adapter_for, adapters

__all__ = ["PlannedRequest", "load_requests", "read_jsonl"]

Source = str | os.PathLike[str] | Iterable[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request of a plan: where it goes and its body."""

    index: int
    provider: str
    """``"openai"``, ``"anthropic"`` or ``"gemini"``."""
    endpoint: Endpoint
    body: dict[str, Any] = field(repr=False)
    custom_id: str | None = None


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file; errors name the line."""
    file = Path(path)
    try:
        handle = file.open("r", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"requests: cannot read {file}: {exc.strerror or exc}") from exc
    with handle:
        try:
            yield from _objects(file, handle)
        except UnicodeDecodeError as exc:
            raise ConfigError(f"requests: {file} is not UTF-8 text (byte {exc.start} of a "
                              f"line cannot be read); a batch input file holds one JSON object "
                              f"per line") from None


def _objects(file: Path, handle: TextIO) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{file}, line {number}: not JSON ({exc}); a batch input "
                              "file holds one JSON object per line") from exc
        if not isinstance(item, dict):
            raise ConfigError(f"{file}, line {number}: expected a JSON object, got "
                              f"{type(item).__name__}")
        yield number, item


def _entry(item: Mapping[str, Any], index: int, where: str, provider: str | None,
           table: PriceTable | None) -> PlannedRequest:
    custom_id = item.get("custom_id")
    custom = str(custom_id) if custom_id is not None else None
    for adapter in adapters():  # a provider's batch request: its adapter reads the shape
        try:
            found = adapter.batch_request(item)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if found is not None:
            return PlannedRequest(index, adapter.name, found[0], found[1], custom)
    if not isinstance(item.get("model"), str):
        shapes = "; ".join(f"{adapter.display_name}'s: "
                           f"{', '.join(adapter.batch_request_fields)}"
                           for adapter in adapters() if adapter.batch_request_fields)
        raise ConfigError(f"{where}: a request needs a 'model'; give a request body or a "
                          f"provider's batch request ({shapes})")
    found_provider, endpoint = request_kind(item, provider=provider, table=table)
    # Planned (estimated, ordered) as the REST body, whichever way it was written (Gemini).
    body = adapter_for(found_provider).request_body(item)
    return PlannedRequest(index, found_provider, endpoint, body, custom)


def load_requests(source: Source, *, provider: str | None = None,
                  table: PriceTable | None = None) -> list[PlannedRequest]:
    """The requests of a list of bodies / batch lines, or of a JSONL file at a path."""
    numbered: Iterable[tuple[str, Any]]
    if isinstance(source, str | os.PathLike):
        numbered = ((f"{source}, line {n}", item) for n, item in read_jsonl(source))
        label = str(source)
    elif isinstance(source, Mapping) or not isinstance(source, Iterable):
        raise ConfigError("requests: expected a list of request bodies or the path of a JSONL "
                          f"batch input file, got {type(source).__name__}")
    else:
        numbered = ((f"requests[{i}]", item) for i, item in enumerate(source))
        label = "requests"
    found = []
    for index, (where, item) in enumerate(numbered):
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: expected a request body (a dict), got "
                              f"{type(item).__name__}")
        found.append(_entry(item, index, where, provider, table))
    if not found:
        raise ConfigError(f"{label}: no requests to plan")
    return found
