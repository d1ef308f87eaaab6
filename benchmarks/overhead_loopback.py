"""Per-call cost over real loopback HTTP: the raw SDK, spendguard and LiteLLM's budget path.

Usage (``run_all.py`` picks the peers' Python when it exists)::

    /tmp/bench-venv/bin/python benchmarks/overhead_loopback.py [--rounds 300] [--quick]

LiteLLM reaches OpenAI through its own client, so every variant here talks to the same
loopback server: spendguard's emulator in a child process (``loopback.py``), answering a
20-token reply. Variants, interleaved round-robin: the raw ``openai`` SDK; ``spendguard.OpenAI``
with a memory, SQLite and Redis budget; the other budget libraries of ``budget_peers.py``
(shekel's ``with budget`` is entered around each of its calls: its patch of the SDK is
process-wide while a budget is active, so left on it would sit in every other variant too);
``litellm.completion`` alone; and ``litellm.completion`` with its SDK
budget features on, as its docs show them (``litellm.max_budget`` set, and a
``BudgetManager`` checked before and updated after each call). Without LiteLLM in this Python,
its rows say n/a. Non-streaming calls are timed whole; streams to the first chunk (TTFC).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
from budget_peers import LLM_SPENDGUARD_NA, PEERS, build_peer, peer_version
from corpus import chat_messages
from harness import (
    add_quick,
    fmt_ratio,
    fmt_us,
    markdown_table,
    paired_overhead_s,
    round_robin,
    summarize,
)
from ledgers import available_ledgers, drop_bench_keys
from loopback import server_process
from peers import NOT_INSTALLED, load_litellm

import spendguard

MODEL = "gpt-4o-mini"
MAX_TOKENS = 64
RAW = "raw openai SDK"
Send = Callable[[list[dict[str, Any]], bool], None]


def raw_sender(base_url: str) -> Send:
    client = openai.OpenAI(api_key="k", base_url=base_url, max_retries=0)
    return _sdk_sender(client)


def spendguard_sender(base_url: str, ledger_url: str) -> Send:
    client = spendguard.OpenAI(api_key="k", base_url=base_url, max_retries=0,
                               budget=spendguard.Budget("1000000", ledger=ledger_url))
    return _sdk_sender(client)


def _sdk_sender(client: openai.OpenAI,
                run: Callable[[Callable[[], None]], Any] = lambda call: call()) -> Send:
    def send(messages: list[dict[str, Any]], stream: bool) -> None:
        sent: Any = messages  # the SDK's message TypedDicts; these are plain dicts
        if not stream:
            run(lambda: client.chat.completions.create(model=MODEL, messages=sent,
                                                       max_tokens=MAX_TOKENS))
            return

        def whole_stream() -> None:
            chunks = client.chat.completions.create(
                model=MODEL, messages=sent, max_tokens=MAX_TOKENS, stream=True,
                stream_options={"include_usage": True})
            next(iter(chunks))
            _FIRST.append(time.perf_counter())
            for _ in chunks:
                pass
        run(whole_stream)
    return send


def peer_senders(base_url: str) -> tuple[dict[str, Send], list[str]]:
    """The other budget libraries with a budget too big to refuse; n/a texts for the rest."""
    senders: dict[str, Send] = {}
    missing: list[str] = []
    for peer in PEERS:
        built, why = build_peer(peer, base_url, Decimal(1_000_000), isolated=True)
        name = f"{peer.name} {peer_version(peer.package) or ''}".strip()
        if built is None:
            missing.append(f"{name}\t{why}")
            continue
        senders[name] = _sdk_sender(built.client, built.run)
    return senders, missing


_FIRST: list[float] = []  # when the current stream yielded its first chunk


def litellm_sender(litellm: Any, base_url: str, *, budgeted: bool) -> Send:
    manager = None
    if budgeted:
        manager = litellm.BudgetManager(project_name="spendguard-bench")
        manager.create_budget(total_budget=1_000_000.0, user="bench")

    def send(messages: list[dict[str, Any]], stream: bool) -> None:
        # max_budget is a module global: each variant sets its own before its call.
        litellm.max_budget = 1_000_000.0 if budgeted else 0.0
        if manager is not None and manager.get_current_cost("bench") > \
                manager.get_total_budget("bench"):
            raise RuntimeError("over budget")  # never: the budget is huge
        options: dict[str, Any] = {"model": f"openai/{MODEL}", "api_base": base_url,
                                   "api_key": "k", "messages": messages,
                                   "max_tokens": MAX_TOKENS, "num_retries": 0}
        if not stream:
            reply = litellm.completion(**options)
        else:
            chunks = litellm.completion(**options, stream=True,
                                        stream_options={"include_usage": True})
            iterator = iter(chunks)
            next(iterator)
            _FIRST.append(time.perf_counter())
            for _ in iterator:
                pass
            reply = litellm.stream_chunk_builder(chunks.chunks, messages=messages)
        if manager is not None:
            manager.update_cost(completion_obj=reply, user="bench")
    return send


class Rounds:
    """Every variant sends the same request in a round; a new one each round."""

    def __init__(self, variants: int) -> None:
        self.variants = variants
        self.calls = 0
        self.index = 0

    def messages(self) -> list[dict[str, Any]]:
        self.calls += 1
        if self.calls > self.variants:
            self.calls, self.index = 1, self.index + 1
        return chat_messages(self.index, user_words=40)


def timed(send: Send, rounds: Rounds, *, stream: bool) -> Callable[[], float]:
    def one() -> float:
        messages = rounds.messages()
        start = time.perf_counter()
        send(messages, stream)
        return (_FIRST.pop() if stream else time.perf_counter()) - start
    return one


def table_rows(scenario: str, samples: dict[str, list[float]]) -> list[list[str]]:
    raw = samples[RAW]
    raw_median = summarize(raw).median_s
    rows = []
    for name, values in samples.items():
        summary = summarize(values)
        added = "—" if name == RAW else fmt_us(paired_overhead_s(values, raw))
        rows.append([scenario, name, fmt_us(summary.median_s), fmt_us(summary.p99_s), added,
                     fmt_ratio(summary.median_s / raw_median)])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds, warmup = (5, 2) if args.quick else (args.rounds, args.warmup)
    litellm = load_litellm()
    rows: list[list[str]] = []
    against_peers: list[str] = []
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder, \
            server_process(reply_tokens=20) as base_url:
        previous = os.getcwd()
        os.chdir(folder)  # BudgetManager writes user_cost.json into the working directory
        try:
            senders: dict[str, Send] = {RAW: raw_sender(base_url)}
            missing: list[str] = []
            for choice in available_ledgers(Path(folder)):
                name = f"spendguard, {choice.kind} ledger"
                if choice.url is None:
                    missing.append(f"{name}\t{choice.missing}")
                else:
                    senders[name] = spendguard_sender(base_url, choice.url)
            peers, peers_missing = peer_senders(base_url)
            senders.update(peers)
            missing += peers_missing
            # LiteLLM leaves work running after each call (logging workers; BudgetManager saves
            # its file from a new thread), which slows whichever variant runs next: it gets
            # rounds of its own, against the raw SDK again.
            litellm_senders: dict[str, Send] = {}
            if litellm is not None:
                litellm_senders = {
                    RAW: senders[RAW],
                    "litellm.completion": litellm_sender(litellm, base_url, budgeted=False),
                    "litellm + max_budget + BudgetManager": litellm_sender(
                        litellm, base_url, budgeted=True)}
            for scenario, stream in (("non-streaming", False), ("stream: first chunk", True)):
                for group in (senders, litellm_senders):
                    if not group:
                        continue
                    state = Rounds(len(group))
                    samples = round_robin({name: timed(send, state, stream=stream)
                                           for name, send in group.items()},
                                          rounds=rounds, warmup=warmup)
                    group_rows = table_rows(scenario, samples)
                    if group is senders:
                        against_peers.append(_against_fastest_peer(scenario, samples, peers))
                    if group is litellm_senders:
                        group_rows[0][1] = f"{RAW} (LiteLLM's own rounds)"
                    rows += group_rows
                if litellm is None:
                    rows += [[scenario, name, NOT_INSTALLED, "", "", ""]
                             for name in ("litellm.completion",
                                          "litellm + max_budget + BudgetManager")]
                rows += [[scenario, *line.split("\t"), "", "", ""] for line in missing]
                rows.append([scenario, "llm-spendguard", LLM_SPENDGUARD_NA, "", "", ""])
        finally:
            os.chdir(previous)
            drop_bench_keys()
    version = "" if litellm is None else f", litellm {_version('litellm')}"
    print(f"Per-call time over loopback HTTP to the emulator ({MODEL}, 20-token replies, "
          f"{rounds} rounds after {warmup} warm-up, round-robin{version})\n")
    print(markdown_table(["scenario", "client", "median", "p99", "added (paired median)",
                          "median ratio"], rows))
    if any(against_peers):
        print("\nspendguard's added time ÷ the fastest installed peer's, measured in the same "
              "rounds:\n")
        print("\n".join(line for line in against_peers if line))
    return 0


def _against_fastest_peer(scenario: str, samples: dict[str, list[float]],
                          peers: dict[str, Send]) -> str:
    """One line: each spendguard ledger's added time as a multiple of the fastest peer's."""
    raw = samples[RAW]
    added = {name: paired_overhead_s(values, raw) for name, values in samples.items()
             if name != RAW}
    peer_added = {name: added[name] for name in peers if name in added}
    if not peer_added:
        return ""
    fastest = min(peer_added, key=peer_added.__getitem__)
    ours = []
    for name, ours_added in added.items():
        if name.startswith("spendguard, "):
            low, high = _ratio_interval(samples[name], samples[fastest], raw)
            ours.append(f"{name.removeprefix('spendguard, ')} "
                        f"{ours_added / peer_added[fastest]:.1f}× ({low:.1f} to {high:.1f}×)")
    return (f"- {scenario}: {', '.join(ours)} (fastest peer: {fastest}, "
            f"{fmt_us(peer_added[fastest])} added; in brackets the 90 % interval of "
            f"{_RESAMPLES:,} resamples of the rounds)")


_RESAMPLES = 1000


def _ratio_interval(ours: list[float], peer: list[float], raw: list[float]) -> tuple[float, float]:
    """The 5th and 95th percentiles of the ratio of paired medians over bootstrap resamples of
    the rounds (a round's three samples stay together): how far the ratio could move between
    runs of this length on this machine. A fixed seed: the same samples give the same text."""
    rng = random.Random(20261206)
    rounds = range(len(raw))
    ratios = []
    for _ in range(_RESAMPLES):
        picked = rng.choices(rounds, k=len(raw))
        peer_added = statistics.median(peer[i] - raw[i] for i in picked)
        if peer_added > 0:
            ratios.append(statistics.median(ours[i] - raw[i] for i in picked) / peer_added)
    if not ratios:
        return float("nan"), float("nan")
    ratios.sort()
    return ratios[len(ratios) // 20], ratios[len(ratios) * 19 // 20]


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    raise SystemExit(main())
