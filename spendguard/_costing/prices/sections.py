"""Price-file sections beyond ``[models]``: hosts, Azure deployments, self-hosted endpoints.

Each section expands into ordinary model entries, so a call to any of them is estimated and
settled by the same rules as a call to OpenAI or Anthropic. The provider a section prices for
(a host's and a self-hosted model's, the snapshot names of an Azure deployment's model) is the
one whose adapter owns it (``price_sections``): OpenAI, whose wire they speak.

- ``[hosts.<name>]`` an OpenAI-compatible provider matched by ``base_url``; its
  ``[hosts.<name>.models."<id>"]`` become entries ``"<name>/<id>"``.
- ``[azure_deployments."<deployment>"]`` ``model`` (a priced id) and ``deployment_type``
  (``global`` / ``data_zone`` / ``regional``) become an entry ``"azure:<deployment>"`` derived
  from the model's rates with the deployment type's uplift.
- ``[self_hosted.<name>]`` a deployment priced by the GPU-hour (see
  :mod:`spendguard._costing.prices.selfhosted`) becomes a host ``<name>`` and an entry
  ``"<name>/<model>"``.

Derived entries (``derived_from`` + ``rate_multiplier``) are resolved in
:func:`resolve_derived`, after every file is merged, so an override of the base model reaches
its copies too.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from spendguard._core.errors import PriceFileError
from spendguard._core.money import parse_usd
from spendguard._costing.endpoints import Provider
from spendguard._providers.adapter import ProviderAdapter, adapter_for, adapters

__all__ = ["AZURE_DEPLOYMENT_TYPES", "Host", "azure_entry", "expand_sections",
           "resolve_derived", "section_owner"]

AZURE_PREFIX = "azure:"
# Microsoft prices Data Zone Standard deployments 10 % above Global Standard ("Costs 10% more
# than Global", Directions on Microsoft, Azure OpenAI Service Deployment Types, 2024-12-28;
# https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/). Regional
# (Standard) prices differ by model and region and are not published as a ratio: a regional
# deployment must state its own rate_multiplier.
AZURE_DEPLOYMENT_TYPES: Mapping[str, Decimal | None] = {
    "global": Decimal(1), "data_zone": Decimal("1.1"), "regional": None}
AZURE_SOURCE = "https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/"
AZURE_AS_OF = date(2026, 12, 1)
SECTION_KEYS = ("hosts", "azure_deployments", "self_hosted")


@functools.cache
def section_owner(section: str) -> ProviderAdapter:
    """The adapter whose models a price-file section's entries are (its ``price_sections``)."""
    return next(adapter for adapter in adapters() if section in adapter.price_sections)


@dataclass(frozen=True)
class Host:
    """An OpenAI-compatible endpoint; requests under ``base_url`` are priced as
    ``"<name>/<model>"``."""

    name: str
    base_url: str
    provider: str
    source: str

    def matches(self, url: str) -> bool:
        """True when ``url`` lies under this host's base URL (scheme, host and path prefix)."""
        base = self.base_url.rstrip("/")
        return url == base or url.startswith(base + "/")

    def price_id(self, model: str) -> str:
        return f"{self.name}/{model}"


def _fail(path: str, where: str, message: str) -> PriceFileError:
    return PriceFileError(f"{path}: {where}: {message}", path=path, field=where)


def _table(value: object, path: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, where, "must be a table")
    return value


def expand_sections(data: Mapping[str, Any], path: str,
                    ) -> tuple[dict[str, dict[str, Any]], dict[str, Host]]:
    """The model entries and hosts the extra sections of one price document declare."""
    models: dict[str, dict[str, Any]] = {}
    hosts: dict[str, Host] = {}
    for name, raw in _table(data.get("hosts", {}), path, "hosts").items():
        host_section = dict(_table(raw, path, f"hosts.{name}"))
        host = _host(name, host_section, path)
        hosts[name] = host
        shared: dict[str, Any] = {k: host_section[k] for k in ("source", "as_of")
                                  if k in host_section}
        for model, entry in _table(host_section.get("models", {}), path,
                                   f"hosts.{name}.models").items():
            own = dict(_table(entry, path, f"hosts.{name}.models.{model}"))
            own.setdefault("provider", host.provider)
            models[host.price_id(model)] = {**shared, **own}
    for deployment, raw in _table(data.get("azure_deployments", {}), path,
                                  "azure_deployments").items():
        section = _table(raw, path, f"azure_deployments.{deployment}")
        target = section.get("model")
        if not isinstance(target, str) or not target:
            raise _fail(path, f"azure_deployments.{deployment}.model",
                        'name the priced model the deployment runs, e.g. model = "gpt-4o"')
        models[AZURE_PREFIX + deployment] = azure_entry(
            deployment, target, str(section.get("deployment_type", "global")),
            section.get("rate_multiplier"), path=path,
            source=section.get("source"), as_of=section.get("as_of"))
    for name, raw in _table(data.get("self_hosted", {}), path, "self_hosted").items():
        from spendguard._costing.prices.selfhosted import deployment_from_section  # noqa: PLC0415 - cycle

        served = deployment_from_section(name, _table(raw, path, f"self_hosted.{name}"), path)
        hosts[name] = served.host()
        models[served.price_id] = served.price_entry()
    return models, hosts


def _host(name: str, section: Mapping[str, Any], path: str) -> Host:
    base_url = section.get("base_url")
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise _fail(path, f"hosts.{name}.base_url",
                    'give the URL the client is built with, e.g. "https://api.moonshot.ai/v1"')
    owner = section_owner("hosts")
    provider = section.get("provider", owner.name)
    if provider != owner.name:
        raise _fail(path, f"hosts.{name}.provider",
                    f"only {owner.display_name}-compatible hosts are supported "
                    f'(provider = "{owner.name}")')
    source = section.get("source")
    if not isinstance(source, str) or not source:
        raise _fail(path, f"hosts.{name}.source", "say where the prices come from")
    unknown = set(section) - {"base_url", "provider", "source", "as_of", "models"}
    if unknown:
        raise _fail(path, f"hosts.{name}", f"unknown key(s) {', '.join(sorted(unknown))}; "
                    "a host has base_url, provider, source, as_of and [models]")
    return Host(name, base_url.rstrip("/"), provider, source)


def azure_entry(deployment: str, model: str, deployment_type: str,
                rate_multiplier: object = None, *, path: str = "<azure deployments>",
                source: object = None, as_of: object = None) -> dict[str, Any]:
    """The raw entry pricing an Azure deployment as its model, with the deployment type's uplift."""
    where = f"azure_deployments.{deployment}"
    if deployment_type not in AZURE_DEPLOYMENT_TYPES:
        raise _fail(path, f"{where}.deployment_type",
                    f"{deployment_type!r} is not one of {', '.join(AZURE_DEPLOYMENT_TYPES)}")
    multiplier = AZURE_DEPLOYMENT_TYPES[deployment_type]
    if rate_multiplier is not None:
        multiplier = parse_usd(rate_multiplier, field=f"{where}.rate_multiplier",
                               allow_zero=False)
    if multiplier is None:
        raise _fail(path, f"{where}.rate_multiplier",
                    "a regional deployment's price differs by model and region; give "
                    "rate_multiplier = <your rate / the Global Standard rate>, e.g. 1.1")
    return {"derived_from": model, "rate_multiplier": multiplier,
            "source": source or AZURE_SOURCE, "as_of": as_of or AZURE_AS_OF,
            "note": f"Azure {deployment_type} deployment {deployment!r} of {model}"}


def _scaled(rates: Mapping[str, Any], multiplier: Decimal) -> dict[str, Any]:
    return {kind: Decimal(str(rate)) * multiplier for kind, rate in rates.items()}


def _undated(model: str, provider: object) -> str | None:
    """The base id of a dated snapshot name by the rule of the entry's provider; an entry
    that names none (an Azure deployment's) is the Azure section owner's."""
    owner = (adapter_for(provider) if isinstance(provider, str) and provider in Provider.names()
             else section_owner("azure_deployments"))
    return owner.undated(model)


def resolve_derived(raw: Mapping[str, Mapping[str, Any]], origin: Mapping[str, str],
                    ) -> dict[str, dict[str, Any]]:
    """Every entry with ``derived_from`` filled in from its base model's merged entry."""
    owner = {alias: model for model, entry in raw.items()
             for alias in entry.get("aliases", ()) or ()}
    resolved: dict[str, dict[str, Any]] = {}
    for model, entry in raw.items():
        base_name = entry.get("derived_from")
        if base_name is None:
            resolved[model] = dict(entry)
            continue
        base_id = base_name if base_name in raw else owner.get(str(base_name))
        if base_id is None:  # an Azure snapshot name: the dated-snapshot rule (its undated)
            undated_name = _undated(str(base_name), entry.get("provider"))
            if undated_name is not None and undated_name in raw and raw[undated_name].get(
                    "dated_snapshots", True):
                base_id = undated_name
        if base_id is None or raw[base_id].get("derived_from") is not None:
            raise PriceFileError(
                f"{origin[model]}: model {model!r}: derived_from: {base_name!r} is not a priced "
                "model (derive from a model with its own rates); run `spendguard prices list`",
                path=origin[model], entry=model, field="derived_from")
        base = raw[base_id]
        multiplier = Decimal(str(entry.get("rate_multiplier", 1)))
        merged = {k: v for k, v in base.items() if k not in ("aliases", "note")}
        merged["usd_per_million"] = _scaled(base.get("usd_per_million", {}), multiplier)
        modifiers: dict[str, Any] = {}
        for name, modifier in dict(base.get("modifiers", {})).items():
            if isinstance(modifier, Mapping) and "usd_per_million" in modifier:
                modifiers[name] = {**modifier, "usd_per_million": _scaled(
                    modifier["usd_per_million"], multiplier)}
            else:
                modifiers[name] = modifier
        merged["modifiers"] = modifiers
        # The base's dated changes apply to the derived entry too, at its multiplier.
        merged["changes"] = [
            {**change, "usd_per_million": _scaled(change["usd_per_million"], multiplier)}
            if isinstance(change, Mapping) and isinstance(change.get("usd_per_million"), Mapping)
            else change for change in base.get("changes", ()) or ()]
        if not merged["changes"]:
            del merged["changes"]
        own = {k: v for k, v in entry.items() if k not in ("derived_from", "rate_multiplier")}
        merged.update(own)
        merged.setdefault("count_as", base_id)
        resolved[model] = merged
    return resolved
