"""Enforcement under load: N calls at once against a small budget; how far each tool overshoots.

Usage (``run_all.py`` picks the peers' Python when it exists)::

    /tmp/bench-venv/bin/python benchmarks/enforcement.py [--calls 20] [--latency-ms 300]
        [--processes 4] [--quick]

A loopback emulator answers every call after a fixed latency, so calls overlap as they do
against a real provider. Every call is the same (gpt-4o, a prompt under the 1,024-token cache
minimum, ``max_tokens=500`` and a 500-token reply), so each costs the same; the budget is 2.5
calls' worth, so a limiter that reserves before sending lets 2 through. Modes: one after
another; N threads released together by a barrier; N asyncio tasks; and P processes sharing
N calls (spendguard's ledger is shared through its SQLite file or Redis; the peers' state is
per process). The other budget libraries (shekel, tokenwarden, agent-budget-guard,
budget-guard-llm: ``budget_peers.py``) run the same calls through their own APIs; their state
is per process too. "Refused" counts the tool's budget exception; shekel raises it after a
call that crossed the limit has returned, so "calls sent" (what the emulator saw) is the
figure that matters. Spent is what the emulator billed, priced by spendguard's table; "tracked" is
what the tool itself believes was spent. LiteLLM's rows are n/a unless it is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from budget_peers import LLM_SPENDGUARD_NA, PEERS, PeerClient, build_peer, peer_version
from corpus import text
from harness import add_quick, markdown_table
from ledgers import available_ledgers, drop_bench_keys
from loopback import emulator_server
from peers import NOT_INSTALLED, load_litellm

import spendguard
from spendguard.testing import Emulator

MODEL = "gpt-4o"
OUTPUT_TOKENS = 500
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": text(500, seed=7)}]
MODES = ("sequential", "threads", "asyncio", "processes")
CHAT = "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class Setup:
    """Everything a system needs to rebuild itself in another process."""

    base_url: str
    limit_usd: Decimal
    scope: str
    ledger_url: str | None = None


class System:
    """One budget tool: ``call`` returns True when sent, False when refused before sending.

    Any other exception is a failed call; the drivers below record it as None.
    """

    name = ""

    def call(self) -> bool:
        raise NotImplementedError

    async def acall(self) -> bool:
        raise NotImplementedError

    def tracked_usd(self) -> Decimal:
        raise NotImplementedError

    def run_async(self, coroutine: Coroutine[Any, Any, list[Outcome]]) -> list[Outcome]:
        return asyncio.run(coroutine)


class Peer(System):
    """One of the other budget libraries (``budget_peers.py``), through its own public API."""

    def __init__(self, peer: PeerClient) -> None:
        self.peer = peer

    def _create(self, client: Any) -> Any:
        return client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                              max_tokens=OUTPUT_TOKENS)

    def call(self) -> bool:
        try:
            self.peer.run(lambda: self._create(self.peer.client))
        except self.peer.refused:
            return False
        return True

    async def acall(self) -> bool:
        try:
            await self._create(self.peer.aclient)
        except self.peer.refused:
            return False
        return True

    def tracked_usd(self) -> Decimal:
        return self.peer.tracked_usd()

    def run_async(self, coroutine: Coroutine[Any, Any, list[Outcome]]) -> list[Outcome]:
        result: list[Outcome] = self.peer.run_async(coroutine)
        return result


PEER_NAMES = {peer.name: peer for peer in PEERS}


class Spendguard(System):
    def __init__(self, setup: Setup) -> None:
        assert setup.ledger_url is not None
        self.budget = spendguard.Budget(setup.limit_usd, ledger=setup.ledger_url,
                                        scope=setup.scope, on_warn=_quiet)
        self.client = spendguard.OpenAI(api_key="k", base_url=setup.base_url, max_retries=0,
                                        budget=self.budget)
        self.aclient = spendguard.AsyncOpenAI(api_key="k", base_url=setup.base_url,
                                              max_retries=0, budget=self.budget)

    def call(self) -> bool:
        try:
            self.client.chat.completions.create(model=MODEL, messages=MESSAGES,  # type: ignore[arg-type]
                                                max_tokens=OUTPUT_TOKENS)
        except spendguard.BudgetExceeded:
            return False
        return True

    async def acall(self) -> bool:
        try:
            await self.aclient.chat.completions.create(
                model=MODEL, messages=MESSAGES, max_tokens=OUTPUT_TOKENS)  # type: ignore[arg-type]
        except spendguard.BudgetExceeded:
            return False
        return True

    def tracked_usd(self) -> Decimal:
        return self.budget.spent

    def run_async(self, coroutine: Coroutine[Any, Any, list[Outcome]]) -> list[Outcome]:
        async def then_close() -> list[Outcome]:
            # Its connections belong to this loop: closed here, not collected by a later
            # loop (the SDK's finalizer would schedule the close there, and fail).
            try:
                return await coroutine
            finally:
                await self.aclient.close()

        return asyncio.run(then_close())


class LitellmMaxBudget(System):
    """``litellm.max_budget``: the SDK's global pre-call check against ``_current_cost``."""

    def __init__(self, setup: Setup, litellm: Any, *, fresh: bool = True) -> None:
        self.litellm = litellm
        self.options = {"model": f"openai/{MODEL}", "api_base": setup.base_url,
                        "api_key": "k", "messages": MESSAGES, "max_tokens": OUTPUT_TOKENS,
                        "num_retries": 0}
        litellm.max_budget = float(setup.limit_usd)
        if fresh:
            litellm._current_cost = 0.0

    def call(self) -> bool:
        try:
            self.litellm.completion(**self.options)
        except self.litellm.BudgetExceededError:
            return False
        return True

    async def acall(self) -> bool:
        try:
            await self.litellm.acompletion(**self.options)
        except self.litellm.BudgetExceededError:
            return False
        return True

    def tracked_usd(self) -> Decimal:
        return Decimal(str(self.litellm._current_cost))


class LitellmBudgetManager(LitellmMaxBudget):
    """``BudgetManager`` used as its docs show: check, call, then ``update_cost``."""

    USER = "bench-user"

    def __init__(self, setup: Setup, litellm: Any, *, fresh: bool = True) -> None:
        super().__init__(setup, litellm, fresh=fresh)
        litellm.max_budget = 0.0  # this row measures the manager alone
        self.manager = litellm.BudgetManager(project_name=setup.scope)
        if fresh:
            self.manager.create_budget(total_budget=float(setup.limit_usd), user=self.USER)
            self.manager.save_data()  # so other processes load it, as "local" mode does

    def _allowed(self) -> bool:
        manager = self.manager
        return bool(manager.get_current_cost(self.USER) <= manager.get_total_budget(self.USER))

    def call(self) -> bool:
        if not self._allowed():
            return False
        reply = self.litellm.completion(**self.options)
        self.manager.update_cost(completion_obj=reply, user=self.USER)
        return True

    async def acall(self) -> bool:
        if not self._allowed():
            return False
        reply = await self.litellm.acompletion(**self.options)
        self.manager.update_cost(completion_obj=reply, user=self.USER)
        return True

    def tracked_usd(self) -> Decimal:
        return Decimal(str(self.manager.get_current_cost(self.USER)))


def _quiet(event: object) -> None:
    """Budget warnings are expected here (the budget is tiny); keep the table readable."""


def build(kind: str, setup: Setup, *, fresh: bool = True) -> System:
    if kind.startswith("spendguard"):
        return Spendguard(setup)
    if kind in PEER_NAMES:
        peer, why = build_peer(PEER_NAMES[kind], setup.base_url, setup.limit_usd)
        if peer is None:
            raise RuntimeError(why)
        return Peer(peer)
    litellm = load_litellm()
    if kind == "litellm max_budget":
        return LitellmMaxBudget(setup, litellm, fresh=fresh)
    return LitellmBudgetManager(setup, litellm, fresh=fresh)


Outcome = bool | None
"""True: sent; False: refused before sending; None: failed with an error."""


def _guarded(call: Callable[[], bool]) -> Outcome:
    try:
        return call()
    except Exception:  # a failed call is counted, not fatal: the table shows it
        return None


async def _aguarded(system: System) -> Outcome:
    try:
        return await system.acall()
    except Exception:
        return None


def in_threads(system: System, calls: int) -> list[Outcome]:
    barrier = threading.Barrier(calls)
    results: list[Outcome] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        sent = _guarded(system.call)
        with lock:
            results.append(sent)

    threads = [threading.Thread(target=one) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


async def in_tasks(system: System, calls: int) -> list[Outcome]:
    return list(await asyncio.gather(*(_aguarded(system) for _ in range(calls))))


def process_worker(kind: str, setup: Setup, calls: int, start: Any) -> list[Outcome]:
    """One of P processes: rebuild the system here, then its share of calls in threads."""
    system = build(kind, setup, fresh=False)
    start.wait()  # every process built and ready: then all call at once
    return in_threads(system, calls)


def run_mode(kind: str, setup: Setup, mode: str, calls: int,
             processes: int) -> tuple[list[Outcome], Decimal | None]:
    """The refusal outcomes of one mode, and what the tool tracked (None: per process)."""
    system = build(kind, setup)
    if mode == "sequential":
        return [_guarded(system.call) for _ in range(calls)], system.tracked_usd()
    if mode == "threads":
        return in_threads(system, calls), system.tracked_usd()
    if mode == "asyncio":
        return system.run_async(in_tasks(system, calls)), system.tracked_usd()
    # Fresh interpreters: a forked child would share the parent's pooled keep-alive sockets.
    context = multiprocessing.get_context("spawn")
    shares = [calls // processes + (1 if i < calls % processes else 0)
              for i in range(processes)]
    with context.Manager() as manager:
        start = manager.Barrier(processes)
        with ProcessPoolExecutor(processes, mp_context=context) as pool:
            futures = [pool.submit(process_worker, kind, setup, share, start)
                       for share in shares]
            results = [sent for future in futures for sent in future.result()]
    tracked = system.tracked_usd() if kind.startswith("spendguard") else None
    return results, tracked


def unit_cost_usd(emulator: Emulator) -> Decimal:
    """What one benchmark call costs as the emulator bills it."""
    client = emulator.openai_client(max_retries=0)
    reply = client.chat.completions.create(model=MODEL, messages=MESSAGES,  # type: ignore[arg-type]
                                           max_tokens=OUTPUT_TOKENS)
    return spendguard.cost(MODEL, reply).total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--processes", type=int, default=4)
    add_quick(parser)
    args = parser.parse_args(argv)
    calls, latency_ms, processes = ((4, 20.0, 2) if args.quick
                                    else (args.calls, args.latency_ms, args.processes))
    litellm = load_litellm()
    emulator = Emulator(reply_tokens=OUTPUT_TOKENS, latency_s=latency_ms / 1000)
    unit = unit_cost_usd(Emulator(reply_tokens=OUTPUT_TOKENS))
    limit = unit * Decimal("2.5")
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder, \
            emulator_server(emulator) as server:
        previous = os.getcwd()
        os.chdir(folder)  # BudgetManager keeps user_cost.json in the working directory
        try:
            kinds: list[tuple[str, str | None, str | None]] = [
                (f"spendguard ({c.kind} ledger)", c.url, c.missing)
                for c in available_ledgers(Path(folder), ("sqlite", "redis"))]
            for name in ("litellm max_budget", "litellm BudgetManager"):
                kinds.append((name, None, None if litellm else NOT_INSTALLED))
            no_async: dict[str, str] = {}
            for peer in PEERS:
                probe, why = build_peer(peer, server.openai_base_url, limit)
                kinds.append((peer.name, None, why or None))
                if probe is not None and probe.aclient is None:
                    no_async[peer.name] = probe.why_no_async
            for kind, ledger_url, missing in kinds:
                for mode in MODES:
                    label = f"{processes} processes" if mode == "processes" else mode
                    why = missing or (no_async.get(kind) if mode == "asyncio" else None)
                    if why is not None:
                        rows.append([_label(kind), label, why, "", "", "", "", "", ""])
                        continue
                    setup = Setup(server.openai_base_url, limit,
                                  f"bench-{uuid.uuid4().hex[:8]}", ledger_url)
                    # BudgetManager rewrites ./user_cost.json from a new thread on every
                    # update; a fresh folder per run keeps a late write out of the next run.
                    run_folder = Path(folder) / setup.scope
                    run_folder.mkdir()
                    os.chdir(run_folder)
                    before = _billed(emulator)
                    outcomes, tracked = run_mode(kind, setup, mode, calls, processes)
                    sent = _billed(emulator) - before
                    spent = unit * sent
                    tool = _label(kind)
                    rows.append([tool, label, str(sent), str(outcomes.count(False)),
                                 str(outcomes.count(None)), f"${spent:.4f}", _tracked(tracked),
                                 f"{spent / limit:.2f}×",
                                 "over" if spent > limit else "within"])
        finally:
            os.chdir(previous)
    drop_bench_keys()
    rows.append(["llm-spendguard", "all", LLM_SPENDGUARD_NA, "", "", "", "", "", ""])
    print(f"Enforcement: {calls} concurrent calls, {latency_ms:.0f} ms provider latency, "
          f"budget ${limit:.4f} = 2.5 calls of ${unit:.4f} ({MODEL}, max_tokens "
          f"{OUTPUT_TOKENS})\n")
    print(markdown_table(["tool", "mode", "calls sent", "refused", "failed", "spent",
                          "tracked by the tool", "spent / budget", "budget"], rows))
    return 0


def _label(kind: str) -> str:
    """A peer's row names its version; spendguard's and LiteLLM's are in the header."""
    if kind in PEER_NAMES:
        installed = peer_version(PEER_NAMES[kind].package)
        return f"{kind} {installed}" if installed else kind
    return kind


def _billed(emulator: Emulator) -> int:
    return sum(1 for r in emulator.requests if r.path == CHAT and r.status == 200)


def _tracked(value: Decimal | None) -> str:
    return "per process" if value is None else f"${value:.4f}"


if __name__ == "__main__":
    raise SystemExit(main())
