"""A small TCP proxy in the test process, between mcpgen and a database service: it can refuse new
connections (a stopped server) and hold the database's replies (a peer that has gone silent while
its sockets stay open), without touching the shared service itself.

Its threads need Python's GIL to forward a single byte, so it also catches a driver that waits for a
reply while holding the GIL: such a wait would never end here.
"""

from __future__ import annotations

import socket
import threading


class Proxy:
    """Forwards 127.0.0.1:self.port to (host, port) while started; refuses connections while stopped.

    `hold(marker)`: from the first reply chunk that contains `marker` on, no reply reaches the
    client (each connection decides for itself); `hold(b"")` holds every reply from now on."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._marker: bytes | None = None
        self.accepted = 0
        self.held = 0  # bytes of replies kept from the client
        self.messages = 0  # chunks the clients sent (on a local socket, one for each write)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._sockets) // 2

    def hold(self, marker: bytes | None) -> None:
        """Hold replies from the chunk containing `marker` (None: forward everything again, for new chunks)."""
        self._marker = marker

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Stop listening: from now on a connection attempt is refused. Open connections stay."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            except OSError:
                pass
            listener.close()

    def close(self) -> None:
        self.stop()
        with self._lock:
            sockets, self._sockets = set(self._sockets), set()
        for s in sockets:
            _close(s)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._sockets |= {client, upstream}
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        holding = False
        try:
            while data := src.recv(65536):
                marker = self._marker
                if replies and not holding and marker is not None and marker in data:
                    holding = True
                if not replies:
                    self.messages += 1
                if holding:
                    self.held += len(data)
                else:
                    dst.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._sockets -= {src, dst}
        _close(src)
        _close(dst)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
