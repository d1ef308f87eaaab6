"""Run every benchmark, one after another, and print their tables as one markdown report.

Usage (the one documented command; see benchmarks/README.md)::

    .venv/bin/python benchmarks/run_all.py [--quick] [--only NAME[,NAME]] [--output FILE]
    .venv/bin/python benchmarks/run_all.py --goals [--baseline DIR] [--output FILE]

Each script runs in its own interpreter with ``SPENDGUARD_HOME`` in a temporary folder, so a
benchmark never writes the user's own ledger. Scripts that compare with LiteLLM in-process run
with the peers' Python when it is set up (``$SPENDGUARD_BENCH_PEERS_PYTHON``, or
``/tmp/bench-venv``), with this repository on ``PYTHONPATH``; without it they run here and print
n/a in the peers' rows. Scripts written by other work (``ledger_throughput.py``,
``planning.py``, ``cascade_mmlu.py``) are run when present; ``--quick`` is passed only to those
that accept it. The exit status is 1 if any script failed.

``--goals`` runs the four scripts that measure the reserving guard's goals and ends the report
with a table of each goal, its figure in this run and whether it is met (``goals.py``);
``--baseline DIR`` also runs ``ledger_throughput.py`` on the library of another checkout at
``DIR`` (an older commit), for the goal set relative to it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from goals import goals_table, parse_goals
from harness import REPO, add_quick, machine, today
from peers import peer_environment, peers_python

HERE = Path(__file__).resolve().parent
_SCRIPT_TIMEOUT_S = 1800  # the longest script takes a few minutes: longer is a stuck one


@dataclass(frozen=True, slots=True)
class Script:
    """One benchmark: its file, and whether it wants the peers' Python."""

    name: str
    file: str
    peers: bool = False


SCRIPTS = [
    Script("import_time", "import_time.py"),
    Script("overhead", "overhead.py"),
    Script("profile_call", "profile_call.py"),
    Script("idle_wait", "idle_wait.py"),
    Script("overhead_loopback", "overhead_loopback.py", peers=True),
    Script("enforcement", "enforcement.py", peers=True),
    Script("ledger_throughput", "ledger_throughput.py"),
    Script("ledger_scale", "ledger_scale.py"),
    Script("redis_cluster", "redis_cluster.py"),
    Script("redis_durable", "redis_durable.py"),
    Script("planning", "planning.py"),
    Script("estimation", "estimation.py"),
    Script("savings", "savings.py"),
    Script("cascade_mmlu", "cascade_mmlu.py"),
    Script("gateway", "gateway.py"),
]


def _accepts_quick(python: str, path: Path, env: dict[str, str]) -> bool:
    result = subprocess.run([python, str(path), "--help"], capture_output=True, text=True,
                            env=env, check=False, timeout=120)
    return "--quick" in result.stdout


GOAL_SCRIPTS = ("profile_call", "overhead_loopback", "enforcement", "ledger_throughput")


def run(script: Script, *, quick: bool, home: str, peers: Path | None,
        library: Path | None = None) -> tuple[str, bool]:
    """The script's report section, and whether it succeeded; ``library``: a checkout whose
    ``spendguard`` the script measures instead of this one's."""
    path = HERE / script.file
    if not path.exists():
        return f"not run: benchmarks/{script.file} is not in this checkout", True
    python = str(peers) if script.peers and peers is not None else sys.executable
    env = peer_environment() if script.peers and peers is not None else dict(os.environ)
    env["SPENDGUARD_HOME"] = home
    if library is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(library), env.get("PYTHONPATH")]))
    command = [python, str(path)]
    if quick and _accepts_quick(python, path, env):
        command.append("--quick")
    started = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO,
                                check=False, timeout=_SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired as expired:  # a stuck script fails, the run goes on
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) \
            else expired.stderr or ""
        result = subprocess.CompletedProcess(
            command, -1, "", f"{stderr}\nstopped after {_SCRIPT_TIMEOUT_S} s")
    elapsed = time.perf_counter() - started
    python_shown = (os.path.relpath(command[0], REPO) if Path(command[0]).is_relative_to(REPO)
                    else command[0])
    shown = " ".join(shlex.quote(part) for part in [python_shown, *command[1:]])
    shown = shown.replace(str(HERE) + "/", "benchmarks/")
    body = result.stdout.rstrip()
    if body and not any(line.startswith("|") for line in body.splitlines()):
        body = f"```\n{body}\n```"  # a plain-text table: keep its columns in markdown
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-15:])
        body += f"\n\nFAILED (exit {result.returncode}):\n```\n{tail}\n```"
    return f"`{shown}` ({elapsed:.0f} s)\n\n{body}", result.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add_quick(parser)
    parser.add_argument("--only", default="", help="comma-separated script names to run")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument("--goals", action="store_true",
                        help="run the scripts that measure the reserving guard's goals and "
                             "end with a table of them")
    parser.add_argument("--baseline", type=Path,
                        help="with --goals: a checkout whose library ledger_throughput.py "
                             "also measures, for the goal relative to it")
    args = parser.parse_args(argv)
    if args.baseline is not None and not (args.goals and
                                          (args.baseline / "spendguard").is_dir()):
        parser.error("--baseline: give it with --goals, naming a checkout of spendguard (a "
                     "folder holding spendguard/)")
    chosen = {name.strip() for name in args.only.split(",") if name.strip()}
    if args.goals:
        chosen |= set(GOAL_SCRIPTS)
    unknown = chosen - {s.name for s in SCRIPTS}
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}; choose from "
                     f"{', '.join(s.name for s in SCRIPTS)}")
    peers = peers_python()
    command = " ".join(["benchmarks/run_all.py", *(argv if argv is not None else sys.argv[1:])])
    head = [f"- date: {today()}", f"- machine: {machine()}",
            f"- command: `.venv/bin/python {command}`",
            f"- peers' Python: {peers or 'none (LiteLLM and tokencost rows are n/a)'}"]
    sections = ["# spendguard benchmarks", "\n".join(head)]
    print("\n\n".join(sections), flush=True)
    ok = True
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="spendguard-bench-home-") as home:
        for script in SCRIPTS:
            if chosen and script.name not in chosen:
                continue
            text, succeeded = run(script, quick=args.quick, home=home, peers=peers)
            ok &= succeeded
            outputs[script.name] = text
            section = f"## {script.name}\n\n{text}"
            sections.append(section)
            print("\n" + section, flush=True)
        if args.goals:
            baseline = None
            if args.baseline is not None:
                throughput = next(s for s in SCRIPTS if s.name == "ledger_throughput")
                baseline, succeeded = run(throughput, quick=args.quick, home=home, peers=peers,
                                          library=args.baseline.resolve())
                ok &= succeeded
                section = f"## ledger_throughput, the baseline's library\n\n{baseline}"
                sections.append(section)
                print("\n" + section, flush=True)
            section = f"## goals\n\n{goals_table(parse_goals(outputs, baseline))}"
            sections.append(section)
            print("\n" + section, flush=True)
    if args.output is not None:
        args.output.write_text("\n\n".join(sections) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
