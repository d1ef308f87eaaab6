"""Id resolution by declared rules: the names providers and platforms give one priced model.

A look-up first tries the exact id and the declared aliases. Only when both miss does one of
these rules apply, each a documented naming scheme with its public source, never a guess by
similarity:

- **Dated snapshots** (``dated``): ``claude-opus-4-7-20260416`` is priced as
  ``claude-opus-4-7`` and ``gpt-5.5-2026-04-23`` as ``gpt-5.5``, because both providers
  document a snapshot as the same model at the same price as its base id. The date must be a
  real day no later than the call's day (a snapshot cannot be dated after the call), and the
  base entry must not opt out with ``dated_snapshots = false`` (a snapshot that bills
  differently is declared as its own entry, which an exact match finds first).
- **Bedrock ids** (``bedrock``): ``bedrock/<profile>.anthropic.<model>[-<date>][-v<n>[:<m>]]``.
  The ``global.`` inference profile is priced as ``bedrock/<model>``; an in-Region id (no
  profile) or a geographic profile (``us.``, ``eu.``, ``apac.``, ``jp.``, ``au.``) as
  ``bedrock-regional/<model>``, which must exist: a model without a regional entry is
  refused rather than priced at the global rate.
- **Vertex ids** (``vertex``): ``vertex[-regional]/<model>@<version>`` is priced as
  ``vertex[-regional]/<model>``; ``<version>`` is ``default`` or a snapshot date.

A date in a platform id must be one the base Claude entry declares (its dated alias) when it
declares any, so ``claude-sonnet-4-5-20240101`` is refused, not priced as Sonnet 4.5.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date

__all__ = ["RULE_SOURCES", "Resolved", "resolve_id", "undated"]

RULE_SOURCES: Mapping[str, str] = {
    "dated:anthropic": "https://platform.claude.com/docs/en/about-claude/models/overview",
    "dated:openai": "https://developers.openai.com/api/docs/models",
    "bedrock": "https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html",
    "bedrock:regional": "https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock",
    "vertex": "https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai",
}
"""Where each rule's naming scheme (and same-price statement) is published."""

_ANTHROPIC_DATED = re.compile(r"^(?P<base>claude-[a-z0-9.-]+?)-(?P<date>\d{8})$")
_OPENAI_DATED = re.compile(r"^(?P<base>[a-z0-9][a-z0-9.-]*?)-(?P<date>\d{4}-\d{2}-\d{2})$")
_BEDROCK = re.compile(r"^bedrock/(?:(?P<geo>global|us|eu|apac|jp|au)\.)?anthropic\."
                      r"(?P<name>claude-[a-z0-9.-]+?)(?:-(?P<date>\d{8}))?"
                      r"(?:-v(?P<ver>\d+)(?::\d+)?)?$")
_VERTEX = re.compile(r"^(?P<scope>vertex|vertex-regional)/(?P<name>claude-[a-z0-9.-]+?)"
                     r"@(?P<version>default|\d{8})$")


@dataclass(frozen=True)
class Resolved:
    """The entry an id resolves to, and the rule that resolved it (with its source)."""

    model: str
    rule: str

    @property
    def source(self) -> str:
        return RULE_SOURCES[self.rule]


class _Entries:
    """What the rules need to know of a table: its ids, providers, aliases and opt-outs."""

    def __init__(self, has: Callable[[str], bool], provider: Callable[[str], str | None],
                 aliases: Callable[[str], tuple[str, ...]],
                 snapshots: Callable[[str], bool]) -> None:
        self.has, self.provider, self.aliases, self.snapshots = (has, provider, aliases,
                                                                 snapshots)


def _day(text: str) -> date | None:
    digits = text.replace("-", "")
    try:
        return date(int(digits[:4]), int(digits[4:6]), int(digits[6:8]))
    except ValueError:
        return None


def undated(model: str, provider: str) -> str | None:
    """The base id of a dated snapshot id of ``provider``'s scheme, None when it has no date."""
    pattern = _ANTHROPIC_DATED if provider == "anthropic" else _OPENAI_DATED
    match = pattern.match(model)
    if match is None or _day(match["date"]) is None:
        return None
    return match["base"]


def resolve_id(model: str, entries: _Entries, day: date) -> Resolved | None:
    """The entry ``model`` names under a declared rule, or None (then it is unknown)."""
    if model.startswith("bedrock/"):
        return _bedrock(model, entries, day)
    if model.startswith(("vertex/", "vertex-regional/")):
        return _vertex(model, entries, day)
    for provider, pattern in (("anthropic", _ANTHROPIC_DATED), ("openai", _OPENAI_DATED)):
        match = pattern.match(model)
        if match is None:
            continue
        base, snapshot = match["base"], _day(match["date"])
        if (snapshot is not None and snapshot <= day and entries.has(base)
                and entries.provider(base) == provider and entries.snapshots(base)):
            return Resolved(base, f"dated:{provider}")
    return None


def _claude_date_ok(name: str, snapshot: str | None, entries: _Entries, day: date) -> bool:
    """A platform id's date must be one the Claude entry declares, when it declares any."""
    if snapshot is None:
        return True
    when = _day(snapshot)
    if when is None or when > day or not entries.has(name):
        return False
    dated = [alias for alias in entries.aliases(name) if _ANTHROPIC_DATED.match(alias)]
    return not dated or f"{name}-{snapshot}" in dated


def _bedrock(model: str, entries: _Entries, day: date) -> Resolved | None:
    match = _BEDROCK.match(model)
    if match is None:
        return None
    name, snapshot = match["name"], match["date"]
    scope = "bedrock" if match["geo"] == "global" else "bedrock-regional"
    for candidate in (f"{scope}/{name}", f"{scope}/{name}-{snapshot}" if snapshot else None):
        if candidate is not None and entries.has(candidate):
            plain = candidate.split("/", 1)[1]
            if plain != name or _claude_date_ok(name, snapshot, entries, day):
                return Resolved(candidate, "bedrock" if scope == "bedrock" else
                                "bedrock:regional")
    return None


def _vertex(model: str, entries: _Entries, day: date) -> Resolved | None:
    match = _VERTEX.match(model)
    if match is None:
        return None
    candidate = f"{match['scope']}/{match['name']}"
    version = match["version"]
    if not entries.has(candidate) or not _claude_date_ok(
            match["name"], None if version == "default" else version, entries, day):
        return None
    return Resolved(candidate, "vertex")
