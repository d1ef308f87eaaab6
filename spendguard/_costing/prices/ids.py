"""Id resolution by declared rules: the names providers and platforms give one priced model.

A look-up first tries the exact id and the declared aliases. Only when both miss does one of
these rules apply, each a documented naming scheme with its public source, never a guess by
similarity. Each provider's adapter declares its own (``id_rules``, ``resolve_id``; here they
are asked in turn):

- **Dated snapshots** (``dated:<provider>``): ``claude-opus-4-7-20260416`` is priced as
  ``claude-opus-4-7`` and ``gpt-5.5-2026-04-23`` as ``gpt-5.5``, because both providers
  document a snapshot as the same model at the same price as its base id. The date must be a
  real day no later than the call's day (a snapshot cannot be dated after the call), and the
  base entry must not opt out with ``dated_snapshots = false`` (a snapshot that bills
  differently is declared as its own entry, which an exact match finds first).
- **Platform ids**: Claude's on Bedrock (``bedrock/<profile>.anthropic.<model>...``, by
  inference profile) and on Vertex AI (``vertex[-regional]/<model>@<version>``), in
  :mod:`spendguard._providers.anthropic.ids`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date

from spendguard._providers.adapter import adapters

__all__ = ["Resolved", "resolve_id", "rule_sources"]


@functools.cache
def rule_sources() -> Mapping[str, str]:
    """Where each rule's naming scheme (and same-price statement) is published, by rule."""
    return {rule: source for adapter in adapters() for rule, source in adapter.id_rules.items()}


@dataclass(frozen=True)
class Resolved:
    """The entry an id resolves to, and the rule that resolved it (with its source)."""

    model: str
    rule: str

    @property
    def source(self) -> str:
        return rule_sources()[self.rule]


class _Entries:
    """What the rules need to know of a table: its ids, providers, aliases and opt-outs."""

    def __init__(self, has: Callable[[str], bool], provider: Callable[[str], str | None],
                 aliases: Callable[[str], tuple[str, ...]],
                 snapshots: Callable[[str], bool]) -> None:
        self.has, self.provider, self.aliases, self.snapshots = (has, provider, aliases,
                                                                 snapshots)


def resolve_id(model: str, entries: _Entries, day: date) -> Resolved | None:
    """The entry ``model`` names under a declared rule, or None (then it is unknown)."""
    for adapter in adapters():
        found = adapter.resolve_id(model, entries, day)
        if found is not None:
            return Resolved(*found)
    return None
