"""The loopback provider the peer comparisons share: spendguard's emulator over real HTTP.

Run as a script it serves until its standard input closes and prints its base URL as one JSON
line, so a benchmark can keep the server in another process (its threads then never compete
with the client being timed for the GIL). :func:`emulator_server` serves in this process,
for benchmarks that read the emulator's request log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from spendguard.testing import Emulator, EmulatorServer, serve

__all__ = ["emulator_server", "server_process"]


@contextlib.contextmanager
def emulator_server(emulator: Emulator) -> Iterator[EmulatorServer]:
    """``serve(emulator)`` on 127.0.0.1, any free port."""
    with serve(emulator) as running:
        yield running


@contextlib.contextmanager
def server_process(*, reply_tokens: int, latency_ms: float = 0.0) -> Iterator[str]:
    """An emulator server in a child process; yields its OpenAI base URL."""
    command = [sys.executable, str(Path(__file__).resolve()), "--reply-tokens",
               str(reply_tokens), "--latency-ms", str(latency_ms)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line:
            raise RuntimeError("the loopback emulator did not start (see its stderr above)")
        yield str(json.loads(line)["openai_base_url"])
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the emulator until stdin closes.")
    parser.add_argument("--reply-tokens", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    emulator = Emulator(reply_tokens=args.reply_tokens, latency_s=args.latency_ms / 1000)
    with emulator_server(emulator) as running:
        print(json.dumps({"openai_base_url": running.openai_base_url}), flush=True)
        sys.stdin.read()  # until the parent closes our stdin (or exits)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
