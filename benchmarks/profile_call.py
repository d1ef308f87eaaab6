"""Where one guarded call's time goes, by phase: a perf_counter profile of the per-call path.

Usage::

    .venv/bin/python benchmarks/profile_call.py [--calls 2000] [--quick]

``spendguard.OpenAI`` calls the in-process ``httpx2.MockTransport`` of ``overhead.py`` (no
network, so the guard's own work is not hidden in socket noise), a new user message each call.
Timing wrappers are patched onto the module attributes the call path looks up, in this
process only and for the duration of the run (``unittest.mock.patch.object``); the library
is not changed. Phases, each the median per call over all calls (exclusive: a phase that
contains another has it subtracted):

- parse: ``Guard.admit`` (headers, ``classify``) and ``Guard._parse`` (JSON body, route,
  the call)
- count: ``count_request_tokens`` (the request's input tokens)
- price: the rest of ``Guard._estimate`` (worst-case price) and ``Attempt._price`` (the bill)
- policies: ``Guard._apply_policies`` (degrade, learned bound, output cap) and
  ``check_runaways``
- describe: ``Guard._describe`` (the call record's fields and tags)
- reserve: ``reserve_call`` (the ledger's atomic reservation)
- begin, other: the rest of ``Guard.begin`` (budgets, prompt hash, attempt number)
- send: the wrapped transport (here the mock provider)
- read usage: ``Attempt.settle_body`` less ``settle`` (decode JSON, ``usage_from``)
- settle: ``Attempt.settle`` less the pricing (the ledger write, thresholds, events)
- SDK and transport, other: the whole call less all of the above (the openai SDK itself:
  request building, response parsing into pydantic models; ``GuardTransport``'s own glue)

The phases of ``Guard.begin`` are its own methods, named as here.
Each wrapper costs about 0.2 µs, so the phases sum to slightly more than a bare call.

A last row counts the Python function calls of one call (``cProfile``'s count over a separate
run of calls, without the timing wrappers), guarded and raw: unlike the timings it is the same
on a busy machine as on a quiet one, so it shows whether a change removed work per call.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import pstats
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import httpx2
import openai
from corpus import chat_messages
from harness import add_quick, fmt_us, markdown_table
from ledgers import LedgerChoice, available_ledgers, drop_bench_keys
from overhead import BASE_URL, canned

import spendguard
from spendguard._costing import estimate as estimate_module
from spendguard._guard import metering

MODEL = "gpt-4o-mini"
PHASES = ("parse", "count", "price", "policies", "describe", "reserve", "begin, other", "send",
          "read usage", "settle", "SDK and transport, other")


class Clock:
    """Inclusive time per wrapped function, for the call in progress."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        spent = self.spent

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
        return timed


@contextlib.contextmanager
def instrumented(clock: Clock) -> Iterator[None]:
    guard, attempt = metering.Guard, metering.Attempt
    patches = [
        *(mock.patch.object(guard, name, clock.wrap(phase, getattr(guard, name)))
          for name, phase in (("admit", "admit"), ("begin", "begin"), ("_parse", "parse"),
                              ("_estimate", "estimate"), ("_apply_policies", "policies"),
                              ("_describe", "describe"))),
        mock.patch.object(metering, "check_runaways",
                          clock.wrap("runaways", metering.check_runaways)),
        mock.patch.object(estimate_module, "count_request_tokens",
                          clock.wrap("count", estimate_module.count_request_tokens)),
        mock.patch.object(metering, "reserve_call", clock.wrap("reserve", metering.reserve_call)),
        mock.patch.object(attempt, "settle_body",
                          clock.wrap("settle_body", attempt.settle_body)),
        mock.patch.object(attempt, "settle", clock.wrap("settle_all", attempt.settle)),
        mock.patch.object(attempt, "_price", clock.wrap("price_bill", attempt._price)),
    ]
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield


def exclusive(spent: dict[str, float], total_s: float) -> dict[str, float]:
    """Inclusive wrapper times → the exclusive phases of the table."""
    count = spent["count"]
    parse = spent["parse"] + spent["admit"]  # admit runs before begin, _parse inside it
    price = spent["estimate"] - count + spent["price_bill"]
    policies = spent["policies"] + spent["runaways"]
    inside = (spent["parse"] + spent["estimate"] + policies + spent["describe"]
              + spent["reserve"])
    settle = spent["settle_all"] - spent["price_bill"]
    read_usage = spent["settle_body"] - spent["settle_all"]
    phases = {"parse": parse, "count": count, "price": price, "policies": policies,
              "describe": spent["describe"], "reserve": spent["reserve"],
              "begin, other": spent["begin"] - inside, "send": spent["send"],
              "read usage": read_usage, "settle": settle}
    phases["SDK and transport, other"] = total_s - sum(phases.values())
    return phases


def profile(choice: LedgerChoice, calls: int, warmup: int) -> tuple[dict[str, float], float]:
    """Median exclusive time per phase, and the median whole call, for one ledger."""
    assert choice.url is not None
    clock = Clock()
    send = clock.wrap("send", canned)
    client = spendguard.OpenAI(api_key="k", base_url=BASE_URL, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(send)),
                               budget=spendguard.Budget("1000000", ledger=choice.url))
    per_phase: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    with instrumented(clock):
        for index in range(warmup + calls):
            messages: Any = chat_messages(index, user_words=40)
            clock.spent.clear()
            start = time.perf_counter()
            client.chat.completions.create(model=MODEL, messages=messages, max_tokens=64)
            total_s = time.perf_counter() - start
            if index < warmup:
                continue
            totals.append(total_s)
            for name, value in exclusive(clock.spent, total_s).items():
                per_phase[name].append(value)
    client.close()
    return {name: statistics.median(values) for name, values in per_phase.items()}, \
        statistics.median(totals)


def function_calls(client: openai.OpenAI, calls: int) -> float:
    """Python function calls per call of ``client`` (counted by cProfile, not timed)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for index in range(calls):
        messages: Any = chat_messages(10_000 + index, user_words=40)
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=64)
    profiler.disable()
    # The prompt text is built in the loop too: the same calls for both clients.
    stats: Any = pstats.Stats(profiler)
    return sum(entry[1] for entry in stats.stats.values()) / calls


def counted_calls(choice: LedgerChoice, calls: int) -> tuple[float, float]:
    """Function calls per guarded call with ``choice``'s ledger, and per raw SDK call."""
    assert choice.url is not None
    guarded = spendguard.OpenAI(api_key="k", base_url=BASE_URL, max_retries=0,
                                http_client=httpx2.Client(transport=httpx2.MockTransport(canned)),
                                budget=spendguard.Budget("1000000", ledger=choice.url))
    raw = openai.OpenAI(api_key="k", base_url=BASE_URL, max_retries=0,
                        http_client=httpx2.Client(transport=httpx2.MockTransport(canned)))
    for client in (guarded, raw):  # warm: first-call imports and caches are not per call
        function_calls(client, 5)
    counts = function_calls(guarded, calls), function_calls(raw, calls)
    guarded.close()
    raw.close()
    return counts


def raw_median_s(calls: int, warmup: int) -> float:
    client = openai.OpenAI(api_key="k", base_url=BASE_URL, max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(canned)))
    totals = []
    for index in range(warmup + calls):
        messages: Any = chat_messages(index, user_words=40)
        start = time.perf_counter()
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=64)
        if index >= warmup:
            totals.append(time.perf_counter() - start)
    return statistics.median(totals)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=100)
    add_quick(parser)
    args = parser.parse_args(argv)
    calls, warmup = (20, 5) if args.quick else (args.calls, args.warmup)
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder:
        choices = available_ledgers(Path(folder))
        results = {c.kind: profile(c, calls, warmup) for c in choices if c.url is not None}
        counts = {c.kind: counted_calls(c, min(calls, 200)) for c in choices
                  if c.url is not None}
        missing = {c.kind: c.missing for c in choices if c.url is None}
    drop_bench_keys()
    raw_s = raw_median_s(calls, warmup)
    kinds = list(results)
    rows = [[phase, *(fmt_us(results[kind][0][phase]) for kind in kinds)] for phase in PHASES]
    rows.append(["**whole guarded call** (median)", *(fmt_us(results[k][1]) for k in kinds)])
    rows.append(["raw openai SDK call (median)", *(fmt_us(raw_s) for _ in kinds)])
    rows.append(["Python function calls per call: guarded, raw (added)",
                 *(f"{counts[k][0]:,.0f}, {counts[k][1]:,.0f} (+{counts[k][0] - counts[k][1]:,.0f})"
                   for k in kinds)])
    print(f"One guarded call by phase ({MODEL}, in-process mock provider, median of {calls} "
          f"calls after {warmup} warm-up; exclusive times, µs)\n")
    print(markdown_table(["phase", *(f"{kind} ledger" for kind in kinds)], rows))
    for kind, why in missing.items():
        print(f"\n{kind} ledger: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
