"""A separate process that submits a batch, then is killed while it waits for the results.

``submit LEDGER_URL SCOPE BASE_URL PROVIDER COUNT``: submit COUNT requests through the
loopback emulator at BASE_URL, print the job ids as JSON, then wait on stdin (the test sends
SIGKILL here).
"""

from __future__ import annotations

import json
import sys

import spendguard
from spendguard._strategies.batch import Polling


def submit(ledger_url: str, scope: str, base_url: str, provider: str, count: str) -> None:
    budget = spendguard.Budget("10", scope=scope, ledger=ledger_url, warn_at=None)
    client: spendguard.OpenAI | spendguard.Anthropic
    if provider == "openai":
        client = spendguard.OpenAI(api_key="k", base_url=f"{base_url}/v1", budget=budget,
                                   max_retries=0)
        requests = [{"model": "gpt-5.5", "max_completion_tokens": 40,
                     "messages": [{"role": "user", "content": f"q{i}"}]}
                    for i in range(int(count))]
    else:
        client = spendguard.Anthropic(api_key="k", base_url=base_url, budget=budget,
                                      max_retries=0)
        requests = [{"model": "claude-sonnet-5", "max_tokens": 40,
                     "messages": [{"role": "user", "content": f"q{i}"}]}
                    for i in range(int(count))]
    run = spendguard.batch(requests, client=client, polling=Polling(progress=None))
    print(json.dumps(run.job_ids), flush=True)
    sys.stdin.readline()  # killed here, waiting for its results


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command != "submit":
        raise SystemExit(f"unknown command {command!r}")
    submit(*args)
