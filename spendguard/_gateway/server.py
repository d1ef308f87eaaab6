"""Serving a gateway with uvicorn: in the foreground (the CLI) or in a thread (``spendguard
run``, tests), on a port of its own or any free one.

Shutting down (SIGINT / SIGTERM, or :meth:`RunningGateway.close`) stops accepting, lets calls in
flight finish for ``grace_s``, then cancels what is left; a cancelled relay closes its upstream
stream, which settles the call (as abandoned), so every call that reached a provider has its
record before the process exits.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from types import TracebackType
from typing import Self

import uvicorn

from spendguard._core.errors import ConfigError
from spendguard._gateway.app import Gateway

__all__ = ["RunningGateway", "bind", "check_host", "serve", "start"]


def check_host(host: str, *, virtual_keys: bool) -> None:
    """Refuse to listen beyond loopback without virtual keys (the caller's own provider key
    would otherwise open the gateway's budget to anyone who can reach it)."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not virtual_keys:
        raise ConfigError(f"host: {host!r} is not a loopback address; a gateway reachable from "
                          "other machines requires virtual keys (--keys FILE, created with "
                          "`spendguard gateway keys create`)")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio turns Nagle's algorithm off only on sockets that say
    # so, and with it on, a response written in two parts waits for the client's delayed ACK
    # (~40 ms on Linux) on every call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def _config(gateway: Gateway, grace_s: float) -> uvicorn.Config:
    # No access log: paths are logged by nobody, and headers (keys) never are. httptools and
    # uvloop (the gateway extra) are used where installed, h11 and asyncio otherwise.
    return uvicorn.Config(gateway.app, lifespan="on", log_level="warning", access_log=False,
                          server_header=False, date_header=False, http="auto", loop="auto",
                          timeout_graceful_shutdown=int(max(grace_s, 1)), timeout_keep_alive=30)


def serve(gateway: Gateway, sock: socket.socket, *, grace_s: float = 30.0) -> None:
    """Serve until SIGINT or SIGTERM (the foreground ``spendguard gateway``), then return.

    uvicorn handles the signal (a graceful shutdown) and raises it again once done, for the
    handler it found; that handler is a no-op here, so a stopped gateway exits with status 0.
    """
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        uvicorn.Server(_config(gateway, grace_s)).run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stopped(signum: int, frame: object) -> None:
    """The signal, raised again by uvicorn after its graceful shutdown: nothing left to do."""


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


class RunningGateway:
    """A gateway served in a background thread; :meth:`close` (or ``with``) stops it."""

    def __init__(self, gateway: Gateway, host: str = "127.0.0.1", port: int = 0, *,
                 grace_s: float = 5.0) -> None:
        check_host(host, virtual_keys=gateway.keys is not None)
        self.gateway = gateway
        self._sock = bind(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.base_url = f"http://{shown}:{self.port}"
        """The Anthropic SDK's ``base_url`` (``ANTHROPIC_BASE_URL``)."""
        self.openai_base_url = self.base_url + "/v1"
        """The OpenAI SDK's ``base_url`` (``OPENAI_BASE_URL``)."""
        self._server = _Server(_config(gateway, grace_s))
        self._thread = threading.Thread(target=self._server.run, args=([self._sock],),
                                        name="spendguard-gateway", daemon=True)
        self._thread.start()
        while not self._server.ready.wait(0.05):
            if not self._thread.is_alive():
                self._sock.close()
                raise ConfigError(f"the gateway on {self.base_url} did not start")

    def close(self) -> None:
        """Stop accepting, let calls in flight finish (up to the grace period), then stop."""
        self._server.should_exit = True
        self._thread.join()
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def start(gateway: Gateway, host: str = "127.0.0.1", port: int = 0, *,
          grace_s: float = 5.0) -> RunningGateway:
    """Serve ``gateway`` on ``host:port`` in a background thread; returns once it listens."""
    return RunningGateway(gateway, host, port, grace_s=grace_s)
