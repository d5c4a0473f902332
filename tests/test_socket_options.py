"""Kafka's socket options: socket.send.buffer.bytes / socket.receive.buffer.bytes (-1 = the OS's
default), TCP_NODELAY and SO_KEEPALIVE on accepted connections."""

from __future__ import annotations

import socket

import pytest

from wirekafka.config import build_config
from wirekafka.server.socket_options import tune_connection, tune_listener


def _config(**props: str):
    return build_config({"log.dirs": "/tmp/unused", **props})


def _pair() -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    with listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
    return client, accepted


def test_accepted_connection_gets_kafkas_options() -> None:
    client, accepted = _pair()
    with client, accepted:
        tune_connection(accepted, _config(**{"socket.send.buffer.bytes": "65536"}))
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        # Linux doubles the requested size for its bookkeeping (socket(7)).
        assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 2 * 65536


def test_default_send_buffer_is_kafkas_102400() -> None:
    client, accepted = _pair()
    with client, accepted:
        tune_connection(accepted, _config())
        assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 2 * 102400


@pytest.mark.parametrize("key,option,tune", [
    ("socket.send.buffer.bytes", socket.SO_SNDBUF, "connection"),
    ("socket.receive.buffer.bytes", socket.SO_RCVBUF, "listener"),
])
def test_minus_one_keeps_the_os_default(key: str, option: int, tune: str) -> None:
    with socket.socket() as sock:
        before = sock.getsockopt(socket.SOL_SOCKET, option)
        (tune_connection if tune == "connection" else tune_listener)(sock, _config(**{key: "-1"}))
        assert sock.getsockopt(socket.SOL_SOCKET, option) == before


def test_listener_receive_buffer_is_inherited_by_accepted_connections() -> None:
    with socket.socket() as listener:
        tune_listener(listener, _config(**{"socket.receive.buffer.bytes": "32768"}))
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as client:
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * 32768
