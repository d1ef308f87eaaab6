"""``spendguard run``: budget a Python program without changing a line of it.

Writes a small program that builds its own plain ``openai.OpenAI`` client, then runs it as
``spendguard run --budget 0.02 -- python program.py`` against the emulator.

    .venv/bin/python examples/run_command.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from spendguard.testing import Emulator, serve

PROGRAM = '''
import sys, openai
client = openai.OpenAI(api_key="emulated", base_url=sys.argv[1], max_retries=0)
for n in range(6):
    try:
        client.chat.completions.create(model="gpt-5.5", max_tokens=200,
                                       messages=[{"role": "user", "content": f"Fact {n}?"}])
        print(f"call {n}: answered")
    except openai.OpenAIError as exc:  # spendguard's refusal is also the SDK's base error
        print(f"call {n}: {type(exc).__name__}")
'''


def main() -> None:
    with serve(Emulator(seed=1, reply_tokens=150)) as server, \
            tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        program.write_text(PROGRAM, encoding="utf-8")
        command = [sys.executable, "-c", "from spendguard.cli import main; main()", "run",
                   "--budget", "0.02", "--ledger", f"sqlite:///{Path(folder) / 'spend.db'}",
                   "--", sys.executable, str(program), server.openai_base_url]
        print("$ spendguard run --budget 0.02 -- python program.py")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        print(done.stdout, end="")
        print(done.stderr, end="")  # the spend summary
        print(f"exit status: {done.returncode}")


if __name__ == "__main__":
    main()
