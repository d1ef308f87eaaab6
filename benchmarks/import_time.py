"""Import time of spendguard (alone, and with a guarded client built) against LiteLLM and tokencost.

Usage::

    .venv/bin/python benchmarks/import_time.py [--rounds 5] [--quick]

Every measurement is a fresh interpreter: ``perf_counter`` around the import (and the client
construction, where there is one), plus ``-X importtime``'s cumulative figure for the top
module in a separate run, and the peak resident memory after the import. Variants are
interleaved round-robin after one warm-up round (which also compiles bytecode). spendguard and
the ``openai`` baseline run with this Python; LiteLLM and tokencost with the peers' venv (n/a
without it), LiteLLM with its offline price map (``LITELLM_LOCAL_MODEL_COST_MAP=True``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import add_quick, markdown_table
from peers import NOT_INSTALLED, peer_environment, peers_python

_TIMED = """\
import resource, time
start = time.perf_counter()
{code}
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@dataclass(frozen=True, slots=True)
class Variant:
    """One thing to import (and perhaps build), in one Python."""

    label: str
    code: str
    module: str | None
    """The top module whose ``-X importtime`` cumulative time is reported (None: not)."""
    python: Path | None
    peer: bool = False


def variants(peers: Path | None) -> list[Variant]:
    own = Path(sys.executable)
    return [
        Variant("spendguard", "import spendguard", "spendguard", own),
        Variant("spendguard + guarded OpenAI client built",
                "import spendguard\nspendguard.OpenAI(api_key='k', "
                "budget=spendguard.Budget('1', ledger='memory://'))", None, own),
        Variant("openai (baseline)", "import openai", "openai", own),
        Variant("openai + client built (baseline)", "import openai\nopenai.OpenAI(api_key='k')",
                None, own),
        Variant("litellm", "import litellm", "litellm", peers, peer=True),
        Variant("tokencost", "import tokencost", "tokencost", peers, peer=True),
    ]


def _environment(folder: str, peer: bool) -> dict[str, str]:
    env = peer_environment() if peer else dict(os.environ)
    env["SPENDGUARD_HOME"] = folder
    return env


def timed_import(variant: Variant, folder: str) -> tuple[float, float]:
    """Seconds to import (and build) in a fresh interpreter, and peak RSS in MiB."""
    assert variant.python is not None
    result = subprocess.run([str(variant.python), "-c", _TIMED.format(code=variant.code)],
                            capture_output=True, text=True, check=True,
                            env=_environment(folder, variant.peer), cwd=folder)
    seconds, rss_kib = result.stdout.split()[-2:]
    return float(seconds), int(rss_kib) / 1024


def importtime_s(variant: Variant, folder: str) -> float | None:
    """``-X importtime``'s cumulative seconds for the variant's top module."""
    if variant.module is None:
        return None
    assert variant.python is not None
    result = subprocess.run([str(variant.python), "-X", "importtime", "-c",
                             f"import {variant.module}"], capture_output=True, text=True,
                            check=True, env=_environment(folder, variant.peer), cwd=folder)
    for line in result.stderr.splitlines():
        parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == variant.module:
            return int(parts[1]) / 1e6
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds, warmup = (1, 0) if args.quick else (args.rounds, 1)
    every = variants(peers_python())
    runnable = [v for v in every if v.python is not None]
    wall: dict[str, list[float]] = {v.label: [] for v in runnable}
    rss: dict[str, list[float]] = {v.label: [] for v in runnable}
    cumulative: dict[str, list[float]] = {v.label: [] for v in runnable}
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder:
        for index in range(warmup + rounds):
            shift = index % len(runnable)
            for variant in runnable[shift:] + runnable[:shift]:
                seconds, mib = timed_import(variant, folder)
                deep = importtime_s(variant, folder)
                if index < warmup:
                    continue
                wall[variant.label].append(seconds)
                rss[variant.label].append(mib)
                if deep is not None:
                    cumulative[variant.label].append(deep)
    rows = []
    for variant in every:
        if variant.python is None:
            rows.append([variant.label, NOT_INSTALLED, "", ""])
            continue
        deep_values = cumulative[variant.label]
        rows.append([variant.label, f"{statistics.median(wall[variant.label]):.3f} s",
                     f"{statistics.median(deep_values):.3f} s" if deep_values else "—",
                     f"{statistics.median(rss[variant.label]):.0f} MiB"])
    print(f"Import time in fresh interpreters (median of {rounds} rounds after {warmup} "
          "warm-up, round-robin)\n")
    print(markdown_table(["import", "perf_counter", "-X importtime (cumulative)",
                          "peak RSS"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
