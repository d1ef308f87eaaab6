"""Per-call overhead of the guarded client against the raw SDK, on one in-process mock transport.

Usage::

    .venv/bin/python benchmarks/overhead.py [--rounds 1000] [--quick]

Every variant is an ``openai`` client whose ``http_client`` has the same
``httpx2.MockTransport``, answering a canned ``chat.completion`` (or a canned stream of 32
chunks, frame by frame) whatever it is asked: the raw SDK, then ``spendguard.OpenAI`` with a
budget in each ledger (memory, SQLite, Redis). Each round sends the same request through every
variant, in rotating order; each round's user message is new, so token counting is not served
from spendguard's memo. Streaming is timed to the first chunk the SDK yields (TTFC) and to the
end of the stream. The overhead is the median of per-round differences against the raw SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
from corpus import chat_messages
from harness import (
    Summary,
    add_quick,
    fmt_ratio,
    fmt_us,
    markdown_table,
    paired_overhead_s,
    round_robin,
    round_robin_async,
    summarize,
)
from ledgers import LedgerChoice, available_ledgers, drop_bench_keys

import spendguard

MODEL = "gpt-4o-mini"
BASE_URL = "http://mock.invalid/v1"
MAX_TOKENS = 256
STREAM_CHUNKS = 32
_BASE = {"id": "chatcmpl-bench", "created": 1800000000, "model": MODEL,
         "system_fingerprint": "fp_bench", "service_tier": "default"}
_USAGE = {"prompt_tokens": 520, "completion_tokens": STREAM_CHUNKS,
          "total_tokens": 520 + STREAM_CHUNKS,
          "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
          "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                        "accepted_prediction_tokens": 0,
                                        "rejected_prediction_tokens": 0}}
COMPLETION = json.dumps({
    **_BASE, "object": "chat.completion",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "word " * STREAM_CHUNKS,
                             "refusal": None, "annotations": []}}],
    "usage": _USAGE}).encode()


def _frame(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _frame({**_BASE, "object": "chat.completion.chunk", "usage": None,
                   "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                "finish_reason": finish}]})


STREAM_FRAMES = [_chunk({"role": "assistant", "content": ""}),
                 *(_chunk({"content": "word "}) for _ in range(STREAM_CHUNKS)),
                 _chunk({}, "stop"),
                 _frame({**_BASE, "object": "chat.completion.chunk", "choices": [],
                         "usage": _USAGE}),
                 b"data: [DONE]\n\n"]


class _Frames(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """The canned stream, one SSE frame per chunk, as a provider sends it."""

    def __iter__(self) -> Iterator[bytes]:
        yield from STREAM_FRAMES

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for frame in STREAM_FRAMES:
            yield frame


def canned(request: httpx2.Request) -> httpx2.Response:
    """The mock provider: the same canned answer for every variant."""
    if json.loads(request.content).get("stream"):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               stream=_Frames())
    return httpx2.Response(200, headers={"content-type": "application/json"},
                           content=COMPLETION)


def _budget(url: str) -> spendguard.Budget:
    # Large enough never to refuse: this measures the path, not the refusals.
    return spendguard.Budget("1000000", ledger=url)


def sync_clients(ledgers: list[LedgerChoice]) -> dict[str, openai.OpenAI]:
    def http() -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(canned))

    clients: dict[str, openai.OpenAI] = {
        "raw openai SDK": openai.OpenAI(api_key="k", base_url=BASE_URL, http_client=http(),
                                        max_retries=0)}
    for choice in ledgers:
        if choice.url is not None:
            clients[f"spendguard, {choice.kind} ledger"] = spendguard.OpenAI(
                api_key="k", base_url=BASE_URL, http_client=http(), max_retries=0,
                budget=_budget(choice.url))
    return clients


def async_clients(ledgers: list[LedgerChoice]) -> dict[str, openai.AsyncOpenAI]:
    def http() -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(canned))

    clients: dict[str, openai.AsyncOpenAI] = {
        "raw openai SDK": openai.AsyncOpenAI(api_key="k", base_url=BASE_URL,
                                             http_client=http(), max_retries=0)}
    for choice in ledgers:
        if choice.url is not None:
            clients[f"spendguard, {choice.kind} ledger"] = spendguard.AsyncOpenAI(
                api_key="k", base_url=BASE_URL, http_client=http(), max_retries=0,
                budget=_budget(choice.url))
    return clients


class Rounds:
    """The request of the current round: every variant sends the same one."""

    def __init__(self) -> None:
        self.index = 0
        self.calls = 0
        self.variants = 1

    def messages(self) -> list[dict[str, Any]]:
        # A new user message once every variant has sent the current one.
        self.calls += 1
        if self.calls > self.variants:
            self.calls, self.index = 1, self.index + 1
        return chat_messages(self.index)


def time_plain(client: openai.OpenAI, rounds: Rounds) -> Callable[[], float]:
    def one() -> float:
        messages: Any = rounds.messages()
        start = time.perf_counter()
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=MAX_TOKENS)
        return time.perf_counter() - start
    return one


def time_first_chunk(client: openai.OpenAI, rounds: Rounds,
                     totals: list[float]) -> Callable[[], float]:
    def one() -> float:
        messages: Any = rounds.messages()
        start = time.perf_counter()
        stream = client.chat.completions.create(model=MODEL, messages=messages,
                                                max_tokens=MAX_TOKENS, stream=True,
                                                stream_options={"include_usage": True})
        chunks = iter(stream)
        next(chunks)
        first = time.perf_counter() - start
        for _ in chunks:
            pass
        stream.close()
        totals.append(time.perf_counter() - start)
        return first
    return one


def time_async(client: openai.AsyncOpenAI, rounds: Rounds) -> Callable[[], Any]:
    async def one() -> float:
        messages: Any = rounds.messages()
        start = time.perf_counter()
        await client.chat.completions.create(model=MODEL, messages=messages,
                                             max_tokens=MAX_TOKENS)
        return time.perf_counter() - start
    return one


def rows_for(scenario: str, samples: dict[str, list[float]]) -> list[list[str]]:
    raw_name = "raw openai SDK"
    raw = samples[raw_name]
    raw_summary = summarize(raw)
    rows = []
    for name, values in samples.items():
        summary: Summary = summarize(values)
        added = "—" if name == raw_name else fmt_us(paired_overhead_s(values, raw))
        ratio = fmt_ratio(summary.median_s / raw_summary.median_s)
        rows.append([scenario, name, fmt_us(summary.median_s), fmt_us(summary.p99_s), added,
                     ratio])
    return rows


def missing_rows(ledgers: list[LedgerChoice], scenarios: list[str]) -> list[list[str]]:
    return [[scenario, f"spendguard, {c.kind} ledger", c.missing or "", "", "", ""]
            for scenario in scenarios for c in ledgers if c.url is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    add_quick(parser)
    args = parser.parse_args(argv)
    rounds, warmup = (10, 3) if args.quick else (args.rounds, args.warmup)
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-") as folder:
        ledgers = available_ledgers(Path(folder))
        rows: list[list[str]] = []

        clients = sync_clients(ledgers)
        state = Rounds()
        state.variants = len(clients)
        plain = round_robin({n: time_plain(c, state) for n, c in clients.items()},
                            rounds=rounds, warmup=warmup)
        rows += rows_for("sync, non-streaming", plain)

        state = Rounds()
        state.variants = len(clients)
        totals: dict[str, list[float]] = {name: [] for name in clients}
        first = round_robin({n: time_first_chunk(c, state, totals[n])
                             for n, c in clients.items()}, rounds=rounds, warmup=warmup)
        rows += rows_for("sync, stream: first chunk", first)
        rows += rows_for("sync, stream: whole stream",
                         {name: values[warmup:] for name, values in totals.items()})

        aclients = async_clients(ledgers)
        state = Rounds()
        state.variants = len(aclients)
        timed = asyncio.run(round_robin_async(
            {n: time_async(c, state) for n, c in aclients.items()}, rounds=rounds,
            warmup=warmup))
        rows += rows_for("async, non-streaming", timed)
        rows += missing_rows(ledgers, ["all"])
    drop_bench_keys()
    print(f"Per-call overhead on an in-process httpx2.MockTransport ({MODEL}, "
          f"{rounds} rounds after {warmup} warm-up, round-robin)\n")
    print(markdown_table(["scenario", "client", "median", "p99", "added (paired median)",
                          "median ratio"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
