"""CPU per call after the provider's wait: why spendguard adds more over loopback than on a mock.

Usage::

    .venv/bin/python benchmarks/idle_wait.py [--rounds 300] [--quick]

Over loopback HTTP the guarded client adds more time per call than on the in-process mock,
although it runs the same code. This script tests the explanation that the wait itself makes
the code after it dearer: while a call waits for its reply the thread sleeps, the core goes
idle (on a VM the hypervisor may run something else on it), and the code that runs next finds
colder caches. The mock provider of ``overhead.py`` is made to wait before it answers
(``time.sleep``, no CPU), 0 ms, then the loopback round trip's order of magnitude, then more;
the raw SDK and ``spendguard.OpenAI`` with a memory ledger take turns, and each call is timed
in **this thread's CPU time** (``time.thread_time``), which the sleep does not count and other
processes' load barely moves. If the explanation holds, both clients' CPU per call grows with
the wait and spendguard's added CPU grows with it: the loopback figure then measures the
guard's code footprint on a cold core as well as its work.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai
from corpus import chat_messages
from harness import add_quick, fmt_ratio, fmt_us, markdown_table, paired_overhead_s, round_robin
from overhead import BASE_URL, canned

import spendguard

MODEL = "gpt-4o-mini"
WAITS_MS = (0.0, 0.5, 1.0, 2.0)


def _client(wait_s: float, *, guarded: bool) -> openai.OpenAI:
    def answer(request: httpx2.Request) -> httpx2.Response:
        if wait_s:
            time.sleep(wait_s)
        return canned(request)

    http = httpx2.Client(transport=httpx2.MockTransport(answer))
    if guarded:
        budget = spendguard.Budget("1000000", ledger="memory://")
        return spendguard.OpenAI(api_key="k", base_url=BASE_URL, http_client=http,
                                 max_retries=0, budget=budget)
    return openai.OpenAI(api_key="k", base_url=BASE_URL, http_client=http, max_retries=0)


def _timed(client: openai.OpenAI, counter: list[int]) -> Callable[[], float]:
    def one() -> float:
        counter[0] += 1
        sent: Any = chat_messages(counter[0] // 2, user_words=40)  # plain dicts for the SDK
        start = time.thread_time()
        client.chat.completions.create(model=MODEL, messages=sent, max_tokens=64)
        return time.thread_time() - start
    return one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds, warmup = (5, 2) if args.quick else (args.rounds, args.warmup)
    rows = []
    for wait_ms in WAITS_MS:
        counter = [0]
        samples = round_robin(
            {"raw": _timed(_client(wait_ms / 1000, guarded=False), counter),
             "guarded": _timed(_client(wait_ms / 1000, guarded=True), counter)},
            rounds=rounds, warmup=warmup)
        raw = sorted(samples["raw"])[len(samples["raw"]) // 2]
        guarded = sorted(samples["guarded"])[len(samples["guarded"]) // 2]
        rows.append([f"{wait_ms:g} ms", fmt_us(raw), fmt_us(guarded),
                     fmt_us(paired_overhead_s(samples["guarded"], samples["raw"])),
                     fmt_ratio(guarded / raw)])
    print(f"Thread CPU per call with the mock provider waiting before it answers ({MODEL}, "
          f"memory ledger, {rounds} rounds after {warmup} warm-up, round-robin; medians)\n")
    print(markdown_table(["provider wait", "raw SDK CPU", "spendguard CPU",
                          "added CPU (paired median)", "ratio"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
