"""Self-hosted endpoints priced by the GPU-hour: a deployment turned into per-token rates.

A deployment is a model served on ``gpu_count`` × ``gpu`` rented at ``usd_per_gpu_hour``,
with a throughput: measured (``output_tok_s`` and ``input_tok_s`` at full load), or the sizing
engine's roofline estimate (an upper bound, so the derived rates are a lower bound). Every
token is allocated the GPU time it takes at that throughput::

    usd_per_hour              = gpu_count × usd_per_gpu_hour
    output USD per Mtok       = usd_per_hour / (output_tok_s × 3600) × 1e6
    input USD per Mtok        = usd_per_hour / (input_tok_s × 3600) × 1e6

so a call's recorded cost is its share of the deployment's hour at 100 % utilisation; idle
hours are what ``spendguard breakeven --from-ledger --self-hosted NAME`` adds back. Rates are
rounded up at the ninth decimal (never below the arithmetic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_CEILING, Decimal
from typing import Any, Literal

from spendguard._core.errors import PriceFileError
from spendguard._core.money import MILLION, parse_usd
from spendguard._costing.prices.sections import Host, section_owner

__all__ = ["SelfHosted", "deployment_from_section"]

_SECONDS_PER_HOUR = Decimal(3600)
_RATE_STEP = Decimal("1e-9")
_FIELDS = {"base_url", "model", "gpu", "gpu_count", "usd_per_gpu_hour", "output_tok_s",
           "input_tok_s", "throughput", "precision", "context", "context_window",
           "max_output_tokens", "as_of", "count_as"}


@dataclass(frozen=True)
class SelfHosted:
    """A model served on rented GPUs behind an OpenAI-compatible endpoint (vLLM, SGLang...).

    ``name`` becomes the host name: calls to ``base_url`` are priced as ``"<name>/<model>"``.
    ``count_as`` names a model whose tokenizer spendguard knows (else counts are a bound).
    """

    name: str
    base_url: str
    model: str
    gpu: str
    gpu_count: int
    usd_per_gpu_hour: Decimal
    output_tok_s: Decimal
    input_tok_s: Decimal
    context_window: int
    max_output_tokens: int
    as_of: date
    throughput: Literal["measured", "estimated"] = "measured"
    count_as: str | None = None

    @classmethod
    def measured(cls, name: str, *, base_url: str, model: str, gpu: str, gpu_count: int,
                 usd_per_gpu_hour: Decimal | str | int, output_tok_s: Decimal | str | int,
                 input_tok_s: Decimal | str | int, context_window: int,
                 max_output_tokens: int, as_of: date, count_as: str | None = None,
                 ) -> SelfHosted:
        """A deployment whose full-load throughput you measured (tokens/s over all GPUs)."""
        section = {"base_url": base_url, "model": model, "gpu": gpu, "gpu_count": gpu_count,
                   "usd_per_gpu_hour": usd_per_gpu_hour, "output_tok_s": output_tok_s,
                   "input_tok_s": input_tok_s, "context_window": context_window,
                   "max_output_tokens": max_output_tokens, "as_of": as_of,
                   "count_as": count_as}
        return deployment_from_section(name, section, "<SelfHosted>")

    @classmethod
    def estimated(cls, name: str, *, base_url: str, model: str, gpu: str, gpu_count: int,
                  usd_per_gpu_hour: Decimal | str | int, context_window: int,
                  max_output_tokens: int, as_of: date, precision: str = "native",
                  context: int = 4096, count_as: str | None = None) -> SelfHosted:
        """A deployment whose throughput is the sizing engine's roofline at full batch."""
        section = {"base_url": base_url, "model": model, "gpu": gpu, "gpu_count": gpu_count,
                   "usd_per_gpu_hour": usd_per_gpu_hour, "throughput": "estimated",
                   "precision": precision, "context": context,
                   "context_window": context_window, "max_output_tokens": max_output_tokens,
                   "as_of": as_of, "count_as": count_as}
        return deployment_from_section(name, section, "<SelfHosted>")

    @property
    def price_id(self) -> str:
        """The model id its calls are priced and recorded under."""
        return f"{self.name}/{self.model}"

    @property
    def usd_per_hour(self) -> Decimal:
        """What the whole deployment costs per hour, busy or idle."""
        return self.usd_per_gpu_hour * self.gpu_count

    def _rate(self, tok_s: Decimal) -> Decimal:
        rate = self.usd_per_hour / (tok_s * _SECONDS_PER_HOUR) * MILLION
        rate = rate.quantize(_RATE_STEP, rounding=ROUND_CEILING)
        short = rate.normalize()  # 0.100000000 -> 0.1, but never 1E+1
        return rate.quantize(Decimal(1)) if "E" in str(short) else short

    @property
    def output_usd_per_million(self) -> Decimal:
        return self._rate(self.output_tok_s)

    @property
    def input_usd_per_million(self) -> Decimal:
        return self._rate(self.input_tok_s)

    def host(self) -> Host:
        return Host(self.name, self.base_url.rstrip("/"), _provider(), self.source)

    @property
    def source(self) -> str:
        return (f"self-hosted {self.model}: {self.gpu_count} x {self.gpu} at "
                f"${self.usd_per_gpu_hour}/GPU-hour, {self.throughput} throughput "
                f"{self.output_tok_s} output / {self.input_tok_s} input tok/s")

    def price_entry(self) -> dict[str, Any]:
        """The price-table entry its calls are estimated and settled with."""
        entry: dict[str, Any] = {
            "provider": _provider(),
            "usd_per_million": {"input": self.input_usd_per_million,
                                "output": self.output_usd_per_million},
            "context_window": self.context_window,
            "max_output_tokens": self.max_output_tokens,
            "source": self.source, "as_of": self.as_of,
            "self_hosted": {"model": self.model, "gpu": self.gpu, "gpu_count": self.gpu_count,
                            "usd_per_gpu_hour": self.usd_per_gpu_hour,
                            "output_tok_s": self.output_tok_s, "input_tok_s": self.input_tok_s,
                            "throughput": self.throughput},
        }
        if self.count_as:
            entry["count_as"] = self.count_as
        return entry

    def price_source(self) -> dict[str, Any]:
        """A price mapping for ``register_prices`` / ``PriceTable.with_overrides``."""
        return {"hosts": {}, "models": {}, "self_hosted": {self.name: self._section()}}

    def _section(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "gpu": self.gpu,
                "gpu_count": self.gpu_count, "usd_per_gpu_hour": self.usd_per_gpu_hour,
                "output_tok_s": self.output_tok_s, "input_tok_s": self.input_tok_s,
                "context_window": self.context_window,
                "max_output_tokens": self.max_output_tokens, "as_of": self.as_of,
                **({"count_as": self.count_as} if self.count_as else {})}


def _provider() -> str:
    """The provider whose wire a self-hosted endpoint speaks (the ``self_hosted`` section's
    owner: OpenAI-compatible servers)."""
    return section_owner("self_hosted").name


def _positive(section: Mapping[str, Any], key: str, where: str, path: str) -> Decimal:
    try:
        return parse_usd(section.get(key), field=f"{where}.{key}", allow_zero=False)
    except Exception as exc:
        raise PriceFileError(f"{path}: {where}.{key}: give a number > 0 ({exc})",
                             path=path, field=f"{where}.{key}") from exc


def _count(section: Mapping[str, Any], key: str, where: str, path: str) -> int:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PriceFileError(f"{path}: {where}.{key}: give a whole number >= 1, got {value!r}",
                             path=path, field=f"{where}.{key}")
    return value


def deployment_from_section(name: str, section: Mapping[str, Any], path: str) -> SelfHosted:
    """Validate one ``[self_hosted.<name>]`` section (or the same fields from Python)."""
    where = f"self_hosted.{name}"
    unknown = set(section) - _FIELDS
    if unknown:
        raise PriceFileError(f"{path}: {where}: unknown key(s) {', '.join(sorted(unknown))}; "
                             f"allowed: {', '.join(sorted(_FIELDS))}", path=path, field=where)
    for key in ("base_url", "model", "gpu"):
        if not isinstance(section.get(key), str) or not section[key]:
            raise PriceFileError(f"{path}: {where}.{key}: required (a non-empty string)",
                                 path=path, field=f"{where}.{key}")
    if not str(section["base_url"]).startswith(("http://", "https://")):
        raise PriceFileError(f"{path}: {where}.base_url: give the endpoint's URL, e.g. "
                             '"http://10.0.0.5:8000/v1"', path=path, field=f"{where}.base_url")
    as_of = section.get("as_of")
    if not isinstance(as_of, date):
        raise PriceFileError(f"{path}: {where}.as_of: give the date the rate and throughput "
                             "were true, e.g. as_of = 2026-12-01", path=path,
                             field=f"{where}.as_of")
    gpu_count = _count(section, "gpu_count", where, path)
    rate = _positive(section, "usd_per_gpu_hour", where, path)
    throughput = section.get("throughput", "measured")
    if throughput == "estimated":
        output_tok_s, input_tok_s = _estimated(section, name, gpu_count)
    elif throughput == "measured":
        output_tok_s = _positive(section, "output_tok_s", where, path)
        input_tok_s = _positive(section, "input_tok_s", where, path)
    else:
        raise PriceFileError(f"{path}: {where}.throughput: 'measured' (give output_tok_s and "
                             "input_tok_s) or 'estimated' (the sizing engine's roofline)",
                             path=path, field=f"{where}.throughput")
    count_as = section.get("count_as")
    return SelfHosted(name=name, base_url=str(section["base_url"]).rstrip("/"),
                      model=str(section["model"]), gpu=str(section["gpu"]),
                      gpu_count=gpu_count, usd_per_gpu_hour=rate, output_tok_s=output_tok_s,
                      input_tok_s=input_tok_s,
                      context_window=_count(section, "context_window", where, path),
                      max_output_tokens=_count(section, "max_output_tokens", where, path),
                      as_of=as_of, throughput=throughput,
                      count_as=str(count_as) if count_as else None)


def _estimated(section: Mapping[str, Any], name: str, gpu_count: int) -> tuple[Decimal, Decimal]:
    # The sizing engine's full-load roofline: decode at the largest batch that fits, prefill
    # of one `context`-token sequence across all GPUs. Both are ceilings real engines reach a
    # share of, so the rates derived from them are floors.
    from spendguard._sizing.capacity import serving_capacity  # noqa: PLC0415 - heavy

    context = int(section.get("context", 4096))
    capacity = serving_capacity(str(section["model"]), gpu=str(section["gpu"]), count=gpu_count,
                                precision=str(section.get("precision", "native")),
                                context=context)
    line = capacity.roofline
    prefill_tok_s = context / max(line.prefill_compute_s, line.prefill_memory_s)
    return (Decimal(repr(round(capacity.tok_s, 3))), Decimal(repr(round(prefill_tok_s, 3))))
