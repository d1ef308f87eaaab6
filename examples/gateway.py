"""``spendguard gateway``: one budget for every program, whatever its language.

Starts the emulator (a stand-in for OpenAI and Anthropic), then ``spendguard gateway`` in
front of it with a $0.015 budget, and sends calls the way a program in any language would: plain
HTTP (as curl or a Node service does), and the official Python SDK pointed at the gateway.
Calls go through until the budget cannot take the next one's worst case; that one is answered
402 in OpenAI's own error shape, and never reaches the provider.

    .venv/bin/python examples/gateway.py
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2
import openai

from spendguard.testing import Emulator, serve

SPENDGUARD = [sys.executable, "-c", "from spendguard.cli import main; main()"]


def main() -> None:
    emulator = Emulator(seed=1, reply_tokens=150)
    with serve(emulator) as provider, tempfile.TemporaryDirectory() as folder:
        gateway = subprocess.Popen(
            [*SPENDGUARD, "gateway", "--port", "0", "--json", "--budget", "0.015",
             "--scope", "team:demo", "--ledger", f"sqlite:///{Path(folder) / 'spend.db'}",
             "--upstream", f"openai={provider.openai_base_url}",
             "--upstream", f"anthropic={provider.anthropic_base_url}"],
            stdout=subprocess.PIPE, text=True)
        assert gateway.stdout is not None
        urls = json.loads(gateway.stdout.readline())
        print(f"$ spendguard gateway --budget 0.015 --scope team:demo  # on {urls['base_url']}")
        try:
            # What curl, a Node service or a coding agent sends: plain HTTP, its own key.
            for n in range(3):
                answer = httpx2.post(urls["openai_base_url"] + "/chat/completions", timeout=60,
                                     headers={"authorization": "Bearer sk-your-own-key"},
                                     json={"model": "gpt-5.5", "max_tokens": 200, "messages": [
                                         {"role": "user", "content": f"Fact {n}?"}]})
                print(f"HTTP call {n}: {answer.status_code}")
            client = openai.OpenAI(api_key="sk-your-own-key", base_url=urls["openai_base_url"])
            try:
                client.chat.completions.create(model="gpt-5.5", max_tokens=200, messages=[
                    {"role": "user", "content": "One more?"}])
                print("SDK call: answered")
            except openai.APIStatusError as exc:  # 402: the SDK does not retry it
                print(f"SDK call: {exc.status_code} {exc.body['message']}")  # type: ignore[index]
            summary = httpx2.get(urls["base_url"] + "/spendguard/v1/summary", timeout=60).json()
            print(f"gateway summary: {summary['gateway']['calls']} calls, "
                  f"{summary['gateway']['refusals']} refused, "
                  f"${summary['budget']['spent_usd']} of ${summary['budget']['limit_usd']}")
            print(f"requests that reached the provider: {len(emulator.requests)}")
        finally:
            gateway.send_signal(signal.SIGTERM)  # calls in flight finish first
            gateway.wait(30)


if __name__ == "__main__":
    main()
