"""Planning throughput against raw tiktoken encoding of the same corpus.

Usage::

    .venv/bin/python benchmarks/planning.py [--requests 100000] [--documents 20]
        [--document-tokens 5000] [--raw-sample 2000] [--model gpt-4.1-mini] [--repeat 3]

The corpus is a fan-out: every request asks its own question about one of ``--documents``
shared documents (about ``--document-tokens`` tokens each) under one system prompt, in Chat
Completions shape (question first, as people write it). Four figures, in requests per second:

- *raw tiktoken*: ``encode_ordinary`` on every text of every request, no caching (what a
  planner that tokenises each request in full pays). It is timed on the first
  ``--raw-sample`` requests (the corpus is uniform, so the rate holds for all of it); pass
  ``--raw-sample 0`` to time the whole corpus;
- *counting*: ``spendguard._costing.tokens.count_request_tokens`` on every request: the same texts,
  but a string already seen (a shared document) is not encoded again;
- *plan*: ``spendguard.plan(corpus)``: counting, shared-prefix analysis, expected cache use,
  output, prices, batch and time;
- *plan, ordered*: ``spendguard.plan(corpus, cache_order=True)``: the same after ordering
  every request for the cache (documents first, breakpoints, keys).

Each figure is the best of ``--repeat`` runs (the first run also pays tiktoken's start-up,
which is reported apart). Nothing is sent anywhere.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import spendguard
from spendguard import count_request_tokens
from spendguard._costing.tokens.bpe import encoding

SYSTEM = "You are a contracts analyst. Answer in one sentence, citing the clause."


def corpus(requests: int, documents: int, document_tokens: int,
           model: str) -> list[dict[str, Any]]:
    """The fan-out described in the module docstring."""
    clauses = max(document_tokens // 12, 1)  # a clause is about 12 o200k tokens
    texts = [" ".join(f"Clause {i}: supplier {d} delivers item {i} on time."
                      for i in range(clauses)) for d in range(documents)]
    return [{"model": model, "max_completion_tokens": 200,
             "messages": [{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": [
                              {"type": "text", "text": f"Question {n}: who delivers item "
                                                       f"{n % clauses}, and when?"},
                              {"type": "text", "text": texts[n % documents]}]}]}
            for n in range(requests)]


def _texts(body: dict[str, Any]) -> list[str]:
    found = []
    for message in body["messages"]:
        content = message["content"]
        found += [content] if isinstance(content, str) else [p["text"] for p in content]
    return found


def best_s(run: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--document-tokens", type=int, default=5000)
    parser.add_argument("--raw-sample", type=int, default=2000)
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bodies = corpus(args.requests, args.documents, args.document_tokens, args.model)
    start = time.perf_counter()
    enc = encoding("o200k_base")
    spendguard.plan(bodies[:2])
    print(f"start-up (tokenizer load, price table): {time.perf_counter() - start:.2f} s")
    sample = bodies[:args.raw_sample] if args.raw_sample else bodies
    tokens = sum(len(enc.encode_ordinary(text)) for text in _texts(bodies[0]))
    print(f"corpus: {len(bodies):,} requests, {args.documents} shared documents, about "
          f"{tokens:,} tokens per request ({len(bodies) * tokens:,} in all), {args.model}")

    def raw() -> None:
        for body in sample:
            for text in _texts(body):
                enc.encode_ordinary(text)

    def counting() -> None:
        for body in bodies:
            count_request_tokens("openai", "/v1/chat/completions", body)

    results = [
        (f"raw tiktoken ({len(sample):,} requests)", len(sample), best_s(raw, args.repeat)),
        ("counting (count_request_tokens)", len(bodies), best_s(counting, args.repeat)),
        ("plan", len(bodies), best_s(lambda: spendguard.plan(bodies), args.repeat)),
        ("plan, ordered for the cache", len(bodies),
         best_s(lambda: spendguard.plan(bodies, cache_order=True), args.repeat)),
    ]
    raw_rate = results[0][1] / results[0][2]
    print(f"{'':<34}{'requests/s':>12}{'vs raw':>9}{'100k requests':>15}")
    for name, count, seconds in results:
        rate = count / seconds
        print(f"{name:<34}{rate:>12,.0f}{rate / raw_rate:>8.1f}x{100_000 / rate:>13.1f} s")


if __name__ == "__main__":
    main()
