"""The collector's ops endpoints over HTTP: ``/metrics``, ``/health``, ``/ready``."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from pipeline_core.collector._readiness import HealthProbes, ProbeResult
from pipeline_core.errors import ListenAddressError

log = logging.getLogger(__name__)

_HOSTNAME = re.compile(
    r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*"
)
_PORT = re.compile(r"[0-9]{1,5}")
_EXAMPLES = "127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464 for every interface"
DEFAULT_HOST = "127.0.0.1"
"""The host of an address that names none (``:9464``): loopback, never every interface."""
CONNECTION_TIMEOUT_S = 10.0
"""How long one connection to the ops server may last, whatever it does (sends nothing, sends
half a request, reads its answer slowly): then it is closed."""
MAX_CONNECTIONS = 32
"""Connections served at once (a thread each); one more is closed at once, unanswered."""


@dataclass(frozen=True)
class ListenAddress:
    """Where to listen: ``host`` (an IPv4 or IPv6 address, or a host name) and ``port``
    (0: any free port)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> ListenAddress:
        """``HOST:PORT``, an IPv6 host in brackets (``[::1]:9464``); ``:PORT`` is loopback
        (``127.0.0.1``): every interface is only ever asked for by name (``0.0.0.0:PORT``).

        Raises:
            ListenAddressError: naming ``text`` and what is wrong with it.
        """
        host, port_text = _split(text)
        if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
            raise _invalid(text, f"the port {port_text!r} is not a number from 0 to 65535")
        return cls(host, int(port_text))

    @property
    def ipv6(self) -> bool:
        return ":" in self.host

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if self.ipv6 else f"{self.host}:{self.port}"


def _split(text: str) -> tuple[str, str]:
    if text.startswith("["):
        inside, bracket, port = text[1:].partition("]")
        if not bracket or not port.startswith(":"):
            raise _invalid(text, "an IPv6 address goes as [ADDRESS]:PORT")
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            raise _invalid(text, f"{inside!r} is not an IPv6 address") from None
        return inside, port[1:]
    host, colon, port = text.rpartition(":")
    if not colon:
        raise _invalid(text, "no port")
    if ":" in host:
        raise _invalid(text, "an IPv6 address goes in brackets, as [::1]:9464")
    if not host:
        return DEFAULT_HOST, port
    if not _HOSTNAME.fullmatch(host):
        raise _invalid(text, f"{host!r} is neither an IP address nor a host name")
    return host, port


def _invalid(text: str, problem: str) -> ListenAddressError:
    return ListenAddressError(f"invalid address {text!r}: {problem} (HOST:PORT, as {_EXAMPLES})")


class OpsServer:
    """Serves, on ``address``:

    * ``GET /metrics``: ``registry`` in the Prometheus text format (or OpenMetrics, when the
      scraper asks for it);
    * ``GET /health``: 200 while ``probes.liveness()`` is ok, 503 otherwise;
    * ``GET /ready``: 200 while ``probes.readiness()`` is ok, 503 otherwise.

    The probes answer one line of JSON: ``{"ok": false, "reason": "..."}``. Without
    ``probes``, ``/health`` and ``/ready`` are not served (404).

    Lifecycle: binds in ``__init__`` (so :attr:`port` is known, and an address in use fails at
    once with ``OSError``), serves from :meth:`start` on its own daemon thread (one more per
    connection) until :meth:`stop`.

    A slow or idle client cannot pile threads up: each connection lasts at most ``timeout``
    seconds (every socket operation times out, and a connection still open at its deadline is
    shut down, so a client dribbling bytes is dropped too), and at most ``max_connections``
    are served at once; one more is closed at once, unanswered (a scraper or probe retries at
    its next interval).
    """

    def __init__(
        self,
        address: ListenAddress,
        registry: CollectorRegistry,
        probes: HealthProbes | None = None,
        *,
        timeout: float = CONNECTION_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.address = address
        server_class = _BoundedIPv6Server if address.ipv6 else _BoundedServer
        self._server = server_class(
            (address.host, address.port),
            _handler(registry, probes, timeout),
            timeout=timeout,
            max_connections=max_connections,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sluice-ops-http", daemon=True
        )

    @property
    def port(self) -> int:
        """The port bound (the one chosen when ``address`` asked for port 0)."""
        return int(self._server.server_address[1])

    def start(self) -> OpsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` of them, each closed ``timeout``
    seconds after it was accepted at the latest."""

    daemon_threads = True
    block_on_close = False  # stopping never waits for a slow client
    request_queue_size = 64  # the listen backlog: a burst waits to be accepted (or closed)

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        timeout: float,
        max_connections: int,
    ) -> None:
        self._connection_timeout = timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self._deadlines: dict[socket.socket, float] = {}
        self._deadlines_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug(
                "ops server: %s refused, already serving its most connections", client_address
            )
            self.shutdown_request(request)
            return
        with self._deadlines_lock:
            self._deadlines[request] = time.monotonic() + self._connection_timeout
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot is free again
            self._forget(request)
            self.shutdown_request(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)

    def service_actions(self) -> None:
        """Shut down the connections past their deadline (called by ``serve_forever`` at
        least every half second): their threads' blocked reads or writes end at once."""
        now = time.monotonic()
        with self._deadlines_lock:
            overdue = [request for request, deadline in self._deadlines.items() if deadline <= now]
        for request in overdue:
            with contextlib.suppress(OSError):  # closed meanwhile
                request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (a client gone, one shut down at its deadline): logged,
        without socketserver's traceback on stderr."""
        log.debug("ops server: connection from %s failed", client_address, exc_info=True)

    def _forget(self, request: socket.socket) -> None:
        with self._deadlines_lock:
            if self._deadlines.pop(request, None) is None:
                return
        self._slots.release()


class _BoundedIPv6Server(_BoundedServer):
    address_family = socket.AF_INET6


def _handler(
    registry: CollectorRegistry, probes: HealthProbes | None, connection_timeout: float
) -> type[BaseHTTPRequestHandler]:
    class OpsHandler(BaseHTTPRequestHandler):
        # Every read and write of the connection (StreamRequestHandler sets it on the socket).
        timeout = connection_timeout

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/metrics":
                encode, content_type = choose_encoder(self.headers.get("Accept", ""))
                self._answer(200, content_type, encode(registry))
            elif path in ("/health", "/ready") and probes is not None:
                try:
                    result = probes.liveness() if path == "/health" else probes.readiness()
                except Exception as exc:  # never a hanging or broken probe
                    result = ProbeResult(False, f"cannot tell: {exc}")
                body = json.dumps(result.to_dict()) + "\n"
                self._answer(200 if result.ok else 503, "application/json", body.encode())
            else:
                self.send_error(404)

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    return OpsHandler
