"""A drop-in app: change one import, and every call is budgeted before it is sent.

    .venv/bin/python examples/drop_in_app.py
"""

from __future__ import annotations

import _client

import spendguard


def main() -> None:
    print(f"calls go to: {_client.where()}")
    budget = spendguard.Budget("0.02", scope="app:faq-bot", ledger=_client.ledger_url(),
                               on_warn=lambda event: print(f"  warning: {event.message()}"))
    client = _client.openai_client(budget=budget)  # was: openai.OpenAI()

    questions = ["What is a token?", "Why cache prompts?", "What does batch pricing save?"]
    for question in questions * 4:
        try:
            reply = client.chat.completions.create(
                model="gpt-4o", max_tokens=300,
                messages=[{"role": "user", "content": question}])
        except spendguard.BudgetExceeded as refused:
            print(f"refused before sending: needs up to ${refused.estimate_usd:.4f}, "
                  f"${refused.remaining_usd:.4f} left")
            break
        usage = reply.usage
        print(f"{question:<32} {usage.prompt_tokens:>4} in {usage.completion_tokens:>4} out  "
              f"spent ${budget.spent:.4f} of $0.02")
    print(f"total: ${budget.spent:.4f} of $0.02; nothing left reserved: {budget.reserved == 0}")


if __name__ == "__main__":
    main()
