"""AlterPartition (key 56) as the controller of a ZooKeeper-mode cluster answers it, checked the
same way on a real Kafka 3.9 cluster (compat-tests/test_zookeeper_launcher.py) and on wirekafka's
(compat-tests/test_cluster.py).

A partition on brokers 1 and 2 (1 leads, ISR [1, 2]); requests are sent as broker 1 would send
them, with its broker epoch (the czxid of /brokers/ids/1):
- a broker other than the controller: NOT_CONTROLLER for the request;
- a wrong broker epoch, or a broker that is not registered: STALE_BROKER_EPOCH for the request;
- per partition: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH (older leader
  epoch), NOT_CONTROLLER (a leader or partition epoch above the controller's), INELIGIBLE_REPLICA
  (v2+) or OPERATION_NOT_ATTEMPTED (v1) for an ISR naming a broker that is not alive,
  INVALID_REQUEST for RECOVERING with more than one ISR member or after RECOVERED;
- the state already recorded: answered as it is, at any version, by name (v1) or id (v2+);
- a shrink to [1]: recorded with the controller's epoch, the leader epoch unchanged and the
  partition epoch the znode's new version; the same proposal against the old partition epoch
  is INVALID_UPDATE_VERSION; then the ISR is put back to [1, 2]."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

from confluent_kafka.admin import AdminClient, NewTopic

from client_support import raw_call
from testsupport.cluster import wait_for
from conformance.cluster.leader_hints import zk_topic_id
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import AlterPartitionRequest, AlterPartitionResponse

_T = AlterPartitionRequest.TopicData
_P = _T.PartitionData
RECOVERED, RECOVERING = 0, 1


def _ask(address: str, version: int, broker_id: int, broker_epoch: int, topic: str | uuid.UUID, index: int,
         leader_epoch: int, isr: list[int], partition_epoch: int, recovery: int = RECOVERED):
    fields = dict(partition_index=index, leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    if version >= 3:
        fields["new_isr_with_epochs"] = [_P.BrokerState(broker_id=b, broker_epoch=-1) for b in isr]
    else:
        fields["new_isr"] = isr
    if version >= 1:
        fields["leader_recovery_state"] = recovery
    topic_data = _T(topic_id=topic, partitions=[_P(**fields)]) if version >= 2 else _T(topic_name=topic,
                                                                                       partitions=[_P(**fields)])
    request = AlterPartitionRequest(version=version, broker_id=broker_id, broker_epoch=broker_epoch,
                                    topics=[topic_data])
    port = SimpleNamespace(port=int(address.rsplit(":", 1)[1]))
    return raw_call(port, request, AlterPartitionResponse)


def check_alter_partition(client, bootstrap: str, addresses: dict[int, str], topic: str = "isr-proposals") -> str:
    """`client`: kazoo on the cluster's chroot; `addresses`: each broker's host:port."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])],
                        request_timeout=30)[topic].result(30)
    state_path = f"/brokers/topics/{topic}/partitions/0/state"

    def state() -> tuple[dict, int]:
        data, stat = client.get(state_path)
        return json.loads(data), stat.version

    wait_for(lambda: client.exists(state_path) is not None and state()[0]["isr"] == [1, 2], 60,
             f"{topic}-0 with ISR [1, 2]")
    current, version = state()
    epoch = current["leader_epoch"]
    assert current["leader"] == 1
    controller = json.loads(client.get("/controller")[0])["brokerid"]
    other = next(n for n in sorted(addresses) if n != controller)
    broker_epoch = client.exists("/brokers/ids/1").czxid
    topic_id = zk_topic_id(client, topic)
    at_controller = addresses[controller]

    def one(answer) -> object:
        assert answer.error_code == ErrorCode.NONE, answer
        assert len(answer.topics) == 1 and len(answer.topics[0].partitions) == 1, answer
        return answer.topics[0].partitions[0]

    def partition_error(version_: int, **changes) -> int:
        args = dict(address=at_controller, version=version_, broker_id=1, broker_epoch=broker_epoch,
                    topic=topic_id if version_ >= 2 else topic, index=0, leader_epoch=epoch, isr=[1, 2],
                    partition_epoch=version)
        args.update(changes)
        return one(_ask(**args)).error_code

    # the request as a whole
    answer = _ask(addresses[other], 3, 1, broker_epoch, topic_id, 0, epoch, [1, 2], version)
    assert (answer.error_code, answer.topics) == (ErrorCode.NOT_CONTROLLER, []), answer
    for broker_id, claimed in ((1, broker_epoch + 1), (1, -1), (99, broker_epoch)):
        answer = _ask(at_controller, 3, broker_id, claimed, topic_id, 0, epoch, [1, 2], version)
        assert (answer.error_code, answer.topics) == (ErrorCode.STALE_BROKER_EPOCH, []), (broker_id, claimed, answer)

    # each partition's own errors, none of which changes the state
    assert partition_error(3, topic=uuid.uuid4()) == ErrorCode.UNKNOWN_TOPIC_ID
    assert partition_error(1, topic="no-such-topic") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert partition_error(3, index=7) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert partition_error(3, leader_epoch=epoch - 1) == ErrorCode.FENCED_LEADER_EPOCH
    assert partition_error(3, leader_epoch=epoch + 1) == ErrorCode.NOT_CONTROLLER
    assert partition_error(3, partition_epoch=version + 1) == ErrorCode.NOT_CONTROLLER
    assert partition_error(3, isr=[1, 99]) == ErrorCode.INELIGIBLE_REPLICA
    assert partition_error(2, isr=[1, 99]) == ErrorCode.INELIGIBLE_REPLICA
    assert partition_error(1, isr=[1, 99]) == ErrorCode.OPERATION_NOT_ATTEMPTED
    assert partition_error(3, recovery=RECOVERING) == ErrorCode.INVALID_REQUEST
    assert partition_error(3, isr=[1], recovery=RECOVERING) == ErrorCode.INVALID_REQUEST

    # the recorded state, asked for again: answered as it is
    for v in (0, 1, 2, 3):
        for partition_epoch in (version, version - 1):
            part = one(_ask(at_controller, v, 1, broker_epoch, topic_id if v >= 2 else topic, 0, epoch, [1, 2],
                            partition_epoch))
            assert (part.error_code, part.leader_id, part.leader_epoch, list(part.isr), part.partition_epoch) == (
                ErrorCode.NONE, 1, epoch, [1, 2], version), (v, part)
    assert state() == (current, version)

    # a shrink, recorded by the controller
    part = one(_ask(at_controller, 3, 1, broker_epoch, topic_id, 0, epoch, [1], version))
    assert (part.error_code, part.leader_id, part.leader_epoch, list(part.isr), part.partition_epoch) == (
        ErrorCode.NONE, 1, epoch, [1], version + 1), part
    controller_epoch = int(client.get("/controller_epoch")[0])
    after, after_version = state()
    if after_version == version + 1:
        assert after == {**current, "isr": [1], "controller_epoch": controller_epoch}, after
    else:  # wirekafka's leader saw the shrink and already proposed its caught-up follower back
        assert after["isr"] == [1, 2] and after["leader_epoch"] == epoch and after_version > version + 1, after
        assert after["controller_epoch"] == controller_epoch, after
    assert partition_error(3, isr=[1, 3], partition_epoch=version) == ErrorCode.INVALID_UPDATE_VERSION

    def restored() -> bool:
        now, now_version = state()
        if now["isr"] == [1, 2]:
            return True
        code = one(_ask(at_controller, 3, 1, broker_epoch, topic_id, 0, epoch, [1, 2], now_version)).error_code
        assert code in (ErrorCode.NONE, ErrorCode.INVALID_UPDATE_VERSION), code
        return False

    wait_for(restored, 30, f"{topic}-0 back to ISR [1, 2]")
    return (f"controller {controller}: leader epoch {epoch}, partition epoch {version} -> {version + 1} on the "
            f"shrink, controller epoch {controller_epoch} written")

