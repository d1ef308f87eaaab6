"""``spendguard gateway``: the budget gateway for programs in any language, and its virtual keys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from spendguard._core.errors import ConfigError

__all__ = ["gateway"]


def _default_keys_file() -> str:
    from spendguard._budget.ledger.paths import home_dir  # noqa: PLC0415 - keeps --help fast

    return str(Path(home_dir()) / "gateway-keys.json")


@click.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback only with --keys.")
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--budget", "limit_usd", metavar="USD",
              help="The gateway's budget: every call is charged to it (with --scope). Without "
                   "it calls are recorded, unlimited.")
@click.option("--scope", default="gateway", show_default=True, metavar="S",
              help="Scope of the gateway's budget (gateways on one ledger share it).")
@click.option("--period", metavar="P", help="Budget period: daily, monthly, or a rolling "
              "window such as 1h.")
@click.option("--ledger", "ledger_url", metavar="URL", help="Ledger URL (sqlite:///..., "
              "redis://..., postgresql://...); default: $SPENDGUARD_LEDGER, else the SQLite "
              "file in spendguard's data directory.")
@click.option("--observe", is_flag=True, help="Record and warn, refuse nothing.")
@click.option("--scope-budget", "scope_limit_usd", metavar="USD",
              help="Limit of each scope a request names in x-spendguard-scope (nested under "
                   "the gateway's or the virtual key's budget; default: the parent's limit).")
@click.option("--per-user", "per_user_usd", metavar="USD",
              help="A budget per end user (the request's user / safety_identifier / "
                   "metadata.user_id field), within the gateway's.")
@click.option("--upstream", "upstreams", multiple=True, metavar="NAME=URL",
              help="A provider upstream, served under /NAME/: an OpenAI-compatible base URL, "
                   "anthropic+URL or azure+URL; openai= and anthropic= replace the defaults "
                   "behind /v1/. Repeatable.")
@click.option("--allow-unpriced", is_flag=True, help="Forward requests to endpoints spendguard "
              "cannot price (audio, images, ...), their cost NOT counted, instead of refusing "
              "them with a 400.")
@click.option("--keys", "keys_file", metavar="FILE", help="Require virtual keys from this key "
              "file (see `spendguard gateway keys`); the real provider keys are read from the "
              "gateway's environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).")
@click.option("--max-body-bytes", type=click.IntRange(min=1), default=32 * 1024 * 1024,
              show_default=True, help="Largest request body accepted.")
@click.option("--timeout", "upstream_timeout_s", type=click.FloatRange(min=0.1),
              default=600.0, show_default=True,
              help="Seconds to wait for an upstream's next bytes.")
@click.option("--grace", "grace_s", type=click.FloatRange(min=1), default=30.0,
              show_default=True, help="Seconds calls in flight get to finish on shutdown.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the listening URLs as one JSON line on stdout.")
@click.pass_context
def gateway(ctx: click.Context, host: str, port: int, limit_usd: str | None, scope: str,
            period: str | None, ledger_url: str | None, observe: bool,
            scope_limit_usd: str | None, per_user_usd: str | None, upstreams: tuple[str, ...],
            allow_unpriced: bool, keys_file: str | None, max_body_bytes: int,
            upstream_timeout_s: float, grace_s: float, as_json: bool) -> None:
    """Serve the OpenAI and Anthropic APIs on HOST:PORT, every call through spendguard's guard.

    Point any program at it: OPENAI_BASE_URL=http://127.0.0.1:8787/v1,
    ANTHROPIC_BASE_URL=http://127.0.0.1:8787. A call its budget refuses is answered 402 in
    the provider's error shape, and not retried by the official clients. Stop with Ctrl+C
    (or SIGTERM): calls in flight finish first and are recorded.
    """
    if ctx.invoked_subcommand is not None:
        return
    from spendguard._gateway.app import Gateway, provider_keys_from  # noqa: PLC0415
    from spendguard._gateway.config import GatewayConfig  # noqa: PLC0415
    from spendguard._gateway.server import bind, check_host, serve  # noqa: PLC0415
    from spendguard._gateway.upstreams import DEFAULT_UPSTREAMS, parse_upstream  # noqa: PLC0415

    if limit_usd is None and (observe or per_user_usd or scope_limit_usd):
        raise click.UsageError("--observe, --per-user and --scope-budget apply to a budget; "
                               "add --budget USD")
    try:
        parsed = tuple(parse_upstream(text) for text in upstreams)
        check_host(host, virtual_keys=keys_file is not None)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None
    if ledger_url:
        os.environ["SPENDGUARD_LEDGER"] = ledger_url  # unbudgeted calls are recorded there too
    config = GatewayConfig(
        upstreams=parsed, limit_usd=limit_usd, scope=scope, period=period, ledger=ledger_url,
        observe=observe, scope_limit_usd=scope_limit_usd, per_user_usd=per_user_usd,
        allow_unpriced=allow_unpriced, keys_file=keys_file,
        provider_keys=provider_keys_from(os.environ, [*DEFAULT_UPSTREAMS, *parsed])
        if keys_file else {},
        max_body_bytes=max_body_bytes, upstream_timeout_s=upstream_timeout_s)
    try:
        app = Gateway(config)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None
    try:
        sock = bind(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: "
                                   f"{exc.strerror or exc}") from None
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    base = f"http://{shown}:{bound_port}"
    if as_json:
        click.echo(json.dumps({"base_url": base, "openai_base_url": f"{base}/v1",
                               "anthropic_base_url": base}))
    else:
        budget = "unlimited (recorded)" if limit_usd is None else f"{scope!r} {limit_usd} USD"
        click.echo(f"spendguard gateway on {base} — budget {budget}", err=True)
        click.echo(f"  export OPENAI_BASE_URL={base}/v1 ANTHROPIC_BASE_URL={base}", err=True)
    serve(app, sock, grace_s=grace_s)


@gateway.group()
def keys() -> None:
    """Virtual keys: issue a key per team or user, each with its own scope and budget."""


_KEYS_OPTION = click.option("--keys", "keys_file", metavar="FILE",
                            help="The key file (default: gateway-keys.json in spendguard's "
                                 "data directory).")


@keys.command("create")
@click.option("--scope", required=True, metavar="S", help="Scope the key's calls are charged to.")
@click.option("--budget", "limit_usd", required=True, metavar="USD", help="The key's limit.")
@click.option("--period", metavar="P", help="daily, monthly, or a rolling window (1h).")
@_KEYS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the key as one JSON object.")
def create(scope: str, limit_usd: str, period: str | None, keys_file: str | None,
           as_json: bool) -> None:
    """Issue a virtual key (printed once; the file keeps only its SHA-256 digest)."""
    from spendguard._gateway.keys import KeyStore  # noqa: PLC0415

    store = KeyStore(keys_file or _default_keys_file())
    try:
        key, entry = store.create(scope, limit_usd, period)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"key": key, "id": entry.id, "scope": entry.scope,
                               "limit_usd": entry.limit_usd, "period": entry.period}))
        return
    click.echo(key)
    click.echo(f"key {entry.id}: scope {entry.scope!r}, {entry.limit_usd} USD"
               f"{'' if entry.period is None else ' ' + entry.period}; shown once, store it now",
               err=True)


@keys.command("list")
@_KEYS_OPTION
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_keys(keys_file: str | None, as_json: bool) -> None:
    """The issued keys: id, scope, budget (never the keys themselves)."""
    from spendguard._gateway.keys import KeyStore  # noqa: PLC0415

    for entry in KeyStore(keys_file or _default_keys_file()).all():
        row = {"id": entry.id, "scope": entry.scope, "limit_usd": entry.limit_usd,
               "period": entry.period, "created": entry.created}
        click.echo(json.dumps(row) if as_json else
                   f"{entry.id}  {entry.scope}  {entry.limit_usd} USD  {entry.period or 'all'}"
                   f"  {entry.created}")


@keys.command("revoke")
@click.argument("key_id")
@_KEYS_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as one JSON object.")
def revoke(key_id: str, keys_file: str | None, as_json: bool) -> None:
    """Revoke the key with id KEY_ID (running gateways stop taking it at once)."""
    from spendguard._gateway.keys import KeyStore  # noqa: PLC0415

    if not KeyStore(keys_file or _default_keys_file()).revoke(key_id):
        raise click.ClickException(f"no key with id {key_id!r}; see `spendguard gateway keys "
                                   "list`")
    if as_json:
        click.echo(json.dumps({"revoked": key_id}))
    else:
        click.echo(f"revoked {key_id}", err=True)
