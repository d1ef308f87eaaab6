"""What every command does alike: JSON style and JSON errors, suggestions for typos, a quiet
exit on a closed pipe, tables fitted to a terminal, colour only there and never with NO_COLOR,
one date format for every --since / --until, ``python -m spendguard``, and no traceback or
exit status 0 for a user's mistake."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from spendguard.cli import main
from spendguard.cli.export import moment_callback
from tests.paths import REPO

_PYTHON = [sys.executable, "-m", "spendguard"]


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("NO_COLOR", "COLUMNS", "TERM")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@pytest.mark.parametrize(("typed", "meant"), [(["repor"], "'report'"),
                                              (["ledger", "verfy"], "'verify'"),
                                              (["exprot"], "'export'"),
                                              (["batches", "lst"], "'list'")])
def test_a_mistyped_command_gets_a_suggestion(typed: list[str], meant: str) -> None:
    result = CliRunner().invoke(main, typed)
    assert result.exit_code == 2
    assert f"No such command '{typed[-1]}'. Did you mean {meant}" in result.stderr


@pytest.mark.parametrize("args", [
    ["report", "--json", "--by", "week"],           # a usage error
    ["estimate", "missing.jsonl", "--json"],        # click's own check of a path
    ["export", "--format", "csv", "--aggregate", "day", "--json"],
])
def test_an_error_under_json_is_a_json_document_on_stderr(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["exit_code"] == 2 and error["usage"] is True and error["message"]


def test_json_output_has_one_style(tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["prices", "--json", "--provider", "anthropic"], ["size", "--list", "--json"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert result.stdout == json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_MISTAKES = [
    (["estimate", "{binary}"], "not UTF-8 text"),
    (["breakeven", "--gpu", "h100", "--count", "1", "--usd-per-gpu-hour", "1e400",
      "--api-output-usd-per-million", "10"], "'--usd-per-gpu-hour'"),
    (["estimate", "{requests}", "--budget", "1e400"], "'--budget'"),
    (["size", "--params", "1e30", "--precision", "fp16", "--context", "4k",
      "--concurrency", "1"], "'--params'"),
    (["export", "--account", "foo=bar", "--ledger", "sqlite:///{ledger}"],
     "'foo' is not a provider"),
]


@pytest.mark.parametrize(("args", "says"), _MISTAKES, ids=lambda value: str(value)[:40])
def test_a_mistake_is_one_error_line_and_a_failing_exit(tmp_path: Path, args: list[str],
                                                        says: str) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"model": "gpt-4o-mini", "max_tokens": 10, "messages": [
        {"role": "user", "content": "hi"}]}) + "\n")
    filled = [part.format(binary=binary, requests=requests, ledger=tmp_path / "l.db")
              for part in args]
    result = CliRunner().invoke(main, filled)
    assert result.exit_code in (1, 2), result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert says in result.stderr


def _leaf_commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(main)
    found = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        found.append((name, command))
        if isinstance(command, click.Group):
            sub = click.Context(command, parent=ctx)
            for verb in command.list_commands(sub):
                leaf = command.get_command(sub, verb)
                assert leaf is not None
                found.append((f"{name} {verb}", leaf))
    return found


def test_every_since_and_until_takes_the_same_date_formats() -> None:
    checked = []
    for name, command in _leaf_commands():
        for param in command.params:
            if param.name in ("since", "until"):
                callback = param.callback
                assert callback is not None, name
                assert callback.__qualname__.startswith(moment_callback.__name__), name
                checked.append(name)
    assert {"report", "export", "ledger drain"} <= set(checked)


def test_drain_accepts_a_month_as_report_does(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "drain", f"sqlite:///{tmp_path / 'd.db'}",
                                       "--ledger", f"sqlite:///{tmp_path / 'typo.db'}",
                                       "--since", "2026-05", "--until", "2026-05-31"])
    assert "no ledger at" in result.stderr  # the dates were accepted; the ledger is missing


def test_python_dash_m_spendguard_runs_the_command() -> None:
    done = subprocess.run([*_PYTHON, "--version"], capture_output=True, text=True,
                          env=_env(), timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.startswith("spendguard, version")


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    # `spendguard prices --json | head -0`: the reader is gone before the first line
    process = subprocess.Popen([*_PYTHON, "prices", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=_env())
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert stderr == ""


def _on_a_terminal(args: list[str], **env: str) -> str:
    """What the command prints when its stdout and stderr are a terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([*_PYTHON, *args], stdout=follower, stderr=follower,
                               env=_env(**env))
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_tables_fit_the_terminal_and_colour_shows_only_there() -> None:
    shown = _on_a_terminal(["prices", "--provider", "openai"], COLUMNS="120",
                           TERM="xterm")
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert any(line.startswith("gpt-4o-mini") for line in lines)  # names wrap, never cut
    error = _on_a_terminal(["repor"], TERM="xterm")
    assert "\x1b[31m" in error and "Did you mean 'report'" in error
    plain = _on_a_terminal(["repor"], TERM="xterm", NO_COLOR="1")
    assert "\x1b[" not in plain and "Did you mean 'report'" in plain


def test_a_pipe_gets_whole_lines_and_no_colour() -> None:
    done = subprocess.run([*_PYTHON, "prices", "--provider", "openai"], capture_output=True,
                          text=True, env=_env(COLUMNS="80", TERM="xterm"), timeout=60,
                          check=False)
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    assert "\x1b[" not in done.stdout
