"""A program built on frameworks, knowing nothing of spendguard: ``spendguard run`` cells.

``python framework_program.py BASE_URL`` asks, through the emulator at ``BASE_URL``: LiteLLM
(``openai/`` over the classic httpx client it hands the SDK, ``anthropic/`` through its own
HTTP code, with ``num_retries``) and pydantic-ai on two event loops. Prints one line per call,
``ok`` or the error's class name, and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

PROMPT = [{"role": "user", "content": "Say something short."}]


def main() -> int:
    base_url = sys.argv[1]
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import litellm
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.settings import ModelSettings

    litellm.suppress_debug_info = True
    for model, api_base in (("openai/gpt-5.5", f"{base_url}/v1"),
                            ("anthropic/claude-sonnet-4-6", base_url)):
        try:
            litellm.completion(model=model, messages=PROMPT, max_tokens=30, api_base=api_base,
                               api_key="k")
            print("ok", flush=True)
        except Exception as exc:
            print(type(exc).__name__, flush=True)
    agent = Agent(OpenAIChatModel("gpt-5.5", provider=OpenAIProvider(
        base_url=f"{base_url}/v1", api_key="k")), model_settings=ModelSettings(max_tokens=30))

    async def one_run() -> None:
        async with agent:
            await agent.run("Say something short.")

    for _ in range(2):
        try:
            asyncio.run(one_run())
            print("ok", flush=True)
        except Exception as exc:
            print(type(exc).__name__, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
