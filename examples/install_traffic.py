"""install() follows the traffic: requests a framework sends with its own HTTP code, and
clients built before install(), are guarded; requests to anything else pass untouched.

    .venv/bin/python examples/install_traffic.py
"""

from __future__ import annotations

import httpx2
import openai

import spendguard
from spendguard.testing import Emulator, serve

PROMPT = [{"role": "user", "content": "Say something short."}]


def main() -> None:
    with serve(Emulator(seed=1, reply_tokens=40)) as server:
        print(f"calls go to: the spendguard emulator at {server.base_url}")
        # Built before install(), the way a module-level client of a library is.
        early = openai.OpenAI(api_key="emulated", base_url=server.openai_base_url,
                              max_retries=2)

        budget = spendguard.Budget("0.01", scope="team:traffic", ledger="memory://traffic")
        # The emulator stands in for a provider on a URL of its own: declare it (requests to
        # api.openai.com, api.anthropic.com, Azure, Bedrock and Vertex need no declaring).
        emulated = {server.openai_base_url: "openai", server.anthropic_base_url: "anthropic"}
        spendguard.install(budget, base_urls=emulated)

        early.chat.completions.create(model="gpt-5.5", messages=PROMPT, max_tokens=40)
        with httpx2.Client() as http:  # a framework's own HTTP code, no SDK involved
            http.post(f"{server.anthropic_base_url}/v1/messages",
                      headers={"x-api-key": "emulated", "anthropic-version": "2023-06-01"},
                      json={"model": "claude-sonnet-4-6", "max_tokens": 40,
                            "messages": PROMPT})
            elsewhere = http.get(f"{server.base_url}/not-an-llm-endpoint")
        for record in budget.ledger.records(scope=budget.scope):
            print(f"  guarded: {record.provider} {record.model}: ${record.actual_usd:.6f}")
        print(f"  passed untouched: GET /not-an-llm-endpoint -> {elsewhere.status_code}")

        spendguard.install(spendguard.Budget("0.00001", scope="team:tight",
                                             ledger="memory://traffic"), base_urls=emulated)
        try:
            early.chat.completions.create(model="gpt-5.5", messages=PROMPT, max_tokens=40)
        except spendguard.BudgetExceeded as refused:
            # Also openai.OpenAIError: the SDK's retries (max_retries=2) did not retry it.
            print(f"refused before sending, final: {isinstance(refused, openai.OpenAIError)}")
        spendguard.uninstall()


if __name__ == "__main__":
    main()
