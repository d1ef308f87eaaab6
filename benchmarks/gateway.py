"""The gateway's added latency and throughput, beside direct calls and LiteLLM's proxy.

Usage::

    .venv/bin/python benchmarks/gateway.py [--rounds 300] [--requests 1280] [--quick]

Every variant talks to the same loopback provider, spendguard's emulator in a child process
(``loopback.py``, a 20-token reply), over real HTTP from an ``httpx2.AsyncClient`` in this
process:

- ``direct``: the client to the emulator;
- ``spendguard gateway``: a gateway process in between, a budget on a SQLite ledger (every call
  reserved and settled);
- ``LiteLLM proxy``: ``litellm --config`` in between with a proxy-wide ``max_budget``, when
  the peers' venv has ``litellm[proxy]`` (``$SPENDGUARD_BENCH_PEERS_PYTHON``, or
  ``/tmp/bench-venv``); its row says n/a otherwise.

At 1 client the variants are interleaved round by round; the added latency is each variant's
p50 / p99 minus the direct one's, and streams are timed to their first chunk. At 32 concurrent
clients each variant sends ``--requests`` calls (variants one after another, twice, in
alternating order; the better pass counts) and reports requests per second and p50 / p99.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
from harness import (
    REPO,
    add_quick,
    fmt_ms,
    machine,
    markdown_table,
    percentile,
    round_robin_async,
    today,
)
from loopback import server_process
from peers import peers_python

KEY = "sk-bench-5f0c2d1e9a8b7c6d5e4f3a2b1c0d9e8f"
"""The key every variant is sent (LiteLLM's proxy takes it as its master key)."""
HEADERS = {"authorization": f"Bearer {KEY}"}
_sent = iter(range(10**9))


def _body() -> dict[str, object]:
    """A chat request; each one differs (as real traffic does: the same request sent 20 times
    a minute is what the default runaway rule stops)."""
    return {"model": "gpt-4o-mini", "max_tokens": 20,
            "messages": [{"role": "user", "content": f"Say something short ({next(_sent)})."}]}


@contextlib.contextmanager
def gateway_process(upstream: str, ledger_dir: str) -> Iterator[str]:
    """``spendguard gateway`` in front of ``upstream``; yields its OpenAI base URL."""
    command = [sys.executable, "-c", "from spendguard.cli import main; main()", "gateway",
               "--port", "0", "--json", "--budget", "1000000", "--scope", "bench:gateway",
               "--ledger", f"sqlite:///{Path(ledger_dir) / 'gateway.db'}",
               "--upstream", f"openai={upstream}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line:
            raise RuntimeError("the gateway did not start (see its stderr above)")
        yield str(json.loads(line)["openai_base_url"])
    finally:
        child.terminate()
        child.wait(30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def litellm_proxy(upstream: str, folder: str) -> Iterator[str | None]:
    """LiteLLM's proxy in front of ``upstream`` with a proxy-wide budget, or None."""
    python = peers_python()
    litellm = None if python is None else python.parent / "litellm"
    if litellm is None or not litellm.exists():
        yield None
        return
    config = Path(folder) / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: gpt-4o-mini\n"
        "    litellm_params:\n"
        "      model: openai/gpt-4o-mini\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-bench\n"
        "general_settings:\n"
        f"  master_key: {KEY}\n"
        "litellm_settings:\n"
        "  max_budget: 1000000\n"
        "  budget_duration: 30d\n", encoding="utf-8")
    port = _free_port()
    child = subprocess.Popen([str(litellm), "--config", str(config), "--port", str(port),
                              "--host", "127.0.0.1", "--num_workers", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "LITELLM_TELEMETRY": "False"})
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # a start-up poll, outside any timing
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/health/liveliness").status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if child.poll() is not None:
                raise RuntimeError("LiteLLM's proxy exited at start-up")
            time.sleep(0.5)
        yield base
    finally:
        child.terminate()
        child.wait(30)


async def _call(client: httpx2.AsyncClient, base: str) -> float:
    started = time.perf_counter()
    response = await client.post(base + "/chat/completions", json=_body(), headers=HEADERS)
    response.raise_for_status()
    return time.perf_counter() - started


async def _first_chunk(client: httpx2.AsyncClient, base: str) -> float:
    started = time.perf_counter()
    async with client.stream("POST", base + "/chat/completions", headers=HEADERS,
                             json={**_body(), "stream": True}) as response:
        response.raise_for_status()
        chunks = response.aiter_raw()
        await anext(chunks)
        elapsed = time.perf_counter() - started
        async for _ in chunks:
            pass
    return elapsed


async def sequential(bases: dict[str, str], rounds: int, warmup: int,
                     ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    async with httpx2.AsyncClient(timeout=60) as client:
        whole = await round_robin_async(
            {name: (lambda base=base: _call(client, base)) for name, base in bases.items()},
            rounds=rounds, warmup=warmup)
        first = await round_robin_async(
            {name: (lambda base=base: _first_chunk(client, base))
             for name, base in bases.items()}, rounds=rounds, warmup=warmup)
    return whole, first


async def concurrent(base: str, requests: int, clients: int) -> tuple[float, list[float]]:
    """Requests per second and latencies of ``requests`` calls from ``clients`` workers."""
    latencies: list[float] = []
    queue = iter(range(requests))
    limits = httpx2.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
        for _ in range(clients):  # warm the connections
            await _call(client, base)

        async def worker() -> None:
            for _ in queue:
                latencies.append(await _call(client, base))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
    return requests / wall, latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--requests", type=int, default=1280)
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds, warmup, requests = (10, 2, 64) if args.quick else (args.rounds, 30, args.requests)
    folder = tempfile.mkdtemp(prefix="spendguard-bench-gateway-")
    try:
        with server_process(reply_tokens=20) as upstream, \
                gateway_process(upstream, folder) as gateway, \
                litellm_proxy(upstream, folder) as proxy:
            bases = {"direct": upstream, "spendguard gateway": gateway}
            if proxy is not None:
                bases["LiteLLM proxy (max_budget)"] = proxy
            whole, first = asyncio.run(sequential(bases, rounds, warmup))
            throughput: dict[str, list[tuple[float, list[float]]]] = {n: [] for n in bases}
            for order in (list(bases), list(reversed(bases))):
                for name in order:
                    throughput[name].append(asyncio.run(concurrent(bases[name], requests, 32)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"## gateway\n\n{today()} — {machine()}\n")
    print(f"1 client, {rounds} interleaved rounds; 32 clients, {requests} calls per pass\n")
    rows = []
    direct_p50, direct_p99 = percentile(whole["direct"], 0.5), percentile(whole["direct"], 0.99)
    first_p50 = percentile(first["direct"], 0.5)
    names = [*bases]
    if proxy is None:
        names.append("LiteLLM proxy (max_budget)")
    for name in names:
        if name not in bases:
            rows.append([name, *["n/a (not installed in the peers' venv)"] * 6])
            continue
        p50, p99 = percentile(whole[name], 0.5), percentile(whole[name], 0.99)
        ttfc = percentile(first[name], 0.5)
        rate, latencies = max(throughput[name], key=lambda run: run[0])
        added = "—" if name == "direct" else (f"+{fmt_ms(p50 - direct_p50)} / "
                                              f"+{fmt_ms(p99 - direct_p99)}")
        rows.append([name, f"{fmt_ms(p50)} / {fmt_ms(p99)}", added,
                     f"{fmt_ms(ttfc)}" + ("" if name == "direct"
                                          else f" (+{fmt_ms(ttfc - first_p50)})"),
                     f"{1 / p50:,.0f}", f"{rate:,.0f}",
                     f"{fmt_ms(percentile(latencies, 0.5))} / "
                     f"{fmt_ms(percentile(latencies, 0.99))}"])
    print(markdown_table(["path", "1 client p50 / p99", "added p50 / p99",
                          "stream first chunk p50", "req/s (1 client)", "req/s (32 clients)",
                          "32 clients p50 / p99"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
