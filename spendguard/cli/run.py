"""``spendguard run -- CMD ...``: run a program with every LLM call it makes guarded.

Python processes of the program are guarded from inside (``install()`` from their first
import). A program in any other language is guarded from outside: the run starts a gateway on
a free loopback port for the program's lifetime and points the official clients' base-URL
variables at it (:data:`BASE_URL_VARIABLES`); a Python process it starts is guarded from
inside too and marks its own calls, so the gateway does not charge them twice.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from spendguard._adoption.coverage import unguarded_reason
from spendguard._adoption.running import ENV_VAR, RunSettings, RunTally
from spendguard._core.errors import ConfigError
from spendguard._core.money import format_usd

__all__ = ["run"]

_BOOT_DIR = Path(__file__).resolve().parent.parent / "_adoption" / "boot"
_COUNTS = ("calls", "released", "input_tokens", "output_tokens", "refusals", "warnings",
           "would_refuse")
_MONEY = ("cost_usd", "refused_usd", "would_refuse_usd")
_GATEWAY_TALLY = "gateway.json"

BASE_URL_VARIABLES = {
    # The openai SDKs (Python, Node) and Codex CLI's built-in OpenAI provider.
    "OPENAI_BASE_URL": "/v1",
    # The older name, still read by some tools built on the OpenAI API.
    "OPENAI_API_BASE": "/v1",
    # The anthropic SDKs (Python, TypeScript) and Claude Code.
    "ANTHROPIC_BASE_URL": "",
    # google-genai's Gemini Developer API base URL (its requests go under /v1beta/).
    "GOOGLE_GEMINI_BASE_URL": "",
}
"""The variables a run's gateway sets for the program, each the gateway's URL plus this path."""


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--budget", "limit_usd", metavar="USD",
              help="Limit for the whole run (all its processes); a call that could exceed it "
                   "is refused with BudgetExceeded. Without it calls are recorded, unlimited.")
@click.option("--scope", metavar="S", help="Budget scope to charge (shared with other runs "
              "and programs using it); default: a new scope for this run.")
@click.option("--period", metavar="P", help="Budget period: daily or monthly (UTC).")
@click.option("--ledger", "ledger_url", metavar="URL",
              help="Ledger URL (sqlite:///..., redis://..., postgresql://...); default: "
                   "$SPENDGUARD_LEDGER, else "
                   "the SQLite file in spendguard's data directory.")
@click.option("--observe", is_flag=True, help="Observe mode: record and warn, refuse nothing; "
              "the summary says what enforcing would have refused.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as one JSON object (on stderr, like the text summary).")
@click.option("--allow-unguarded", is_flag=True,
              help="Run COMMAND even when spendguard cannot guard it (not Python, python -I, "
                   "another sitecustomize first...); the summary says so. Without it such a "
                   "command is refused before it starts.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(limit_usd: str | None, scope: str | None, period: str | None, ledger_url: str | None,
        observe: bool, as_json: bool, allow_unguarded: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND with every LLM call it makes guarded, in Python or any other language.

    Every LLM request a Python process of the program sends is guarded from its first import
    (spendguard.install()). Programs in other languages (Node, coding agents such as Claude
    Code or Codex CLI, curl) reach the providers through a gateway the run starts on a free
    loopback port, named in OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL and
    GOOGLE_GEMINI_BASE_URL (needs the gateway extra). The program's output and exit status are
    its own. On exit a spend summary
    (calls, tokens, cost, refusals, warnings) is printed on stderr. A command spendguard
    cannot guard is refused before it starts, with the reason and the fix (see
    --allow-unguarded).

    \b
    Examples:
        spendguard run --budget 1.00 -- python agent.py
        spendguard run --budget 5 -- claude
    """
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise click.UsageError("name the program to run after --, e.g. "
                               "`spendguard run --budget 1 -- python app.py`")
    if limit_usd is None and (scope or period or observe):
        raise click.UsageError("--scope, --period and --observe apply to a budget; add "
                               "--budget USD")
    if limit_usd is not None and scope is None:
        scope = f"run:{uuid.uuid4().hex[:12]}"
    folder = tempfile.mkdtemp(prefix="spendguard-run-")
    try:
        settings = RunSettings(folder, limit_usd, scope, period, ledger_url, observe)
        try:
            budget = settings.budget()  # checked here, so a mistake is one line, not N
        except ConfigError as exc:
            raise click.BadParameter(str(exc)) from None
        # Python programs are guarded from inside; any other program through a gateway.
        gateway = None if is_python_program(command) else _start_gateway(settings)
        try:
            if gateway is not None:
                settings = dataclasses.replace(
                    settings, gateway_url=gateway.base_url,
                    gateway_token=gateway.gateway.config.guarded_token)
            env = _child_env(settings)
            unguarded = unguarded_reason(command, env)
            if unguarded is not None and gateway is not None \
                    and not is_python_program(command):
                unguarded = None  # its calls go through the run's gateway
            if unguarded is not None and not allow_unguarded:
                if gateway is None and not is_python_program(command):
                    raise click.ClickException(
                        f"not started: {command[0]!r} is not a Python program: spendguard run "
                        "guards it through a local gateway, which needs the gateway extra: "
                        "pip install 'spendguard-llm[gateway]' (or pass --allow-unguarded to "
                        "run it anyway, unguarded)")
                raise click.ClickException(f"not started: {unguarded}")
            if unguarded is not None:
                click.echo(f"spendguard run: running UNGUARDED (--allow-unguarded): "
                           f"{unguarded.reason}", err=True)
            code = _run_child(command, env)
        finally:
            if gateway is not None:
                gateway.close()  # calls in flight finish and are recorded first
                _save_tally(gateway.gateway.tally, folder)
        summary = _summary(folder, code, budget)
        if unguarded is not None:
            summary["unguarded"] = unguarded.reason
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    click.echo(json.dumps(summary) if as_json else _render(summary), err=True)
    sys.exit(code)


def is_python_program(command: tuple[str, ...]) -> bool:
    """Whether COMMAND starts a Python interpreter, or a script whose ``#!`` line names one."""
    found = shutil.which(command[0]) or command[0]
    if re.fullmatch(r"python(\d+(\.\d+)*)?[tw]?(\.exe)?", Path(found).name.lower()):
        return True
    try:
        with open(found, "rb") as script:
            first = script.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _start_gateway(settings: RunSettings) -> Any:
    """The run's gateway on a free loopback port, or None when the gateway extra is not
    installed (Python programs are guarded all the same, by install())."""
    try:
        from spendguard._gateway.app import Gateway  # noqa: PLC0415 - the gateway extra
        from spendguard._gateway.config import GatewayConfig  # noqa: PLC0415
        from spendguard._gateway.server import start  # noqa: PLC0415
        from spendguard._gateway.upstreams import parse_upstream  # noqa: PLC0415
    except ImportError:
        return None
    if settings.ledger and settings.limit_usd is None:
        os.environ["SPENDGUARD_LEDGER"] = settings.ledger  # the gateway records there too
    from spendguard._providers.adapter import adapters  # noqa: PLC0415

    # Where the program's calls were going is where the gateway sends them.
    upstreams = tuple(parse_upstream(f"{adapter.name}={os.environ[adapter.base_url_env]}")
                      for adapter in adapters() if os.environ.get(adapter.base_url_env))
    config = GatewayConfig(upstreams=upstreams, limit_usd=settings.limit_usd,
                           scope=settings.scope or "run", period=settings.period,
                           ledger=settings.ledger, observe=settings.observe,
                           guarded_token=secrets.token_hex(16))
    return start(Gateway(config))


def _save_tally(tally: RunTally, folder: str) -> None:
    target = Path(folder) / _GATEWAY_TALLY
    target.write_text(json.dumps(tally.as_dict()), encoding="utf-8")


def _child_env(settings: RunSettings) -> dict[str, str]:
    env = dict(os.environ)
    env[ENV_VAR] = settings.to_env()
    if settings.gateway_url is not None:
        env.update({name: settings.gateway_url + path
                    for name, path in BASE_URL_VARIABLES.items()})
    env["PYTHONPATH"] = os.pathsep.join(
        [str(_BOOT_DIR), *filter(None, [env.get("PYTHONPATH")])])
    if settings.ledger:
        env["SPENDGUARD_LEDGER"] = settings.ledger  # unbudgeted calls are recorded there too
    return env


def _run_child(command: tuple[str, ...], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(list(command), env=env)
    except OSError as exc:
        raise click.ClickException(f"cannot start {command[0]!r}: {exc.strerror or exc}") from None
    # Ctrl+C reaches the program from the terminal; the command waits for it to finish so
    # the summary still prints. A SIGTERM sent to the command is passed on to the program.
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM,
                                  lambda signum, frame: child.send_signal(signum))
    try:
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)
    return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N


def _summary(folder: str, code: int, budget: Any) -> dict[str, Any]:
    totals: dict[str, Any] = {name: 0 for name in _COUNTS}
    totals.update({name: Decimal(0) for name in _MONEY})
    processes = 0
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        processes += path.name != _GATEWAY_TALLY  # the gateway's counts are not a process's
        for name in _COUNTS:
            totals[name] += int(data.get(name, 0))
        for name in _MONEY:
            totals[name] += Decimal(str(data.get(name, "0")))
    summary: dict[str, Any] = {"exit_code": code, "processes": processes, **totals}
    for name in _MONEY:
        summary[name] = str(summary[name])
    if budget is not None:
        summary.update(scope=budget.scope, limit_usd=str(budget.limit_usd),
                       period=budget.period, observe=not budget.enforce)
        try:
            summary["spent_usd"] = str(budget.spent)  # the whole period, other runs included
        except Exception:  # the ledger went away: the counts above still stand
            summary["spent_usd"] = None
    return summary


def _render(summary: dict[str, Any]) -> str:
    cost = Decimal(summary["cost_usd"])
    lines = [f"spendguard run: {summary['calls']:,} call{'' if summary['calls'] == 1 else 's'}, "
             f"{summary['input_tokens']:,} input + {summary['output_tokens']:,} output tokens, "
             f"{format_usd(cost)}; {summary['refusals']:,} refused; "
             f"{summary['warnings']:,} warning{'' if summary['warnings'] == 1 else 's'}"]
    if summary.get("scope") is not None:
        spent = summary.get("spent_usd")
        spent_text = "?" if spent is None else format_usd(Decimal(spent))
        period = f" ({summary['period']})" if summary.get("period") else ""
        limit = Decimal(summary["limit_usd"])
        lines.append(f"  budget {summary['scope']!r}{period}: {spent_text} spent of "
                     f"{format_usd(limit)}")
    if summary.get("observe"):
        lines.append(f"  observe mode: would have refused {summary['would_refuse']:,} calls, "
                     f"{format_usd(Decimal(summary['would_refuse_usd']))}")
    if summary.get("unguarded") and summary["processes"] == 0:
        lines.insert(0, f"spendguard run: ran UNGUARDED: {summary['unguarded']}; the calls "
                        "it made were not seen, and are not counted below")
    elif summary.get("unguarded"):
        lines.insert(0, f"spendguard run: could not vouch for the command up front "
                        f"({summary['unguarded']}); {summary['processes']:,} Python "
                        "process(es) of it were guarded and are counted below, any other "
                        "calls were not seen")
    elif summary["processes"] == 0 and summary["calls"] + summary["refusals"] == 0:
        lines.append("  (no Python process of the program reported: it exited without "
                     "running its exit handlers, e.g. os._exit)")
    lines.append(f"  exit status {summary['exit_code']}")
    return "\n".join(lines)
