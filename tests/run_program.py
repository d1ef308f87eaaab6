"""A program that knows nothing of spendguard: ``spendguard run`` tests start it as a child.

``python run_program.py BASE_URL CALLS EXIT_CODE`` builds a plain ``openai.OpenAI`` client
against ``BASE_URL`` (the emulator), makes up to CALLS calls, prints one line per call
(``ok`` or the error's class name) and exits with EXIT_CODE.
"""

from __future__ import annotations

import sys

import openai


def main() -> int:
    base_url, calls, exit_code = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    client = openai.OpenAI(api_key="not-a-real-key", base_url=base_url)
    for _ in range(calls):
        try:
            client.chat.completions.create(
                model="gpt-5.5", max_tokens=40,
                messages=[{"role": "user", "content": "Say something short."}])
        except openai.OpenAIError as exc:  # a refusal is also the SDK's own base error
            print(type(exc).__name__, flush=True)
            continue
        print("ok", flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
