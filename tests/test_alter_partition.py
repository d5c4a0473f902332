"""AlterPartition (key 56): the schema classes, the controller's judgement of a proposal
(replication/controller.py), the handler's reading and shaping (handlers/alter_partition.py) and
the leader's side (replication/alter_partition_client.py). The answers of a whole cluster are
compared with Kafka 3.9.1's in conformance/cluster/alter_partition.py."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
import trio

from wirekafka.broker.handlers.alter_partition import proposals, response
from wirekafka.broker.replication.alter_partition_client import (IsrChange, IsrProposer, build_request,
                                                                  read_outcomes)
from wirekafka.broker.metadata.zk.controller import (RECOVERED, RECOVERING, AlterTopic, IsrAnswer, IsrProposal,
                                                     LeaderAndIsr, judge_isr_proposal)
from wirekafka.broker.replication.peer_client import PeerUnavailable
from wirekafka.protocol.errors import ErrorCode
from wirekafka.protocol.inter_broker import AlterPartitionRequest, AlterPartitionResponse

TOPIC_ID = uuid.UUID("8f6c1d0e-3a52-4f7b-9a1e-2c4d5e6f7a8b")
CURRENT = LeaderAndIsr(1, 4, (1, 2, 3), 9)
VERSION = 6
LIVE = {1, 2, 3}


def proposal(**changes) -> IsrProposal:
    fields = dict(leader=1, leader_epoch=4, isr=(1, 2), leader_recovery_state=RECOVERED, partition_epoch=VERSION)
    fields.update(changes)
    return IsrProposal(**fields)


def judge(p: IsrProposal, current: LeaderAndIsr = CURRENT, request_version: int = 3) -> ErrorCode | None:
    return judge_isr_proposal(current, VERSION, p, LIVE, request_version)


# ---- schema -------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_request_and_response_round_trip_at_every_version(version: int) -> None:
    P = AlterPartitionRequest.TopicData.PartitionData
    part = dict(partition_index=2, leader_epoch=4, partition_epoch=6)
    if version >= 3:
        part["new_isr_with_epochs"] = [P.BrokerState(broker_id=1, broker_epoch=-1)]
    else:
        part["new_isr"] = [1, 3]
    if version >= 1:
        part["leader_recovery_state"] = 1
    topic = dict(topic_id=TOPIC_ID) if version >= 2 else dict(topic_name="t")
    request = AlterPartitionRequest(version=version, broker_id=1, broker_epoch=77, topics=[
        AlterPartitionRequest.TopicData(partitions=[P(**part)], **topic)])
    assert AlterPartitionRequest.decode(request.encode(), version=version) == request
    answer = response(version, ErrorCode.NONE, [AlterTopic(TOPIC_ID if version >= 2 else "t", [
        IsrAnswer(2, proposal(), state=LeaderAndIsr(1, 4, (1, 3), 9), partition_epoch=7)])])
    assert AlterPartitionResponse.decode(answer.encode(), version=version) == answer


def test_schema_versions_and_key() -> None:
    assert AlterPartitionRequest.API_KEY == AlterPartitionResponse.API_KEY == 56
    assert AlterPartitionRequest.valid_versions == (0, 3)
    assert all(AlterPartitionRequest.flexible_version_q(v) for v in range(4))


# ---- the controller's judgement -----------------------------------------------------------------
def test_a_proposal_on_the_current_epochs_is_written() -> None:
    assert judge(proposal()) is None
    assert judge(proposal(isr=(1, 2, 3, 4)), request_version=3) == ErrorCode.INELIGIBLE_REPLICA


def test_epochs_above_the_controllers_mean_it_is_not_the_controller() -> None:
    assert judge(proposal(leader_epoch=5)) == ErrorCode.NOT_CONTROLLER
    assert judge(proposal(partition_epoch=VERSION + 1)) == ErrorCode.NOT_CONTROLLER


def test_an_older_leader_epoch_is_fenced_before_anything_else() -> None:
    assert judge(proposal(leader_epoch=3, isr=(1, 2, 3), partition_epoch=0)) == ErrorCode.FENCED_LEADER_EPOCH


def test_the_recorded_state_is_answered_whatever_the_partition_epoch() -> None:
    same = dict(isr=(1, 2, 3))
    assert judge(proposal(**same)) == ErrorCode.NONE
    assert judge(proposal(partition_epoch=0, **same)) == ErrorCode.NONE
    assert judge(proposal(isr=(1, 3, 2), partition_epoch=0)) == ErrorCode.INVALID_UPDATE_VERSION  # order counts
    assert judge(proposal(leader=2, **same)) is None  # the requester is taken as the leader, as Kafka's controller does


def test_an_older_partition_epoch_is_refused() -> None:
    assert judge(proposal(partition_epoch=VERSION - 1)) == ErrorCode.INVALID_UPDATE_VERSION


def test_recovery_state_rules() -> None:
    assert judge(proposal(leader_recovery_state=RECOVERING)) == ErrorCode.INVALID_REQUEST  # more than one member
    assert judge(proposal(isr=(1,), leader_recovery_state=RECOVERING)) == ErrorCode.INVALID_REQUEST  # after RECOVERED
    recovering = LeaderAndIsr(1, 4, (1,), 9, RECOVERING)
    assert judge(proposal(isr=(1,), leader_recovery_state=RECOVERING), recovering) == ErrorCode.NONE
    assert judge(proposal(isr=(1, 2)), recovering) is None  # the leader marks it recovered


def test_an_isr_naming_a_broker_that_is_not_alive() -> None:
    assert judge(proposal(isr=(1, 9)), request_version=2) == ErrorCode.INELIGIBLE_REPLICA
    assert judge(proposal(isr=(1, 9)), request_version=1) == ErrorCode.OPERATION_NOT_ATTEMPTED


# ---- the handler's reading and shaping -----------------------------------------------------------
def test_proposals_read_names_before_v2_ids_after_and_isr_with_epochs_from_v3() -> None:
    P = AlterPartitionRequest.TopicData.PartitionData
    v1 = AlterPartitionRequest(version=1, broker_id=2, broker_epoch=5, topics=[AlterPartitionRequest.TopicData(
        topic_name="t", partitions=[P(partition_index=0, leader_epoch=3, new_isr=[2, 1], leader_recovery_state=1,
                                      partition_epoch=8)])])
    [topic] = proposals(AlterPartitionRequest.decode(v1.encode(), version=1), 1)
    assert topic.name_or_id == "t"
    assert topic.partitions[0].proposal == IsrProposal(2, 3, (2, 1), 1, 8)
    v3 = AlterPartitionRequest(version=3, broker_id=2, broker_epoch=5, topics=[AlterPartitionRequest.TopicData(
        topic_id=TOPIC_ID, partitions=[P(partition_index=4, leader_epoch=3, partition_epoch=8, new_isr_with_epochs=[
            P.BrokerState(broker_id=2, broker_epoch=-1), P.BrokerState(broker_id=3, broker_epoch=11)])])])
    [topic] = proposals(AlterPartitionRequest.decode(v3.encode(), version=3), 3)
    assert (topic.name_or_id, topic.partitions[0].index) == (TOPIC_ID, 4)
    assert topic.partitions[0].proposal == IsrProposal(2, 3, (2, 3), RECOVERED, 8)


def test_an_error_partition_carries_only_its_index_and_code() -> None:
    answer = response(3, ErrorCode.NONE, [AlterTopic(TOPIC_ID, [
        IsrAnswer(0, proposal(), error=ErrorCode.FENCED_LEADER_EPOCH),
        IsrAnswer(1, proposal(), state=LeaderAndIsr(1, 4, (1, 2), 9), partition_epoch=7)])])
    refused, recorded = answer.topics[0].partitions
    assert (refused.error_code, refused.leader_id, refused.leader_epoch, list(refused.isr),
            refused.partition_epoch) == (ErrorCode.FENCED_LEADER_EPOCH, 0, 0, [], 0)
    assert (recorded.leader_id, recorded.leader_epoch, list(recorded.isr), recorded.partition_epoch) == (1, 4, [1, 2], 7)
    whole = response(3, ErrorCode.NOT_CONTROLLER, [])
    assert (whole.error_code, whole.topics, whole.throttle_time_ms) == (ErrorCode.NOT_CONTROLLER, [], 0)


# ---- the leader's side ---------------------------------------------------------------------------
def change(index: int, topic_id: uuid.UUID = TOPIC_ID, isr: tuple[int, ...] = (1, 2)) -> IsrChange:
    return IsrChange(SimpleNamespace(index=index), topic_id, 4, isr, 6)  # type: ignore[arg-type]


def test_one_request_groups_changes_by_topic() -> None:
    other = uuid.UUID(int=5)
    request = build_request(1, 99, [change(0), change(1, other, (1,)), change(2)])
    assert (request.version, request.broker_id, request.broker_epoch) == (3, 1, 99)
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics] == [
        (TOPIC_ID, [0, 2]), (other, [1])]
    p = request.topics[1].partitions[0]
    assert ([(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs], p.leader_epoch, p.partition_epoch,
            p.leader_recovery_state) == ([(1, -1)], 4, 6, RECOVERED)


def test_outcomes_by_partition_and_a_missing_one_is_retried() -> None:
    changes = [change(0), change(1), change(2)]
    answer = response(3, ErrorCode.NONE, [AlterTopic(TOPIC_ID, [
        IsrAnswer(0, proposal(), state=LeaderAndIsr(1, 4, (1, 2), 9), partition_epoch=7),
        IsrAnswer(1, proposal(), error=ErrorCode.INVALID_UPDATE_VERSION)])])
    outcomes = read_outcomes(AlterPartitionResponse.decode(answer.encode(), version=3), changes)
    assert outcomes[(TOPIC_ID, 0)].error == ErrorCode.NONE
    assert (outcomes[(TOPIC_ID, 0)].isr, outcomes[(TOPIC_ID, 0)].partition_epoch) == ((1, 2), 7)
    assert outcomes[(TOPIC_ID, 1)].error == ErrorCode.INVALID_UPDATE_VERSION
    assert outcomes[(TOPIC_ID, 2)].error == ErrorCode.UNKNOWN_SERVER_ERROR
    assert read_outcomes(response(3, ErrorCode.STALE_BROKER_EPOCH, []), changes) == ErrorCode.STALE_BROKER_EPOCH


class FakeClient:
    """A controller connection that answers, fails, or never answers."""

    def __init__(self, answer=None, fail: bool = False) -> None:
        self.answer, self.fail, self.request_timeout_s, self.sent = answer, fail, 30.0, []

    async def send(self, request):
        self.sent.append(request)
        if self.fail:
            raise PeerUnavailable("refused")
        if self.answer is None:
            await trio.sleep_forever()
        return self.answer


class FakePool:
    def __init__(self, clients: dict[int, FakeClient]) -> None:
        self.clients, self.config = clients, SimpleNamespace(node_id=1)

    def client(self, node: int):
        return self.clients.get(node)


def test_proposer_sends_to_the_controller_and_reads_the_answer() -> None:
    answer = response(3, ErrorCode.NONE, [AlterTopic(TOPIC_ID, [
        IsrAnswer(0, proposal(), state=LeaderAndIsr(1, 4, (1, 2), 9), partition_epoch=7)])])
    controller = FakeClient(answer)
    proposer = IsrProposer(FakePool({3: controller}), lambda: 3)  # type: ignore[arg-type]
    outcomes = trio.run(proposer.propose, 42, [change(0)])
    assert outcomes[(TOPIC_ID, 0)].partition_epoch == 7
    assert controller.sent[0].broker_epoch == 42


def test_proposer_without_a_reachable_controller_answers_not_controller() -> None:
    assert trio.run(IsrProposer(FakePool({}), lambda: -1).propose, 1, [change(0)]) == ErrorCode.NOT_CONTROLLER  # type: ignore[arg-type]
    unreachable = IsrProposer(FakePool({2: FakeClient(fail=True)}), lambda: 2)  # type: ignore[arg-type]
    assert trio.run(unreachable.propose, 1, [change(0)]) == ErrorCode.NOT_CONTROLLER


def test_proposer_gives_up_when_the_controller_moves_during_the_round() -> None:
    controller = {"id": 2}
    proposer = IsrProposer(FakePool({2: FakeClient()}), lambda: controller["id"])  # type: ignore[arg-type]

    async def main():
        async with trio.open_nursery() as nursery:
            async def move() -> None:
                await trio.sleep(0.2)
                controller["id"] = 3
            nursery.start_soon(move)
            started = trio.current_time()
            outcome = await proposer.propose(1, [change(0)])
            return outcome, trio.current_time() - started

    outcome, took = trio.run(main)
    assert outcome == ErrorCode.NOT_CONTROLLER and took < 5
