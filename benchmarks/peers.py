"""Finding the peers' separate virtual environment (LiteLLM, tokencost) and loading LiteLLM.

The peers are never dependencies of spendguard: they live in their own venv (see
``benchmarks/README.md``). A script that compares against LiteLLM in-process is run with that
venv's Python by ``run_all.py``, with the repository on ``PYTHONPATH`` so the same spendguard
source is measured; run with any other Python it prints "n/a" in the peers' rows.
"""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path
from typing import Any

from harness import REPO

__all__ = [
    "NOT_INSTALLED",
    "PEERS_PYTHON_ENV",
    "load_litellm",
    "peer_environment",
    "peers_python",
]

PEERS_PYTHON_ENV = "SPENDGUARD_BENCH_PEERS_PYTHON"
DEFAULT_PEERS_PYTHONS = (Path("/tmp/bench-venv/bin/python"), REPO / ".bench-venv/bin/python")
NOT_INSTALLED = "n/a (not installed: see benchmarks/README.md)"


def peer_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a peers' process runs in: offline price map, this repo importable."""
    env = dict(os.environ if base is None else base)
    # Otherwise LiteLLM fetches its price map from GitHub at import, with retries and backoff.
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _has_litellm(python: Path) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('litellm') is None)"
    try:
        return subprocess.run([str(python), "-c", probe], capture_output=True,
                              timeout=60, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def peers_python() -> Path | None:
    """The Python of the peers' venv: ``$SPENDGUARD_BENCH_PEERS_PYTHON`` or a default place.

    Setting the variable to ``none`` (or empty) turns the peers off.
    """
    chosen = os.environ.get(PEERS_PYTHON_ENV)
    if chosen is not None:
        if chosen.strip().lower() in ("", "none"):
            return None
        path = Path(chosen)
        return path if _has_litellm(path) else None
    return next((path for path in DEFAULT_PEERS_PYTHONS
                 if path.exists() and _has_litellm(path)), None)


def load_litellm() -> Any | None:
    """The ``litellm`` module when this Python has it, quietened and offline; else None
    (also when ``$SPENDGUARD_BENCH_PEERS_PYTHON`` is ``none``: the peers are turned off)."""
    if os.environ.get(PEERS_PYTHON_ENV, "x").strip().lower() in ("", "none"):
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        litellm: Any = importlib.import_module("litellm")
    except ImportError:
        return None
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm
