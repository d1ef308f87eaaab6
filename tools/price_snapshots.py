"""Refresh the stored snapshots of other price tables that the price tests compare against.

The tests of ``spendguard prices check`` and of the genai-prices fallback catalog never read an
installed package's data: they read ``tests/data/prices/genai-prices.json`` and
``tests/data/prices/litellm.json``, each stamped with the version it came from and the day it was
taken. To refresh them (then re-run ``pytest tests/costing tests/cli/test_prices_cli.py`` and
update the expectations that moved)::

    pip install -U genai-prices
    pip download --no-deps litellm -d /tmp/litellm      # LiteLLM ships its price file in the wheel
    python tools/price_snapshots.py --litellm-wheel /tmp/litellm/litellm-*.whl

Only the providers spendguard prices (or may price next) are kept, so the files stay small.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import zipfile
from datetime import UTC, date, datetime, time
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "prices"

GENAI_PROVIDERS = ("anthropic", "openai", "aws", "azure", "google", "deepseek", "moonshotai")
LITELLM_PROVIDERS = ("openai", "anthropic", "azure", "bedrock", "bedrock_converse",
                     "vertex_ai-anthropic_models", "deepseek", "moonshot", "gemini",
                     "vertex_ai-language-models")
LITELLM_FILE = "litellm/model_prices_and_context_window_backup.json"
# The LiteLLM fields a price comparison or a catalog look-up reads.
_LITELLM_KEEP = ("litellm_provider", "mode", "max_input_tokens", "max_output_tokens", "source")


def _raw(value: Any) -> Any:
    """genai-prices' objects back into the shape of its published ``data.json``."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, date | time | datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_raw(item) for item in value]
    if isinstance(value, dict):
        return {key: _raw(item) for key, item in value.items() if item is not None}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if item is None or field.name.startswith("_") or field.name == "extractors":
                continue
            out[field.name.rstrip("_")] = _raw(item)
        return out
    if type(value).__name__ == "ModelPrice":
        return {key: _raw(item) for key, item in vars(value).items()
                if item is not None and not key.startswith("_")}
    return value


def genai_prices_snapshot() -> dict[str, Any]:
    from genai_prices import data_snapshot  # noqa: PLC0415 - a maintainer's tool

    providers = [provider for provider in data_snapshot.get_snapshot().providers
                 if provider.id in GENAI_PROVIDERS]
    return {"source": "genai-prices", "version": metadata.version("genai-prices"),
            "taken": datetime.now(UTC).date().isoformat(),
            "refresh": "python tools/price_snapshots.py",
            "providers": [_raw(provider) for provider in providers]}


def litellm_snapshot(wheel: Path) -> dict[str, Any]:
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as archive:
        data = json.loads(archive.read(LITELLM_FILE))
    models = {}
    for name, record in data.items():
        if not isinstance(record, dict) or record.get("litellm_provider") not in LITELLM_PROVIDERS:
            continue
        kept = {key: value for key, value in record.items()
                if key in _LITELLM_KEEP or "cost_per" in key or "token_cost" in key}
        if any("cost" in key for key in kept):
            models[name] = kept
    return {"source": "litellm", "version": version,
            "taken": datetime.now(UTC).date().isoformat(),
            "refresh": "python tools/price_snapshots.py --litellm-wheel litellm-<version>.whl",
            "models": models}


def _one_entry_a_line(snapshot: dict[str, Any]) -> str:
    # Compact, but one model (LiteLLM) or one provider's model (genai-prices) a line, so a
    # refresh reads as a diff of the entries that changed.
    head = {key: value for key, value in snapshot.items() if key not in ("models", "providers")}
    lines = [json.dumps(head, sort_keys=True)[:-1] + ","]
    if "models" in snapshot:
        lines.append('"models": {')
        lines += [f"{json.dumps(name)}: {json.dumps(record, sort_keys=True)},"
                  for name, record in sorted(snapshot["models"].items())]
        lines[-1] = lines[-1].rstrip(",")
        lines.append("}}")
    else:
        lines.append('"providers": [')
        for provider in snapshot["providers"]:
            models = provider.pop("models", [])
            lines.append(json.dumps(provider, sort_keys=True)[:-1] + ', "models": [')
            lines += [json.dumps(model, sort_keys=True) + "," for model in models]
            if models:
                lines[-1] = lines[-1].rstrip(",")
            lines.append("]},")
        lines[-1] = lines[-1].rstrip(",")
        lines.append("]}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--litellm-wheel", type=Path,
                        help="a downloaded litellm wheel to take LiteLLM's price file from")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    written = [("genai-prices.json", genai_prices_snapshot())]
    if args.litellm_wheel is not None:
        written.append(("litellm.json", litellm_snapshot(args.litellm_wheel)))
    for name, snapshot in written:
        (OUT / name).write_text(_one_entry_a_line(snapshot), encoding="utf-8")
        print(f"wrote {OUT / name} ({snapshot['source']} {snapshot['version']})")


if __name__ == "__main__":
    main()
