"""The emulator as a loopback HTTP server, for SDKs and tools in other processes or languages.

A thin shell over :meth:`Emulator.handle` on the standard library's threading HTTP server:
streams go out chunk by chunk (chunked transfer encoding), an injected stream cut closes the
socket mid-body, and an injected timeout holds the request without answering until the client
gives up (or the server closes). Only loopback addresses are accepted unless asked otherwise.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from spendguard._core.errors import ConfigError
from spendguard.testing.emulator import Emulator
from spendguard.testing.wire import EMULATOR_HEADER, WireRequest, normalise_path

__all__ = ["EmulatorServer", "serve"]

_HOLD_S = 3600.0  # an injected timeout waits this long at most (or until close)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # socketserver's 5 refuses a burst of concurrent clients

    def __init__(self, address: tuple[str, int], emulator: Emulator) -> None:
        super().__init__(address, _Handler)
        self.emulator = emulator
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that drops its connection (an idle keep-alive socket closed, a stream it
        # stopped reading, a timeout) does what clients do: no traceback on stderr for it.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are written separately; with Nagle's algorithm the body would wait
    # for the client's delayed ACK (~40 ms on Linux) on every response.
    disable_nagle_algorithm = True
    server: _Server
    server_version = "spendguard-emulator"

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the emulator keeps its own request log; stderr noise helps nobody

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer(self) -> None:
        emulator = self.server.emulator
        split = urlsplit(self.path)
        host = self.headers.get("host") or "{}:{}".format(*self.server.server_address[:2])
        request = WireRequest(self.command, normalise_path(split.path),
                              dict(parse_qsl(split.query)),
                              {k.lower(): v for k, v in self.headers.items()}, self._body(),
                              f"http://{host}")
        try:
            response = emulator.handle(request)
        except Exception as exc:  # a responder's bug: answer, so the client is not left hanging
            self._send_bytes(500, {"content-type": "application/json",
                                   EMULATOR_HEADER[0]: EMULATOR_HEADER[1]}, json.dumps(
                {"error": {"message": f"spendguard emulator internal error: {exc!r}",
                           "type": "server_error", "param": None, "code": None}}).encode())
            return
        if emulator.config.latency_s:
            emulator.sleep(emulator.config.latency_s)
        if response.timeout:
            self.server.stopping.wait(_HOLD_S)
            self.close_connection = True
            return
        if response.events is None:
            self._send_bytes(response.status, response.headers, response.body)
            return
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for index, frame in enumerate(response.events):
                if index == response.break_after_events:
                    self.close_connection = True  # no final chunk: the client sees a cut body
                    return
                if index and emulator.config.stream_interval_s:
                    emulator.sleep(emulator.config.stream_interval_s)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading: fine

    def _send_bytes(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class EmulatorServer:
    """A running loopback emulator server; :meth:`close` (or ``with``) stops it."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        # a short poll keeps close() quick; the loop is idle otherwise
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                                        name="spendguard-emulator", daemon=True)
        self._thread.start()
        host, port = server.server_address[:2]
        self.host: str = str(host)
        self.port: int = int(port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.base_url = f"http://{shown}:{self.port}"
        """The server's root: the Anthropic SDK's ``base_url``."""
        self.openai_base_url = self.base_url + "/v1"
        """The OpenAI SDK's ``base_url``."""
        self.anthropic_base_url = self.base_url

    def close(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def serve(emulator: Emulator, host: str = "127.0.0.1", port: int = 0, *,
          allow_remote: bool = False) -> EmulatorServer:
    """Serve ``emulator`` over HTTP on ``host:port`` (port 0: any free port) in a thread."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow_remote:
        raise ConfigError(f"serve(host={host!r}): the emulator binds to loopback only "
                          "(127.0.0.1, ::1, localhost); pass allow_remote=True to expose it")
    server_class = _Server6 if ":" in host else _Server
    return EmulatorServer(server_class((host, port), emulator))
