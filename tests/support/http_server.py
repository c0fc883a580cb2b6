"""A real HTTP server on 127.0.0.1 that records requests and answers as scripted.

::

    with RecordingHttpServer() as server:
        server.fail_next(2, status=503)          # then the default answer, 200
        ...POST to server.url...
        assert [r.status for r in server.requests] == [503, 503, 200]

Scripted replies are used up in order, one per request; after them every request gets the
default reply (``answer`` changes it). A reply can also drop the connection without answering
or stall before answering. ``stop()`` closes the listening socket *and* every open connection,
so clients see the server down; ``start()`` again listens on the same port.

HTTP/1.1 with keep-alive, so a client's persistent connection is exercised. Request bodies
sent with ``Content-Encoding: gzip`` are recorded both raw and decompressed.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """How the server answers one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    drop: bool = False
    """Close the connection without answering."""
    stall_s: float = 0.0
    """Wait this long before answering."""
    trickle_s: float = 0.0
    """Send the answer (status line, headers, body) one byte at a time, this long apart."""
    declared_length: int | None = None
    """The ``Content-Length`` to announce instead of the body's (more: a body that never
    ends)."""
    hold_s: float = 0.0
    """Keep the connection open this long after the body was sent, answering nothing more."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it, and what it answered (``None``: dropped)."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes
    body: bytes
    """The body, gunzipped when it was sent with ``Content-Encoding: gzip``."""
    status: int | None

    def ndjson(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.body.splitlines() if line]

    def json(self) -> Any:
        return json.loads(self.body)


class RecordingHttpServer:
    """See the module doc. Thread-safe: the handler threads and the test share one lock."""

    def __init__(self) -> None:
        self.port = 0
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._default = Reply()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ingest"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def accepted(self) -> list[RecordedRequest]:
        """Requests answered with a 2xx."""
        return [r for r in self.requests if r.status is not None and 200 <= r.status < 300]

    # -- scripting ----------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def fail_next(
        self, count: int, status: int = 503, headers: dict[str, str] | None = None
    ) -> None:
        self.script(*[Reply(status, headers or {}, b"try again later")] * count)

    def drop_next(self, count: int = 1) -> None:
        self.script(*[Reply(drop=True)] * count)

    def answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """Answer every request not scripted otherwise with ``status``."""
        with self._lock:
            self._default = Reply(status, headers or {}, body)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._script.popleft() if self._script else self._default

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> RecordingHttpServer:
        """Listen (on the same port as before after a ``stop``)."""
        if self._server is not None:
            raise RuntimeError("the server is running")
        server = _QuietServer(("127.0.0.1", self.port), _handler_class(self))
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and close every open connection."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its handler
                connection.shutdown(socket.SHUT_RDWR)
        self._server = self._thread = None

    def __enter__(self) -> RecordingHttpServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timeout test) is expected: no traceback on stderr."""


def _handler_class(owner: RecordingHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with owner._lock:
                owner._connections.add(self.connection)

        def finish(self) -> None:
            with owner._lock:
                owner._connections.discard(self.connection)
            super().finish()

        def do_POST(self) -> None:
            self._handle()

        def do_PUT(self) -> None:
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            body = gzip.decompress(raw) if headers.get("content-encoding") == "gzip" else raw
            reply = owner._next_reply()
            status = None if reply.drop else reply.status
            owner._record(RecordedRequest(self.command, self.path, headers, raw, body, status))
            if reply.stall_s:
                time.sleep(reply.stall_s)
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            length = len(reply.body) if reply.declared_length is None else reply.declared_length
            head = [f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}"]
            head += [f"{name}: {value}" for name, value in reply.headers.items()]
            head += [f"Content-Length: {length}", "", ""]
            answer = "\r\n".join(head).encode("latin-1") + reply.body
            try:
                if reply.trickle_s:
                    for index in range(len(answer)):
                        self.wfile.write(answer[index : index + 1])
                        self.wfile.flush()
                        time.sleep(reply.trickle_s)
                else:
                    self.wfile.write(answer)
                    self.wfile.flush()
                if reply.hold_s:
                    time.sleep(reply.hold_s)
            except OSError:  # the client hung up (a deadline or a capped read)
                self.close_connection = True
                return
            if reply.declared_length is not None and reply.declared_length != len(reply.body):
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads ``requests`` instead."""

    return Handler
