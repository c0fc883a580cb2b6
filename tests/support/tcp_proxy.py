"""A TCP forwarder on loopback that a test can take down and bring back: a server that becomes
unreachable (its connections reset, new ones refused) and comes back at the same address,
with everything it stored intact. moto's S3 server keeps objects in memory, so stopping it
would lose them; stopping the forwarder in front of it is the store going away for a while.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from tests.support.outages import Stoppable
from tests.support.processes import free_port

_BUFFER = 256 * 1024
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends a reset


class TcpProxy(Stoppable):
    """Forwards ``127.0.0.1:<port>`` to ``target`` (host, port) while it is up.

    :meth:`stop` closes the listening socket and resets every open connection (clients see
    refused connections and broken streams); :meth:`start` listens again on the same port.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__()
        self.target = target
        self.port = free_port()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                # A reset, as a host going away gives: no lingering on close, and the pumps
                # blocked reading it woken (a close alone would not wake them).
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
                connection.shutdown(socket.SHUT_RDWR)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # stopped meanwhile
                    client.close()
                    server.close()
                    return
                self._connections.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(_BUFFER):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._connections.discard(source)
            source.close()
