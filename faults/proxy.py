"""A TCP proxy on 127.0.0.1 the nemesis owns: one link (a broker to ZooKeeper) that it can cut and
heal. Cutting closes the connections going through it and refuses new ones until healed, so the
broker's ZooKeeper session expires on the server while the broker itself keeps running and serving
clients: a network partition between one broker and ZooKeeper, without touching the machine's
network."""

from __future__ import annotations

import logging
import socket
import threading

log = logging.getLogger(__name__)

_CHUNK = 65536


class Link:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name=f"link-{self.port}", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self) -> None:
        """Drop every connection through the link and refuse new ones until heal()."""
        self._cut.set()
        with self._lock:
            doomed, self._open = self._open, set()
        for s in doomed:
            _close(s)
        log.info("link :%d -> :%d cut", self.port, self.upstream[1])

    def heal(self) -> None:
        self._cut.clear()
        log.info("link :%d -> :%d healed", self.port, self.upstream[1])

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                _close(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
            _close(source)
            _close(sink)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
