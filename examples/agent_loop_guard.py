"""Guard an agent loop: a dollar cap, a step cap, and a stop when it finds nothing new.

A toy research agent asks a model for more sources each step. The guard stops it before a step
that would overrun its dollar cap, after 20 steps, or once 3 steps in a row found no new
source; a sub-agent gets a quarter of what is left. Runs offline: ``make_client()`` answers
from spendguard's provider emulator (or, when that is not installed, a tiny mock transport).

    .venv/bin/python examples/agent_loop_guard.py
"""

from __future__ import annotations

import re
from typing import Any

import httpx2
import openai

import spendguard
from spendguard.testing import Emulator

MODEL = "gpt-4o-mini"
BASE_URL = "https://api.openai.com/v1"


def research(prompt: str) -> str:
    """The offline stand-in for the model: new sources at first, then the same ones again."""
    match = re.search(r"step (\d+)", prompt)
    page = min(int(match.group(1)) if match else 0, 4)  # from step 4 on: the same two again
    return f"Sources: https://example.org/p{2 * page}, https://example.org/p{2 * page + 1}"


def _offline_transport() -> httpx2.BaseTransport:
    """spendguard's provider emulator (offline, labelled), answering with the stand-in."""
    return Emulator(respond=lambda prompt: research(prompt.last_user_text)).transport()


def make_client() -> openai.OpenAI:
    """An OpenAI client answered offline."""
    return openai.OpenAI(api_key="offline", base_url=BASE_URL, max_retries=0,
                         http_client=httpx2.Client(transport=_offline_transport()))


def main() -> None:
    client = make_client()
    history: list[dict[str, Any]] = []
    guard = spendguard.loop(max_usd="0.002", max_steps=20, patience=3)
    for step in guard:
        history.append({"role": "user", "content": f"Find more sources, step {step.index}."})
        reply = client.chat.completions.create(model=MODEL, messages=history, max_tokens=100)
        text = reply.choices[0].message.content or ""
        history.append({"role": "assistant", "content": text})
        step.record(reply)  # charges its cost and remembers its text
        new = step.found(re.findall(r"https://\S+?(?=,|$)", text))
        print(f"step {step.index}: {new} new, ${guard.spent_usd:.6f} spent so far")

        if step.index == 1:
            # A sub-agent (here: one summary call) may spend a quarter of what is left.
            sub = guard.share(0.25, max_steps=1)
            for sub_step in sub:
                summary = client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "Summarise."}],
                    max_tokens=50)
                sub_step.record(summary)
            print(f"  sub-agent: cap ${sub.max_usd:.6f}, spent ${sub.spent_usd:.6f}, "
                  f"stopped: {sub.stop_reason}")

    print(f"stopped after {guard.steps} steps, ${guard.spent_usd:.6f}: "
          f"{guard.stop_reason} ({guard.stop_detail})")


if __name__ == "__main__":
    main()
