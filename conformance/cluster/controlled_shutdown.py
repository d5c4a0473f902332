"""ControlledShutdown (key 7) as the controller of a ZooKeeper-mode cluster answers it, checked the
same way on a real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's
(compat-tests/test_cluster.py). The requests are sent as the stopping brokers would send them;
the brokers themselves keep running, so the check leaves two of them shutting down in the
controller's eyes: run it on a cluster of its own.

Z is the controller, X and Y the other two brokers. Three topics (a topic's partitions all have
one replica count), six partitions: p0 [X, Z], p1 [Z, X], p3 [X, Y], p5 [Y, X] in the first,
p4 [X, Y, Z] in the second, p2 [X] in the third.
- refused, changing nothing: a broker other than the controller (STALE_CONTROLLER_EPOCH, Kafka's
  answer to its ControllerMovedException); a broker epoch
  below the registration's (STALE_BROKER_EPOCH); a broker that is not registered,
  UNKNOWN_SERVER_ERROR with a broker epoch and BROKER_NOT_AVAILABLE without (v0 with its header
  that has no client id, v1, and v3 with epoch -1);
- Y shuts down (v2): p5 moves to X with ISR [X]; Y leaves the ISRs of p3 and p4; nothing remains;
- X shuts down (v3, an epoch above its registration's is accepted): p0 moves to Z, p4 to Z (Y is
  shutting down) with ISR [Z]; X leaves p1's ISR; p2 (one replica) is left alone; p3 and p5 have
  no eligible replica in their ISR and remain, listed in Kafka's hash order;
- asked again, X gets the same answer and nothing is written.
Every write bumps the leader epoch and carries the controller's epoch."""

from __future__ import annotations

import json
import socket
import struct
from types import SimpleNamespace

from confluent_kafka.admin import AdminClient, NewTopic

from client_support import raw_call
from testsupport.cluster import wait_for
from wirekafka.jvm import TopicPartitionKey, scala_mutable_hashmap_order
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import ControlledShutdownRequest, ControlledShutdownResponse


def _ask(address: str, version: int, broker_id: int, broker_epoch: int = -1) -> tuple[int, list[tuple[str, int]]]:
    fields = {"broker_epoch": broker_epoch} if version >= 2 else {}
    request = ControlledShutdownRequest(version=version, broker_id=broker_id, **fields)
    answer = raw_call(SimpleNamespace(port=int(address.rsplit(":", 1)[1])), request, ControlledShutdownResponse)
    return answer.error_code, [(p.topic_name, p.partition_index) for p in answer.remaining_partitions]


def _ask_v0(address: str, broker_id: int) -> tuple[int, list[tuple[str, int]]]:
    """v0 by hand: its request header is api key, version and correlation id, without a client id."""
    host, port = address.rsplit(":", 1)
    body = struct.pack(">hhii", 7, 0, 5, broker_id)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed without an answer"
            data += chunk
    assert struct.unpack(">i", data[4:8])[0] == 5
    answer = ControlledShutdownResponse.decode(data[8:], version=0)
    return answer.error_code, [(p.topic_name, p.partition_index) for p in answer.remaining_partitions]


def check_controlled_shutdown(client, bootstrap: str, addresses: dict[int, str], topic: str = "shutdown-moves") -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: each broker's host:port (three brokers)."""
    controller = json.loads(client.get("/controller")[0])["brokerid"]
    x, y = (n for n in sorted(addresses) if n != controller)
    z = controller
    assignment = [[x, z], [z, x], [x], [x, y], [x, y, z], [y, x]]
    where = {0: (topic, 0), 1: (topic, 1), 3: (topic, 2), 5: (topic, 3), 4: (f"{topic}-3", 0), 2: (f"{topic}-1", 0)}
    by_topic: dict[str, list[list[int]]] = {}
    for p, (name, _index) in sorted(where.items(), key=lambda item: item[1]):
        by_topic.setdefault(name, []).append(assignment[p])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, future in admin.create_topics([NewTopic(name, num_partitions=len(replicas), replica_assignment=replicas)
                                             for name, replicas in by_topic.items()], request_timeout=30).items():
        future.result(30)

    def states() -> dict[int, dict]:
        return {p: json.loads(client.get(f"/brokers/topics/{where[p][0]}/partitions/{where[p][1]}/state")[0])
                for p in range(len(assignment))}

    def settled() -> bool:
        try:
            return all(s["isr"] == assignment[p] for p, s in states().items())
        except Exception:  # a state znode not written yet
            return False

    wait_for(settled, 60, f"{topic} with full ISRs")
    before = states()
    assert all(s["leader"] == assignment[p][0] and s["leader_epoch"] == 0 for p, s in before.items()), before
    epochs = {n: client.exists(f"/brokers/ids/{n}").czxid for n in addresses}
    at_controller = addresses[z]

    # refusals: nothing changes
    assert _ask(addresses[x], 3, x, epochs[x]) == (ErrorCode.STALE_CONTROLLER_EPOCH, [])
    assert _ask(at_controller, 3, x, epochs[x] - 1) == (ErrorCode.STALE_BROKER_EPOCH, [])
    assert _ask(at_controller, 3, 99, epochs[x]) == (ErrorCode.UNKNOWN_SERVER_ERROR, [])
    assert _ask(at_controller, 3, 99, -1) == (ErrorCode.BROKER_NOT_AVAILABLE, [])
    assert _ask(at_controller, 1, 99) == (ErrorCode.BROKER_NOT_AVAILABLE, [])
    assert _ask_v0(at_controller, 99) == (ErrorCode.BROKER_NOT_AVAILABLE, [])
    assert states() == before
    controller_epoch = int(client.get("/controller_epoch")[0])

    def expect(p: int, leader: int, leader_epoch: int, isr: list[int]) -> None:
        state = states()[p]
        wanted = {**before[p], "leader": leader, "leader_epoch": leader_epoch, "isr": isr}
        if leader_epoch > 0:
            wanted["controller_epoch"] = controller_epoch
        assert state == wanted, (p, state, wanted)

    # Y: its one leadership moves, it leaves two ISRs
    assert _ask(at_controller, 2, y, epochs[y]) == (ErrorCode.NONE, [])
    expect(3, x, 1, [x])
    expect(4, x, 1, [x, z])
    expect(5, x, 1, [x])
    for p in (0, 1, 2):
        expect(p, assignment[p][0], 0, assignment[p])

    # X: two leaderships move, two stay (no eligible ISR member), p2 has one replica
    remaining = [(k.topic, k.partition) for k in scala_mutable_hashmap_order(
        [TopicPartitionKey(*where[3]), TopicPartitionKey(*where[5])])]
    assert _ask(at_controller, 3, x, epochs[x] + 1) == (ErrorCode.NONE, remaining)
    expect(0, z, 1, [z])
    expect(1, z, 1, [z])
    expect(2, x, 0, [x])
    expect(3, x, 1, [x])
    expect(4, z, 2, [z])
    expect(5, x, 1, [x])
    after = states()
    assert _ask(at_controller, 3, x, epochs[x]) == (ErrorCode.NONE, remaining)
    assert states() == after
    return (f"controller {z}: broker {y} moved 1 leadership, broker {x} moved 2 and kept {remaining}, "
            f"controller epoch {controller_epoch} written")
