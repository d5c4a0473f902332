"""The ZooKeeper client's poll-based select answers as kazoo's own selector_select does (the
broker's every kazoo client runs on it; the cluster compat-tests run it against real ZooKeeper)."""

from __future__ import annotations

import errno
import os
import socket
import ssl
from typing import Iterator

import pytest
from kazoo.handlers.utils import selector_select

from wirekafka.broker.metadata.zk.poll_handler import PollHandler, poll_select
from wirekafka.broker.metadata.zk.security import TlsHandler, ZkClientSecurity


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def both(rlist: list, wlist: list, timeout: float | None) -> tuple:
    """poll_select's answer, checked equal to kazoo's selector_select's."""
    ours = poll_select(rlist, wlist, timeout)
    assert ours == tuple(selector_select(rlist, wlist, [], timeout))
    return ours


def test_nothing_ready_times_out_empty(pair: tuple[socket.socket, socket.socket]) -> None:
    a, _b = pair
    assert both([a], [], 0.01) == ([], [], [])


def test_a_socket_with_bytes_waiting_is_readable(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    b.send(b"x")
    assert both([a, b], [], 1.0) == ([a], [], [])


def test_a_socket_with_room_to_send_is_writable(pair: tuple[socket.socket, socket.socket]) -> None:
    a, _b = pair
    assert both([], [a], 1.0) == ([], [a], [])


def test_ready_both_ways_counts_as_readable_only(pair: tuple[socket.socket, socket.socket]) -> None:
    """As kazoo's (which lists the object once per list it was given in: kazoo never passes one
    object in both)."""
    a, b = pair
    b.send(b"x")
    assert poll_select([a], [a], 1.0) == ([a], [], [])
    assert selector_select([a], [a], [], 1.0)[1:] == ([], [])


def test_a_peer_that_hung_up_is_readable(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    b.close()
    assert both([a], [], 1.0) == ([a], [], [])


def test_descriptors_and_socket_objects_mix(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    b.send(b"x")
    assert both([a.fileno(), b], [], 1.0) == ([a.fileno()], [], [])


def test_a_descriptor_closed_before_the_wait_is_a_socket_error() -> None:
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(OSError) as raised:
        poll_select([r], [], 0.01)
    assert raised.value.errno == errno.EBADF


def test_a_negative_timeout_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    with pytest.raises(ValueError):
        poll_select([pair[0]], [], -1)


def test_every_broker_client_gets_the_poll_handler() -> None:
    plain = ZkClientSecurity().client("127.0.0.1:1", 6.0)
    assert type(plain.handler) is PollHandler
    secured = ZkClientSecurity(tls=ssl.create_default_context()).client("127.0.0.1:1", 6.0)
    assert isinstance(secured.handler, TlsHandler) and isinstance(secured.handler, PollHandler)
