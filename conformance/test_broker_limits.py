"""Broker limits at the wire level: connections.max.idle.ms closes a quiet connection,
max.connections.per.ip closes a connection from an address already at its limit right after it
is accepted (Kafka's acceptor), while one below the limit is served, fetch.max.bytes caps a
fetch's max_bytes, and transaction.partition.verification.enable=false lets a transactional batch
in without checking that its partition is in the transaction.

The session brokers run realkafka.DEFAULT_BROKER_CONFIG, shared by every scenario; these limits
would disturb the others, so this module overrides `target` with a pair of its own, started once
for the module."""

from __future__ import annotations

import socket
import time

from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from conformance.harness.own_brokers import own_broker_pair
from conformance.harness.scenarios import batch, batch_bases, fetch, produce
from conformance.test_transactions import produce_outside_the_transaction
from conformance.harness.wire import Connection, create_topic, poll, unique

IDLE_MS, PER_IP, FETCH_MAX = 2000, 3, 1024
LIMITS = {"connections.max.idle.ms": str(IDLE_MS), "max.connections.per.ip": str(PER_IP),
          "fetch.max.bytes": str(FETCH_MAX), "transaction.partition.verification.enable": "false"}


own_wirekafka, own_kafka, target = own_broker_pair(LIMITS)


def _versions(conn: Connection) -> int:
    return conn.call(ApiVersionsRequest(client_software_name="conformance", client_software_version="1"), 3).error_code


def _closed_by_broker(conn: Connection, within: float) -> float | None:
    """Seconds until the broker closed the connection (EOF or reset), None if it stayed open."""
    start = time.monotonic()
    conn.sock.settimeout(within)
    try:
        data = conn.sock.recv(1)
    except socket.timeout:
        return None
    except ConnectionResetError:
        data = b""
    assert data == b"", data
    return time.monotonic() - start


def _served(bootstrap: str) -> Connection | None:
    """A new connection the broker answers on, None (closed) if it closes it."""
    conn = Connection(bootstrap)
    try:
        if _versions(conn) == 0:
            return conn
    except ConnectionError:
        pass
    conn.close()
    return None


def test_an_idle_connection_is_closed(target):
    with Connection(target.bootstrap) as conn:
        assert _versions(conn) == 0
        time.sleep(IDLE_MS / 4000)
        assert _versions(conn) == 0  # traffic keeps it open
        closed_after = _closed_by_broker(conn, within=IDLE_MS / 1000 * 5)
        assert closed_after is not None, "still open long after connections.max.idle.ms"
        assert closed_after >= IDLE_MS / 1000 * 0.9, closed_after


def test_connections_beyond_the_per_ip_limit_are_closed(target):
    held = [Connection(target.bootstrap) for _ in range(PER_IP)]
    try:
        assert [_versions(c) for c in held] == [0] * PER_IP
        with Connection(target.bootstrap) as extra:  # accepted by TCP, then closed by the broker
            assert _closed_by_broker(extra, within=5) is not None
        held.pop().close()

        def fresh() -> int:
            with Connection(target.bootstrap) as again:
                try:
                    return _versions(again)
                except ConnectionError:
                    return -1

        # the broker counts the closed one out as soon as it sees the close
        assert poll(fresh, lambda code: code == 0, timeout=10) == 0
    finally:
        for c in held:
            c.close()


def test_fetch_max_bytes_caps_what_a_fetch_asks_for(target):
    topic = unique()
    with Connection(target.bootstrap) as conn:
        create_topic(conn, topic)
        for i in range(3):  # three batches of ~700 bytes: two do not fit in 1024
            assert produce(conn, topic, batch([bytes([65 + i]) * 600])).error_code == 0
        capped = fetch(conn, topic, 0, max_bytes=1 << 20, partition_max_bytes=1 << 20)
        assert (capped.error_code, batch_bases(capped.records)) == (0, [0])
        second = fetch(conn, topic, 1, max_bytes=1 << 20, partition_max_bytes=1 << 20)
        assert batch_bases(second.records) == [1]


def test_unverified_transactional_produce_is_appended(target):
    with Connection(target.bootstrap) as conn:
        res = produce_outside_the_transaction(conn)
        assert (res.error_code, res.base_offset) == (0, 0)  # its partition was never added: not checked


def test_limits_change_at_runtime(target):
    """max.connections.per.ip and transaction.partition.verification.enable are dynamic broker
    configs: raised on the cluster default, the next connections and writes follow them at once;
    deleted, the static values are back. (Each step opens its own connection: one left idle
    longer than connections.max.idle.ms would be closed.)"""
    from conformance.harness.broker_configs import BROKER, DELETE, SET, described, incremental

    def verification_is(value: str | None, conn: Connection) -> str | None:
        key = "transaction.partition.verification.enable"
        return poll(lambda: described(conn, BROKER, "", None).get(key, (None,))[0], lambda v: v == value, 10)

    def served() -> Connection:
        conn = poll(lambda: _served(target.bootstrap), lambda c: c is not None, timeout=10)
        assert conn is not None
        return conn

    with served() as admin:
        assert incremental(admin, "", [("max.connections.per.ip", SET, str(PER_IP + 2)),
                                       ("transaction.partition.verification.enable", SET, "true")]) == (0, None)
        assert verification_is("true", admin) == "true"
        assert produce_outside_the_transaction(admin).error_code == 48  # INVALID_TXN_STATE: checked again
    held: list[Connection] = []
    try:
        for _ in range(PER_IP + 2):  # the new limit (Kafka counts a closed connection out a moment late)
            held.append(served())
        with Connection(target.bootstrap) as extra:
            assert _closed_by_broker(extra, within=5) is not None
    finally:
        for c in held:
            c.close()
    with served() as admin:
        assert incremental(admin, "", [("max.connections.per.ip", DELETE, None),
                                       ("transaction.partition.verification.enable", DELETE, None)]) == (0, None)
        assert verification_is(None, admin) is None
        res = produce_outside_the_transaction(admin)
        assert (res.error_code, res.base_offset) == (0, 0)
