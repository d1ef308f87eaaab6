"""Azure OpenAI deployments: which model each runs and how it is billed, as a price table.

Shared by :class:`spendguard.AzureOpenAI` (``deployments=``) and :func:`spendguard.install`
(``azure_deployments=``): a request names a deployment, priced as ``azure:<deployment>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from spendguard._core.errors import ConfigError
from spendguard._costing.prices import PriceTable, default_table
from spendguard._costing.prices.sections import AZURE_PREFIX, azure_entry
from spendguard._costing.routing import AZURE, AZURE_PRICE_AFTER

__all__ = ["AzureDeployment", "azure_platform", "azure_prices"]


@dataclass(frozen=True)
class AzureDeployment:
    """What an Azure OpenAI deployment runs and how it is billed.

    ``deployment_type``: ``"global"`` (Global Standard: the model's rates), ``"data_zone"``
    (Data Zone Standard: 10 % above Global) or ``"regional"`` (give ``rate_multiplier``: your
    regional rate / the Global rate, as Microsoft prices regions per model).
    """

    model: str
    deployment_type: str = "global"
    rate_multiplier: Decimal | str | None = None


def azure_prices(deployments: Mapping[str, str | AzureDeployment] | None,
                 prices: PriceTable | None) -> PriceTable | None:
    """The client's table with its deployment mapping layered on (None: nothing to add)."""
    if not deployments:
        return prices
    if not isinstance(deployments, Mapping):
        raise ConfigError('deployments: expected a mapping of deployment name to model, e.g. '
                          'deployments={"my-gpt4o": "gpt-4o"}')
    entries: dict[str, Any] = {}
    for name, target in deployments.items():
        spec = target if isinstance(target, AzureDeployment) else AzureDeployment(str(target))
        entries[AZURE_PREFIX + name] = azure_entry(
            name, spec.model, spec.deployment_type, spec.rate_multiplier,
            path="AzureOpenAI(deployments=...)")
    return (prices or default_table()).with_overrides({"models": entries})


def azure_platform(unmapped_deployments: str) -> str:
    """The guard's platform for an ``unmapped_deployments`` choice ("refuse" or
    "price_from_response")."""
    if unmapped_deployments == "refuse":
        return AZURE
    if unmapped_deployments == "price_from_response":
        return AZURE_PRICE_AFTER
    raise ConfigError(f"unmapped_deployments: {unmapped_deployments!r} is not 'refuse' (the "
                      "default) or 'price_from_response' (send unguarded, price afterwards)")
