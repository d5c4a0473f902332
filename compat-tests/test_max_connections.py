"""max.connections and the socket settings on a real wirekafka process: with the broker at its
limit a new client waits in the listen backlog, unanswered, until a connection closes; then it is
served. (Kafka's per-address limit and idle timeout are compared with Kafka's own answers in
conformance/test_connection_limits.py.)"""

from __future__ import annotations

import socket
from pathlib import Path

from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from conformance.harness.wire import Connection
from testsupport.broker_process import BrokerProcess


def _versions(conn: Connection) -> int:
    return conn.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code


def test_max_connections_makes_new_clients_wait(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", {"max.connections": "2", "socket.listen.backlog.size": "8",
                                             "socket.send.buffer.bytes": "65536",
                                             "socket.receive.buffer.bytes": "65536"}).start()
    try:
        first, second = Connection(proc.bootstrap), Connection(proc.bootstrap)
        assert (_versions(first), _versions(second)) == (0, 0)
        waiting = Connection(proc.bootstrap)  # the kernel completes the handshake; wirekafka does not accept
        waiting.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        waiting.sock.settimeout(1.0)
        try:
            waiting.sock.recv(1)
            raise AssertionError("a third connection was served while max.connections=2 were open")
        except socket.timeout:
            pass
        first.close()
        waiting.sock.settimeout(10)
        assert waiting.sock.recv(4)  # accepted once a slot freed: its request is answered
        waiting.close()
        second.close()
    finally:
        proc.stop()
