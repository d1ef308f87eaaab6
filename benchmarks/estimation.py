"""Estimate error on the emulator, per request kind, and token-counting throughput.

Usage::

    .venv/bin/python benchmarks/estimation.py [--samples 12] [--quick]

Part 1 sends each kind of request through a guarded client to the offline emulator, with
prompts from 20 to ~2,000 words, and compares, call by call, what the guard knew before
sending with what the emulator billed: the input tokens it reserved (an exact count, or an
upper bound for Claude) and their central estimate, against the billed input (uncached + cache
reads + cache writes); the worst-case cost it reserved against the billed cost; and
``spendguard.plan``'s expected cost, from the output cap alone and then with the ledger's
history of this kind of call (``task=``; the history includes the call itself). The
emulator counts input with spendguard's own counter, so the input rows measure the bound's
margin, not tokenizer accuracy against a real provider; output is the emulator's default
16-64-token reply, so worst/actual shows how much headroom a reservation holds while a call is
in flight.

Part 2 compares, per provider, the input reserved with the static bound and with the bound
learned from the ledger (``spendguard._budget.learned_bounds``), each against what was billed, on
the same prompts: every kind first builds its history (``--history`` calls, at least the 20 a
learned bound needs), then ``--measured`` more calls are compared. Here the emulator bills
Claude input as spendguard's central estimate × a factor within ``1 ± --spread`` drawn from
each prompt (``Emulator(anthropic_token_spread=...)``), standing in for the spread of a real
tokenizer around the o200k count; the learned ratio depends on that spread, so it is stated.

Part 3 times spendguard's request counter (what the guard and the planner run per request)
against raw tiktoken encoding of the same message texts with the same BPE, on one corpus.
``run_all.py`` also runs the planning helper's ``benchmarks/planning.py`` when it exists.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from corpus import SYSTEM_PROMPT, chat_messages, text
from harness import add_quick, fmt_ratio, markdown_table, percentile, round_robin

import spendguard
from spendguard import count_request_tokens
from spendguard._budget.learned_bounds import MIN_SAMPLES
from spendguard._costing.tokens.bpe import encoding
from spendguard.testing import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Emulator

TOOLS_OPENAI = [{"type": "function", "function": {
    "name": "lookup_invoice", "description": "Find an invoice by number and return its lines.",
    "parameters": {"type": "object", "properties": {
        "number": {"type": "string", "description": "the invoice number"},
        "year": {"type": "integer"}}, "required": ["number"]}}}]
TOOLS_ANTHROPIC = [{"name": "lookup_invoice",
                    "description": "Find an invoice by number and return its lines.",
                    "input_schema": TOOLS_OPENAI[0]["function"]["parameters"]}]  # type: ignore[index]


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of request: how to send it, and the body its input is counted from."""

    name: str
    provider: str
    path: str
    body: Callable[[int, int], dict[str, Any]]
    """(words, seed) -> the request body, as the SDK call below sends it."""


def _chat(model: str, *, cap: bool = True, tools: bool = False,
          stream: bool = False) -> Callable[[int, int], dict[str, Any]]:
    def body(words: int, seed: int) -> dict[str, Any]:
        out: dict[str, Any] = {"model": model, "messages": chat_messages(seed, words)}
        if cap:
            out["max_tokens"] = 512
        if tools:
            out["tools"] = TOOLS_OPENAI
        if stream:
            out |= {"stream": True, "stream_options": {"include_usage": True}}
        return out
    return body


def _responses(words: int, seed: int) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "instructions": SYSTEM_PROMPT,
            "input": text(words, seed), "max_output_tokens": 512}


def _embeddings(words: int, seed: int) -> dict[str, Any]:
    return {"model": "text-embedding-3-small", "input": [text(words, seed), text(20, seed + 1)]}


def _messages(model: str, *, tools: bool = False,
              cache: bool = False) -> Callable[[int, int], dict[str, Any]]:
    def body(words: int, seed: int) -> dict[str, Any]:
        system: Any = SYSTEM_PROMPT
        if cache:  # a long shared document, marked for caching
            system = [{"type": "text", "text": SYSTEM_PROMPT + text(1500, 3),
                       "cache_control": {"type": "ephemeral"}}]
        out: dict[str, Any] = {"model": model, "max_tokens": 512, "system": system,
                               "messages": [{"role": "user", "content": text(words, seed)}]}
        if tools:
            out["tools"] = TOOLS_ANTHROPIC
        return out
    return body


CHAT = "/v1/chat/completions"
KINDS = [
    Kind("openai chat, max_tokens 512", "openai", CHAT, _chat("gpt-4o-mini")),
    Kind("openai chat, no output cap", "openai", CHAT, _chat("gpt-4o-mini", cap=False)),
    Kind("openai chat + tools", "openai", CHAT, _chat("gpt-4o-mini", tools=True)),
    Kind("openai chat, streamed", "openai", CHAT, _chat("gpt-4o-mini", stream=True)),
    Kind("openai responses", "openai", "/v1/responses", _responses),
    Kind("openai embeddings", "openai", "/v1/embeddings", _embeddings),
    Kind("anthropic messages (haiku 4.5)", "anthropic", "/v1/messages",
         _messages("claude-haiku-4-5")),
    Kind("anthropic messages + tools (sonnet 5.5)", "anthropic", "/v1/messages",
         _messages("claude-sonnet-5-5", tools=True)),
    Kind("anthropic, cached system prompt (sonnet 5.5)", "anthropic", "/v1/messages",
         _messages("claude-sonnet-5-5", cache=True)),
]


def send(kind: Kind, body: dict[str, Any], clients: dict[str, Any]) -> None:
    client = clients[kind.provider]
    if kind.path == CHAT:
        result = client.chat.completions.create(**body)
        if body.get("stream"):
            for _ in result:
                pass
    elif kind.path == "/v1/responses":
        client.responses.create(**body)
    elif kind.path == "/v1/embeddings":
        client.embeddings.create(**body)
    else:
        client.messages.create(**body)


def _stats(values: list[float]) -> str:
    return f"{fmt_ratio(statistics.median(values))} ({fmt_ratio(max(values))})"


def estimate_rows(samples: int) -> list[list[str]]:
    emulator = Emulator()
    rows = []
    for kind in KINDS:
        budget = spendguard.Budget("1000", ledger="memory://")
        clients = _clients(emulator, budget)
        expected: list[int] = []
        bodies: list[dict[str, Any]] = []
        task = f"bench-{KINDS.index(kind)}"
        with spendguard.tags(task=task):  # the history spendguard.plan(task=...) reads
            for index in range(samples):
                words = round(20 * 100 ** (index / max(samples - 1, 1)))  # 20 .. 2,000 words
                body = kind.body(words, index)
                expected.append(count_request_tokens(kind.provider, kind.path, body).expected)
                bodies.append(body)
                send(kind, body, clients)
        records = list(budget.ledger.records())
        bound, central, worst, cold, warm, under = [], [], [], [], [], 0
        for record, central_tokens, body in zip(records, expected, bodies, strict=True):
            billed_in = sum(n for k, n in record.tokens.items()
                            if k not in ("output", "reasoning"))
            bound.append((record.estimated_input_tokens or 0) / billed_in)
            central.append(central_tokens / billed_in)
            worst.append(float(record.estimated_usd / record.actual_usd))
            under += record.actual_usd > record.estimated_usd
            # The plan's expected cost: output from the cap alone, then from this kind's history.
            cold.append(float(spendguard.plan([body]).expected_usd / record.actual_usd))
            warm.append(float(spendguard.plan([body], task=task, ledger=budget.ledger)
                              .expected_usd / record.actual_usd))
        rows.append([kind.name, str(len(records)), _stats(bound), _stats(central),
                     _stats(worst), _stats(cold), _stats(warm), f"{under}/{len(records)}"])
    return rows


def _clients(emulator: Emulator, budget: spendguard.Budget) -> dict[str, Any]:
    """One http client per SDK: the guard is installed on the http client it wraps."""
    return {
        "openai": spendguard.OpenAI(
            api_key="k", base_url=OPENAI_BASE_URL, budget=budget, max_retries=0,
            http_client=httpx2.Client(transport=emulator.transport())),
        "anthropic": spendguard.Anthropic(
            api_key="k", base_url=ANTHROPIC_BASE_URL, budget=budget, max_retries=0,
            http_client=httpx2.Client(transport=emulator.transport())),
    }


def _reserved_over_billed(records: list[Any]) -> list[float]:
    """Reserved ÷ billed input per call."""
    ratios = []
    for record in records:
        billed_in = sum(n for k, n in record.tokens.items() if k not in ("output", "reasoning"))
        ratios.append((record.estimated_input_tokens or 0) / billed_in)
    return ratios


def learned_rows(history: int, measured: int, spread: float) -> list[list[str]]:
    """Per provider: reserved ÷ billed input with the static and the learned bound."""
    rows = []
    for provider in ("openai", "anthropic"):
        kinds = [kind for kind in KINDS if kind.provider == provider]
        cells = []
        for learn in (False, True):
            emulator = Emulator(anthropic_token_spread=spread)
            budget = spendguard.Budget("1000", ledger="memory://", learn_bounds=learn,
                                       runaway=None)
            clients = _clients(emulator, budget)
            for index in range(history + measured):
                # Sizes cycle through 20 .. 2,000 words: history and measured calls alike.
                words = round(20 * 100 ** ((index * 7 % 19) / 18))
                with spendguard.tags(phase="history" if index < history else "measured"):
                    for kind in kinds:
                        send(kind, kind.body(words, index), clients)
            ratios = _reserved_over_billed(list(budget.ledger.records(tag="phase=measured")))
            under = sum(ratio < 1 for ratio in ratios)
            cells += [fmt_ratio(statistics.median(ratios)), fmt_ratio(percentile(ratios, 0.95)),
                      f"{under}/{len(ratios)}"]
        rows.append([provider, str(len(kinds) * measured), *cells])
    return rows


def counting_rows(bodies: int, rounds: int) -> tuple[float, list[list[str]]]:
    """The mean tokens per request, and one row per counter."""
    # Every round counts a new body: spendguard remembers texts it has counted, and a corpus
    # that repeats would time that memo. The system prompt is shared, as in real use.
    corpus: list[dict[str, Any]] = [{"model": "gpt-4o-mini", "messages": chat_messages(seed, 200)}
                                    for seed in range(bodies)]
    o200k = encoding("o200k_base")
    position = {"spendguard count_request_tokens": 0, "raw tiktoken (o200k_base)": 0}

    def counter() -> float:
        body = corpus[position["spendguard count_request_tokens"] % bodies]
        position["spendguard count_request_tokens"] += 1
        start = time.perf_counter()
        count_request_tokens("openai", CHAT, body)
        return time.perf_counter() - start

    def raw() -> float:
        body = corpus[position["raw tiktoken (o200k_base)"] % bodies]
        position["raw tiktoken (o200k_base)"] += 1
        start = time.perf_counter()
        for message in body["messages"]:
            len(o200k.encode_ordinary(message["content"]))
        return time.perf_counter() - start

    samples = round_robin({"spendguard count_request_tokens": counter,
                           "raw tiktoken (o200k_base)": raw}, rounds=rounds, warmup=5)
    tokens = sum(int(count_request_tokens("openai", CHAT, body)) for body in corpus) / bodies
    rows = []
    for name, values in samples.items():
        median = statistics.median(values)
        rows.append([name, f"{median * 1e6:,.0f} µs", f"{1 / median:,.0f}",
                     f"{tokens / median / 1e6:.2f} M"])
    return tokens, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--history", type=int, default=MIN_SAMPLES,
                        help="calls per kind before the learned bound is measured")
    parser.add_argument("--measured", type=int, default=40)
    parser.add_argument("--spread", type=float, default=0.1,
                        help="the emulator's Claude tokenizer spread (anthropic_token_spread)")
    add_quick(parser)
    args = parser.parse_args(argv)
    samples, rounds = (2, 20) if args.quick else (args.samples, args.rounds)
    measured = 3 if args.quick else args.measured
    rows = estimate_rows(samples)
    print(f"Estimate against what the emulator billed, per call ({samples} prompts per kind, "
          "20 to 2,000 words); ratios are median (max)\n")
    print(markdown_table(["request kind", "calls", "input reserved / billed",
                          "input expected / billed", "worst cost (reserved) / billed",
                          "plan expected / billed", "plan expected, with history / billed",
                          "billed above reserved"], rows))
    rows = learned_rows(max(args.history, MIN_SAMPLES), measured, args.spread)
    print(f"\nInput reserved / billed per provider, static bound against learned bound "
          f"({max(args.history, MIN_SAMPLES)} history calls per kind, then {measured} measured; "
          f"the emulator bills Claude input within ±{args.spread:.0%} of spendguard's central "
          "estimate, per prompt)\n")
    print(markdown_table(["provider", "measured calls", "static: median", "static: p95",
                          "static: input above reserved", "learned: median", "learned: p95",
                          "learned: input above reserved"], rows))
    tokens, rows = counting_rows(rounds + 5, rounds)
    print(f"\nToken counting, one chat request ({tokens:.0f} tokens on average: a shared system "
          f"prompt + a new user text each round), {rounds} rounds round-robin; spendguard "
          "counts the shared system prompt once (it remembers texts), raw tiktoken encodes "
          "every message every time\n")
    print(markdown_table(["counter", "median per request", "requests / s", "tokens / s"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
