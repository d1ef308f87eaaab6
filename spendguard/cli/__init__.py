"""The ``spendguard`` command: noun groups and verbs, each a few lines over the library.

Subcommands are imported only when run, so ``spendguard --help`` stays fast. A spendguard
error (a bad ledger URL, an unreachable Redis, a broken price file) or an OS error (an
unwritable ``--out``) ends any command with one line on stderr and exit status 1, never a
traceback; ``SPENDGUARD_DEBUG=1`` shows the traceback instead. With ``--json`` anywhere on
the command line, that error is a JSON document on stderr. What every command does alike
(JSON style, colour, table width, typos, closed pipes) is in :mod:`spendguard.cli.conventions`.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

import click

from spendguard.cli.conventions import CLOSED_PIPE_EXIT, SuggestingGroup, json_text, paint

# command name -> "module:attribute" of a click command or group
_COMMANDS: dict[str, str] = {
    "demo": "spendguard.cli.demo:demo",
    "ledger": "spendguard.cli.ledger:ledger",
    "emulate": "spendguard.cli.emulate:emulate",
    "prices": "spendguard.cli.prices:prices",
    "size": "spendguard.cli.size:size",
    "breakeven": "spendguard.cli.breakeven:breakeven",
    "estimate": "spendguard.cli.estimate:estimate",
    "export": "spendguard.cli.export:export",
    "report": "spendguard.cli.report:report",
    "reconcile": "spendguard.cli.reconcile:reconcile",
    "batches": "spendguard.cli.batches:batches",
    "run": "spendguard.cli.run:run",
    "gateway": "spendguard.cli.gateway:gateway",
}


class _JsonError(click.ClickException):
    """An error shown as ``{"error": {...}}`` because the command line asked for JSON."""

    def __init__(self, cause: click.ClickException) -> None:
        super().__init__(cause.format_message())
        setattr(self, "exit_code", cause.exit_code)  # noqa: B010 - a class variable in click
        self.cause = cause

    def show(self, file: Any = None) -> None:
        error: dict[str, Any] = {"message": " ".join(self.format_message().split()),
                                 "exit_code": self.exit_code}
        if isinstance(self.cause, click.UsageError):
            error["usage"] = True
        click.echo(json_text({"error": error}), err=True)


class _ColouredError(click.ClickException):
    """click's one-line error, its ``Error:`` in red on a terminal."""

    def __init__(self, cause: click.ClickException) -> None:
        super().__init__(cause.format_message())
        setattr(self, "exit_code", cause.exit_code)  # noqa: B010 - a class variable in click

    def show(self, file: Any = None) -> None:
        click.echo(f"{paint('Error:', fg='red', bold=True, err=True)} {self.format_message()}",
                   err=True)


class _ColouredUsageError(click.UsageError):
    """click's usage error, its ``Error:`` in red on a terminal."""

    def __init__(self, cause: click.UsageError) -> None:
        super().__init__(cause.format_message(), cause.ctx)
        setattr(self, "exit_code", cause.exit_code)  # noqa: B010 - a class variable in click

    def show(self, file: Any = None) -> None:
        if self.ctx is not None:
            hint = ""
            if self.ctx.command.get_help_option(self.ctx) is not None:
                hint = (f"Try '{self.ctx.command_path} {self.ctx.help_option_names[0]}' "
                        f"for help.\n")
            click.echo(f"{self.ctx.get_usage()}\n{hint}", err=True)
        click.echo(f"{paint('Error:', fg='red', bold=True, err=True)} {self.format_message()}",
                   err=True)


class _LazyGroup(SuggestingGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, _, attribute = target.partition(":")
        command: Any = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):  # pragma: no cover - a wiring bug
            raise TypeError(f"{target} is not a click command")
        return command

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        wants_json = "--json" in (args[:args.index("--")] if "--" in args else args)
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta["spendguard.json"] = wants_json
        return ctx

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                result = self._invoke_mapped(ctx)
                sys.stdout.flush()  # a closed pipe is found here, not at interpreter exit
                return result
            except click.UsageError as exc:
                if ctx.meta.get("spendguard.json"):
                    raise _JsonError(exc) from None
                raise _ColouredUsageError(exc) from None
            except click.ClickException as exc:
                if ctx.meta.get("spendguard.json"):
                    raise _JsonError(exc) from None
                raise _ColouredError(exc) from None
        except OSError as exc:
            if exc.errno != errno.EPIPE and not isinstance(exc, BrokenPipeError):
                raise
            _quiet_closed_pipe()
            raise SystemExit(CLOSED_PIPE_EXIT) from None

    def _invoke_mapped(self, ctx: click.Context) -> Any:
        from spendguard._core.errors import SpendguardError  # noqa: PLC0415 - keeps --help fast

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise
        except (SpendguardError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise
            if os.environ.get("SPENDGUARD_DEBUG"):
                raise
            raise click.ClickException(_one_line(exc)) from None


def _quiet_closed_pipe() -> None:
    """Point stdout at /dev/null so that Python's final flush finds no closed pipe either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"cannot use {exc.filename}: {exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__


def run() -> None:
    """``python -m spendguard``: the command, named ``spendguard`` in its messages."""
    main(prog_name="spendguard")


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="spendguard-llm", prog_name="spendguard")
def main() -> None:
    """Keep LLM spending on budget: guarded clients, a spend ledger, plans and sizing."""
